// The critical path of the replayed run, summarized by what bound it.
//
// The path is a chain of binding constraints, last task first. Walking it moves a cursor from
// the last task's end back to the run's (or a step's) start, and every stretch the cursor
// passes is billed to one category: a task's own duration to the thread or stream it ran on,
// the link to the task before to the constraint that tied them. The stretches tile the window
// with no overlap, so the categories add up to its length exactly.
#include "dreamscope/analyzers.h"
#include "report_tables.h"

#include <dreamscope/replay.h>
#include <dreamscope/simulator.h>

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

namespace dreamscope::analyzers {

std::string_view to_string(PathCategory c) {
  switch (c) {
    case PathCategory::CpuWork: return "cpu work";
    case PathCategory::GpuWork: return "gpu work";
    case PathCategory::LaunchLatency: return "launch latency";
    case PathCategory::SyncWait: return "sync wait";
    case PathCategory::DataFlowWait: return "data-flow wait";
    case PathCategory::CollectiveWait: return "collective wait";
    case PathCategory::Gap: return "idle gap";
  }
  return "unknown";
}

namespace {

constexpr ResourceId kNoResource = kNoIndex;

class PathSummarizer {
 public:
  PathSummarizer(const Trace& trace, const DependencyGraph& graph, const SimulationResult& result)
      : trace_(trace), g_(graph), r_(result) {}

  // `path` as critical_path() returns it (last task first); time before `window_begin` is
  // not counted, and the walk stops there.
  CriticalPathSummary summarize(std::string name, const std::vector<CriticalPathStep>& path, TimeNs window_begin,
                                std::size_t top_operations) {
    CriticalPathSummary s;
    s.name = std::move(name);
    s.begin = window_begin;
    if (path.empty()) {
      s.end = window_begin;
      return s;
    }
    s.end = r_.end[path.front().task];
    s.ends_with = task_label(path.front().task) + " on " + resource_label(g_.resource(path.front().task));
    window_ = window_begin;
    cursor_ = s.end;
    parts_.clear();
    ops_.clear();
    for (std::size_t i = 0; i < path.size() && cursor_ > window_; ++i) {
      const TaskId t = path[i].task;
      ++s.tasks;
      const CriticalPathStep* next = i + 1 < path.size() ? &path[i + 1] : nullptr;
      if (!path[i].through_start) {
        // A task reached at its end: its own time, down to where whatever bound its end let go.
        const bool waited = next && end_set_by_task(next->via);
        const TimeNs own_from = waited ? r_.end[t] - (g_.removed(t) ? 0 : g_.duration(t)) : r_.start[t];
        const TimeNs took = take(work_category(t), g_.resource(t), own_from);
        if (took > 0) add_operation(t, took);
      }
      if (!next) {
        // The path's first task: from the run's begin (its gap), or cut short by a binding
        // the simulator did not record, billed as unexplained idle time so the sum holds.
        take(PathCategory::Gap, g_.resource(t), r_.begin);
        break;
      }
      const TaskId u = next->task;
      if (r_.start[u] == kNoValue || r_.end[u] == kNoValue) break;
      switch (next->via) {
        case Constraint::Launch: take(PathCategory::LaunchLatency, kNoResource, r_.start[u]); break;
        // Another thread handed it the work: the wake-up is a wait like a sync's.
        case Constraint::Handoff: take(PathCategory::SyncWait, kNoResource, r_.start[u]); break;
        case Constraint::Sync:
        case Constraint::EventWait: take(PathCategory::SyncWait, kNoResource, r_.end[u]); break;
        case Constraint::Flow: take(PathCategory::DataFlowWait, kNoResource, r_.end[u]); break;
        // The last rank to arrive at a collective: the path goes on from its arrival.
        case Constraint::Collective: take(PathCategory::CollectiveWait, kNoResource, r_.start[u]); break;
        // Resource order: the gap the thread or stream needed after its previous task. A
        // what-if dependency's delay is no dependency of the measured run: idle as well.
        default: take(PathCategory::Gap, g_.resource(t), r_.end[u]); break;
      }
    }
    // A window that begins before the run (it never does for a replay) keeps the tiling.
    if (cursor_ > window_) take(PathCategory::Gap, kNoResource, window_);

    const double length = static_cast<double>(std::max<TimeNs>(s.length(), 1));
    for (const auto& [key, part] : parts_) {
      const auto& [category, resource] = key;
      // A zero-length wait still says the path crossed one; a zero-length gap or task says nothing.
      const bool wait = category == PathCategory::LaunchLatency || category == PathCategory::SyncWait ||
                        category == PathCategory::DataFlowWait || category == PathCategory::CollectiveWait;
      if (part.first == 0 && !wait) continue;
      s.by_category[static_cast<std::size_t>(category)] += part.first;
      s.split.push_back({category, resource == kNoResource ? std::string() : resource_label(resource), part.first,
                         part.second, static_cast<double>(part.first) / length});
    }
    std::sort(s.split.begin(), s.split.end(), [](const CriticalPathPart& a, const CriticalPathPart& b) {
      return std::tie(b.time, a.category, a.resource) < std::tie(a.time, b.category, b.resource);
    });
    for (auto& [key, op] : ops_) {
      op.name = key.second;
      op.share = static_cast<double>(op.time) / length;
      s.operations.push_back(std::move(op));
    }
    // The whole run of a trace of 10^5 steps bills 10^5 step names: order only the kept ones,
    // and give back the room of the rest, which the report would otherwise hold to its end.
    const std::size_t kept = std::min(top_operations, s.operations.size());
    std::partial_sort(s.operations.begin(), s.operations.begin() + static_cast<std::ptrdiff_t>(kept),
                      s.operations.end(), [](const auto& a, const auto& b) {
                        return std::tie(b.time, a.kind, a.name) < std::tie(a.time, b.kind, b.name);
                      });
    s.operations.resize(kept);
    s.operations.shrink_to_fit();
    return s;
  }

 private:
  // Moves the cursor back to `from` (never before the window, never forward) and bills the
  // stretch; returns its length.
  TimeNs take(PathCategory category, ResourceId resource, TimeNs from) {
    const TimeNs to = std::clamp(from, window_, cursor_);
    const TimeNs time = cursor_ - to;
    cursor_ = to;
    auto& part = parts_[{category, resource}];
    part.first += time;
    // Nearly every resource-order link has a zero gap; counting those would say nothing.
    if (category != PathCategory::Gap || time > 0) ++part.second;
    return time;
  }

  PathCategory work_category(TaskId t) const {
    return is_gpu_task(g_.kind(t)) || g_.is_stream(g_.resource(t)) ? PathCategory::GpuWork : PathCategory::CpuWork;
  }

  std::string resource_label(ResourceId r) const {
    if (r < trace_.tracks().size()) return detail::track_label(trace_, r);
    const std::size_t added = r - trace_.tracks().size();
    if (added < g_.added_resources().size() && !g_.added_resources()[added].name.empty()) {
      return g_.added_resources()[added].name;
    }
    return "added resource " + std::to_string(added);
  }

  std::string task_label(TaskId t) const {
    const EventIndex row = g_.source_row(t);
    std::string_view name;
    switch (g_.kind(t)) {
      case TaskKind::CudaApi: name = trace_.str(trace_.cuda_api().name[row]); break;
      case TaskKind::Annotation: name = trace_.str(trace_.annotations().name[row]); break;
      case TaskKind::Kernel:
      case TaskKind::Memcpy:
      case TaskKind::Memset: name = trace_.str(trace_.gpu_ops().name[row]); break;
      case TaskKind::CpuWork: name = "(cpu work)"; break;
      case TaskKind::Synthetic: name = g_.synthetic_name(t); break;
    }
    if (row == kNoIndex && g_.kind(t) != TaskKind::CpuWork && g_.kind(t) != TaskKind::Synthetic) name = "(unknown)";
    return std::string(name);
  }

  void add_operation(TaskId t, TimeNs time) {
    CriticalPathOperation& op = ops_[{std::string(to_string(g_.kind(t))), task_label(t)}];
    op.kind = std::string(to_string(g_.kind(t)));
    ++op.count;
    op.time += time;
  }

  const Trace& trace_;
  const DependencyGraph& g_;
  const SimulationResult& r_;
  TimeNs window_ = 0, cursor_ = 0;
  std::map<std::pair<PathCategory, ResourceId>, std::pair<TimeNs, std::int64_t>> parts_;
  std::map<std::pair<std::string, std::string>, CriticalPathOperation> ops_;
};

// The simulator's critical_path walk, started at a chosen task and stopped once the path
// leaves [window_begin, ...): a step's path back to the step's start.
std::vector<CriticalPathStep> path_back_from(const SimulationResult& result, TaskId last, TimeNs window_begin) {
  std::vector<CriticalPathStep> path;
  TaskId t = last;
  bool at_end = true;
  Constraint via = Constraint::Duration;
  while (t != kNoTask && result.end[t] != kNoValue) {
    path.push_back({t, via, !at_end});
    if ((at_end ? result.end[t] : result.start[t]) <= window_begin) break;
    const TaskBinding& b = result.binding[t];
    if (at_end && end_set_by_task(b.end) && b.end_by != kNoTask) {
      via = b.end;
      t = b.end_by;
      at_end = !end_from_start(b.end);
      continue;
    }
    via = b.start;
    at_end = !from_start(b.start);
    t = b.start == Constraint::RunStart ? kNoTask : b.start_by;
  }
  return path;
}

} // namespace

CriticalPathReport critical_path_analysis(const Trace& trace, std::size_t top_operations, std::size_t step_limit) {
  CriticalPathReport report;
  const DependencyGraph graph = build_dependency_graph(trace);
  if (graph.task_count() == 0) {
    report.note = "The trace has no CPU or GPU tasks to replay.";
    return report;
  }
  const SimulationResult result = simulate(graph);
  report.available = true;
  report.unscheduled = result.unscheduled;
  TimeNs measured_end = graph.run_begin();
  for (TaskId t = 0; t < graph.task_count(); ++t) measured_end = std::max(measured_end, graph.measured_end(t));
  report.measured_span = measured_end - graph.run_begin();
  report.replayed_span = result.span();

  PathSummarizer summarizer(trace, graph, result);
  report.run = summarizer.summarize("(whole run)", critical_path(graph, result), result.begin, top_operations);
  report.run.share_of_run = report.replayed_span > 0 ? 1.0 : 0.0;
  // A step's path runs from its start to the end of its last task (path_back_from starts
  // there), so its length is known before the walk: only the steps the report lists are walked.
  const std::vector<dreamscope::StepTime> steps = step_times(trace, graph, result);
  report.step_lengths.reserve(steps.size());
  for (const dreamscope::StepTime& step : steps) {
    const TaskId last = graph.annotation_last(step.row);
    const bool ran = last != kNoTask && result.end[last] != kNoValue;
    report.step_lengths.push_back(ran ? result.end[last] - step.predicted_start : 0);
  }
  const std::vector<std::size_t> listed = listed_steps(report.step_lengths, step_limit);
  report.steps.reserve(listed.size());
  for (std::size_t i : listed) {
    const dreamscope::StepTime& step = steps[i];
    const TaskId last = graph.annotation_last(step.row);
    CriticalPathSummary s = summarizer.summarize(step.name, path_back_from(result, last, step.predicted_start),
                                                 step.predicted_start, top_operations);
    s.index = i;
    s.share_of_run = report.replayed_span > 0
                         ? static_cast<double>(s.length()) / static_cast<double>(report.replayed_span)
                         : 0.0;
    report.steps.push_back(std::move(s));
  }
  if (result.unscheduled > 0) {
    report.note = std::to_string(result.unscheduled) + " tasks could not be scheduled (a dependency cycle).";
  }
  return report;
}

} // namespace dreamscope::analyzers
