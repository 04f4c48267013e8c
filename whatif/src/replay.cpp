#include "dreamscope/replay.h"

#include <algorithm>
#include <chrono>

namespace dreamscope {

double StepTime::error() const {
  if (measured() <= 0) return predicted() == 0 ? 0.0 : 1.0;
  return static_cast<double>(predicted() - measured()) / static_cast<double>(measured());
}

std::vector<StepTime> step_times(const Trace& trace, std::span<const EventIndex> steps, const DependencyGraph& graph,
                                 const SimulationResult& result) {
  const auto& ann = trace.annotations();
  std::vector<StepTime> out;
  out.reserve(steps.size());
  for (EventIndex row : steps) {
    const TaskId first = graph.annotation_first(row), last = graph.annotation_last(row);
    if (first == kNoTask || result.start[first] == kNoValue || result.end[last] == kNoValue) continue;
    StepTime s;
    s.name = step_label(trace, row);
    s.row = row;
    s.measured_start = ann.start[row];
    s.measured_end = ann.end[row];
    s.predicted_start = result.start[first];
    s.predicted_end = result.end[last];
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<StepTime> step_times(const Trace& trace, const DependencyGraph& graph, const SimulationResult& result) {
  return step_times(trace, find_steps(trace), graph, result);
}

double ReplayReport::error() const {
  if (measured_span() <= 0) return 0.0;
  return static_cast<double>(predicted_span() - measured_span()) / static_cast<double>(measured_span());
}

ReplayReport replay(const Trace& trace, const ReplayOptions& options) {
  using Clock = std::chrono::steady_clock;
  ReplayReport report;
  const auto t0 = Clock::now();
  DependencyGraph graph = build_dependency_graph(trace);
  const auto t1 = Clock::now();
  if (options.correct_overhead) report.correction = correct_overhead(trace, graph, options.costs);
  SimulationOptions sim;
  sim.policy = options.policy;
  const auto t2 = Clock::now();
  SimulationResult result = simulate(graph, sim);
  const auto t3 = Clock::now();
  report.build_seconds = std::chrono::duration<double>(t1 - t0).count();
  report.simulate_seconds = std::chrono::duration<double>(t3 - t2).count();
  report.begin = graph.run_begin();
  report.measured_end = graph.run_begin();
  for (TaskId t = 0; t < graph.task_count(); ++t) report.measured_end = std::max(report.measured_end, graph.measured_end(t));
  report.predicted_end = result.end_time;
  report.steps = step_times(trace, graph, result);
  report.tasks = graph.task_count();
  report.edges = graph.edge_count();
  report.sync_actions = graph.sync_actions().size();
  report.unscheduled = result.unscheduled;
  report.warnings = graph.warnings();
  if (options.make_trace) report.predicted = make_predicted_trace(trace, graph, result, options.correct_overhead);
  return report;
}

} // namespace dreamscope
