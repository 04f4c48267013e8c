#include <dreamscope/whatif/whatif_engine.h>

#include <dreamscope/whatif/cpu_sharing.h>

#include "median.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <unordered_map>

namespace dreamscope::whatif {

namespace {

// `original` maps the graph's tasks to the ids `selection` knows: a structural what-if
// renumbers them, and a task it inserted has no name there.
std::string share_label(const TaskSelection& selection, const std::vector<TaskId>& original,
                        const DependencyGraph& graph, TaskId t) {
  const std::string_view name = original[t] == kNoTask ? std::string_view() : selection.name(original[t]);
  switch (graph.kind(t)) {
    case TaskKind::Kernel: return fmt::format("kernel {}", name);
    case TaskKind::Memcpy: return fmt::format("memcpy {}", name);
    case TaskKind::Memset: return fmt::format("memset {}", name);
    case TaskKind::CudaApi: return std::string(name);
    case TaskKind::Annotation: return fmt::format("cpu in {}", name);
    case TaskKind::Synthetic: return "added by a what-if";
    case TaskKind::CpuWork: return "cpu outside annotations";
  }
  return "other";
}

// The chain of binding constraints back from `last` (the simulator's critical_path walk,
// started at a chosen task), down to where it leaves [window_begin, ...). Each task's own
// time on the path is its duration clipped to the window; a launch call whose start is all
// the path needs (it reached the call through a launch edge) contributes nothing.
std::vector<CriticalPathShare> critical_path_shares(const TaskSelection& selection,
                                                    const std::vector<TaskId>& original, const DependencyGraph& graph,
                                                    const SimulationResult& result, TaskId last,
                                                    TimeNs window_begin, std::size_t keep) {
  std::unordered_map<std::string, TimeNs> by_label;
  TaskId t = last;
  bool at_end = true;
  while (t != kNoTask && result.end[t] != kNoValue && result.end[t] > window_begin) {
    const TaskBinding& b = result.binding[t];
    if (at_end && !graph.removed(t)) {
      const TimeNs own = std::min(graph.duration(t), result.end[t] - window_begin);
      if (own > 0) by_label[share_label(selection, original, graph, t)] += own;
    }
    if (at_end && end_set_by_task(b.end) && b.end_by != kNoTask) {
      t = b.end_by;
      at_end = !end_from_start(b.end);
      continue;
    }
    at_end = !from_start(b.start);
    t = b.start == Constraint::RunStart ? kNoTask : b.start_by;
  }
  std::vector<CriticalPathShare> shares;
  shares.reserve(by_label.size());
  for (auto& [what, time] : by_label) shares.push_back({what, time});
  std::sort(shares.begin(), shares.end(), [](const auto& a, const auto& b) {
    return a.time != b.time ? a.time > b.time : a.what < b.what;
  });
  if (shares.size() > keep) shares.resize(keep);
  return shares;
}

// The critical path of the median step (by predicted duration), or of the whole run when the
// trace has no steps: what bounds the step time the report compares.
std::vector<CriticalPathShare> median_step_critical_path(const TaskSelection& selection,
                                                         const std::vector<TaskId>& original,
                                                         const DependencyGraph& graph,
                                                         const SimulationResult& result,
                                                         const std::vector<StepTime>& steps, std::size_t keep) {
  if (result.binding.empty()) return {};
  if (steps.empty()) {
    TaskId last = kNoTask;
    for (TaskId t = 0; t < graph.task_count(); ++t) {
      if (result.end[t] == kNoValue || graph.removed(t)) continue;
      if (last == kNoTask || result.end[t] > result.end[last]) last = t;
    }
    return last == kNoTask ? std::vector<CriticalPathShare>{}
                           : critical_path_shares(selection, original, graph, result, last, result.begin, keep);
  }
  std::vector<const StepTime*> by_duration;
  for (const auto& s : steps) by_duration.push_back(&s);
  std::sort(by_duration.begin(), by_duration.end(),
            [](const StepTime* a, const StepTime* b) { return a->predicted() < b->predicted(); });
  const StepTime& median = *by_duration[by_duration.size() / 2];
  return critical_path_shares(selection, original, graph, result, graph.annotation_last(median.row), median.predicted_start,
                              keep);
}

std::string gate_name(std::string_view scenario) {
  std::string out(scenario);
  std::replace(out.begin(), out.end(), '-', '_');
  return out;
}

// Whether the scenarios renumber the graph's tasks (move, insert): then `selection` cannot
// describe the graph they edit, and they must edit a copy of the one it was built with.
bool renumbers(const std::vector<const ScenarioRequest*>& requests) {
  for (const ScenarioRequest* r : requests) {
    for (const Transform& t : r->scenario.instantiate(r->overrides)) {
      if (std::holds_alternative<MoveSpec>(t.spec) || std::holds_alternative<InsertSpec>(t.spec)) return true;
    }
  }
  return false;
}

// One simulation of `graph` transformed: the baseline itself for the last prediction when its
// scenarios keep the task ids (a graph of 5 M tasks is a few hundred MB to copy), else a copy.
Prediction predict(const Trace& trace, DependencyGraph& graph, const TaskSelection& selection,
                   const std::vector<const ScenarioRequest*>& requests, const WhatIfOptions& options,
                   double baseline_step, bool make_trace) {
  Prediction p;
  AppliedScenario applied;
  for (const ScenarioRequest* r : requests) {
    p.scenarios.push_back(r->scenario.name());
    for (const auto& [name, value] : r->scenario.bind(r->overrides)) {
      p.parameters[fmt::format("{}.{}", r->scenario.name(), name)] = to_string(value);
    }
    std::vector<Transform> transforms = r->scenario.instantiate(r->overrides);
    if (r->rank) restrict_to_rank(transforms, *r->rank);
    apply(transforms, selection, graph, applied);
  }
  for (std::size_t i = 0; i < p.scenarios.size(); ++i) p.label += (i ? " + " : "") + p.scenarios[i];
  p.effects = std::move(applied.effects);

  SimulationOptions sim;
  sim.policy = applied.policy.get();
  sim.cpu_cores = applied.cpu_cores;
  if (sim.cpu_cores > 0) {
    CpuPools pools = machine_pools(trace, graph, sim.cpu_cores);
    sim.cpu_pool = std::move(pools.of_resource);
    sim.cpu_background = std::move(pools.background);
  }
  const SimulationResult result = simulate(graph, sim);
  if (result.end_time >= limits::kMaxAbsTimestampNs) {
    std::string files;
    for (const ScenarioRequest* r : requests) files += (files.empty() ? "" : " + ") + r->scenario.file();
    throw TransformError(fmt::format("{}: the predicted run would end past 2^62 ns (146 years): a ratio or cost too "
                                     "large (docs/limits.md)",
                                     files));
  }
  p.span = result.span();
  p.unscheduled = result.unscheduled;
  p.steps = step_times(trace, selection.step_annotations(), graph, result);
  p.step_median = median_step(p.steps, p.span, true);
  // A step of 0 ns, measured or predicted, leaves the speedup undefined, not 0 (nor infinite).
  p.speedup = baseline_step > 0 && p.step_median > 0 ? baseline_step / p.step_median
                                                      : std::numeric_limits<double>::quiet_NaN();
  p.critical_path = median_step_critical_path(selection, applied.original_ids(graph.task_count()), graph, result, p.steps, options.critical_path_entries);
  if (make_trace) p.predicted = make_predicted_trace(trace, graph, result);
  return p;
}

double median(std::vector<double> values) { return median_of(std::move(values), 0); }

struct SimulatedSteps {
  double median = 0;        // of the steps' predicted durations
  double span_per_step = 0; // the predicted run over its steps
};

SimulatedSteps simulated_steps(const TaskSelection& selection, const DependencyGraph& graph) {
  const SimulationResult result = simulate(graph);
  const auto steps = step_times(selection.trace(), selection.step_annotations(), graph, result);
  return {median_step(steps, result.span(), true),
          static_cast<double>(result.span()) / static_cast<double>(std::max<std::size_t>(steps.size(), 1))};
}

} // namespace

double median_step(const std::vector<StepTime>& steps, TimeNs span, bool predicted) {
  if (steps.empty()) return static_cast<double>(span);
  std::vector<double> d;
  d.reserve(steps.size());
  for (const auto& s : steps) d.push_back(static_cast<double>(predicted ? s.predicted() : s.measured()));
  return median(std::move(d));
}

std::optional<DataStallBreakdown> data_stall_breakdown(const DependencyGraph& graph,
                                                       const TaskSelection& selection) {
  // Without a fetch or prep range there is no loading to break down: a trace that never named
  // those categories is answered without going over its tasks.
  const Trace& trace = selection.trace();
  if (!trace.find_string(annotation_category::kFetch) && !trace.find_string(annotation_category::kPrep)) {
    return std::nullopt;
  }
  Selector produced;
  produced.category = fmt::format("{}|{}", annotation_category::kFetch, annotation_category::kPrep);
  if (selection.select(produced).empty()) return std::nullopt;
  Selector fetch;
  fetch.category = std::string(annotation_category::kFetch);
  Selector loading;
  loading.category = fmt::format("{}|{}|{}", annotation_category::kFetch, annotation_category::kPrep,
                                 annotation_category::kWait);
  const auto fetch_tasks = selection.select(fetch);
  const auto loading_tasks = selection.select(loading);

  DataStallBreakdown b;
  const SimulatedSteps traced = simulated_steps(selection, graph);
  // A fetch from a cache that holds everything costs nothing next to storage: DS-Analyzer's
  // second run reads from a fully cached dataset.
  DependencyGraph cached = graph;
  remove(cached, selection, fetch_tasks, false);
  const SimulatedSteps cached_run = simulated_steps(selection, cached);
  // DS-Analyzer's third run has no loader and no wait for one; the measured waits also hold
  // the consumer's wake-up after the batch was ready, which goes with them.
  DependencyGraph synthetic = graph;
  remove(synthetic, selection, loading_tasks, false);
  Selector loader_threads;
  loader_threads.resource_with = produced.category;
  loader_threads.resource_without = std::string(annotation_category::kStep);
  remove(synthetic, selection, selection.select(loader_threads), false);
  const SimulatedSteps synthetic_run = simulated_steps(selection, synthetic);
  b.traced_step = traced.median;
  b.cached_step = cached_run.median;
  b.synthetic_step = synthetic_run.median;
  // Less work never takes longer, to within the simulator's rounding: medians that say it did
  // measure the steps' alignment, not the loading (round2's negative_fetch_stall.db).
  constexpr double kSlackNs = 1000;
  if (b.cached_step > b.traced_step + kSlackNs || b.synthetic_step > b.cached_step + kSlackNs) {
    b.traced_step = traced.span_per_step;
    b.cached_step = cached_run.span_per_step;
    b.synthetic_step = synthetic_run.span_per_step;
    b.basis = DataStallBreakdown::Basis::SpanPerStep;
  }
  return b;
}

WhatIfReport run_whatif(const Trace& trace, const std::vector<ScenarioRequest>& requests,
                        const WhatIfOptions& options) {
  WhatIfReport report;
  DependencyGraph baseline = build_dependency_graph(trace);
  if (options.correct_overhead) report.correction = correct_overhead(trace, baseline);
  const TaskSelection selection(trace, baseline);
  report.tasks = baseline.task_count();

  const SimulationResult replayed = simulate(baseline);
  const auto steps = step_times(trace, selection.step_annotations(), baseline, replayed);
  report.step_count = steps.size();
  report.measured_span = baseline.run_end() - baseline.run_begin();
  report.replayed_span = replayed.span();
  report.measured_step_median = median_step(steps, report.measured_span, false);
  report.replayed_step_median = median_step(steps, report.replayed_span, true);
  report.baseline_critical_path =
      median_step_critical_path(selection, AppliedScenario{}.original_ids(baseline.task_count()), baseline, replayed, steps, options.critical_path_entries);

  if (options.data_stalls) report.data_stalls = data_stall_breakdown(baseline, selection);

  // Every prediction but the last edits a copy of the baseline; the last edits the baseline
  // itself unless its scenarios renumber tasks.
  const bool combine = requests.size() > 1;
  auto run = [&](const std::vector<const ScenarioRequest*>& scenarios, bool last, bool make_trace) {
    if (last && !renumbers(scenarios)) {
      return predict(trace, baseline, selection, scenarios, options, report.replayed_step_median, make_trace);
    }
    DependencyGraph copy = baseline;
    return predict(trace, copy, selection, scenarios, options, report.replayed_step_median, make_trace);
  };
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const bool last = !combine && i + 1 == requests.size();
    report.predictions.push_back(run({&requests[i]}, last, options.make_trace && last));
  }
  if (combine) {
    std::vector<const ScenarioRequest*> all;
    for (const auto& r : requests) all.push_back(&r);
    report.predictions.push_back(run(all, true, options.make_trace));
  }
  return report;
}

ExpressionValues gate_values(const WhatIfReport& report) {
  ExpressionValues v;
  v["measured_step_ms"] = report.measured_step_median / 1e6;
  v["replayed_step_ms"] = report.replayed_step_median / 1e6;
  const double fetch = report.data_stalls ? report.data_stalls->fetch_stall() : 0.0;
  const double prep = report.data_stalls ? report.data_stalls->prep_stall() : 0.0;
  v["fetch_stall_ms"] = fetch / 1e6;
  v["prep_stall_ms"] = prep / 1e6;
  for (const auto& p : report.predictions) {
    if (p.scenarios.size() == 1) {
      v[gate_name(p.label) + ".speedup"] = p.speedup;
      v[gate_name(p.label) + ".predicted_step_ms"] = p.step_median / 1e6;
    }
  }
  if (!report.predictions.empty()) {
    v["speedup"] = report.predictions.back().speedup;
    v["predicted_step_ms"] = report.predictions.back().step_median / 1e6;
  }
  return v;
}

} // namespace dreamscope::whatif
