// Overhead correction (design.md): the tracer costs the traced threads time for every range,
// marker and API call it records, and CUPTI reports its own buffer work. Shrinking each CPU
// task by the cost of what was recorded inside it, then replaying, predicts the run without
// the tracer. The costs come from the trace's calibration rows (measured at tracer start, or
// by `dreamscope calibrate`, whose rows can be passed in instead).
#pragma once

#include "dreamscope/dependency_graph.h"

#include <optional>
#include <string>
#include <vector>

namespace dreamscope {

// Host nanoseconds one recorded event costs, by kind.
struct OverheadCosts {
  double range_ns = 0;    // an annotation range (begin + end): calibration "nvtx_range"
  double marker_ns = 0;   // a zero-length annotation: "nvtx_mark"
  double cuda_api_ns = 0; // a CUDA API call seen by the callback: "cuda_api"
  bool empty() const { return range_ns <= 0 && marker_ns <= 0 && cuda_api_ns <= 0; }
};

// The costs in calibration rows; where a kind has several rows, the one with most samples.
OverheadCosts overhead_costs(const std::vector<CalibrationRecord>& calibration);

struct OverheadCorrection {
  OverheadCosts costs;
  TimeNs charged_ns = 0;    // overhead attributed to recorded events and overhead records
  TimeNs removed_ns = 0;    // taken out of CPU tasks
  TimeNs unabsorbed_ns = 0; // charged but not removable (it fell on a blocking wait)
  std::int64_t events_charged = 0;
  std::int64_t overhead_records = 0;
};

// Sets the knobs of `graph`'s CPU tasks so that a replay predicts the untraced run. The
// charge of an event goes to the task where it starts; what a short task cannot absorb
// carries to the next tasks on the thread, up to the next blocking wait (overhead before
// a wait was hidden by the wait, so it must not shorten what follows it).
OverheadCorrection correct_overhead(const Trace& trace, DependencyGraph& graph,
                                    std::optional<OverheadCosts> costs = std::nullopt);

} // namespace dreamscope
