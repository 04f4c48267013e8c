// Replay: a Trace → its graph → simulation → the predicted run, compared with the measured
// one per step and overall (what `dreamscope replay` prints), plus the pieces it is made of:
// the predicted Trace and per-step times, which every what-if reuses.
#pragma once

#include <dreamscope/storage/steps.h>

#include <span>

#include "dreamscope/graph/dependency_graph.h"
#include "dreamscope/whatif/overhead_correction.h"
#include "dreamscope/whatif/simulator.h"

#include <optional>
#include <string>
#include <vector>

namespace dreamscope::whatif {

// The simulated run as a Trace of the same type as the measured one: every event of the
// measured trace moved to its predicted time (removed tasks left out), source "simulator".
// `overhead_corrected` drops the tracer's overhead records, which an untraced run has not.
Trace make_predicted_trace(const Trace& measured, const DependencyGraph& graph, const SimulationResult& result,
                           bool overhead_corrected = false);

// Where a measured instant on a resource lands in the prediction: inside a task it keeps its
// offset from the task's start (capped by the predicted duration), between tasks its offset
// from the previous task's end.
TimeNs predicted_instant(const DependencyGraph& graph, const SimulationResult& result, ResourceId r, TimeNs measured);

// Steps are found by find_steps() (dreamscope/storage/steps.h), once per trace: the simulations of
// one trace share its step rows. In a trace of several ranks, a step is the job's: the ranks'
// rows of one step number are one step, as long as its slowest rank's (measured and
// predicted each from the rank that took longest; its row is the measured one's).

struct StepTime {
  std::string name;
  AnnotationIndex row = kNoIndex;
  std::size_t ranks = 0; // ranks whose rows make the step (0: a single-process trace)
  TimeNs measured_start = 0, measured_end = 0;
  TimeNs predicted_start = 0, predicted_end = 0;
  TimeNs measured() const { return measured_end - measured_start; }
  TimeNs predicted() const { return predicted_end - predicted_start; }
  // (predicted - measured) / measured duration.
  double error() const;
};

// Measured and predicted times of each step row (find_steps(trace)) that the graph holds.
std::vector<StepTime> step_times(const Trace& trace, std::span<const AnnotationIndex> steps,
                                 const DependencyGraph& graph, const SimulationResult& result);
// The same for a single simulation, finding the steps itself.
std::vector<StepTime> step_times(const Trace& trace, const DependencyGraph& graph, const SimulationResult& result);

struct ReplayOptions {
  bool correct_overhead = false;
  std::optional<OverheadCosts> costs; // instead of the trace's calibration rows
  bool make_trace = false;            // fill ReplayReport::predicted
  const TiePolicy* policy = nullptr;
};

struct ReplayReport {
  TimeNs begin = 0;
  TimeNs measured_end = 0;  // latest measured end over the graph's tasks
  TimeNs predicted_end = 0;
  std::vector<StepTime> steps;
  std::size_t tasks = 0, edges = 0, sync_actions = 0, unscheduled = 0;
  GraphWarnings warnings;
  std::optional<OverheadCorrection> correction;
  double build_seconds = 0, simulate_seconds = 0;
  std::optional<Trace> predicted;

  TimeNs measured_span() const { return measured_end - begin; }
  TimeNs predicted_span() const { return predicted_end - begin; }
  double error() const;
};

ReplayReport replay(const Trace& trace, const ReplayOptions& options = {});

} // namespace dreamscope::whatif
