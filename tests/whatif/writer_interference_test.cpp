// The writer's busy spells (tracer_writer_busy rows) as overhead correction reads them: how much
// slower a thread ran beside them, from the gaps between its recorded events, and what that
// takes out of its tasks (whatif/writer_interference.h).
#include "../common/hand_trace.h"

#include <dreamscope/graph/graph.h>
#include <dreamscope/storage/tracer_environment.h>
#include <dreamscope/whatif/whatif.h>
#include <dreamscope/whatif/writer_interference.h>

#include <gtest/gtest.h>

namespace dreamscope::whatif {
namespace {

using test::HandTrace;

constexpr TimeNs kSpellEvery = 12'000'000, kSpellLength = 2'000'000;
constexpr int kSpells = 20;

// One thread's step of back-to-back `op` ranges, a range starting every `out_gap` ns, and every
// `in_gap` ns inside the writer's spells (2 ms every 12 ms, from 10 ms on); `wait_in_spell` > 0
// leaves that long a stretch without events in the middle of each spell (the thread blocked).
Trace paced_thread(TimeNs out_gap, TimeNs in_gap, TimeNs wait_in_spell = 0) {
  HandTrace h("");
  const TrackId thread = h.thread(1);
  const TimeNs end = 10'000'000 + kSpells * kSpellEvery;
  h.annotation(thread, "step", "step", 0, end, 0);
  TimeNs at = 1;
  while (at < end - 2000) {
    const TimeNs into = at - 10'000'000;
    const bool in_spell = into >= 0 && into % kSpellEvery < kSpellLength && into / kSpellEvery < kSpells;
    const TimeNs gap = in_spell ? in_gap : out_gap;
    h.annotation(thread, "op", "operation", at, at + gap / 2);
    at += gap;
    if (wait_in_spell > 0 && in_spell && into % kSpellEvery < kSpellLength / 2 && (into + gap) % kSpellEvery >= kSpellLength / 2) {
      at += wait_in_spell;
    }
  }
  for (int k = 0; k < kSpells; ++k) {
    const TimeNs start = 10'000'000 + k * kSpellEvery;
    h.overhead(thread, start, start + kSpellLength, tracer_environment::kWriterBusy);
  }
  return h.build();
}

TEST(WriterInterference, AThreadHalfAgainSlowerInTheSpellsMeasuresFiftyPercent) {
  const Trace trace = paced_thread(1000, 1500);
  const WriterInterference w = measure_writer_interference(trace);
  EXPECT_EQ(w.spells, kSpells);
  EXPECT_EQ(w.measured, kSpells);
  EXPECT_NEAR(w.median_slowdown, 0.5, 0.01);
  ASSERT_EQ(w.slowed.size(), static_cast<std::size_t>(kSpells));
  for (const WriterSlowdown& s : w.slowed) {
    EXPECT_NEAR(s.slowdown, 0.5, 0.01);
    EXPECT_EQ(s.end - s.start, kSpellLength);
  }
}

TEST(WriterInterference, CorrectionTakesTheSlowedThirdOfEachSpellOut) {
  const Trace trace = paced_thread(1000, 1500);
  DependencyGraph g = build_dependency_graph(trace);
  const OverheadCorrection c = correct_overhead(trace, g);
  EXPECT_EQ(c.writer_spells, kSpells);
  EXPECT_EQ(c.writer_spells_measured, kSpells);
  EXPECT_NEAR(c.writer_slowdown, 0.5, 0.01);
  // Each spell's 2 ms ran half again as slow: a third of it was the writer's.
  EXPECT_NEAR(static_cast<double>(c.writer_slowdown_charged_ns), kSpells * kSpellLength / 3.0, kSpells * 20'000.0);
  EXPECT_EQ(c.overhead_records, 0) << "a spell is not the tracer's work on the thread";
}

TEST(WriterInterference, AThreadAsFastInTheSpellsIsChargedNothing) {
  const Trace trace = paced_thread(1000, 1000);
  const WriterInterference w = measure_writer_interference(trace);
  EXPECT_EQ(w.measured, kSpells);
  EXPECT_NEAR(w.median_slowdown, 0, 0.01);
  DependencyGraph g = build_dependency_graph(trace);
  EXPECT_LT(correct_overhead(trace, g).writer_slowdown_charged_ns, kSpells * 20'000);
}

TEST(WriterInterference, AWaitInASpellIsNotTakenForASlowerPace) {
  // 300 us without events in each spell: a wait, far above the thread's 1 us gaps.
  const Trace trace = paced_thread(1000, 1000, 300'000);
  const WriterInterference w = measure_writer_interference(trace);
  EXPECT_EQ(w.measured, kSpells);
  EXPECT_NEAR(w.median_slowdown, 0, 0.01);
}

TEST(WriterInterference, TooFewEventsMeasureNothing) {
  // A range every 100 us: 20 in a spell, short of what a measure takes.
  const Trace trace = paced_thread(100'000, 150'000);
  const WriterInterference w = measure_writer_interference(trace);
  EXPECT_EQ(w.spells, kSpells);
  EXPECT_LT(w.measured, kSpells / 2);
}

TEST(WriterInterference, ATraceWithoutSpellsHasNone) {
  HandTrace h("");
  const TrackId thread = h.thread(1);
  h.annotation(thread, "step", "step", 0, 1000, 0);
  const WriterInterference w = measure_writer_interference(h.build());
  EXPECT_EQ(w.spells, 0);
  EXPECT_EQ(w.median_slowdown, -1);
}

} // namespace
} // namespace dreamscope::whatif
