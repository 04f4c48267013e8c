// The tracer's cost probes (tracer/src/writer_thread.cpp, "Cost probes") as overhead correction
// reads them: exact figures on hand-built thread loads.
#include "../common/hand_trace.h"

#include <dreamscope/graph/graph.h>
#include <dreamscope/whatif/cost_probes.h>
#include <dreamscope/whatif/whatif.h>

#include <gtest/gtest.h>

#include <vector>

namespace dreamscope::whatif {
namespace {

using test::HandTrace;

constexpr TimeNs kWindow = 10'000'000;

// A window of `calls` NVTX calls at `work` ns of the job's own CPU per call, recording one
// costing `record` ns more; a probe window records a tenth of its calls and counts the rest.
ThreadLoadRecord window(TrackId track, int index, std::int64_t calls, double work, double record, bool probe) {
  const std::int64_t recorded = probe ? calls / 10 : calls;
  return ThreadLoadRecord{.track = track,
                          .start = index * kWindow,
                          .end = (index + 1) * kWindow,
                          .cpu_ns = static_cast<TimeNs>(static_cast<double>(calls) * work +
                                                        static_cast<double>(recorded) * record),
                          .runqueue_ns = 0,
                          .events = recorded,
                          .probe_events = calls - recorded};
}

TEST(CostProbes, WhatAProbeSavedPerCallItDidNotRecordIsWhatRecordingCosts) {
  const std::vector<ThreadLoadRecord> w = {window(TrackId{0}, 0, 1000, 40, 25, false), window(TrackId{0}, 1, 1000, 40, 25, true),
                                           window(TrackId{0}, 2, 1000, 40, 25, false)};
  const ThreadProbes p(w);
  EXPECT_EQ(p.probes(), 1);
  ASSERT_EQ(p.measures().size(), 1u);
  EXPECT_DOUBLE_EQ(p.measures()[0].record_ns, 25);
  EXPECT_DOUBLE_EQ(p.measures()[0].speed_ns, 65);
  EXPECT_DOUBLE_EQ(p.record_ns(65), 25);
  // The probe window's speed as if it had recorded every call: the plain windows'.
  EXPECT_DOUBLE_EQ(p.speed_ns(w[1]), 65);
}

TEST(CostProbes, AProbeWhoseNeighboursRanAtDifferentSpeedsMeasuresNothing) {
  // The machine slowed down between the two plain windows: 65 and 90 ns a call.
  const std::vector<ThreadLoadRecord> w = {window(TrackId{0}, 0, 1000, 40, 25, false), window(TrackId{0}, 1, 1000, 40, 25, true),
                                           window(TrackId{0}, 2, 1000, 60, 30, false)};
  const ThreadProbes p(w);
  EXPECT_EQ(p.probes(), 1);
  EXPECT_TRUE(p.measures().empty());
  EXPECT_LT(p.record_ns(65), 0);
}

TEST(CostProbes, AProbeAtTheEdgeOrBetweenWindowsTooSmallToMeasureMeasuresNothing) {
  const std::vector<ThreadLoadRecord> w = {window(TrackId{0}, 0, 1000, 40, 25, true), window(TrackId{0}, 1, 10, 40, 25, false),
                                           window(TrackId{0}, 2, 1000, 40, 25, true)};
  const ThreadProbes p(w);
  EXPECT_EQ(p.probes(), 2);
  EXPECT_TRUE(p.measures().empty());
}

TEST(CostProbes, NeighboursAcrossAPauseOfRecordingCount) {
  // Recording paused between the probe and its next plain window (a gap of 20 ms in the
  // windows), and a short window too small to measure came before the probe.
  std::vector<ThreadLoadRecord> w = {window(TrackId{0}, 0, 1000, 40, 25, false), window(TrackId{0}, 1, 20, 40, 25, false),
                                     window(TrackId{0}, 2, 1000, 40, 25, true), window(TrackId{0}, 5, 1000, 40, 25, false)};
  const ThreadProbes p(w);
  ASSERT_EQ(p.measures().size(), 1u);
  EXPECT_DOUBLE_EQ(p.measures()[0].record_ns, 25);
  // Past 50 ms, a window is no neighbour.
  w[3] = window(TrackId{0}, 9, 1000, 40, 25, false);
  EXPECT_TRUE(ThreadProbes(w).measures().empty());
}

// Windows in two states of the machine: fast (40 ns of work a call, a record 20 ns) and slow
// (60 and 32 ns), alternating every 8 windows, a probe in the middle of each run of them.
std::vector<ThreadLoadRecord> two_states(TrackId track, int runs) {
  std::vector<ThreadLoadRecord> w;
  for (int r = 0; r < runs; ++r) {
    const bool slow = r % 2 == 1;
    for (int i = 0; i < 8; ++i) {
      w.push_back(window(track, r * 8 + i, 1000, slow ? 60 : 40, slow ? 32 : 20, i == 4));
    }
  }
  return w;
}

TEST(CostProbes, EachWindowIsChargedWhatTheProbesMeasuredAtItsSpeed) {
  const std::vector<ThreadLoadRecord> w = two_states(TrackId{0}, 8);
  const ThreadProbes p(w);
  EXPECT_EQ(p.probes(), 8);
  ASSERT_EQ(p.measures().size(), 8u);
  const double fast = p.speed_ns(w[0]), slow = p.speed_ns(w[8]);
  EXPECT_FALSE(p.slow(fast));
  EXPECT_TRUE(p.slow(slow));
  // Four probes at each speed: the nearest seven hold all four of a window's own state and
  // three of the other, and their median is one of its own.
  EXPECT_DOUBLE_EQ(p.record_ns(60), 20);
  EXPECT_DOUBLE_EQ(p.record_ns(92), 32);
}

TEST(CostProbes, TheSummarySaysWhatARecordCostInEachState) {
  HandTrace h;
  const TrackId t = h.thread(1);
  for (const ThreadLoadRecord& w : two_states(t, 8)) h.thread_load(w);
  h.annotation(t, "step", "step", 0, 64 * kWindow);
  const ProbeSummary s = summarize_probes(h.build());
  EXPECT_EQ(s.probes, 8);
  EXPECT_EQ(s.measured, 8);
  EXPECT_EQ(s.fast_windows, 32);
  EXPECT_EQ(s.slow_windows, 32);
  EXPECT_DOUBLE_EQ(s.fast_record_ns, 20);
  EXPECT_DOUBLE_EQ(s.slow_record_ns, 32);
}

// A step over three windows of ten ranges each, the middle window a probe; start-up says a range
// costs 10 ns, and 6 ns when a probe counts it. The recorded ranges are charged as without
// probes (the calls' timing, here start-up calibration: docs/simulation.md says why not the
// probes' measure); the 90 calls the probe counted, 3 ns each, over the thread's tasks in its
// window.
TEST(OverheadCorrection, TheCallsAProbeCountedAreChargedWhatACountedCallCosts) {
  HandTrace h;
  const TrackId t = h.thread(1);
  h.annotation(t, "step", "step", 0, 3 * kWindow);
  for (int win = 0; win < 3; ++win) {
    for (int i = 0; i < 10; ++i) {
      const TimeNs at = win * kWindow + 1000 + i * 100'000;
      h.annotation(t, "op", "operation", at, at + 50'000);
    }
    h.thread_load(window(t, win, 100, 40, 25, win == 1));
  }
  h.calibration("nvtx_range", 10);
  h.calibration("nvtx_range_counted", 6);
  const Trace trace = h.build();
  DependencyGraph g = build_dependency_graph(trace);
  const OverheadCorrection c = correct_overhead(trace, g);
  EXPECT_EQ(c.events_charged, 31);
  EXPECT_EQ(c.counted_calls, 90);
  EXPECT_NEAR(static_cast<double>(c.charged_ns), 31 * 10 + 90 * 3, 1.0);
}

} // namespace
} // namespace dreamscope::whatif
