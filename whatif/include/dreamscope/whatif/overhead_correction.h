// Overhead correction (design.md): the tracer costs the traced threads time for every range,
// marker and API call it records, and CUPTI reports its own buffer work. Shrinking each CPU
// task by the cost of what was recorded inside it, then replaying, predicts the run without
// the tracer. The costs come from what the tracer timed in the run itself (thread_load rows: a
// sampled fraction of each thread's recording calls, per window of the run), else from the
// trace's calibration rows (measured at tracer start, or by `dreamscope calibrate`, whose
// rows can be passed in instead).
//
// The tracer's writer thread also takes CPU: where the job's threads outnumbered the cores,
// they waited for one (thread_load's runqueue time, from the kernel). The writer's share of
// that wait, at most the CPU it used, is taken out of their CPU tasks; the rest was for the
// job's own threads or other processes, which the untraced run has too.
#pragma once

#include "dreamscope/graph/dependency_graph.h"

#include <optional>
#include <string>
#include <vector>

namespace dreamscope::whatif {

// Host nanoseconds one recorded event costs, by kind.
struct OverheadCosts {
  double range_ns = 0;    // an annotation range (begin + end): calibration "nvtx_range"
  double marker_ns = 0;   // a zero-length annotation: "nvtx_mark"
  double cuda_api_ns = 0; // a CUDA API call seen by the callback: "cuda_api"
  // What the tracer's in-run timing of a range and a mark read in the state that measured
  // range_ns and marker_ns: "nvtx_range_timed", "nvtx_mark_timed" (0: not measured). A
  // window of the run whose timing reads k times this had costs k times range_ns.
  double range_timed_ns = 0;
  double marker_timed_ns = 0;
  // How far apart two back-to-back reads of the tracer's clock are: "clock_read" (0: not
  // measured). Where it is known, a window's cost is its timing less this much per range
  // (half per mark): docs/simulation.md.
  double clock_read_ns = 0;
  // What a range recorded from Python (the NVTX domain "dreamscope.auto") costs its caller,
  // all of it: the Python wrapper, its calls through ctypes and the tracer's recording.
  // Charged for such a range instead of range_ns: "python_range" (0: none).
  double python_range_ns = 0;
  // A range that a cost probe counted and did not record, through the tracer's entry points
  // back to back: "nvtx_range_counted" (0: not measured). The calls a probe counted are in no
  // row; each is charged half of this, over the tasks of its window (cost_probes.h).
  double range_counted_ns = 0;
  // What recording adds to a call that launched a kernel, all of it: the call's record and
  // CUPTI's instrumentation of the kernel for its activity record, which on a GPU is most of
  // what tracing costs a launch-bound job (docs/gpu.md). Charged for such a call instead of
  // cuda_api_ns: "cuda_launch", measured by `dreamscope calibrate` where a GPU is (0: none).
  double cuda_launch_ns = 0;
  bool empty() const { return range_ns <= 0 && marker_ns <= 0 && cuda_api_ns <= 0 && cuda_launch_ns <= 0; }
};

// The costs in calibration rows; where a kind has several rows, the one with most samples.
OverheadCosts overhead_costs(const std::vector<CalibrationRecord>& calibration);

// What a range (`range`) or a mark whose calls the tracer timed at `timed_ns` in the run is
// charged, given the trace's start-up costs (docs/simulation.md, "Overhead correction").
double charged_cost(double timed_ns, bool range, const OverheadCosts& costs);

struct OverheadCorrection {
  OverheadCosts costs; // start-up calibration (or the costs passed in)
  TimeNs charged_ns = 0;    // overhead attributed to recorded events and overhead records
  TimeNs removed_ns = 0;    // taken out of CPU tasks
  TimeNs unabsorbed_ns = 0; // charged but not removable (it fell on a blocking wait)
  std::int64_t events_charged = 0;
  std::int64_t launches_charged = 0; // of events_charged: kernel launch calls, at cuda_launch_ns
  std::int64_t overhead_records = 0;
  // Events charged at the cost their thread was timed at in the run, and the mean of those
  // charges per range; the rest were charged at `costs`.
  std::int64_t events_charged_in_run = 0;
  // Calls the probes counted and did not record, charged what a counted call costs.
  std::int64_t counted_calls = 0;
  double in_run_range_ns = 0;
  // The tracer's probe steps (probe_steps.h): how many ran and measured, and the threads whose
  // ranges were charged by them.
  std::int64_t probe_steps = 0;
  std::int64_t probe_steps_measured = 0;
  std::int64_t threads_by_probe_steps = 0;
  // Time the threads waited for a core while the writer had it, taken out of their tasks.
  TimeNs runqueue_removed_ns = 0;
  // The writer's busy spells (writer_interference.h): how many the threads recorded beside, how
  // many measured, the median slowdown they found (-1: none), and what was charged for it.
  std::int64_t writer_spells = 0;
  std::int64_t writer_spells_measured = 0;
  double writer_slowdown = -1;
  TimeNs writer_slowdown_charged_ns = 0;
};

// Sets the knobs of `graph`'s CPU tasks so that a replay predicts the untraced run. The
// charge of an event goes to the task where it starts; what a short task cannot absorb
// carries to the next tasks on the thread, up to the next blocking wait (overhead before
// a wait was hidden by the wait, so it must not shorten what follows it).
// Costs passed in replace the in-run and start-up ones alike.
OverheadCorrection correct_overhead(const Trace& trace, DependencyGraph& graph,
                                    std::optional<OverheadCosts> costs = std::nullopt);

} // namespace dreamscope::whatif
