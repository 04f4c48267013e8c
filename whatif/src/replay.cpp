#include "dreamscope/whatif/replay.h"

#include <dreamscope/storage/job.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>

namespace dreamscope::whatif {

double StepTime::error() const {
  if (measured() <= 0) return predicted() == 0 ? 0.0 : 1.0;
  return static_cast<double>(predicted() - measured()) / static_cast<double>(measured());
}

namespace {

// The ranks' rows of each step number as one step of the job, as long as its slowest rank's:
// the measured times of the rank whose step took longest as measured, the predicted ones of
// the rank whose step takes longest in the prediction. Not the span from the first rank's
// start to the last rank's end: ranks begin a step apart by however much they drifted, and
// that skew is no part of what a step costs the job. Steps of no rank, or of no number, stay
// as they are.
std::vector<StepTime> job_steps(const Trace& trace, std::vector<StepTime> rows) {
  const std::vector<std::int64_t> rank = track_ranks(trace);
  const auto& ann = trace.annotations();
  std::set<std::int64_t> ranks;
  for (const StepTime& s : rows) ranks.insert(rank[ann.track[s.row]]);
  ranks.erase(kNoValue);
  if (ranks.size() < 2) return rows;
  std::vector<StepTime> out;
  std::map<std::int64_t, std::size_t> by_number; // step number -> index in out
  for (StepTime& s : rows) {
    const std::int64_t number = step_number(trace, s.row);
    if (rank[ann.track[s.row]] == kNoValue || number == kNoValue) {
      out.push_back(std::move(s));
      continue;
    }
    auto [it, fresh] = by_number.emplace(number, out.size());
    if (fresh) {
      s.ranks = 1;
      out.push_back(std::move(s));
      continue;
    }
    StepTime& job = out[it->second];
    if (s.measured() > job.measured()) {
      job.row = s.row;
      job.name = std::move(s.name);
      job.measured_start = s.measured_start;
      job.measured_end = s.measured_end;
    }
    if (s.predicted() > job.predicted()) {
      job.predicted_start = s.predicted_start;
      job.predicted_end = s.predicted_end;
    }
    ++job.ranks;
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const StepTime& a, const StepTime& b) { return a.measured_start < b.measured_start; });
  return out;
}

} // namespace

std::vector<StepTime> step_times(const Trace& trace, std::span<const AnnotationIndex> steps,
                                 const DependencyGraph& graph, const SimulationResult& result) {
  const auto& ann = trace.annotations();
  std::vector<StepTime> out;
  out.reserve(steps.size());
  for (AnnotationIndex row : steps) {
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
  return job_steps(trace, std::move(out));
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
  // A collective's links are counted as the edges they were: the report says what the graph links.
  report.edges = graph.edge_count() + graph.collective_links();
  report.sync_actions = graph.sync_actions().size();
  report.unscheduled = result.unscheduled;
  report.warnings = graph.warnings();
  if (options.make_trace) report.predicted = make_predicted_trace(trace, graph, result, options.correct_overhead);
  return report;
}

} // namespace dreamscope::whatif
