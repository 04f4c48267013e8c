// The what-if engine: a trace and some scenarios in, predicted step times out.
//
// The trace's graph is replayed unmodified first (the baseline), then once per scenario and
// once with all of them applied together. Speedups are baseline / prediction, both
// simulated, so that what remains of the replay's own error cancels out of the ratio.
// With data annotations (fetch, prep) the report also splits the data stall the way
// DS-Analyzer does, from three simulations of the one trace.
#pragma once

#include <dreamscope/whatif/replay.h>
#include <dreamscope/whatif/scenario.h>
#include <dreamscope/whatif/simulator.h>
#include <dreamscope/whatif/transforms.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace dreamscope::whatif {

struct ScenarioRequest {
  Scenario scenario;
  std::map<std::string, std::string> overrides; // -p k=v
  // In a multi-rank trace, apply the scenario to this rank only (restrict_to_rank); unset: to
  // every rank.
  std::optional<std::int64_t> rank;
};

// Time on the critical path, by what the task was.
struct CriticalPathShare {
  std::string what; // "kernel sgemm_128x64", "cudaLaunchKernel", "cpu in forward", ...
  TimeNs time = 0;
};

struct Prediction {
  std::string label; // the scenario's name, or "a + b" for the combination
  std::vector<std::string> scenarios;
  std::map<std::string, std::string> parameters; // "scenario.parameter" → bound value
  std::vector<TransformEffect> effects;
  TimeNs span = 0;           // predicted run, first task start to last task end
  double step_median = 0;    // ns
  double speedup = 0;        // baseline step median / predicted step median; NaN when either is 0 ns
  std::size_t unscheduled = 0;
  std::vector<StepTime> steps;
  std::vector<CriticalPathShare> critical_path; // of the median step (or the run), largest first
  std::optional<Trace> predicted;               // when WhatIfOptions::make_trace
};

// DS-Analyzer's differential breakdown: fetch stall = T_traced − T_cached, prep stall =
// T_cached − T_synthetic, per step: the medians of the three simulations' steps, or, where
// those are not ordered (removing work lengthened the median step: a rank whose steps are
// not aligned with the others' starts a step sooner and waits in it for them), each run's
// span over its steps, as DS-Analyzer compares whole epochs.
struct DataStallBreakdown {
  enum class Basis { StepMedians, SpanPerStep };
  double traced_step = 0;    // as traced: min(F, P, G)
  double cached_step = 0;    // every fetch at cache speed (removed): min(P, G)
  double synthetic_step = 0; // no loading at all: G
  Basis basis = Basis::StepMedians;
  double fetch_stall() const { return traced_step - cached_step; }
  double prep_stall() const { return cached_step - synthetic_step; }
  const char* basis_text() const { return basis == Basis::StepMedians ? "step medians" : "run span per step"; }
};

struct WhatIfReport {
  std::size_t tasks = 0;
  std::size_t step_count = 0;
  TimeNs measured_span = 0, replayed_span = 0;
  double measured_step_median = 0, replayed_step_median = 0; // ns
  std::vector<CriticalPathShare> baseline_critical_path; // of the median replayed step
  std::vector<Prediction> predictions; // each scenario, then the combination when more than one
  std::optional<DataStallBreakdown> data_stalls;
  std::optional<OverheadCorrection> correction; // when WhatIfOptions::correct_overhead
};

struct WhatIfOptions {
  bool make_trace = false;  // keep the predicted Trace of the last prediction
  // Take the tracer's cost out of the baseline before any scenario (overhead_correction.h):
  // the predictions are then of the untraced run, and speedups are against it.
  bool correct_overhead = false;
  bool data_stalls = true;  // when the trace has fetch/prep annotations
  std::size_t critical_path_entries = 6;
};

// Throws ScenarioError (bad parameters) or TransformError (a transform this graph cannot take).
WhatIfReport run_whatif(const Trace& trace, const std::vector<ScenarioRequest>& requests,
                        const WhatIfOptions& options = {});

// The three simulations of the data-stall breakdown; empty without fetch and prep annotations.
std::optional<DataStallBreakdown> data_stall_breakdown(const DependencyGraph& graph,
                                                       const TaskSelection& selection);

// Median of the steps' predicted durations; the run's span when the trace has no steps.
double median_step(const std::vector<StepTime>& steps, TimeNs span, bool predicted);

// What a CI gate (`--fail-if`) may test: speedup, predicted_step_ms, measured_step_ms,
// replayed_step_ms, fetch_stall_ms, prep_stall_ms for the last prediction, and
// NAME.speedup / NAME.predicted_step_ms per scenario (NAME with '-' written '_').
ExpressionValues gate_values(const WhatIfReport& report);

} // namespace dreamscope::whatif
