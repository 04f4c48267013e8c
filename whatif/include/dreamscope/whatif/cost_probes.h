// What the tracer's cost probes measured: what recording one NVTX call cost the traced thread,
// in its own CPU time, where that cost landed (docs/simulation.md, "Cost probes").
//
// For a few ms now and then (`trace --cost-probe`, tracer/src/writer_thread.cpp), the tracer
// counted a thread's inner pushes and their pops instead of recording them; `probe_events` counts
// those calls. The job's work per call being the same in the probe and in the recorded windows
// on either side of it, the probe's CPU time per call, lower by the share of calls it did not
// record, says what recording a call costs. A probe whose two neighbours ran at different
// speeds per call (the machine changed state around it) measures nothing and is left out. The
// speed per call also says which state a window was in, and what the probes nearest its speed
// measured. `info` shows it; overhead correction does not charge it yet (docs/simulation.md,
// "Cost probes", has the measurements that say why).
#pragma once

#include "dreamscope/storage/trace.h"

#include <cstdint>
#include <span>
#include <vector>

namespace dreamscope::whatif {

// One probe that measured: when, the speed of its neighbours (CPU ns per call, recording
// included) and what recording a call cost (record_ns: recorded less counted).
struct ProbeMeasure {
  TimeNs at = 0;
  double speed_ns = 0;
  double record_ns = 0;
};

// A thread's probes, and what they say of each of its windows.
class ThreadProbes {
 public:
  // `windows`: the thread's load rows in time order (those with events).
  explicit ThreadProbes(std::span<const ThreadLoadRecord> windows);

  std::int64_t probes() const { return probes_; }
  const std::vector<ProbeMeasure>& measures() const { return measures_; }
  bool measured() const { return !measures_.empty(); }
  // A window's speed: its CPU ns per call as if every call had been recorded (a probe's counted
  // calls priced at the thread's median cost; -1: not known).
  double speed_ns(const ThreadLoadRecord& w) const;
  // What recording a call cost in a window that ran at `speed_ns`: the median of the measures
  // of the probes whose neighbours' speeds were nearest it (-1: no probe measured).
  double record_ns(double speed_ns) const;
  // The window's state: slow when it ran more than 20 % slower per call than the thread's
  // usual fast windows (the 20th percentile of its speeds).
  bool slow(double speed_ns) const { return fast_speed_ns_ > 0 && speed_ns > 1.2 * fast_speed_ns_; }
  double median_record_ns() const { return median_record_ns_; }

 private:
  std::vector<ProbeMeasure> measures_; // sorted by speed
  std::int64_t probes_ = 0;
  double median_record_ns_ = -1;
  double fast_speed_ns_ = -1;
};

// A trace's probes together (`info`): how many ran and measured, and the median cost of a
// record in the windows of each state, with how many windows each state had.
struct ProbeSummary {
  std::int64_t probes = 0;
  std::int64_t measured = 0;
  std::int64_t fast_windows = 0, slow_windows = 0;
  double fast_record_ns = -1, slow_record_ns = -1;
};
ProbeSummary summarize_probes(const Trace& trace);

} // namespace dreamscope::whatif
