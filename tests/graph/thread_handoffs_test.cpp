// Pass 6's handoffs between threads (inferred_waits.cpp): which burst of which thread a long
// wait is handed to when many long ranges overlap it, and the same result as a plain
// reference (every wait against every other thread, as the pass did before its index) on
// random small traces, with the index keeping 2 candidates per wait (as the pass runs) and 1
// (so that every candidate an earlier match rules out sends the wait to its scan).
#include "../common/hand_trace.h"
#include "passes/passes.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

namespace dreamscope {
namespace {

using graph_build::GraphBuildState;
using graph_build::run_passes;
using test::annotation_row;
using test::HandTrace;

using Edge = std::pair<EdgeKind, std::pair<std::uint32_t, std::uint32_t>>;

std::vector<Edge> handoffs_and_joins(const GraphBuildState& st) {
  std::vector<Edge> out;
  for (std::size_t k = 0; k < st.edges.ends.size(); ++k) {
    const EdgeKind kind = st.edges.info[k].kind;
    if (kind == EdgeKind::Handoff || kind == EdgeKind::Join) out.push_back({kind, st.edges.ends[k]});
  }
  return out;
}

// The pass as it was before its index: for each long wait, in thread then task order, every
// other thread of its process in thread order, each tested by walking its tasks; the burst
// whose end is nearest the wait's end wins, the lowest thread among equals; a burst already
// handed a wait is not that wait's burst in turn.
void reference_handoffs(GraphBuildState& s) {
  constexpr TimeNs kMinWait = 500'000, kMinResume = 200'000;
  graph_build::TaskTable& tasks = s.tasks;
  auto is_event = [&](TaskId t) { return tasks.kind[t] != TaskKind::CpuWork; };
  const auto& start = tasks.measured_start;
  const auto& end = tasks.measured_end;
  std::vector<ResourceId> threads;
  for (ResourceId r = 0; r < tasks.resource_count(); ++r) {
    if (!tasks.is_stream(r) && tasks.first(r) != tasks.end(r)) threads.push_back(r);
  }
  struct Burst {
    ResourceId thread;
    TaskId first, last;
  };
  std::unordered_map<TaskId, Burst> burst_of;
  auto serves = [&](TaskId waiter, ResourceId thread, TaskId task) {
    auto it = burst_of.find(waiter);
    return it != burst_of.end() && it->second.thread == thread && it->second.first <= task && task <= it->second.last;
  };
  for (ResourceId a : threads) {
    for (TaskId p = tasks.first(a); p < tasks.end(a); ++p) {
      const TimeNs ps = start[p], pe = end[p];
      if (pe - ps < kMinWait || (tasks.flags[p] & kTaskBlocking)) continue;
      const TimeNs slack = std::max<TimeNs>(kMinResume, static_cast<TimeNs>(0.02 * static_cast<double>(pe - ps)));
      bool found = false;
      Burst best{};
      TimeNs best_resume = 0;
      for (ResourceId b : threads) {
        if (b == a || graph_build::process_of(s.trace, b) != graph_build::process_of(s.trace, a)) continue;
        TaskId first = tasks.first(b);
        while (first < tasks.end(b) && (!is_event(first) || start[first] < ps)) ++first;
        if (first == tasks.end(b) || start[first] >= pe) continue;
        if (first > tasks.first(b) && (is_event(first - 1) || start[first - 1] > ps)) continue;
        TaskId after = first; // b's first task starting at or after pe
        while (after < tasks.end(b) && start[after] < pe) ++after;
        if (after < tasks.end(b) && is_event(after) && start[after] == pe) continue;
        TaskId last = after - 1;
        while (last > first && !is_event(last)) --last;
        if (end[last] > pe || (last + 1 < tasks.end(b) && end[last + 1] < pe)) continue;
        if (serves(first, a, p) || serves(last, a, p)) continue;
        const TimeNs resume = pe - end[last];
        if (resume > slack || (found && resume >= best_resume)) continue;
        found = true;
        best = {b, first, last};
        best_resume = resume;
      }
      if (!found) continue;
      burst_of[p] = best;
      s.edges.add(p, best.first, EdgeKind::Handoff, start[best.first] - ps);
      if (best.first > tasks.first(best.thread)) {
        tasks.base[best.first - 1] = 0;
      } else {
        tasks.gap[best.first] = 0;
      }
      s.edges.add(best.last, p, EdgeKind::Join, 0);
      s.note_wait(p, end[best.last]);
    }
  }
}

// One long wait overlapped by many long ranges of other threads, each of which fails for its
// own reason, and two bursts that fit it as well as each other.
TEST(ThreadHandoffs, AmongManyOverlappingRangesTheNearestFittingBurstOfTheLowestThreadIsTaken) {
  HandTrace h("");
  const TrackId t1 = h.thread(1);
  h.annotation(t1, "wait", "operation", 1'000'000, 3'000'000); // slack: 200 µs
  h.annotation(h.thread(2), "busy when the wait began", "operation", 900'000, 2'950'000);
  h.annotation(h.thread(3), "ends after the wait", "operation", 1'100'000, 3'300'000);
  // Two runs, idle before, between and after: the burst is both, 10 µs before the wait's end.
  const TrackId t4 = h.thread(4);
  h.annotation(t4, "burst begins", "operation", 1'010'000, 1'100'000);
  h.annotation(t4, "burst ends", "operation", 2'600'000, 2'990'000);
  const TrackId t5 = h.thread(5);
  h.annotation(t5, "ends nearer", "operation", 2'700'000, 2'995'000);
  h.annotation(t5, "but busy again across the wait's end", "operation", 2'997'000, 3'010'000);
  h.annotation(h.thread(6), "fits as well as thread 4's", "operation", 2'800'000, 2'990'000);
  h.annotation(h.thread(7), "ends too early", "operation", 1'100'000, 2'700'000); // 300 µs before
  const TrackId t8 = h.thread(8);
  h.annotation(t8, "busy when the wait began, in an earlier run", "operation", 950'000, 1'050'000);
  h.annotation(t8, "ends nearest", "operation", 2'500'000, 2'999'000);
  // 20 more threads whose 3 ms ranges start inside the wait, a ns apart, and end after it.
  for (int k = 0; k < 20; ++k) {
    h.annotation(h.thread(10 + k), "crowd " + std::to_string(k), "operation", 1'000'000 + k, 4'000'000 + k);
  }
  const Trace trace = h.build();
  const GraphBuildState st = run_passes(trace, "inferred_waits");
  const TaskId wait = st.tasks.annotation_first[annotation_row(trace, "wait")];
  const TaskId first = st.tasks.annotation_first[annotation_row(trace, "burst begins")];
  const TaskId last = st.tasks.annotation_last[annotation_row(trace, "burst ends")];
  const std::vector<Edge> expected = {{EdgeKind::Handoff, {wait, first}}, {EdgeKind::Join, {last, wait}}};
  EXPECT_EQ(handoffs_and_joins(st), expected) << "no other long range is anyone's wait or burst";
  EXPECT_EQ(st.wait_end[wait], 2'990'000);
  EXPECT_EQ(st.tasks.gap[first], 0); // thread 4's first task: the handoff, not its gap, holds it
  for (std::size_t k = 0; k < st.edges.ends.size(); ++k) {
    if (st.edges.info[k].kind == EdgeKind::Handoff) {
      EXPECT_EQ(st.edges.info[k].delay, 10'000);
    }
  }
  GraphBuildState ref = run_passes(trace, "data_pipeline");
  reference_handoffs(ref);
  EXPECT_EQ(handoffs_and_joins(ref), expected);
}

// Threads whose 1 ms ranges all start at the same moment: each fits every other's wait, and
// an earlier match rules candidates out (serves()), so the index's kept candidates run out.
TEST(ThreadHandoffs, RangesFromOneMomentMatchAsTheReferenceDoes) {
  HandTrace h("");
  for (int k = 0; k < 6; ++k) h.annotation(h.thread(1 + k), "op " + std::to_string(k), "operation", 0, 1'000'000);
  const Trace trace = h.build();
  GraphBuildState ref = run_passes(trace, "data_pipeline");
  reference_handoffs(ref);
  for (std::size_t kept : {1u, 2u}) {
    GraphBuildState st = run_passes(trace, "data_pipeline");
    graph_build::add_thread_handoffs(st, kept);
    EXPECT_EQ(handoffs_and_joins(st), handoffs_and_joins(ref)) << "kept " << kept;
  }
}

// Random traces of a few threads (in one or two processes) with nested and sequential ranges
// on a coarse grid, so that starts, ends and spans often coincide: the pass adds the same
// edges in the same order, and changes the same bases, gaps and waits, as the reference.
TEST(ThreadHandoffs, RandomTracesMatchTheReference) {
  std::mt19937_64 rng(38);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int with_handoffs = 0;
  for (int round = 0; round < 3000; ++round) {
    HandTrace h("");
    std::vector<TrackId> threads;
    const int thread_count = uniform(2, 7);
    std::uint32_t second = 0;
    if (uniform(0, 3) == 0) second = h.process({.pid = 2000, .parent_pid = 1000, .name = "worker"});
    for (int k = 0; k < thread_count; ++k) {
      threads.push_back(second != 0 && k % 2 == 1 ? h.thread(second, 100 + k) : h.thread(1 + k));
    }
    const TimeNs unit = uniform(0, 1) == 0 ? 100'000 : 50'000;
    int name = 0;
    for (TrackId t : threads) {
      TimeNs at = unit * uniform(0, 6);
      for (int r = uniform(0, 4); r > 0; --r) {
        const TimeNs length = unit * uniform(0, 16);
        const std::string outer = "r" + std::to_string(name++);
        h.annotation(t, outer, "operation", at, at + length);
        if (length > 0 && uniform(0, 3) == 0) { // a range nested inside it
          const TimeNs from = at + unit * uniform(0, static_cast<int>(length / unit));
          const TimeNs to = from + unit * uniform(0, static_cast<int>((at + length - from) / unit));
          h.annotation(t, "r" + std::to_string(name++), "operation", from, to);
        }
        at += length + unit * uniform(0, 5);
      }
    }
    const Trace trace = h.build();
    GraphBuildState ref = run_passes(trace, "data_pipeline");
    reference_handoffs(ref);
    if (!ref.edges.ends.empty()) ++with_handoffs;
    for (std::size_t kept : {1u, 2u}) {
      GraphBuildState st = run_passes(trace, "data_pipeline");
      graph_build::add_thread_handoffs(st, kept);
      ASSERT_EQ(st.edges.ends, ref.edges.ends) << "round " << round << ", kept " << kept;
      for (std::size_t e = 0; e < ref.edges.info.size(); ++e) {
        ASSERT_EQ(st.edges.info[e].kind, ref.edges.info[e].kind) << "round " << round;
        ASSERT_EQ(st.edges.info[e].delay, ref.edges.info[e].delay) << "round " << round;
      }
      ASSERT_EQ(st.tasks.base, ref.tasks.base) << "round " << round;
      ASSERT_EQ(st.tasks.gap, ref.tasks.gap) << "round " << round;
      ASSERT_EQ(st.tasks.flags, ref.tasks.flags) << "round " << round;
      ASSERT_EQ(st.wait_end, ref.wait_end) << "round " << round;
    }
    // The whole pass, queue waits included (none here: no CUDA calls), is the same.
    ASSERT_EQ(run_passes(trace, "inferred_waits").edges.ends, ref.edges.ends) << "round " << round;
  }
  EXPECT_GT(with_handoffs, 300) << "the random traces should exercise matches, not only misses";
}

} // namespace
} // namespace dreamscope
