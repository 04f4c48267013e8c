#include "dreamscope/replay.h"

#include <algorithm>
#include <chrono>

namespace dreamscope {

std::vector<EventIndex> find_steps(const Trace& trace) {
  const auto& ann = trace.annotations();
  const std::optional<StringId> step = trace.find_string("step");
  std::vector<EventIndex> steps;
  for (EventIndex row = 0; row < ann.size(); ++row) {
    if (trace.tracks()[ann.track[row]].kind != TrackKind::CpuThread) continue;
    if ((step && ann.category[row] == *step) || trace.str(ann.name[row]).starts_with("ProfilerStep#")) {
      steps.push_back(row);
    }
  }
  std::stable_sort(steps.begin(), steps.end(),
                   [&](EventIndex a, EventIndex b) { return ann.start[a] < ann.start[b]; });
  return steps;
}

double StepTime::error() const {
  if (measured() <= 0) return predicted() == 0 ? 0.0 : 1.0;
  return static_cast<double>(predicted() - measured()) / static_cast<double>(measured());
}

std::vector<StepTime> step_times(const Trace& trace, const DependencyGraph& graph, const SimulationResult& result) {
  const auto& ann = trace.annotations();
  std::vector<StepTime> out;
  for (EventIndex row : find_steps(trace)) {
    const TaskId first = graph.annotation_first(row), last = graph.annotation_last(row);
    if (first == kNoTask || result.start[first] == kNoValue || result.end[last] == kNoValue) continue;
    StepTime s;
    s.name = std::string(trace.str(ann.name[row]));
    // Tracer steps are all named "step"; their payload is the step number.
    if (ann.payload[row] != kNoValue && s.name.find_first_of("0123456789") == std::string::npos) {
      // Appended piecewise: `" " + std::to_string(...)` trips GCC 12's -Wrestrict at -O3.
      s.name += ' ';
      s.name += std::to_string(ann.payload[row]);
    }
    s.row = row;
    s.measured_start = ann.start[row];
    s.measured_end = ann.end[row];
    s.predicted_start = result.start[first];
    s.predicted_end = result.end[last];
    out.push_back(std::move(s));
  }
  return out;
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
