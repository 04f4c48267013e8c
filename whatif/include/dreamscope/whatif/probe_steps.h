// What the tracer's probe steps measured: what a recorded range cost its thread in wall time,
// where that cost landed, and by how much the calls' own timing reads above it
// (docs/simulation.md, "Probe steps").
//
// With `trace --cost-probe-steps N`, one outermost range (a step) in N on each thread counted the
// pushes inside two open ranges instead of recording them, and ended with a mark `cost probe
// step` (domain dreamscope.tracer) whose payload is how many. Its recorded neighbours, the
// nearest steps of the same name on either side, did the same work and recorded those ranges:
// their median duration less the probe's, per range, plus what a counted range costs (start-up
// `nvtx_range_counted`), is what recording a range cost the thread. Wall time, not CPU time:
// what the machine takes from a thread while it records is paid by its steps too. The calls'
// timing in the neighbours' windows, less that, is the timing's over-read in that moment;
// overhead correction takes each window's timing less the over-read the probes nearest its
// timing measured, so that the fast and the slow state of the machine each get theirs.
#pragma once

#include "dreamscope/storage/trace.h"

#include <cstdint>
#include <span>
#include <vector>

namespace dreamscope::whatif {

// One probe step that measured: when, its neighbours' range timing in the run, and what a
// recorded range cost the thread (both ns a range).
struct ProbeStepMeasure {
  TimeNs at = 0;
  double timing_ns = 0;
  double cost_ns = 0;
};

// A thread's probe steps, and what they say of its windows.
class ThreadProbeSteps {
 public:
  // A correction takes a thread's probe steps where at least this many measured.
  static constexpr std::size_t kMinMeasures = 3;

  // `windows`: the thread's load rows in time order; `counted_range_ns`: what a counted range
  // cost at start-up (0 where the trace does not say).
  ThreadProbeSteps(const Trace& trace, TrackId track, std::span<const ThreadLoadRecord> windows,
                   double counted_range_ns);

  std::int64_t probes() const { return probes_; }
  const std::vector<ProbeStepMeasure>& measures() const { return measures_; }
  bool usable() const { return measures_.size() >= kMinMeasures; }
  // What a range whose window timed it `timing_ns` cost: that timing less the median over-read
  // of the probes whose neighbours' timing was nearest it (-1: not usable).
  double range_cost(double timing_ns) const;

 private:
  std::vector<ProbeStepMeasure> measures_; // sorted by timing
  std::int64_t probes_ = 0;
};

// A trace's probe steps together (`info`, the replay's report): how many ran and measured, and
// the median cost of a recorded range they found against the calls' timing in the same windows.
// A window of a thread is in the machine's fast state where its calls' timing is within
// kFastStateSpread of the thread's fast level (the 10th percentile of its windows' timings), and
// in the slow state past it; a probe step is in the state of its neighbours' timing. Each state's
// figures say what the correction charged there (docs/simulation.md, "Probe steps").
inline constexpr double kFastStateSpread = 0.15;
struct ProbeStepState {
  std::int64_t windows = 0;  // windows whose calls were timed
  std::int64_t measured = 0; // probe steps that measured
  double cost_ns = -1;       // medians over those probe steps
  double timing_ns = -1;
};
struct ProbeStepSummary {
  std::int64_t probes = 0;
  std::int64_t measured = 0;
  double cost_ns = -1;
  double timing_ns = -1;
  ProbeStepState fast, slow;
  // The ranges the probe steps counted that the merge copied in from recorded steps (filled_from).
  std::int64_t filled_ranges = 0;
};
ProbeStepSummary summarize_probe_steps(const Trace& trace);

} // namespace dreamscope::whatif
