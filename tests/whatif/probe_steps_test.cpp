// The tracer's probe steps (`trace --cost-probe-steps`, tracer/src/writer_thread.cpp) as overhead
// correction reads them: exact figures on hand-built steps, in one state of the machine and in two.
#include "../common/hand_trace.h"

#include <dreamscope/graph/graph.h>
#include <dreamscope/whatif/probe_steps.h>
#include <dreamscope/whatif/whatif.h>

#include <gtest/gtest.h>

#include <vector>

namespace dreamscope::whatif {
namespace {

using test::HandTrace;

constexpr std::int64_t kInner = 1000;     // ranges inside two open ones, per step
constexpr double kCountedRangeNs = 6;     // what a counted range costs, at start-up
constexpr TimeNs kBetweenSteps = 1000;

// One state of the machine: the step's own work, what recording a range costs the job, what the
// calls' timing reads for one, and how much slower than the fast state the thread's own work
// (a counted call's included) runs.
struct State {
  TimeNs work_ns;
  double cost_ns;
  double timing_ns;
  double slower;
};
constexpr State kFast{100'000, 50, 70, 1.0};
constexpr State kSlow{160'000, 80, 95, 1.6};

// Steps of `states.size()` on one thread, back to back: a `step`, a `forward` phase in it, and
// kInner `neuron` ranges in the phase; the steps with `probe` set count their neurons instead
// and end with the tracer's mark. A load window per step, timing its ranges at the state's.
struct Steps {
  HandTrace h;
  TrackId thread;
  TimeNs end = 0;
};
// With `timed_counted_ns` > 0, the tracer timed 256 counted ranges after each probe step at that
// cost each (tracer/src/nvtx_injection.cpp, time_counted_ranges), and the probe steps' counted
// ranges cost that much, whatever start-up calibration said.
Steps make_steps(const std::vector<State>& states, const std::vector<bool>& probe, std::string_view wait = {},
                 double timed_counted_ns = 0, TimeNs between_steps = kBetweenSteps) {
  Steps s;
  s.thread = s.h.thread(1);
  TimeNs at = 0;
  for (std::size_t i = 0; i < states.size(); ++i) {
    const State& st = states[i];
    const TimeNs waited = wait.empty() ? 0 : (probe[i] ? 60'000 : 30'000);
    const double counted_ns = timed_counted_ns > 0 ? timed_counted_ns : kCountedRangeNs * st.slower;
    const double inner = probe[i] ? static_cast<double>(kInner) * counted_ns : static_cast<double>(kInner) * st.cost_ns;
    const TimeNs length = waited + st.work_ns + static_cast<TimeNs>(inner);
    s.h.annotation(s.thread, "step", "step", at, at + length, static_cast<std::int64_t>(i));
    if (waited > 0) s.h.annotation(s.thread, "wait", wait, at, at + waited);
    const TimeNs phase = at + waited;
    s.h.annotation(s.thread, "forward", "operation", phase, at + length);
    if (!probe[i]) {
      const TimeNs each = (length - waited) / (kInner + 1);
      for (std::int64_t n = 0; n < kInner; ++n) {
        const TimeNs from = phase + (n + 1) * each;
        s.h.annotation(s.thread, "neuron", "operation", from, from + each / 2);
      }
    } else {
      s.h.annotation(s.thread, "cost probe step", "", at + length, at + length, kInner, "dreamscope.tracer");
      if (timed_counted_ns > 0) {
        s.h.overhead(s.thread, at + length + 10, at + length + 10 + static_cast<TimeNs>(256 * timed_counted_ns),
                     "tracer_counted_ranges_timed");
      }
    }
    s.h.thread_load(ThreadLoadRecord{.track = s.thread,
                                     .start = at,
                                     .end = at + length + between_steps,
                                     .cpu_ns = length,
                                     .runqueue_ns = 0,
                                     .events = probe[i] ? 2 : kInner + 2,
                                     .cost_samples = 100,
                                     .range_cost_ns = st.timing_ns,
                                     .probe_events = probe[i] ? 2 * kInner : 0});
    at += length + between_steps;
  }
  s.end = at;
  s.h.calibration("nvtx_range_counted", kCountedRangeNs);
  return s;
}

// Every fifth step a probe, from the third.
std::vector<bool> every_fifth(std::size_t n) {
  std::vector<bool> p(n);
  for (std::size_t i = 2; i < n; i += 5) p[i] = true;
  return p;
}

std::vector<ThreadLoadRecord> loads_of(const Trace& t) { return t.thread_loads(); }

TEST(ProbeSteps, WhatAProbeStepSavedAgainstItsNeighboursIsWhatARangeCostInWallTime) {
  const std::vector<State> states(20, kFast);
  Steps s = make_steps(states, every_fifth(states.size()));
  const Trace trace = s.h.build();
  const auto loads = loads_of(trace);
  const ThreadProbeSteps p(trace, s.thread, loads, kCountedRangeNs);
  EXPECT_EQ(p.probes(), 4);
  ASSERT_EQ(p.measures().size(), 4u);
  for (const ProbeStepMeasure& m : p.measures()) {
    EXPECT_NEAR(m.cost_ns, 50, 0.1);
    EXPECT_DOUBLE_EQ(m.timing_ns, 70);
  }
  ASSERT_TRUE(p.usable());
  // The timing read 20 ns above the cost; a window timed at 72 is charged 52.
  EXPECT_NEAR(p.range_cost(70), 50, 0.1);
  EXPECT_NEAR(p.range_cost(72), 52, 0.1);
}

TEST(ProbeSteps, EachStateGetsTheOverReadOfTheProbesNearestItsTiming) {
  // Runs of twenty steps fast and twenty slow, two probes in each; in the slow state a counted
  // range costs 1.6 times what start-up calibration said, as the thread's other work does, and
  // the probe step's own length against the fast probes' says so.
  std::vector<State> states;
  for (int run = 0; run < 4; ++run) {
    for (int i = 0; i < 20; ++i) states.push_back(run % 2 == 0 ? kFast : kSlow);
  }
  std::vector<bool> probe(states.size());
  for (std::size_t i = 0; i < states.size(); ++i) probe[i] = i % 20 == 7 || i % 20 == 13;
  Steps s = make_steps(states, probe);
  const Trace trace = s.h.build();
  const auto loads = loads_of(trace);
  const ThreadProbeSteps p(trace, s.thread, loads, kCountedRangeNs);
  EXPECT_EQ(p.probes(), 8);
  ASSERT_EQ(p.measures().size(), 8u);
  EXPECT_NEAR(p.range_cost(70), 50, 0.1);
  EXPECT_NEAR(p.range_cost(95), 80, 0.1);
  const ProbeStepSummary summary = summarize_probe_steps(trace);
  EXPECT_EQ(summary.probes, 8);
  EXPECT_EQ(summary.measured, 8);
  // The summary says which state each window and probe was in: timed at 70 (the fast level)
  // or 95 (past it by more than 15 %), with what a range cost in each.
  EXPECT_EQ(summary.fast.windows, 40);
  EXPECT_EQ(summary.slow.windows, 40);
  EXPECT_EQ(summary.fast.measured, 4);
  EXPECT_EQ(summary.slow.measured, 4);
  EXPECT_NEAR(summary.fast.cost_ns, 50, 0.1);
  EXPECT_NEAR(summary.slow.cost_ns, 80, 0.1);
  EXPECT_DOUBLE_EQ(summary.fast.timing_ns, 70);
  EXPECT_DOUBLE_EQ(summary.slow.timing_ns, 95);
}

TEST(ProbeSteps, AProbeBetweenTwoStatesOrWithNeighboursOnOneSideMeasuresNothing) {
  // The machine slowed down right after the probe; another probe is the first step.
  std::vector<State> states(9, kFast);
  for (std::size_t i = 5; i < states.size(); ++i) states[i] = kSlow;
  std::vector<bool> probe(states.size());
  probe[0] = probe[4] = true;
  Steps s = make_steps(states, probe);
  const Trace trace = s.h.build();
  const auto loads = loads_of(trace);
  const ThreadProbeSteps p(trace, s.thread, loads, kCountedRangeNs);
  EXPECT_EQ(p.probes(), 2);
  EXPECT_TRUE(p.measures().empty());
  EXPECT_FALSE(p.usable());
  EXPECT_LT(p.range_cost(70), 0);
}

TEST(ProbeSteps, AMarkWhereTheNextStepStartsIsTheProbeStepsThatEndsThere) {
  // Steps back to back: the probe's mark, at its step's end, is also where the next step starts.
  const std::vector<State> states(20, kFast);
  Steps s = make_steps(states, every_fifth(states.size()), {}, 0, 0);
  const Trace trace = s.h.build();
  const auto loads = loads_of(trace);
  const ThreadProbeSteps p(trace, s.thread, loads, kCountedRangeNs);
  EXPECT_EQ(p.probes(), 4);
  ASSERT_EQ(p.measures().size(), 4u);
  for (const ProbeStepMeasure& m : p.measures()) EXPECT_NEAR(m.cost_ns, 50, 0.1);
}

TEST(ProbeSteps, AStepsWaitForDataIsNotItsWork) {
  // Each step waits for its batch first (a `wait` phase), the probe steps 60 us and the others
  // 30: a wait is the loaders' time, and a step that waited longer did no more work.
  const std::vector<State> states(20, kFast);
  Steps s = make_steps(states, every_fifth(states.size()), "wait");
  const Trace trace = s.h.build();
  const auto loads = loads_of(trace);
  const ThreadProbeSteps p(trace, s.thread, loads, kCountedRangeNs);
  ASSERT_EQ(p.measures().size(), 4u);
  EXPECT_NEAR(p.range_cost(70), 50, 0.1);
}

TEST(ProbeSteps, TheCountedRangeTimedAfterAProbeStepIsTheCostItCountedAt) {
  // Start-up calibration said 6 ns (kCountedRangeNs), a slow moment or a fast one; right after
  // each probe step the tracer timed a counted range at 9 ns, what the probe's ranges cost.
  const std::vector<State> states(20, kFast);
  Steps s = make_steps(states, every_fifth(states.size()), {}, 9.0);
  const Trace trace = s.h.build();
  const auto loads = loads_of(trace);
  const ThreadProbeSteps p(trace, s.thread, loads, kCountedRangeNs);
  ASSERT_EQ(p.measures().size(), 4u);
  for (const ProbeStepMeasure& m : p.measures()) EXPECT_NEAR(m.cost_ns, 50, 0.1);
}

TEST(OverheadCorrection, RangesAreChargedTheirTimingLessWhatTheProbeStepsFoundItOverReads) {
  const std::vector<State> states(20, kFast);
  Steps s = make_steps(states, every_fifth(states.size()));
  const Trace trace = s.h.build();
  DependencyGraph g = build_dependency_graph(trace);
  const OverheadCorrection c = correct_overhead(trace, g);
  EXPECT_EQ(c.probe_steps, 4);
  EXPECT_EQ(c.probe_steps_measured, 4);
  EXPECT_EQ(c.threads_by_probe_steps, 1);
  // 16 recorded steps of kInner + 2 ranges and 4 probe steps of 2, each 50 ns; the 4 probes'
  // counted ranges 3 ns a call; the marks nothing (no mark cost in this trace).
  const double ranges = 16.0 * (kInner + 2) + 4.0 * 2;
  EXPECT_NEAR(static_cast<double>(c.charged_ns), ranges * 50 + 4.0 * 2 * kInner * kCountedRangeNs / 2, 50.0);
}

} // namespace
} // namespace dreamscope::whatif
