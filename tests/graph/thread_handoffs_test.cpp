// Pass 6's handoffs between threads (inferred_waits.cpp): which burst of which thread a long
// wait is handed to when many long ranges overlap it, the same result as a plain reference
// (every wait against every other thread, as the pass did before its index) on random small
// traces, and no cycle in the graph however many ranges of many threads share their instants.
#include "../common/hand_trace.h"
#include "passes/passes.h"

#include <dreamscope/graph/graph.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <tuple>
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
// whose end is nearest the wait's end wins, the lowest thread among equals; and only a burst
// whose first task starts after the wait and whose last task ends before it, in the order of
// times and, at one instant, of ends of ranges, instants (start, then end, by task), starts
// of ranges, ranges' starts by task and their ends by task descending. A burst must cover a
// quarter of the wait, and of waits that take the same first task, the one that began last keeps it.
void reference_handoffs(GraphBuildState& s) {
  constexpr TimeNs kMinWait = 500'000, kMinResume = 200'000;
  graph_build::TaskTable& tasks = s.tasks;
  auto is_event = [&](TaskId t) { return tasks.kind[t] != TaskKind::CpuWork; };
  const auto& start = tasks.measured_start;
  const auto& end = tasks.measured_end;
  const auto start_order = [&](TaskId t) {
    const bool instant = start[t] == end[t];
    return std::tuple(start[t], instant ? 1 : 2, instant ? 2 * std::int64_t{t} : std::int64_t{t});
  };
  const auto end_order = [&](TaskId t) {
    const bool instant = start[t] == end[t];
    return std::tuple(end[t], instant ? 1 : 0, instant ? 2 * std::int64_t{t} + 1 : -std::int64_t{t});
  };
  std::vector<ResourceId> threads;
  for (ResourceId r = 0; r < tasks.resource_count(); ++r) {
    if (!tasks.is_stream(r) && tasks.first(r) != tasks.end(r)) threads.push_back(r);
  }
  struct Burst {
    ResourceId thread;
    TaskId first, last;
  };
  std::vector<std::pair<TaskId, Burst>> matched; // (wait, burst)
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
        if (!(start_order(p) < start_order(first)) || !(end_order(last) < end_order(p))) continue;
        const TimeNs resume = pe - end[last];
        if (4 * (end[last] - start[first]) < pe - ps) continue;
        if (resume > slack || (found && resume >= best_resume)) continue;
        found = true;
        best = {b, first, last};
        best_resume = resume;
      }
      if (found) matched.emplace_back(p, best);
    }
  }
  for (std::size_t i = 0; i < matched.size(); ++i) {
    const auto& [p, best] = matched[i];
    bool woken_by_another = false; // one that began later, or as late and comes first
    for (std::size_t j = 0; j < matched.size(); ++j) {
      const TaskId q = matched[j].first;
      if (j == i || matched[j].second.first != best.first) continue;
      woken_by_another = woken_by_another || start[q] > start[p] || (start[q] == start[p] && j < i);
    }
    if (woken_by_another) continue;
    s.edges.add(p, best.first, EdgeKind::Handoff, start[best.first] - start[p]);
    if (best.first > tasks.first(best.thread)) {
      tasks.base[best.first - 1] = 0;
    } else {
      tasks.gap[best.first] = 0;
    }
    s.edges.add(best.last, p, EdgeKind::Join, 0);
    s.note_wait(p, end[best.last]);
  }
}

// PyTorch's backward() on an H200: the training thread waits 1.33 ms, the autograd thread's
// burst runs from 130 µs into it to 50 µs before its end, and the pin-memory thread polls
// events for 20 µs, ending 40 µs before it: nearer, but a short burst that covers little of
// the wait is something else. Taken for the wait, it tied the training thread to the
// pin-memory thread's measured timing, and a corrected replay's step ran 30 ms long.
TEST(ThreadHandoffs, ABurstThatCoversLittleOfTheWaitIsPassedOverForOneThatCoversIt) {
  HandTrace h("");
  h.annotation(h.thread(1), "backward", "operation", 1'000'000, 2'330'000);
  h.annotation(h.thread(2), "autograd backward", "operation", 1'130'000, 2'280'000);
  h.annotation(h.thread(3), "event polls", "operation", 2'270'000, 2'290'000);
  const Trace trace = h.build();
  const GraphBuildState st = run_passes(trace, "inferred_waits");
  const TaskId wait = st.tasks.annotation_first[annotation_row(trace, "backward")];
  const TaskId autograd = st.tasks.annotation_first[annotation_row(trace, "autograd backward")];
  const std::vector<Edge> expected = {{EdgeKind::Handoff, {wait, autograd}}, {EdgeKind::Join, {autograd, wait}}};
  EXPECT_EQ(handoffs_and_joins(st), expected);
  GraphBuildState ref = run_passes(trace, "data_pipeline");
  reference_handoffs(ref);
  EXPECT_EQ(handoffs_and_joins(ref), expected);
}

// Two waits fit the same burst: the training thread's, which began 130 µs before it, and an
// idle thread's 5 ms sit (the pin-memory thread between batches), which began 1.1 ms before it
// and ends as the burst's thread ends a later run. The burst was woken by one of them, the
// nearest: the other gets no handoff (it tied the autograd thread to the pin-memory thread's
// measured timing and left a corrected step 40 ms long).
TEST(ThreadHandoffs, ABurstIsHandedOverByTheWaitThatBeganNearestBeforeIt) {
  HandTrace h("");
  const TrackId pin = h.thread(3);
  h.annotation(pin, "polls before", "operation", 0, 10'000);
  h.annotation(pin, "polls after", "operation", 6'000'000, 6'010'000);
  h.annotation(h.thread(1), "backward", "operation", 1'000'000, 2'330'000);
  const TrackId autograd = h.thread(2);
  h.annotation(autograd, "autograd backward", "operation", 1'130'000, 2'280'000);
  h.annotation(autograd, "autograd backward 2", "operation", 5'500'000, 5'950'000);
  const Trace trace = h.build();
  const GraphBuildState st = run_passes(trace, "inferred_waits");
  const TaskId wait = st.tasks.annotation_first[annotation_row(trace, "backward")];
  const TaskId burst = st.tasks.annotation_first[annotation_row(trace, "autograd backward")];
  const std::vector<Edge> expected = {{EdgeKind::Handoff, {wait, burst}}, {EdgeKind::Join, {burst, wait}}};
  EXPECT_EQ(handoffs_and_joins(st), expected);
  GraphBuildState ref = run_passes(trace, "data_pipeline");
  reference_handoffs(ref);
  EXPECT_EQ(handoffs_and_joins(ref), expected);
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

// Threads whose 1 ms ranges all start at the same moment: each fits every other's wait. The
// pass once handed thread 1's to 2, 2's to 3 and 3's to 1 (a cycle: nothing replayed); at one
// instant the order is by thread now, so the waits make a chain and the last thread waits for
// none.
TEST(ThreadHandoffs, RangesFromOneMomentMakeAChain) {
  HandTrace h("");
  for (int k = 0; k < 6; ++k) h.annotation(h.thread(1 + k), "op " + std::to_string(k), "operation", 0, 1'000'000);
  const Trace trace = h.build();
  GraphBuildState ref = run_passes(trace, "data_pipeline");
  reference_handoffs(ref);
  GraphBuildState st = run_passes(trace, "data_pipeline");
  graph_build::add_thread_handoffs(st);
  std::vector<Edge> expected;
  for (int k = 0; k + 1 < 6; ++k) {
    const TaskId op = st.tasks.annotation_first[annotation_row(trace, "op " + std::to_string(k))];
    const TaskId next = st.tasks.annotation_first[annotation_row(trace, "op " + std::to_string(k + 1))];
    expected.push_back({EdgeKind::Handoff, {op, next}});
    expected.push_back({EdgeKind::Join, {next, op}});
  }
  EXPECT_EQ(handoffs_and_joins(st), expected);
  EXPECT_EQ(handoffs_and_joins(ref), expected);
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
    ProcessId second{0};
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
    GraphBuildState st = run_passes(trace, "data_pipeline");
    graph_build::add_thread_handoffs(st);
    ASSERT_EQ(st.edges.ends, ref.edges.ends) << "round " << round;
    for (std::size_t e = 0; e < ref.edges.info.size(); ++e) {
      ASSERT_EQ(st.edges.info[e].kind, ref.edges.info[e].kind) << "round " << round;
      ASSERT_EQ(st.edges.info[e].delay, ref.edges.info[e].delay) << "round " << round;
    }
    ASSERT_EQ(st.tasks.base, ref.tasks.base) << "round " << round;
    ASSERT_EQ(st.tasks.gap, ref.tasks.gap) << "round " << round;
    ASSERT_EQ(st.tasks.flags, ref.tasks.flags) << "round " << round;
    ASSERT_EQ(st.wait_end, ref.wait_end) << "round " << round;
    // The whole pass, queue waits included (none here: no CUDA calls), is the same.
    ASSERT_EQ(run_passes(trace, "inferred_waits").edges.ends, ref.edges.ends) << "round " << round;
  }
  EXPECT_GT(with_handoffs, 300) << "the random traces should exercise matches, not only misses";
}

// A wait that begins 1 ns after an instant that ends a run, in the piece after it: the burst
// after that piece is its first event at or after the wait's start, the instant not. A wait
// that begins at the instant has the instant for its first event, which goes before it.
TEST(ThreadHandoffs, AWaitBeginningJustAfterAnInstantTakesTheBurstAfterIt) {
  HandTrace h("");
  const TrackId a = h.thread(1), b = h.thread(2), c = h.thread(3);
  h.annotation(a, "wait", "operation", 1'000'001, 2'000'001);
  h.annotation(c, "wait at the instant", "operation", 1'000'000, 2'000'000);
  h.annotation(b, "earlier", "operation", 0, 500'000);
  h.annotation(b, "instant", "operation", 1'000'000, 1'000'000);
  h.annotation(b, "burst", "operation", 1'200'000, 1'900'000);
  const Trace trace = h.build();
  GraphBuildState st = run_passes(trace, "data_pipeline");
  graph_build::add_thread_handoffs(st);
  const TaskId wait = st.tasks.annotation_first[annotation_row(trace, "wait")];
  const TaskId burst = st.tasks.annotation_first[annotation_row(trace, "burst")];
  const std::vector<Edge> expected = {{EdgeKind::Handoff, {wait, burst}}, {EdgeKind::Join, {burst, wait}}};
  EXPECT_EQ(handoffs_and_joins(st), expected);
  GraphBuildState ref = run_passes(trace, "data_pipeline");
  reference_handoffs(ref);
  EXPECT_EQ(handoffs_and_joins(ref), expected);
}

// Random traces built around what the pass's index tells apart: threads that run several
// runs of adjacent ranges (some instants, some nested) with gaps of 0 to 3 units, so that
// many are busy as a wait begins and end a later run as it ends, bursts span several runs,
// instants sit just before a piece, at a wait's start and at its end, and pieces end exactly
// where waits end; waits of 5 to 9 units (slack: 2 units). The pass matches as its reference.
TEST(ThreadHandoffs, RunsAcrossWaitsStartsAndEndsMatchTheReference) {
  std::mt19937_64 rng(3839);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int with_handoffs = 0, several_runs = 0, refused_busy = 0;
  for (int round = 0; round < 3000; ++round) {
    HandTrace h("");
    constexpr TimeNs unit = 100'000;
    const int thread_count = uniform(2, 8);
    int name = 0;
    std::vector<TrackId> threads;
    for (int k = 0; k < thread_count; ++k) threads.push_back(h.thread(1 + k));
    for (TrackId t : threads) {
      TimeNs at = unit * uniform(0, 4);
      for (int run = uniform(1, 4); run > 0; --run) {
        for (int r = uniform(1, 3); r > 0; --r) {
          // A wait now and then; else short ranges and instants, one after the other.
          const TimeNs length = unit * (uniform(0, 4) == 0 ? uniform(5, 9) : uniform(0, 2));
          h.annotation(t, "r" + std::to_string(name++), "operation", at, at + length);
          if (length > 0 && uniform(0, 4) == 0) { // an instant inside it, or at its start
            const TimeNs inside = at + unit * uniform(0, static_cast<int>(length / unit) - 1);
            h.annotation(t, "r" + std::to_string(name++), "operation", inside, inside);
          }
          at += length;
        }
        at += unit * uniform(0, 3);
      }
    }
    const Trace trace = h.build();
    GraphBuildState ref = run_passes(trace, "data_pipeline");
    reference_handoffs(ref);
    GraphBuildState st = run_passes(trace, "data_pipeline");
    graph_build::add_thread_handoffs(st);
    ASSERT_EQ(st.edges.ends, ref.edges.ends) << "round " << round;
    for (std::size_t e = 0; e < ref.edges.info.size(); ++e) {
      ASSERT_EQ(st.edges.info[e].delay, ref.edges.info[e].delay) << "round " << round;
    }
    ASSERT_EQ(st.tasks.base, ref.tasks.base) << "round " << round;
    ASSERT_EQ(st.tasks.gap, ref.tasks.gap) << "round " << round;
    ASSERT_EQ(st.wait_end, ref.wait_end) << "round " << round;
    const std::vector<Edge> found = handoffs_and_joins(st);
    if (!found.empty()) ++with_handoffs;
    // What the test is for: bursts of several runs (a piece between the handoff's target
    // and the join's source), and threads refused for being busy as a wait began.
    for (const Edge& e : found) {
      if (e.first != EdgeKind::Handoff) continue;
      const TaskId first = e.second.second;
      for (TaskId t = first; t < st.tasks.end(st.tasks.resource[first]) && st.wait_end[e.second.first] > st.tasks.measured_start[t]; ++t) {
        if (st.tasks.kind[t] == TaskKind::CpuWork) {
          ++several_runs;
          break;
        }
      }
    }
    const graph_build::TaskTable& tasks = st.tasks;
    for (TaskId p = 0; p < tasks.size(); ++p) {
      if (tasks.is_stream(tasks.resource[p]) || tasks.measured_end[p] - tasks.measured_start[p] < 500'000) continue;
      for (ResourceId b = 0; b < tasks.resource_count(); ++b) {
        // b ran a range across p's start and ended a run at most 2 units before p's end.
        bool busy = false, ends_near = false;
        for (TaskId t = tasks.first(b); t < tasks.end(b); ++t) {
          if (tasks.kind[t] == TaskKind::CpuWork || b == tasks.resource[p]) continue;
          busy |= tasks.measured_start[t] < tasks.measured_start[p] && tasks.measured_end[t] > tasks.measured_start[p];
          ends_near |= tasks.measured_end[t] <= tasks.measured_end[p] &&
                       tasks.measured_end[t] >= tasks.measured_end[p] - 2 * unit && t > tasks.first(b) &&
                       tasks.measured_start[t] > tasks.measured_start[p];
        }
        refused_busy += busy && ends_near;
      }
    }
  }
  EXPECT_GT(with_handoffs, 1000) << "the random traces should exercise matches, not only misses";
  EXPECT_GT(several_runs, 400) << "and bursts of several runs";
  EXPECT_GT(refused_busy, 4000) << "and threads busy as a wait began that end a run as it ends";
}

// Whether a graph's edges and its resources' program order leave a cycle among the tasks'
// starts and ends (what the simulator would leave unscheduled): a start precedes its end, an
// end the next task's start on its resource, and an edge goes from its source's start or end
// to its target's start or completion as the simulator reads it.
bool has_cycle(const DependencyGraph& g) {
  const std::size_t n = g.task_count();
  std::vector<std::vector<std::uint32_t>> out(2 * n);
  for (TaskId t = 0; t < n; ++t) out[2 * t].push_back(2 * t + 1);
  for (ResourceId r = 0; r < g.resource_count(); ++r) {
    for (TaskId t = g.resource_first(r); t + 1 < g.resource_end(r); ++t) out[2 * t + 1].push_back(2 * (t + 1));
  }
  const auto& edges = g.edges();
  for (TaskId u = 0; u < n; ++u) {
    for (auto [e, e_end] = boost::out_edges(u, edges); e != e_end; ++e) {
      const EdgeKind kind = edges[*e].kind;
      const auto v = static_cast<TaskId>(boost::target(*e, edges));
      out[2 * u + (edge_from_start(kind) ? 0 : 1)].push_back(2 * v + (edge_gates_completion(kind) ? 1 : 0));
    }
  }
  std::vector<std::uint32_t> in(2 * n, 0);
  for (const auto& targets : out) {
    for (std::uint32_t v : targets) ++in[v];
  }
  std::vector<std::uint32_t> ready;
  for (std::uint32_t v = 0; v < 2 * n; ++v) {
    if (in[v] == 0) ready.push_back(v);
  }
  std::size_t seen = 0;
  while (!ready.empty()) {
    const std::uint32_t v = ready.back();
    ready.pop_back();
    ++seen;
    for (std::uint32_t w : out[v]) {
      if (--in[w] == 0) ready.push_back(w);
    }
  }
  return seen != 2 * n;
}

// Random traces of 3 to 9 threads whose ranges (some of no duration, some nested) lie on a
// grid of 0.5 ms, so that many start and end at the same instants on many threads: the whole
// graph never holds a cycle, the pass matches as its reference does, and enough of the
// traces have handoffs for that to say something.
TEST(ThreadHandoffs, RangesSharingInstantsAcrossThreadsNeverMakeACycle) {
  std::mt19937_64 rng(3838);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int with_handoffs = 0, with_chains = 0;
  for (int round = 0; round < 2000; ++round) {
    HandTrace h("");
    const int thread_count = uniform(3, 9);
    constexpr TimeNs unit = 500'000;
    int name = 0;
    for (int k = 0; k < thread_count; ++k) {
      const TrackId t = h.thread(1 + k);
      TimeNs at = unit * uniform(0, 2);
      for (int r = uniform(1, 3); r > 0; --r) {
        const TimeNs length = unit * uniform(0, 4);
        h.annotation(t, "r" + std::to_string(name++), "operation", at, at + length);
        if (length > unit && uniform(0, 2) == 0) { // a range inside it, maybe of no duration
          const TimeNs from = at + unit * uniform(0, static_cast<int>(length / unit));
          h.annotation(t, "r" + std::to_string(name++), "operation", from, from + unit * uniform(0, 1));
        }
        at += length + unit * uniform(0, 1);
      }
    }
    const Trace trace = h.build();
    const DependencyGraph g = build_dependency_graph(trace);
    ASSERT_FALSE(has_cycle(g)) << "round " << round;
    GraphBuildState ref = run_passes(trace, "data_pipeline");
    reference_handoffs(ref);
    GraphBuildState st = run_passes(trace, "data_pipeline");
    graph_build::add_thread_handoffs(st);
    ASSERT_EQ(st.edges.ends, ref.edges.ends) << "round " << round;
    const std::vector<Edge> found = handoffs_and_joins(st);
    if (!found.empty()) ++with_handoffs;
    // A burst whose task is itself a wait handed on: the case that once closed cycles.
    std::vector<TaskId> waiters, bursts;
    for (const Edge& e : found) {
      if (e.first == EdgeKind::Handoff) waiters.push_back(e.second.first), bursts.push_back(e.second.second);
    }
    for (TaskId b : bursts) {
      if (std::find(waiters.begin(), waiters.end(), b) != waiters.end()) {
        ++with_chains;
        break;
      }
    }
  }
  EXPECT_GT(with_handoffs, 300) << "the random traces should exercise matches, not only misses";
  EXPECT_GT(with_chains, 50) << "and handoffs to bursts that themselves wait";
}

} // namespace
} // namespace dreamscope
