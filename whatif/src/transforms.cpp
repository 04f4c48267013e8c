#include <dreamscope/whatif/cpu_sharing.h>
#include <dreamscope/whatif/name_pattern.h>
#include <dreamscope/storage/job.h>
#include <dreamscope/storage/kernel_classes.h>
#include <dreamscope/storage/steps.h>
#include <dreamscope/whatif/transforms.h>

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <tuple>
#include <unordered_map>

namespace dreamscope::whatif {

namespace {

std::string location(const SourcePosition& where) {
  return where.line > 0 ? fmt::format("{}:{}:{}", where.file, where.line, where.column) : where.file;
}

TimeNs summed_duration(const DependencyGraph& graph, const std::vector<TaskId>& tasks) {
  TimeNs sum = 0;
  for (TaskId t : tasks) sum = limits::add_ns(sum, graph.duration(t));
  return sum;
}

void remove_task(DependencyGraph& graph, TaskId t) {
  graph.set_removed(t, true);
  // The idle time before a removed task belonged to it (waiting to issue it), not to the
  // resource: keeping it would leave the removed work's shadow in the timeline.
  graph.set_gap(t, 0);
}

// Every task the API call of task `call` became (its pieces around nested events included).
void remove_api_call(DependencyGraph& graph, TaskId call) {
  const CudaApiIndex row{graph.source_row(call)}; // a CUDA API task's row is one of the API calls
  const TaskId first = graph.api_first(row);
  const TaskId last = graph.api_last(row);
  if (first == kNoTask) return;
  for (TaskId t = first; t <= last; ++t) remove_task(graph, t);
}

} // namespace

TaskSelection::TaskSelection(const Trace& trace, const DependencyGraph& graph) : trace_(trace), graph_(graph) {
  const std::size_t n = graph.task_count();
  launcher_.assign(n, kNoTask);
  is_launch_.assign(n, 0);
  built_.assign(n, 0);
  for (TaskId t = 0; t < n; ++t) {
    if (graph.removed(t)) built_[t] |= kBuiltRemoved;
    if (graph.flags(t) & (kTaskHasSync | kTaskBlocking)) built_[t] |= kBuiltSyncLike;
  }
  const auto& ops = trace.gpu_ops();
  for (TaskId t = 0; t < n; ++t) {
    if (!is_gpu_task(graph.kind(t)) || graph.source_row(t) == kNoIndex) continue;
    const std::int64_t correlation = ops.correlation[graph.source_row(t)];
    if (correlation == kNoValue) continue;
    const auto api = trace.cuda_api_with_correlation(correlation);
    if (!api || graph.api_first(*api) == kNoTask) continue;
    launcher_[t] = graph.api_first(*api);
    for (TaskId a = graph.api_first(*api); a <= graph.api_last(*api); ++a) is_launch_[a] = 1;
  }

  // Bursts handed over: a handoff edge from the waiting task to the burst's first task, a
  // join edge from the burst's last task (same thread) back to the waiting task.
  handed_by_.assign(n, kNoTask);
  {
    const auto& edges = graph.edges();
    std::unordered_map<TaskId, TaskId> joined_from; // waiting task -> the burst's last task
    for (TaskId u = 0; u < n; ++u) {
      for (auto [e, e_end] = boost::out_edges(u, edges); e != e_end; ++e) {
        if (edges[*e].kind == EdgeKind::Join) joined_from[static_cast<TaskId>(boost::target(*e, edges))] = u;
      }
    }
    for (TaskId u = 0; u < n; ++u) {
      for (auto [e, e_end] = boost::out_edges(u, edges); e != e_end; ++e) {
        if (edges[*e].kind != EdgeKind::Handoff) continue;
        const auto first = static_cast<TaskId>(boost::target(*e, edges));
        const auto join = joined_from.find(u);
        if (join == joined_from.end() || join->second < first || graph.resource(join->second) != graph.resource(first)) {
          continue;
        }
        for (TaskId t = first; t <= join->second; ++t) handed_by_[t] = u;
      }
    }
  }

  const auto& ann = trace.annotations();
  parent_.assign(ann.parent.begin(), ann.parent.end());
  step_of_annotation_.assign(ann.size(), kNoValue);
  std::int64_t ordinal = 0;
  // Rows are sorted by (track, start, longer first), so a parent precedes its children.
  for (AnnotationIndex row{0}; row < ann.size(); ++row) {
    if (is_step(trace, row)) {
      const std::int64_t profiler_step = profiler_step_number(trace.str(ann.name[row]));
      steps_.push_back(row);
      step_of_annotation_[row] = ann.payload[row] != kNoValue ? ann.payload[row]
                                 : profiler_step != kNoValue  ? profiler_step
                                                              : ordinal;
      ++ordinal;
    } else if (ann.parent[row] != kNoIndex) {
      step_of_annotation_[row] = step_of_annotation_[ann.parent[row]];
    }
  }
  std::sort(steps_.begin(), steps_.end(),
            [&](AnnotationIndex a, AnnotationIndex b) { return ann.start[a] < ann.start[b]; });
  // A range at the top of a handed-over burst is inside what enclosed the waiting task, and
  // so in its step. Parents come strictly earlier (start, then row), so chains end.
  bool delegated = false;
  for (AnnotationIndex row{0}; row < ann.size(); ++row) {
    if (ann.parent[row] != kNoIndex) continue;
    const TaskId first = graph.annotation_first(row);
    if (first == kNoTask || handed_by_[first] == kNoTask) continue;
    const AnnotationIndex outer = enclosing_annotation(handed_by_[first]);
    if (outer == kNoIndex || !(ann.start[outer] < ann.start[row] || (ann.start[outer] == ann.start[row] && outer < row))) {
      continue;
    }
    parent_[row] = outer;
    delegated = true;
  }
  // Steps along the new links, down to each range's children; a burst inside a burst needs
  // a pass per level.
  for (bool changed = delegated; changed;) {
    changed = false;
    for (AnnotationIndex row{0}; row < ann.size(); ++row) {
      if (step_of_annotation_[row] != kNoValue || parent_[row] == kNoIndex) continue;
      if (step_of_annotation_[parent_[row]] == kNoValue) continue;
      step_of_annotation_[row] = step_of_annotation_[parent_[row]];
      changed = true;
    }
  }

  rank_of_track_ = track_ranks(trace);
  communication_.assign(trace.strings().size(), -1);
  track_categories_.resize(trace.tracks().size());
  for (AnnotationIndex row{0}; row < ann.size(); ++row) {
    auto& categories = track_categories_[ann.track[row]];
    if (std::find(categories.begin(), categories.end(), ann.category[row]) == categories.end()) {
      categories.push_back(ann.category[row]);
    }
  }
}

std::string_view TaskSelection::name(TaskId t) const {
  const std::uint32_t row = graph_.source_row(t);
  if (row == kNoIndex) return {};
  switch (graph_.kind(t)) {
    case TaskKind::CudaApi: return trace_.str(trace_.cuda_api().name[row]);
    case TaskKind::Annotation: return trace_.str(trace_.annotations().name[row]);
    case TaskKind::Kernel:
    case TaskKind::Memcpy:
    case TaskKind::Memset: return trace_.str(trace_.gpu_ops().name[row]);
    default: return {};
  }
}

TrackId TaskSelection::context_track(TaskId t) const {
  if (is_gpu_task(graph_.kind(t)) && launcher_[t] != kNoTask) return TrackId{graph_.resource(launcher_[t])};
  return TrackId{graph_.resource(t)};
}

AnnotationIndex TaskSelection::enclosing_annotation(TaskId t) const {
  const TaskKind kind = graph_.kind(t);
  if (kind == TaskKind::Annotation) return AnnotationIndex{graph_.source_row(t)};
  if (kind == TaskKind::Synthetic) return kNoIndex;
  TaskId on_cpu = t;
  if (is_gpu_task(kind) && launcher_[t] != kNoTask) on_cpu = launcher_[t];
  // The middle of the task: a piece that starts where an annotation ends belongs outside it.
  const TimeNs begin = graph_.measured_start(on_cpu);
  const TimeNs end = graph_.measured_end(on_cpu);
  const TimeNs at = end > begin ? begin + (end - begin) / 2 : begin;
  const AnnotationIndex own = trace_.innermost_annotation_at(TrackId{graph_.resource(on_cpu)}, at).value_or(kNoIndex);
  if (own == kNoIndex && handed_by_[on_cpu] != kNoTask) return enclosing_annotation(handed_by_[on_cpu]);
  return own;
}

std::int64_t TaskSelection::rank(TaskId t) const {
  const ResourceId r = graph_.resource(t);
  return r < rank_of_track_.size() ? rank_of_track_[r] : kNoValue;
}

std::optional<std::int64_t> TaskSelection::step(TaskId t) const {
  const AnnotationIndex a = enclosing_annotation(t);
  if (a == kNoIndex || step_of_annotation_[a] == kNoValue) return std::nullopt;
  return step_of_annotation_[a];
}

bool TaskSelection::is_communication(TaskId t) const {
  const std::uint32_t row = graph_.source_row(t);
  if (row == kNoIndex || !is_gpu_task(graph_.kind(t))) return false;
  const StringId name = trace_.gpu_ops().name[row];
  if (communication_[name] < 0) communication_[name] = is_communication_kernel(trace_.str(name)) ? 1 : 0;
  return communication_[name] == 1;
}

bool TaskSelection::matches_kind(TaskId t, TaskClass kind) const {
  const TaskKind k = graph_.kind(t);
  switch (kind) {
    case TaskClass::Kernel: return k == TaskKind::Kernel;
    case TaskClass::Compute: return k == TaskKind::Kernel && !is_communication(t);
    case TaskClass::Communication: return k == TaskKind::Kernel && is_communication(t);
    case TaskClass::Memcpy: return k == TaskKind::Memcpy;
    case TaskClass::Memset: return k == TaskKind::Memset;
    case TaskClass::Gpu: return is_gpu_task(k);
    case TaskClass::Sync: return k == TaskKind::CudaApi && (built_[t] & kBuiltSyncLike) != 0;
    case TaskClass::Api: return k == TaskKind::CudaApi;
    case TaskClass::Launch: return k == TaskKind::CudaApi && is_launch_[t] != 0;
    case TaskClass::Cpu: return k == TaskKind::CpuWork || k == TaskKind::CudaApi || k == TaskKind::Annotation;
    case TaskClass::Annotation: return k == TaskKind::Annotation;
    case TaskClass::Gap: return k == TaskKind::CpuWork;
  }
  return false;
}

std::vector<TaskId> TaskSelection::select(const Selector& s) const {
  const auto& ann = trace_.annotations();
  std::optional<NamePattern> name_re, not_name_re, annotation_re, not_annotation_re, category_re, not_category_re;
  // Per track: does it qualify under resource_with / resource_without?
  std::vector<std::uint8_t> track_ok(trace_.tracks().size(), 1);
  auto any_category = [&](TrackId track, const NamePattern& re) {
    for (StringId c : track_categories_[track]) {
      if (re.matches_whole(trace_.str(c))) return true;
    }
    return false;
  };
  if (s.resource_with || s.resource_without) {
    std::optional<NamePattern> with, without;
    if (s.resource_with) with.emplace(*s.resource_with);
    if (s.resource_without) without.emplace(*s.resource_without);
    for (TrackId track{0}; track < track_ok.size(); ++track) {
      if (with && !any_category(track, *with)) track_ok[track] = 0;
      if (without && any_category(track, *without)) track_ok[track] = 0;
    }
  }
  if (s.name) name_re.emplace(*s.name);
  if (s.not_name) not_name_re.emplace(*s.not_name);
  if (s.annotation) annotation_re.emplace(*s.annotation);
  if (s.not_annotation) not_annotation_re.emplace(*s.not_annotation);
  if (s.category) category_re.emplace(*s.category);
  if (s.not_category) not_category_re.emplace(*s.not_category);

  // Names repeat: one answer per interned string.
  std::unordered_map<std::string_view, bool> name_hits, not_name_hits;
  auto cached_search = [](std::unordered_map<std::string_view, bool>& cache, const NamePattern& re,
                          std::string_view text) {
    auto [it, fresh] = cache.try_emplace(text, false);
    if (fresh) it->second = re.found_in(text);
    return it->second;
  };
  // Per annotation row: does it or an enclosing one match? (-1: not computed yet)
  std::vector<std::int8_t> annotation_hit(annotation_re ? ann.size() : 0, -1);
  std::vector<std::int8_t> not_annotation_hit(not_annotation_re ? ann.size() : 0, -1);
  std::vector<std::int8_t> category_hit(category_re ? ann.size() : 0, -1);
  std::vector<std::int8_t> not_category_hit(not_category_re ? ann.size() : 0, -1);
  std::unordered_map<StringId, bool> annotation_name_hits, not_annotation_name_hits, category_hits, not_category_hits;
  auto inside = [&](AnnotationIndex row, std::vector<std::int8_t>& memo, std::unordered_map<StringId, bool>& by_string,
                    const std::vector<StringId>& column, const NamePattern& re, bool whole) {
    std::vector<AnnotationIndex> chain;
    bool hit = false;
    for (AnnotationIndex a = row; a != kNoIndex; a = parent_[a]) {
      if (memo[a] >= 0) {
        hit = memo[a] != 0;
        break;
      }
      chain.push_back(a);
      auto [it, fresh] = by_string.try_emplace(column[a], false);
      if (fresh) {
        const std::string_view text = trace_.str(column[a]);
        it->second = whole ? re.matches_whole(text) : re.found_in(text);
      }
      if (it->second) {
        hit = true;
        break;
      }
    }
    // Everything on the walked chain below a hit is inside it; below a miss, outside.
    for (AnnotationIndex a : chain) memo[a] = hit ? 1 : 0;
    return hit;
  };

  std::vector<TaskId> out;
  for (TaskId t = 0; t < graph_.task_count(); ++t) {
    if (built_[t] & kBuiltRemoved) continue;
    if (!s.kinds.empty() &&
        std::none_of(s.kinds.begin(), s.kinds.end(), [&](TaskClass k) { return matches_kind(t, k); })) {
      continue;
    }
    if (!track_ok[graph_.resource(t)]) continue;
    if (s.rank && rank(t) != *s.rank) continue;
    if (s.window && (graph_.measured_start(t) < s.window->first || graph_.measured_start(t) >= s.window->second)) {
      continue;
    }
    if (s.stream) {
      const auto& track = trace_.tracks()[graph_.resource(t)];
      if (track.kind != TrackKind::GpuStream || track.stream != *s.stream) continue;
    }
    if (s.thread) {
      const auto& track = trace_.tracks()[context_track(t)];
      if (track.kind != TrackKind::CpuThread || track.tid != *s.thread) continue;
    }
    if (name_re && !cached_search(name_hits, *name_re, name(t))) continue;
    if (not_name_re && cached_search(not_name_hits, *not_name_re, name(t))) continue;
    if (annotation_re || not_annotation_re || category_re || not_category_re || s.steps) {
      const AnnotationIndex a = enclosing_annotation(t);
      if (annotation_re && (a == kNoIndex || !inside(a, annotation_hit, annotation_name_hits, ann.name,
                                                      *annotation_re, false))) {
        continue;
      }
      if (not_annotation_re && a != kNoIndex &&
          inside(a, not_annotation_hit, not_annotation_name_hits, ann.name, *not_annotation_re, false)) {
        continue;
      }
      if (category_re &&
          (a == kNoIndex || !inside(a, category_hit, category_hits, ann.category, *category_re, true))) {
        continue;
      }
      if (not_category_re && a != kNoIndex &&
          inside(a, not_category_hit, not_category_hits, ann.category, *not_category_re, true)) {
        continue;
      }
      if (s.steps) {
        if (a == kNoIndex || step_of_annotation_[a] == kNoValue) continue;
        const std::int64_t step = step_of_annotation_[a];
        if (step < s.steps->first || step > s.steps->second) continue;
      }
    }
    out.push_back(t);
  }
  return out;
}

TransformEffect scale(DependencyGraph& graph, const std::vector<TaskId>& tasks, double ratio, TimeNs add) {
  TransformEffect e;
  e.tasks = tasks.size();
  e.time_before = summed_duration(graph, tasks);
  // Composes with earlier transforms: a task already at ×0.5 scaled by ×0.5 runs at ×0.25.
  for (TaskId t : tasks) {
    graph.scale(t, graph.ratio(t) * ratio,
                limits::add_ns(limits::saturated_ns(static_cast<double>(graph.add(t)) * ratio), add));
  }
  e.time_after = summed_duration(graph, tasks);
  e.detail = add == 0 ? fmt::format("×{:.4g}", ratio) : fmt::format("×{:.4g} {:+} ns", ratio, add);
  return e;
}

TransformEffect scale_off_cpu(DependencyGraph& graph, const std::vector<TaskId>& tasks, double ratio) {
  TransformEffect e;
  e.tasks = tasks.size();
  e.time_before = summed_duration(graph, tasks);
  for (TaskId t : tasks) {
    const double share = graph.cpu_share(t);
    const double r = share + (1 - share) * ratio;
    graph.scale(t, graph.ratio(t) * r, limits::saturated_ns(static_cast<double>(graph.add(t)) * r));
  }
  e.time_after = summed_duration(graph, tasks);
  e.detail = fmt::format("time off the CPU ×{:.4g}", ratio);
  return e;
}

TransformEffect set_duration(DependencyGraph& graph, const TaskSelection& selection, const std::vector<TaskId>& tasks,
                             const CostModel& model) {
  TransformEffect e;
  e.tasks = tasks.size();
  e.time_before = summed_duration(graph, tasks);
  const Trace& trace = selection.trace();
  const auto& ops = trace.gpu_ops();
  for (TaskId t : tasks) {
    TaskCost cost;
    cost.measured = graph.duration(t);
    const std::uint32_t row = graph.source_row(t);
    if (is_gpu_task(graph.kind(t)) && row != kNoIndex) {
      if (ops.launch[row] != 0) cost.launch = trace.launch_configs()[ops.launch[row]];
      cost.bytes = ops.bytes[row];
    }
    graph.scale(t, 0.0, predict_duration(model, cost));
  }
  e.time_after = summed_duration(graph, tasks);
  e.detail = describe(model);
  return e;
}

TransformEffect remove(DependencyGraph& graph, const TaskSelection& selection, const std::vector<TaskId>& tasks,
                       bool with_launches) {
  TransformEffect e;
  e.time_before = summed_duration(graph, tasks);
  std::size_t launches = 0;
  for (TaskId t : tasks) {
    if (with_launches && selection.launcher(t) != kNoTask && !graph.removed(selection.launcher(t))) {
      e.time_before += graph.duration(selection.launcher(t));
      remove_api_call(graph, selection.launcher(t));
      ++launches;
    }
    remove_task(graph, t);
  }
  e.tasks = tasks.size() + launches;
  e.time_after = 0;
  if (with_launches) e.detail = fmt::format("with {} launch calls", launches);
  return e;
}

TransformEffect fuse(DependencyGraph& graph, const TaskSelection& selection, const std::vector<TaskId>& tasks,
                     bool per_step, bool keep_launch, const std::optional<CostModel>& model, std::string_view name) {
  TransformEffect e;
  e.tasks = tasks.size();
  std::map<std::int64_t, std::vector<TaskId>> groups;
  for (TaskId t : tasks) {
    const std::int64_t key = per_step ? selection.step(t).value_or(kNoValue) : 0;
    groups[key].push_back(t);
  }
  std::size_t fused = 0;
  for (auto& [key, members] : groups) {
    std::sort(members.begin(), members.end(), [&](TaskId a, TaskId b) {
      return graph.measured_start(a) != graph.measured_start(b) ? graph.measured_start(a) < graph.measured_start(b)
                                                                : a < b;
    });
    const TimeNs sum = summed_duration(graph, members);
    e.time_before += sum;
    // Launch cost is counted with the tasks it launched, so the report shows what fusing saved.
    for (TaskId t : members) {
      if (selection.launcher(t) != kNoTask && !graph.removed(selection.launcher(t))) {
        e.time_before += graph.duration(selection.launcher(t));
      }
    }
    const TaskId survivor = members.front();
    TaskCost cost;
    cost.measured = sum;
    const TimeNs fused_duration = model ? predict_duration(*model, cost) : sum;
    graph.scale(survivor, 0.0, fused_duration);
    e.time_after += fused_duration;
    for (std::size_t i = 1; i < members.size(); ++i) {
      const TaskId t = members[i];
      if (selection.launcher(t) != kNoTask && !graph.removed(selection.launcher(t))) {
        remove_api_call(graph, selection.launcher(t));
      }
      remove_task(graph, t);
    }
    const TaskId survivor_launch = selection.launcher(survivor);
    if (survivor_launch != kNoTask && !graph.removed(survivor_launch)) {
      if (keep_launch) {
        e.time_after += graph.duration(survivor_launch);
      } else {
        remove_api_call(graph, survivor_launch);
      }
    }
    ++fused;
  }
  e.detail = fmt::format("{} tasks into {} '{}'", tasks.size(), fused, name);
  return e;
}

CostModel resolve_cost_model(const CostModelSpec& spec, const Trace& trace, const SourcePosition& where) {
  if (!spec.wave_scaling_to) {
    return std::visit([](const auto& m) -> CostModel { return m; }, spec.fixed);
  }
  const auto destination = find_device(*spec.wave_scaling_to);
  if (!destination) {
    throw TransformError(fmt::format("{}: unknown GPU '{}' (known: {})", location(where), *spec.wave_scaling_to,
                                     device_names()));
  }
  std::optional<DeviceSpec> origin;
  if (spec.wave_scaling_from) {
    origin = find_device(*spec.wave_scaling_from);
  } else if (!trace.devices().empty()) {
    origin = device_from_trace(trace.devices().front());
  }
  if (!origin) {
    const std::string traced = trace.devices().empty() ? "the trace has no GPU" :
                                                         fmt::format("'{}' is not in the device table and the trace "
                                                                     "lacks its SMs, clock or bandwidth",
                                                                     trace.devices().front().name);
    throw TransformError(fmt::format("{}: wave scaling needs the traced GPU: {}; name it with -p from=GPU (known: {})",
                                     location(where), traced, device_names()));
  }
  return WaveScalingCost{*origin, *destination};
}

namespace {

// The cores the traced job could run on (meta cpu_cores, written by `dreamscope trace`);
// 0 when the trace does not say (an imported trace).
std::int64_t traced_machine_cores(const Trace& trace) { return trace.cpu_cores(); }

// Turns on core sharing for the prediction (`cores` as a scenario writes it) and, once per
// prediction, makes the CPU tasks their work at full speed so that sharing the cores again
// in the simulation gives the measured timing back. Returns what the report says of it.
std::string share_machine_cores(std::int64_t cores_spec, const TaskSelection& selection, DependencyGraph& graph,
                                AppliedScenario& applied) {
  if (cores_spec == 0) return "";
  const std::int64_t cores = cores_spec == kTracedMachineCores ? traced_machine_cores(selection.trace()) : cores_spec;
  if (cores <= 0) return ", a core per thread (the trace does not say how many its machine had)";
  applied.cpu_cores = static_cast<std::size_t>(cores);
  const CpuPools pools = machine_pools(selection.trace(), graph, applied.cpu_cores);
  std::string detail = fmt::format("; {} cores{}{}", cores, pools.pools > 1 ? " per machine" : "",
                                   cores_spec == kTracedMachineCores ? " (the traced machine's)" : "");
  if (!applied.contention_removed) {
    applied.contention_removed = true;
    const ContentionRemoved removed = remove_measured_contention(graph, pools);
    if (removed.tasks > 0 && removed.time_before > 0) {
      detail += fmt::format(", {} tasks' waits for a core taken out (−{:.1f} %)", removed.tasks,
                            100.0 * static_cast<double>(removed.time_before - removed.time_after) /
                                static_cast<double>(removed.time_before));
    }
  }
  return detail;
}

// A resource named in a scenario: "thread:TID" and "stream:ID" are the trace's (or an earlier
// transform's); any other name is a new resource, created by the edit unless one of that
// name was already added.
struct NamedResource {
  ResourceId id = kNoIndex;
  std::optional<TrackInfo> create;
};

NamedResource resolve_resource(const std::string& spec, const TaskSelection& selection, const DependencyGraph& graph,
                               const std::string& where) {
  const auto& tracks = selection.trace().tracks();
  auto number_after = [&](std::string_view head) -> std::optional<std::int64_t> {
    if (!spec.starts_with(head)) return std::nullopt;
    std::int64_t v = 0;
    const char* b = spec.data() + head.size();
    const auto [p, ec] = std::from_chars(b, spec.data() + spec.size(), v);
    if (ec != std::errc() || p != spec.data() + spec.size()) return std::nullopt;
    return v;
  };
  const auto tid = number_after("thread:");
  const auto stream = number_after("stream:");
  if (tid || stream) {
    for (ResourceId r = 0; r < tracks.size(); ++r) {
      if (tid && tracks[r].kind == TrackKind::CpuThread && tracks[r].tid == *tid) return {r, std::nullopt};
      if (stream && tracks[r].kind == TrackKind::GpuStream && tracks[r].stream == *stream) return {r, std::nullopt};
    }
    throw TransformError(fmt::format("{}: the trace has no {}", where, spec));
  }
  const auto& added = graph.added_resources();
  for (std::size_t i = 0; i < added.size(); ++i) {
    if (added[i].name == spec) return {static_cast<ResourceId>(tracks.size() + i), std::nullopt};
  }
  TrackInfo track;
  track.name = spec;
  // "stream:"-less names of links and pools are CPU-side resources unless named like a stream.
  track.kind = spec.starts_with("link:") || spec.starts_with("gpu:") ? TrackKind::GpuStream : TrackKind::CpuThread;
  if (!tracks.empty()) track.process = tracks.front().process;
  return {kNoIndex, track};
}

// What one worker does for one item: the selected tasks of a thread that share the payload
// (batch id) of their enclosing annotation, such as fetch(i) and prep(i); without a payload,
// each enclosing annotation is an item.
std::vector<std::vector<TaskId>> work_items(const TaskSelection& selection, const std::vector<TaskId>& tasks) {
  const Trace& trace = selection.trace();
  std::map<std::tuple<ResourceId, bool, std::int64_t>, std::size_t> index;
  std::vector<std::vector<TaskId>> items;
  for (TaskId t : tasks) {
    const AnnotationIndex a = selection.enclosing_annotation(t);
    std::tuple<ResourceId, bool, std::int64_t> key{selection.graph().resource(t), false, static_cast<std::int64_t>(t)};
    if (a != kNoIndex) {
      const std::int64_t payload = trace.annotations().payload[a];
      // Without a payload the annotation row is the item, kept apart from task-id keys.
      if (payload != kNoValue) {
        key = {std::get<0>(key), true, payload};
      } else {
        key = {std::get<0>(key), false, static_cast<std::int64_t>(a) + (std::int64_t{1} << 40)};
      }
    }
    const auto [it, fresh] = index.emplace(key, items.size());
    if (fresh) items.emplace_back();
    items[it->second].push_back(t);
  }
  return items;
}

} // namespace

void apply(const std::vector<Transform>& transforms, const TaskSelection& selection, DependencyGraph& graph,
           AppliedScenario& applied) {
  // `selection` looks at the graph it was built with; this graph may already have tasks
  // removed or renumbered by earlier transforms or scenarios. `pick_original` gives the ids
  // the selection knows, `pick` the ids in the graph as it is now.
  auto pick_original = [&](const Selector& selector) {
    auto tasks = selection.select(selector);
    std::erase_if(tasks, [&](TaskId t) { return applied.to_current(t) == kNoTask || graph.removed(applied.to_current(t)); });
    return tasks;
  };
  auto pick = [&](const Selector& selector) {
    auto tasks = pick_original(selector);
    for (TaskId& t : tasks) t = applied.to_current(t);
    return tasks;
  };
  // Primitives that look tasks up in `selection` (launch calls, names, steps) by the graph's
  // ids cannot run once a structural edit has renumbered them.
  auto needs_original_ids = [&](const SourcePosition& where, const std::string& op) {
    if (!applied.current.empty()) {
      throw TransformError(fmt::format("{}: '{}' after a move or insert is not supported: put it before the structural "
                                       "transforms (or the scenario that has them)",
                                       location(where), op));
    }
  };
  for (const auto& transform : transforms) {
    TransformEffect effect;
    const SourcePosition& where = transform.where;
    // Every error a transform raises names the scenario line it came from.
    try {
      std::visit(
          [&](const auto& spec) {
            using Spec = std::decay_t<decltype(spec)>;
            if constexpr (std::is_same_v<Spec, ScaleSpec>) {
              effect = spec.off_cpu_only ? scale_off_cpu(graph, pick(spec.select), spec.ratio)
                                         : scale(graph, pick(spec.select), spec.ratio, spec.add);
            } else if constexpr (std::is_same_v<Spec, SetDurationSpec>) {
              needs_original_ids(where, transform.op);
              const CostModel model = resolve_cost_model(spec.model, selection.trace(), where);
              effect = set_duration(graph, selection, pick(spec.select), model);
            } else if constexpr (std::is_same_v<Spec, RemoveSpec>) {
              needs_original_ids(where, transform.op);
              effect = remove(graph, selection, pick(spec.select), spec.with_launches);
              // A run with no work left predicts 0 ns, which no question has as its answer:
              // an empty selector (`select = {}`) removes everything, and says so here.
              bool any_left = false;
              for (TaskId t = 0; t < graph.task_count() && !any_left; ++t) any_left = !graph.removed(t);
              if (!any_left) {
                throw ScenarioError(where, "this 'remove' leaves no task of the trace: nothing is left to simulate "
                                           "(an empty selector selects every task)");
              }
            } else if constexpr (std::is_same_v<Spec, FuseSpec>) {
              needs_original_ids(where, transform.op);
              std::optional<CostModel> model;
              if (spec.duration) model = resolve_cost_model(*spec.duration, selection.trace(), where);
              effect = fuse(graph, selection, pick(spec.select), spec.per_step, spec.keep_launch, model, spec.name);
            } else if constexpr (std::is_same_v<Spec, SetPolicySpec>) {
              if (spec.policy == "gpu_first") {
                applied.policy = std::make_unique<GpuFirstPolicy>();
              } else {
                applied.policy = std::make_unique<MeasuredOrderPolicy>();
              }
              effect.detail = spec.policy;
            } else if constexpr (std::is_same_v<Spec, MoveSpec>) {
              const auto original = pick_original(spec.select);
              const std::int64_t cores = spec.cores == kTracedMachineCores ? traced_machine_cores(selection.trace()) : spec.cores;
              if (cores > 0) applied.cpu_cores = static_cast<std::size_t>(cores);
              EditResult edit;
              if (original.empty()) {
                effect.detail = "nothing selected";
              } else if (spec.pool > 0) {
                auto items = work_items(selection, original);
                for (auto& item : items) {
                  for (TaskId& t : item) t = applied.to_current(t);
                }
                TrackInfo like = selection.trace().tracks()[selection.graph().resource(original.front())];
                like.name = "worker-";
                effect = move_to_pool(graph, items, static_cast<std::size_t>(spec.pool), like, edit,
                                     static_cast<std::size_t>(spec.ahead));
                if (cores > 0) {
                  effect.detail += fmt::format(", every thread sharing {} cores{}", cores,
                                               spec.cores == kTracedMachineCores ? " (the traced machine's)" : "");
                } else if (spec.cores == kTracedMachineCores) {
                  effect.detail += ", a core per thread (the trace does not say how many its machine had)";
                }
                applied.renumbered(edit);
              } else {
                NamedResource r = resolve_resource(spec.resource, selection, graph, location(where));
                std::vector<TaskId> tasks;
                for (TaskId t : original) tasks.push_back(applied.to_current(t));
                if (r.create) {
                  // A new resource first, then the move onto it: two renumberings.
                  GraphEdit add;
                  add.add_resource(*r.create);
                  const EditResult added = graph.apply(add);
                  applied.renumbered(added);
                  r.id = added.resources.front();
                  for (TaskId& t : tasks) t = added.old_to_new[t];
                }
                effect = move(graph, tasks, r.id, edit);
                applied.renumbered(edit);
              }
            } else if constexpr (std::is_same_v<Spec, InsertSpec>) {
              // `groups` per step (a step's gradient buckets), or over the run when the trace
              // has no steps: the `after` tasks of a step, in measured end order, split evenly.
              const auto original = pick_original(spec.after);
              std::map<std::int64_t, std::vector<TaskId>> by_step;
              for (TaskId t : original) by_step[selection.step(t).value_or(kNoValue)].push_back(applied.to_current(t));
              std::vector<std::vector<TaskId>> groups;
              for (auto& [step, tasks] : by_step) {
                std::stable_sort(tasks.begin(), tasks.end(), [&](TaskId x, TaskId y) {
                  return graph.measured_end(x) < graph.measured_end(y);
                });
                const std::size_t n = std::min<std::size_t>(static_cast<std::size_t>(spec.groups), tasks.size());
                for (std::size_t g = 0; g < n; ++g) {
                  groups.emplace_back(tasks.begin() + static_cast<std::ptrdiff_t>(g * tasks.size() / n),
                                      tasks.begin() + static_cast<std::ptrdiff_t>((g + 1) * tasks.size() / n));
                }
              }
              const auto before = spec.before ? pick(*spec.before) : std::vector<TaskId>{};
              const NamedResource r = resolve_resource(spec.resource, selection, graph, location(where));
              const CostModel model = resolve_cost_model(spec.duration, selection.trace(), where);
              TaskCost cost;
              cost.bytes = spec.bytes / std::max<std::int64_t>(spec.groups, 1);
              const std::vector<TimeNs> durations(groups.size(), predict_duration(model, cost));
              EditResult edit;
              effect = insert(graph, r.id, r.create, spec.name, groups, before, durations, edit, location(where));
              if (!edit.old_to_new.empty()) applied.renumbered(edit);
              effect.detail += fmt::format(", {}", describe(model));
            } else if constexpr (std::is_same_v<Spec, MatchRanksSpec>) {
              needs_original_ids(where, transform.op);
              const std::string shared = share_machine_cores(spec.cores, selection, graph, applied);
              effect = match_ranks(graph, selection, pick(spec.select), spec.rank);
              effect.detail += shared;
            } else if constexpr (std::is_same_v<Spec, AddEdgeSpec>) {
              effect = add_edge(graph, pick(spec.from), pick(spec.to), spec.delay, location(where));
            } else if constexpr (std::is_same_v<Spec, RemoveEdgeSpec>) {
              effect = remove_edge(graph, pick(spec.from), pick(spec.to));
            } else {
              // A spec added to TransformSpec without a branch here would compile and do nothing.
              static_assert(sizeof(Spec) == 0, "apply_transforms: a TransformSpec alternative has no branch");
            }
          },
          transform.spec);
    } catch (const TransformError& e) {
      const std::string at = location(where);
      if (std::string_view(e.what()).starts_with(at)) throw;
      throw TransformError(fmt::format("{}: {}", at, e.what()));
    }
    effect.op = transform.op;
    effect.where = where;
    applied.effects.push_back(std::move(effect));
  }
}

} // namespace dreamscope::whatif
