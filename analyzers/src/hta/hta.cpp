// Holistic Trace Analysis's analyses, computed the way HTA computes them (definitions in
// ../shared/data/README.md), so that the numbers match HTA's on the same Kineto trace.
#include "dreamscope/analyzers/hta.h"

#include "common/intervals.h"
#include "hta/kineto_time.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <array>
#include <bit>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>

namespace dreamscope::analyzers {

namespace {

using detail::Interval;
using detail::us_as_parsed;

bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

// HTA works on Kineto's µs as float64: end = floor(ts + dur), ts = ceil(ts).
struct UsSpan {
  TimeUs ts;
  TimeUs end;
};
UsSpan to_hta_us(TimeNs start, TimeNs end) {
  const double ts = us_as_parsed(start);
  const double dur = us_as_parsed(end - start);
  return {static_cast<TimeUs>(std::ceil(ts)), static_cast<TimeUs>(std::floor(ts + dur))};
}

bool is_launch_call(std::string_view name) {
  return name == "cudaLaunchKernel" || name == "cudaLaunchKernelExC" || name == "cudaMemcpyAsync" ||
         name == "cudaMemsetAsync" || name.starts_with("runFunction");
}

struct GpuEvent {
  TrackId track;
  TimeUs ts, end;
  StringId name;
  KernelType type;
  GpuOpKind kind;
  std::int64_t correlation;
  CudaApiIndex call; // the CUDA API row with the same correlation, or kNoIndex
  std::int64_t bytes;
};

struct AnnotationEvent {
  TimeUs ts, end;
  AnnotationIndex row;
};

// The events HTA keeps after parsing and its ProfilerStep filter, in µs.
struct HtaEvents {
  std::vector<GpuEvent> gpu;               // in trace order: by stream, then start
  std::vector<UsSpan> calls;               // per cuda_api row
  std::vector<bool> call_kept;             // per cuda_api row
  std::vector<AnnotationEvent> annotations; // kept annotations, any track
  std::int64_t profiler_steps = 0;
  bool filtered = false;
  TimeUs last_step_start = 0;
  // Whether HTA's step filter keeps a CPU event that starts at ts.
  bool cpu_kept(TimeUs ts) const { return !filtered || ts < last_step_start; }
};

HtaEvents prepare(const Trace& trace, const HtaOptions& options) {
  HtaEvents ev;
  const auto& api = trace.cuda_api();
  const auto& ann = trace.annotations();
  const auto& gpu = trace.gpu_ops();
  const auto& tracks = trace.tracks();

  std::set<std::string_view> step_names;
  TimeUs last_step_start = std::numeric_limits<TimeUs>::min();
  for (AnnotationIndex i{0}; i < ann.size(); ++i) {
    if (tracks[ann.track[i]].kind != TrackKind::CpuThread) continue;
    std::string_view name = trace.str(ann.name[i]);
    if (!name.starts_with("ProfilerStep#")) continue;
    step_names.insert(name);
    last_step_start = std::max(last_step_start, to_hta_us(ann.start[i], ann.end[i]).ts);
  }
  ev.profiler_steps = static_cast<std::int64_t>(step_names.size());
  ev.filtered = options.profiler_step_filter && step_names.size() >= 2;
  ev.last_step_start = last_step_start;
  auto cpu_kept = [&](TimeUs ts) { return ev.cpu_kept(ts); };

  ev.calls.resize(api.size());
  ev.call_kept.resize(api.size());
  for (CudaApiIndex i{0}; i < api.size(); ++i) {
    ev.calls[i] = to_hta_us(api.start[i], api.end[i]);
    ev.call_kept[i] = cpu_kept(ev.calls[i].ts);
  }
  // Kineto's gpu_user_annotation has no stream argument, so HTA sees it as a CPU event.
  for (AnnotationIndex i{0}; i < ann.size(); ++i) {
    UsSpan s = to_hta_us(ann.start[i], ann.end[i]);
    if (cpu_kept(s.ts)) ev.annotations.push_back({s.ts, s.end, i});
  }

  std::unordered_map<StringId, KernelType> type_of;
  ev.gpu.reserve(gpu.size());
  for (GpuOpIndex i{0}; i < gpu.size(); ++i) {
    // An op whose input named no stream is a CPU event to HTA (stream -1), in no GPU analysis.
    if (tracks[gpu.track[i]].stream == kNoValue) continue;
    CudaApiIndex call = kNoIndex;
    if (gpu.correlation[i] != kNoValue) {
      if (auto c = trace.cuda_api_with_correlation(gpu.correlation[i])) call = *c;
    }
    if (ev.filtered) {
      // HTA inner-joins GPU events with the kept CPU events on correlation; a GPU event
      // without one carries -1, as every CPU operator does, so it survives the join.
      if (gpu.correlation[i] != kNoValue && (call == kNoIndex || !ev.call_kept[call])) continue;
    }
    auto [it, inserted] = type_of.emplace(gpu.name[i], KernelType::Other);
    if (inserted) it->second = classify_kernel(trace.str(gpu.name[i]));
    // HTA tells copies and syncs by Kineto's names for them ("Memcpy HtoD (Pinned ->
    // Device)", "Stream Wait Event"); other sources name them otherwise (the tracer's
    // "memcpy HtoD", "cudaStreamWaitEvent"), so their kind says what HTA would have seen.
    KernelType type = it->second;
    if (gpu.kind[i] == GpuOpKind::Memcpy || gpu.kind[i] == GpuOpKind::Memset) type = KernelType::Memory;
    if (gpu.kind[i] == GpuOpKind::Sync) type = KernelType::Other;
    UsSpan s = to_hta_us(gpu.start[i], gpu.end[i]);
    ev.gpu.push_back({gpu.track[i], s.ts, s.end, gpu.name[i], type, gpu.kind[i], gpu.correlation[i], call, gpu.bytes[i]});
  }
  return ev;
}

std::vector<Interval> merged_of(const HtaEvents& ev, std::optional<KernelType> type) {
  std::vector<Interval> v;
  for (const GpuEvent& g : ev.gpu) {
    if (!type || g.type == *type) v.push_back({g.ts, g.end});
  }
  return detail::merge_intervals(std::move(v));
}

TemporalBreakdown temporal(const HtaEvents& ev) {
  TemporalBreakdown t;
  auto all = merged_of(ev, std::nullopt);
  if (all.empty()) return t;
  // HTA takes the first merged group's start and the last one's end.
  t.kernel_time = all.back().end - all.front().start;
  t.idle = t.kernel_time - detail::total_length(all);
  t.compute = detail::total_length(merged_of(ev, KernelType::Computation));
  t.non_compute = t.kernel_time - t.compute - t.idle;
  if (t.kernel_time > 0) {
    const double k = static_cast<double>(t.kernel_time);
    t.idle_pct = detail::round_to(100.0 * static_cast<double>(t.idle) / k, 2);
    t.compute_pct = detail::round_to(100.0 * static_cast<double>(t.compute) / k, 2);
    t.non_compute_pct = detail::round_to(100.0 * static_cast<double>(t.non_compute) / k, 2);
  }
  return t;
}

std::vector<StreamIdleTime> idle_time(const Trace& trace, const HtaEvents& ev, const HtaOptions& options) {
  std::map<TrackId, std::vector<const GpuEvent*>> by_stream;
  for (const GpuEvent& g : ev.gpu) {
    if (g.kind != GpuOpKind::Sync) by_stream[g.track].push_back(&g);
  }
  std::vector<StreamIdleTime> out;
  for (auto& [track, events] : by_stream) {
    std::stable_sort(events.begin(), events.end(), [](const GpuEvent* a, const GpuEvent* b) { return a->ts < b->ts; });
    const TrackInfo& info = trace.tracks()[track];
    StreamIdleTime s;
    s.device = info.device < trace.devices().size() ? trace.devices()[info.device].ordinal : kNoValue;
    s.stream = info.stream;
    if (options.idle_intervals && !events.empty()) s.intervals.reserve(events.size() - 1);
    for (std::size_t i = 1; i < events.size(); ++i) {
      const TimeUs previous_end = events[i - 1]->end;
      const TimeUs gap = events[i]->ts - previous_end;
      const bool host_wait = events[i]->call != kNoIndex && ev.calls[events[i]->call].ts > previous_end;
      IdleCategory category = IdleCategory::Other;
      if (host_wait) {
        s.host_wait += gap;
        category = IdleCategory::HostWait;
      } else if (gap < options.consecutive_kernel_delay) {
        s.kernel_wait += gap;
        category = IdleCategory::KernelWait;
      } else {
        s.other += gap;
      }
      if (options.idle_intervals) s.intervals.push_back({gap, category});
    }
    if (const TimeUs total = s.total(); total != 0) {
      const double t = static_cast<double>(total);
      s.host_wait_ratio = detail::round_to(static_cast<double>(s.host_wait) / t, 2);
      s.kernel_wait_ratio = detail::round_to(static_cast<double>(s.kernel_wait) / t, 2);
      s.other_ratio = detail::round_to(static_cast<double>(s.other) / t, 2);
    }
    out.push_back(s);
  }
  return out;
}

KernelBreakdown kernel_breakdown(const Trace& trace, const HtaEvents& ev, const HtaOptions& options) {
  KernelBreakdown out;
  std::vector<KernelType> types{KernelType::Computation, KernelType::Communication};
  if (options.include_memory_kernels) types.push_back(KernelType::Memory);

  // Time under each combination of types, over each type's merged intervals.
  struct Edge {
    TimeUs time;
    int delta;
    unsigned bit;
  };
  std::vector<Edge> edges;
  for (std::size_t t = 0; t < types.size(); ++t) {
    for (const Interval& i : merged_of(ev, types[t])) {
      edges.push_back({i.start, +1, 1u << t});
      edges.push_back({i.end, -1, 1u << t});
    }
  }
  std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) { return a.time < b.time; });
  std::map<unsigned, TimeUs> time_by_mask;
  std::array<int, 3> running{};
  for (std::size_t i = 0; i + 1 < edges.size(); ++i) {
    running[static_cast<std::size_t>(std::countr_zero(edges[i].bit))] += edges[i].delta;
    unsigned mask = 0;
    for (std::size_t t = 0; t < types.size(); ++t) {
      if (running[t] > 0) mask |= 1u << t;
    }
    if (mask != 0) time_by_mask[mask] += edges[i + 1].time - edges[i].time;
  }
  TimeUs total = 0;
  for (const auto& [mask, time] : time_by_mask) total += time;
  for (const auto& [mask, time] : time_by_mask) {
    if (time == 0) continue;
    std::string label;
    for (std::size_t t = 0; t < types.size(); ++t) {
      if (!(mask & (1u << t))) continue;
      if (!label.empty()) label += " overlapping ";
      label += to_string(types[t]);
    }
    out.by_type.push_back({label, time, total > 0 ? detail::round_to(100.0 * static_cast<double>(time) / static_cast<double>(total), 1) : 0.0});
  }
  std::sort(out.by_type.begin(), out.by_type.end(), [](const KernelTypeTime& a, const KernelTypeTime& b) {
    return a.sum != b.sum ? a.sum > b.sum : a.kernel_type < b.kernel_type;
  });

  std::map<StringId, KernelNameStats> by_name;
  std::map<StringId, double> sum_squares;
  for (const GpuEvent& g : ev.gpu) {
    if (std::find(types.begin(), types.end(), g.type) == types.end()) continue;
    const TimeUs dur = g.end - g.ts;
    auto [it, inserted] = by_name.try_emplace(g.name);
    KernelNameStats& k = it->second;
    if (inserted) {
      k.name = std::string(trace.str(g.name));
      k.type = g.type;
      k.min = dur;
      k.max = dur;
    }
    ++k.count;
    k.sum += dur;
    k.min = std::min(k.min, dur);
    k.max = std::max(k.max, dur);
    sum_squares[g.name] += static_cast<double>(dur) * static_cast<double>(dur);
  }
  for (auto& [id, k] : by_name) {
    const double n = static_cast<double>(k.count);
    k.mean = static_cast<double>(k.sum) / n;
    if (k.count > 1) {
      const double var = (sum_squares[id] - n * k.mean * k.mean) / (n - 1);
      k.stddev = std::sqrt(std::max(var, 0.0));
    }
    out.by_name.push_back(std::move(k));
  }
  std::sort(out.by_name.begin(), out.by_name.end(), [](const KernelNameStats& a, const KernelNameStats& b) {
    if (a.type != b.type) return a.type < b.type;
    if (a.sum != b.sum) return a.sum > b.sum;
    return a.name < b.name;
  });
  return out;
}

std::optional<double> comm_comp_overlap(const HtaEvents& ev) {
  auto comm = merged_of(ev, KernelType::Communication);
  const TimeUs comm_time = detail::total_length(comm);
  if (comm_time == 0) return std::nullopt;
  auto comp = merged_of(ev, KernelType::Computation);
  return 100.0 * static_cast<double>(detail::intersection_length(comp, comm)) / static_cast<double>(comm_time);
}

std::vector<KernelLaunch> kernel_launches(const Trace& trace, const HtaEvents& ev) {
  std::vector<KernelLaunch> out;
  const auto& api = trace.cuda_api();
  for (const GpuEvent& g : ev.gpu) {
    if (g.call == kNoIndex || !ev.call_kept[g.call]) continue;
    std::string_view call_name = trace.str(api.name[g.call]);
    if (!is_launch_call(call_name)) continue;
    const UsSpan& c = ev.calls[g.call];
    out.push_back({g.correlation, std::string(call_name), std::string(trace.str(g.name)), c.end - c.ts,
                   g.end - g.ts, std::max<TimeUs>(0, g.ts - c.end)});
  }
  std::sort(out.begin(), out.end(), [](const KernelLaunch& a, const KernelLaunch& b) { return a.correlation < b.correlation; });
  return out;
}

LaunchSummary summarize_launches(const std::vector<KernelLaunch>& launches) {
  LaunchSummary s;
  s.count = static_cast<std::int64_t>(launches.size());
  if (launches.empty()) return s;
  double cpu = 0, gpu = 0, delay = 0;
  for (const KernelLaunch& l : launches) {
    cpu += static_cast<double>(l.cpu_duration);
    gpu += static_cast<double>(l.gpu_duration);
    delay += static_cast<double>(l.launch_delay);
    s.max_launch_delay = std::max(s.max_launch_delay, l.launch_delay);
    if (l.gpu_duration < l.cpu_duration) ++s.short_kernels;
  }
  const double n = static_cast<double>(launches.size());
  s.mean_cpu_duration = cpu / n;
  s.mean_gpu_duration = gpu / n;
  s.mean_launch_delay = delay / n;
  return s;
}

std::vector<StreamQueueLength> queue_length(const Trace& trace, const HtaEvents& ev) {
  const auto& api = trace.cuda_api();
  struct Change {
    TimeUs ts;
    int delta;
  };
  std::map<TrackId, std::vector<Change>> by_stream;
  for (const GpuEvent& g : ev.gpu) {
    if (g.call == kNoIndex || !ev.call_kept[g.call] || !is_launch_call(trace.str(api.name[g.call]))) continue;
    by_stream[g.track].push_back({ev.calls[g.call].ts, +1});
    by_stream[g.track].push_back({g.ts, -1});
  }
  std::vector<StreamQueueLength> out;
  for (auto& [track, changes] : by_stream) {
    // On a tie the launch counts first: a kernel cannot start before it is enqueued.
    std::stable_sort(changes.begin(), changes.end(), [](const Change& a, const Change& b) {
      return a.ts != b.ts ? a.ts < b.ts : a.delta > b.delta;
    });
    const TrackInfo& info = trace.tracks()[track];
    StreamQueueLength q;
    q.device = info.device < trace.devices().size() ? trace.devices()[info.device].ordinal : kNoValue;
    q.stream = info.stream;
    std::int64_t length = 0;
    double sum = 0;
    q.series.reserve(changes.size());
    for (const Change& c : changes) {
      length += c.delta;
      q.series.push_back({c.ts, length});
      q.max = std::max(q.max, length);
      sum += static_cast<double>(length);
    }
    q.mean = changes.empty() ? 0 : sum / static_cast<double>(changes.size());
    out.push_back(std::move(q));
  }
  return out;
}

// Calls f(annotation) for each kept user annotation HTA groups on that side.
template <class F>
void for_each_user_annotation(const Trace& trace, const HtaEvents& ev, bool gpu_side, F&& f) {
  const auto& ann = trace.annotations();
  const bool kineto = trace.source() == TraceSource::Kineto;
  for (const AnnotationEvent& a : ev.annotations) {
    const bool on_gpu = trace.tracks()[ann.track[a.row]].kind == TrackKind::GpuStream;
    if (on_gpu != gpu_side) continue;
    std::string_view category = trace.str(ann.category[a.row]);
    // Kineto marks record_function ranges user_annotation (gpu_user_annotation on the GPU
    // side); other sources have only user ranges there (NVTX, dreamscope annotations).
    if (kineto && category != (gpu_side ? "gpu_user_annotation" : "user_annotation")) continue;
    f(a);
  }
}

AnnotationDurations annotation_durations(const Trace& trace, const HtaEvents& ev, bool gpu_side) {
  const auto& ann = trace.annotations();
  AnnotationDurations out;
  std::unordered_map<StringId, std::uint32_t> index_of;
  for_each_user_annotation(trace, ev, gpu_side, [&](const AnnotationEvent& a) {
    auto [it, inserted] = index_of.emplace(ann.name[a.row], static_cast<std::uint32_t>(out.names.size()));
    if (inserted) out.names.emplace_back(trace.str(ann.name[a.row]));
    out.name_index.push_back(it->second);
    out.dur.push_back(a.end - a.ts);
  });
  return out;
}

std::vector<AnnotationTotal> annotation_totals(const Trace& trace, const HtaEvents& ev, bool gpu_side) {
  const auto& ann = trace.annotations();
  std::map<std::string_view, AnnotationTotal> by_name;
  for_each_user_annotation(trace, ev, gpu_side, [&](const AnnotationEvent& a) {
    std::string_view name = trace.str(ann.name[a.row]);
    AnnotationTotal& t = by_name[name];
    t.name = std::string(name);
    ++t.count;
    t.sum += a.end - a.ts;
  });
  std::vector<AnnotationTotal> out;
  for (auto& [name, t] : by_name) out.push_back(std::move(t));
  std::sort(out.begin(), out.end(), [](const AnnotationTotal& a, const AnnotationTotal& b) {
    return a.sum != b.sum ? a.sum > b.sum : a.name < b.name;
  });
  return out;
}

// HTA's ProfilerStep windows, from every ProfilerStep#N on a CPU thread (HTA numbers the
// events when it parses the trace, before its step filter drops any).
class StepWindows {
 public:
  StepWindows(const Trace& trace) {
    const auto& ann = trace.annotations();
    for (AnnotationIndex i{0}; i < ann.size(); ++i) {
      if (trace.tracks()[ann.track[i]].kind != TrackKind::CpuThread) continue;
      std::string_view name = trace.str(ann.name[i]);
      constexpr std::string_view kStep = "ProfilerStep#";
      if (!name.starts_with(kStep) || name.size() == kStep.size()) continue;
      std::int64_t number = 0;
      bool digits = true;
      for (char c : name.substr(kStep.size())) {
        if (c < '0' || c > '9') {
          digits = false;
          break;
        }
        number = number * 10 + (c - '0');
      }
      if (!digits) continue;
      const UsSpan s = to_hta_us(ann.start[i], ann.end[i]);
      windows_.push_back({s.ts, s.end, number});
    }
    std::stable_sort(windows_.begin(), windows_.end(), [](const Window& a, const Window& b) { return a.ts < b.ts; });
    for (std::size_t i = 1; i < windows_.size(); ++i) overlapping_ |= windows_[i].ts < windows_[i - 1].end;
  }

  // The step whose [ts, end) holds t; of several (overlapping steps), the last to start, as
  // HTA's scan over the steps keeps the last match.
  std::int64_t at(TimeUs t) const {
    auto it = std::upper_bound(windows_.begin(), windows_.end(), t, [](TimeUs v, const Window& w) { return v < w.ts; });
    while (it != windows_.begin()) {
      --it;
      if (t < it->end) return it->number;
      if (!overlapping_) break;
    }
    return kNoIteration;
  }

 private:
  struct Window {
    TimeUs ts, end;
    std::int64_t number;
  };
  std::vector<Window> windows_;
  bool overlapping_ = false;
};

// The iteration of each cuda_api row (kNoIteration for a row HTA's step filter dropped: no
// kept GPU op refers to one).
std::vector<std::int64_t> call_iterations(const HtaEvents& ev, const StepWindows& steps) {
  std::vector<std::int64_t> out(ev.calls.size(), kNoIteration);
  for (std::size_t i = 0; i < ev.calls.size(); ++i) {
    if (ev.call_kept[i]) out[i] = steps.at(ev.calls[i].ts);
  }
  return out;
}

// A GPU op's iteration: its launch call's, for an op on a stream > 0 (HTA leaves stream 0,
// Triton's, to CPU operators).
std::int64_t gpu_iteration(const Trace& trace, const GpuEvent& g, const std::vector<std::int64_t>& call_iteration) {
  if (trace.tracks()[g.track].stream <= 0 || g.call == kNoIndex) return kNoIteration;
  return call_iteration[g.call];
}

StragglerEvents straggler_events(const Trace& trace, const HtaEvents& ev) {
  const StepWindows steps(trace);
  const std::vector<std::int64_t> call_iteration = call_iterations(ev, steps);
  std::map<std::int64_t, IterationSpan> spans;
  auto add = [&](std::int64_t iteration, TimeUs ts, TimeUs end) {
    if (iteration == kNoIteration) return;
    auto [it, inserted] = spans.try_emplace(iteration, IterationSpan{iteration, ts, end});
    if (!inserted) {
      it->second.start = std::min(it->second.start, ts);
      it->second.end = std::max(it->second.end, end);
    }
  };
  for (std::size_t i = 0; i < ev.calls.size(); ++i) add(call_iteration[i], ev.calls[i].ts, ev.calls[i].end);
  for (const AnnotationEvent& a : ev.annotations) add(steps.at(a.ts), a.ts, a.end);
  // A GPU op with no stream is a CPU event to HTA (stream -1): numbered by its start.
  const auto& gpu = trace.gpu_ops();
  for (GpuOpIndex i{0}; i < gpu.size(); ++i) {
    if (trace.tracks()[gpu.track[i]].stream != kNoValue) continue;
    const UsSpan s = to_hta_us(gpu.start[i], gpu.end[i]);
    if (ev.cpu_kept(s.ts)) add(steps.at(s.ts), s.ts, s.end);
  }

  StragglerEvents out;
  std::unordered_map<StringId, std::uint32_t> index_of;
  std::vector<const GpuEvent*> comm;
  std::vector<std::int64_t> comm_iteration;
  for (const GpuEvent& g : ev.gpu) {
    const std::int64_t iteration = gpu_iteration(trace, g, call_iteration);
    add(iteration, g.ts, g.end);
    if (iteration <= 0 || !trace.str(g.name).starts_with("ncclKernel")) continue;
    comm.push_back(&g);
    comm_iteration.push_back(iteration);
  }
  std::vector<std::size_t> order(comm.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return comm[a]->ts < comm[b]->ts; });
  for (std::size_t i : order) {
    const GpuEvent& g = *comm[i];
    auto [it, inserted] = index_of.emplace(g.name, static_cast<std::uint32_t>(out.names.size()));
    if (inserted) out.names.emplace_back(trace.str(g.name));
    out.name_index.push_back(it->second);
    out.stream.push_back(trace.tracks()[g.track].stream);
    out.iteration.push_back(comm_iteration[i]);
    out.ts.push_back(g.ts);
    out.dur.push_back(g.end - g.ts);
  }
  for (const auto& [iteration, span] : spans) out.iterations.push_back(span);
  return out;
}

AnnotatedKernels kernels_with_annotations(const Trace& trace, const HtaEvents& ev) {
  AnnotatedKernels out;
  const auto& ann = trace.annotations();
  const bool kineto = trace.source() == TraceSource::Kineto;
  for (AnnotationIndex i{0}; i < ann.size() && !out.has_gpu_annotations; ++i) {
    out.has_gpu_annotations = trace.tracks()[ann.track[i]].kind == TrackKind::GpuStream &&
                              (!kineto || trace.str(ann.category[i]) == "gpu_user_annotation");
  }
  if (!out.has_gpu_annotations) return out;

  // HTA's GPUKernelFilter: on a stream with a correlation, or a sync by its Kineto name.
  std::vector<const GpuEvent*> kernels;
  for (const GpuEvent& g : ev.gpu) {
    std::string_view name = trace.str(g.name);
    if (g.correlation != kNoValue || name == "Event Sync" || name == "Context Sync") kernels.push_back(&g);
  }
  std::stable_sort(kernels.begin(), kernels.end(), [&](const GpuEvent* a, const GpuEvent* b) {
    if (a->ts != b->ts) return a->ts < b->ts;
    return trace.tracks()[a->track].stream < trace.tracks()[b->track].stream;
  });

  // Per track, the kernels in start order and the longest of them (to bound the search).
  struct TrackKernels {
    std::vector<std::size_t> rows; // into kernels, by start
    TimeUs longest = 0;
  };
  std::unordered_map<TrackId, TrackKernels> by_track;
  for (std::size_t r = 0; r < kernels.size(); ++r) {
    TrackKernels& t = by_track[kernels[r]->track];
    t.rows.push_back(r);
    t.longest = std::max(t.longest, kernels[r]->end - kernels[r]->ts);
  }
  std::vector<const AnnotationEvent*> annotations;
  for_each_user_annotation(trace, ev, true, [&](const AnnotationEvent& a) { annotations.push_back(&a); });
  // HTA sorts by duration, longest first, and lets each overlapping annotation overwrite the
  // last, so that a kernel ends with the innermost one. Equal durations: the later row wins.
  std::stable_sort(annotations.begin(), annotations.end(), [](const AnnotationEvent* a, const AnnotationEvent* b) {
    return a->end - a->ts > b->end - b->ts;
  });
  std::vector<AnnotationIndex> annotation_of(kernels.size(), kNoIndex);
  for (const AnnotationEvent* a : annotations) {
    auto t = by_track.find(ann.track[a->row]);
    if (t == by_track.end()) continue;
    const auto& rows = t->second.rows;
    // pandas' overlap of [k0, k1) with [a0, a1): k0 < a1 and a0 < k1; k1 <= k0 + longest,
    // so no kernel that starts at or before a0 - longest can reach past a0.
    const TimeUs from = a->ts - t->second.longest;
    auto it = std::upper_bound(rows.begin(), rows.end(), from, [&](TimeUs v, std::size_t r) { return v < kernels[r]->ts; });
    for (; it != rows.end() && kernels[*it]->ts < a->end; ++it) {
      if (a->ts < kernels[*it]->end) annotation_of[*it] = a->row;
    }
  }

  const StepWindows steps(trace);
  const std::vector<std::int64_t> call_iteration = call_iterations(ev, steps);
  const auto& api = trace.cuda_api();
  std::unordered_map<StringId, std::uint32_t> index_of;
  auto name_index = [&](StringId id) {
    auto [it, inserted] = index_of.emplace(id, static_cast<std::uint32_t>(out.names.size()));
    if (inserted) out.names.emplace_back(trace.str(id));
    return it->second;
  };
  for (std::size_t r = 0; r < kernels.size(); ++r) {
    const GpuEvent& g = *kernels[r];
    const TrackInfo& info = trace.tracks()[g.track];
    out.name.push_back(name_index(g.name));
    out.annotation.push_back(annotation_of[r] == kNoIndex ? -1 : static_cast<std::int32_t>(name_index(ann.name[annotation_of[r]])));
    out.kind.push_back(g.kind);
    out.device.push_back(info.device < trace.devices().size() ? trace.devices()[info.device].ordinal : kNoValue);
    out.stream.push_back(info.stream);
    out.correlation.push_back(g.correlation);
    out.external_id.push_back(g.call == kNoIndex ? kNoValue : api.external_id[g.call]);
    out.bytes.push_back(g.bytes);
    out.iteration.push_back(gpu_iteration(trace, g, call_iteration));
    out.ts.push_back(g.ts);
    out.dur.push_back(g.end - g.ts);
  }
  return out;
}

} // namespace

std::string_view to_string(KernelType t) {
  switch (t) {
    case KernelType::Communication: return "COMMUNICATION";
    case KernelType::Memory: return "MEMORY";
    case KernelType::Computation: return "COMPUTATION";
    case KernelType::Other: return "OTHER";
  }
  return "OTHER";
}

KernelType classify_kernel(std::string_view name) {
  if (name.starts_with("nccl") || name.starts_with("hip") || name.starts_with("hccl") || contains(name, "ncclKernel")) {
    return KernelType::Communication;
  }
  if (name.starts_with("Memcpy") || name.starts_with("hipMemcpy") || name.starts_with("Memset") ||
      name.starts_with("hipMemset") || name.starts_with("dma")) {
    return KernelType::Memory;
  }
  // `cuda.*LaunchKernel`: "cuda" at the start and "LaunchKernel" anywhere after it.
  const bool cuda_launch = name.starts_with("cuda") && name.find("LaunchKernel", 4) != std::string_view::npos;
  for (std::string_view prefix : {"nccl", "Stream Wait Event", "runFunction", "hip", "job_exe", "packet", "pe_exe",
                                  "cpum_exe_subgraph", "hccl", "collective_subgraph_execution"}) {
    if (name.starts_with(prefix)) return KernelType::Other;
  }
  for (std::string_view part : {"Memcpy", "Memset", "dma", "Sync"}) {
    if (contains(name, part)) return KernelType::Other;
  }
  return cuda_launch ? KernelType::Other : KernelType::Computation;
}

HtaReport hta_analyze(const Trace& trace, const HtaOptions& options) {
  const HtaEvents ev = prepare(trace, options);
  HtaReport r;
  r.temporal = temporal(ev);
  r.idle_time = idle_time(trace, ev, options);
  r.kernels = kernel_breakdown(trace, ev, options);
  r.comm_comp_overlap_pct = comm_comp_overlap(ev);
  r.launches = kernel_launches(trace, ev);
  r.launch_summary = summarize_launches(r.launches);
  r.queue_length = queue_length(trace, ev);
  r.cpu_annotations = annotation_totals(trace, ev, false);
  r.gpu_annotations = annotation_totals(trace, ev, true);
  r.profiler_steps = ev.profiler_steps;
  r.step_filter_applied = ev.filtered;
  return r;
}

TemporalBreakdown hta_temporal_breakdown(const Trace& trace, const HtaOptions& options) {
  return temporal(prepare(trace, options));
}
std::vector<StreamIdleTime> hta_idle_time_breakdown(const Trace& trace, const HtaOptions& options) {
  return idle_time(trace, prepare(trace, options), options);
}
KernelBreakdown hta_kernel_breakdown(const Trace& trace, const HtaOptions& options) {
  return kernel_breakdown(trace, prepare(trace, options), options);
}
std::optional<double> hta_comm_comp_overlap(const Trace& trace, const HtaOptions& options) {
  return comm_comp_overlap(prepare(trace, options));
}
std::vector<KernelLaunch> hta_kernel_launches(const Trace& trace, const HtaOptions& options) {
  return kernel_launches(trace, prepare(trace, options));
}
std::vector<StreamQueueLength> hta_queue_length(const Trace& trace, const HtaOptions& options) {
  return queue_length(trace, prepare(trace, options));
}
std::vector<AnnotationTotal> hta_cpu_annotations(const Trace& trace, const HtaOptions& options) {
  return annotation_totals(trace, prepare(trace, options), false);
}
std::vector<AnnotationTotal> hta_gpu_annotations(const Trace& trace, const HtaOptions& options) {
  return annotation_totals(trace, prepare(trace, options), true);
}
AnnotationDurations hta_annotation_durations(const Trace& trace, bool gpu_side, const HtaOptions& options) {
  return annotation_durations(trace, prepare(trace, options), gpu_side);
}
std::optional<TimeUs> hta_trace_start(const Trace& trace) {
  // Each table is sorted by (track, start): the first row of each track is its earliest.
  std::optional<TimeUs> first;
  auto consider = [&](TimeNs start, TimeNs end) {
    const TimeUs ts = to_hta_us(start, end).ts;
    if (!first || ts < *first) first = ts;
  };
  const auto& api = trace.cuda_api();
  for (CudaApiIndex i{0}; i < api.size(); ++i) {
    if (i == 0 || api.track[i] != api.track[i - 1]) consider(api.start[i], api.end[i]);
  }
  const auto& gpu = trace.gpu_ops();
  for (GpuOpIndex i{0}; i < gpu.size(); ++i) {
    if (i == 0 || gpu.track[i] != gpu.track[i - 1]) consider(gpu.start[i], gpu.end[i]);
  }
  const auto& ann = trace.annotations();
  for (AnnotationIndex i{0}; i < ann.size(); ++i) {
    if (i == 0 || ann.track[i] != ann.track[i - 1]) consider(ann.start[i], ann.end[i]);
  }
  return first;
}
StragglerEvents hta_straggler_events(const Trace& trace, const HtaOptions& options) {
  return straggler_events(trace, prepare(trace, options));
}
AnnotatedKernels hta_kernels_with_annotations(const Trace& trace, const HtaOptions& options) {
  return kernels_with_annotations(trace, prepare(trace, options));
}

} // namespace dreamscope::analyzers
