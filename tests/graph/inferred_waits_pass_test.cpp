// Pass 6, inferred waits: a call blocked on a full launch queue, and a thread waiting for
// another thread's burst, from timing alone; and what an already-blocking task is spared.
#include "../common/hand_trace.h"
#include "passes/passes.h"

#include <gtest/gtest.h>

namespace dreamscope {
namespace {

using graph_build::run_passes;
using test::annotation_row;
using test::api_row;
using test::gpu_row;
using test::HandTrace;

std::vector<std::pair<EdgeKind, std::pair<std::uint32_t, std::uint32_t>>> edges_of_kind(
    const graph_build::GraphBuildState& st, std::initializer_list<EdgeKind> kinds) {
  std::vector<std::pair<EdgeKind, std::pair<std::uint32_t, std::uint32_t>>> out;
  for (std::size_t k = 0; k < st.edges.ends.size(); ++k) {
    for (EdgeKind kind : kinds) {
      if (st.edges.info[k].kind == kind) out.push_back({kind, st.edges.ends[k]});
    }
  }
  return out;
}

TEST(InferredWaitsPass, ASlowLaunchThatReturnsAsAKernelEndsWaitedForIt) {
  HandTrace h;
  const TrackId t = h.thread(1);
  const TrackId s = h.stream(7);
  h.api(t, "launch1", 0, 10, 1, 7);
  h.kernel(s, "k1", 20, 200'000, 1);
  h.api(t, "launch2", 20, 200'005, 2, 7);   // 200 µs for a launch, back 5 µs after k1 ended
  h.kernel(s, "k2", 200'010, 300'000, 2);
  h.api(t, "launch3", 200'010, 280'000, 3, 7); // slow, but no GPU task ended just before
  h.kernel(s, "k3", 300'000, 310'000, 3);
  const Trace trace = h.build();
  const graph_build::GraphBuildState st = run_passes(trace, "inferred_waits");
  const TaskId k1 = st.tasks.gpu_task[gpu_row(trace, "k1")];
  const TaskId launch2 = st.tasks.api_last[api_row(trace, "launch2")];
  const auto syncs = edges_of_kind(st, {EdgeKind::Sync});
  ASSERT_EQ(syncs.size(), 1u);
  EXPECT_EQ(syncs[0].second, (std::pair<std::uint32_t, std::uint32_t>{k1, launch2}));
  EXPECT_EQ(st.wait_end[launch2], 200'000);
  EXPECT_EQ(st.wait_end[st.tasks.api_last[api_row(trace, "launch3")]], kNoValue);
}

TEST(InferredWaitsPass, ACallThatSynchronizesIsNotGivenAGuessedWait) {
  HandTrace h;
  const TrackId t = h.thread(1);
  const TrackId s = h.stream(7);
  h.api(t, "launch1", 0, 10, 1, 7);
  h.kernel(s, "k1", 20, 200'000, 1);
  h.api(t, "cudaStreamSynchronize", 20, 200'005, kNoValue, 7);
  const Trace trace = h.build();
  const graph_build::GraphBuildState st = run_passes(trace, "inferred_waits");
  EXPECT_TRUE(edges_of_kind(st, {EdgeKind::Sync}).empty());
  EXPECT_EQ(st.sync.actions.size(), 1u); // the sync pass linked it
}

// The waiting task may be untraced CPU work: the thread sits in code nothing traced (an
// inference server's request thread waiting for its worker) while the other thread, idle
// before and after, runs the burst. Any task of a CPU thread can wait; only GPU tasks, on
// streams, never take part.
TEST(InferredWaitsPass, UntracedCpuWorkWaitingForAnotherThreadsBurstIsAHandoff) {
  HandTrace h("");
  const TrackId a = h.thread(1), b = h.thread(2);
  h.annotation(a, "request", "operation", 0, 100'000);
  h.annotation(a, "reply", "operation", 1'150'000, 1'200'000); // untraced [100 µs, 1150 µs) between
  h.annotation(b, "earlier", "operation", 0, 50'000);
  h.annotation(b, "burst 1", "operation", 300'000, 600'000);
  h.annotation(b, "burst 2", "operation", 600'000, 1'100'000);
  h.annotation(b, "later", "operation", 1'300'000, 1'400'000);
  const Trace trace = h.build();
  const graph_build::GraphBuildState st = run_passes(trace, "inferred_waits");
  const TaskId waiting = st.tasks.annotation_last[annotation_row(trace, "request")] + 1;
  ASSERT_EQ(st.tasks.kind[waiting], TaskKind::CpuWork);
  const TaskId first = st.tasks.annotation_first[annotation_row(trace, "burst 1")];
  const TaskId last = st.tasks.annotation_last[annotation_row(trace, "burst 2")];
  const auto edges = edges_of_kind(st, {EdgeKind::Handoff, EdgeKind::Join});
  ASSERT_EQ(edges.size(), 2u);
  EXPECT_EQ(edges[0], (std::pair{EdgeKind::Handoff, std::pair<std::uint32_t, std::uint32_t>{waiting, first}}));
  EXPECT_EQ(edges[1], (std::pair{EdgeKind::Join, std::pair<std::uint32_t, std::uint32_t>{last, waiting}}));
  EXPECT_EQ(st.wait_end[waiting], 1'100'000);
  EXPECT_EQ(st.tasks.base[first - 1], 0); // b's idle piece before the burst no longer holds it
}

TEST(InferredWaitsPass, NoHandoffWhenTheOtherThreadWasBusyBeforeTheWait) {
  HandTrace h("");
  const TrackId a = h.thread(1), b = h.thread(2);
  h.annotation(a, "backward", "operation", 100'000, 1'200'000);
  h.annotation(b, "busy across the start", "operation", 50'000, 400'000);
  h.annotation(b, "burst", "operation", 400'000, 1'100'000);
  const Trace trace = h.build();
  const graph_build::GraphBuildState st = run_passes(trace, "inferred_waits");
  EXPECT_TRUE(edges_of_kind(st, {EdgeKind::Handoff, EdgeKind::Join}).empty());
}

// Two threads that each run one 1 ms operator from the same moment look like each other's
// burst. Matching both ways made a cycle (each waits for the other's end), and every task was
// left unscheduled: replay said 0 ns. A burst already handed a wait is not that wait's burst
// in turn.
TEST(InferredWaitsPass, TwoThreadsAreNotEachOthersHandoff) {
  HandTrace h("");
  const TrackId a = h.thread(1), b = h.thread(2);
  h.annotation(a, "op a", "operation", 0, 1'000'000);
  h.annotation(b, "op b", "operation", 0, 1'000'000);
  const Trace trace = h.build();
  const graph_build::GraphBuildState st = run_passes(trace, "inferred_waits");
  const auto edges = edges_of_kind(st, {EdgeKind::Handoff, EdgeKind::Join});
  ASSERT_EQ(edges.size(), 2u) << "one handoff and its join, one way only";
  EXPECT_EQ(edges[0].second.first, edges[1].second.second);
  EXPECT_EQ(edges[0].second.second, edges[1].second.first);
}

} // namespace
} // namespace dreamscope
