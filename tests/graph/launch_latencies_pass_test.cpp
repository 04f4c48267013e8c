// Pass 4, launch latencies: launch edges and GPU gaps, and that what the synchronization pass
// left in stream_barrier decides between "waited for its launch" and "waited for work".
#include "../common/hand_trace.h"
#include "passes/passes.h"

#include <gtest/gtest.h>

namespace dreamscope {
namespace {

using graph_build::run_passes;
using test::gpu_row;
using test::HandTrace;

TimeNs launch_delay(const graph_build::GraphBuildState& st, TaskId to) {
  for (std::size_t k = 0; k < st.edges.ends.size(); ++k) {
    if (st.edges.ends[k].second == to && st.edges.info[k].kind == EdgeKind::Launch) return st.edges.info[k].delay;
  }
  return -1;
}

TEST(LaunchLatenciesPass, ClearStreamWaitsForItsLaunchBusyStreamForTheWorkAhead) {
  HandTrace h;
  const TrackId t = h.thread(1);
  const TrackId s = h.stream(7);
  h.api(t, "launch1", 0, 10, 1, 7);
  h.kernel(s, "k1", 5, 100, 1);     // clear stream: latency 5
  h.api(t, "launch2", 20, 30, 2, 7);
  h.kernel(s, "k2", 103, 200, 2);   // behind k1: gap 3, latency the typical one
  h.api(t, "launch3", 300, 310, 3, 7);
  h.kernel(s, "k3", 309, 400, 3);   // clear again: latency 9
  h.kernel(s, "orphan", 410, 420);  // no launch call: its gap places it
  const Trace trace = h.build();
  const graph_build::GraphBuildState st = run_passes(trace, "launch_latencies");
  auto task = [&](std::string_view name) { return st.tasks.gpu_task[gpu_row(trace, name)]; };
  EXPECT_EQ(launch_delay(st, task("k1")), 5);
  EXPECT_EQ(st.tasks.gap[task("k1")], 0);
  EXPECT_EQ(st.tasks.gap[task("k2")], 3);
  EXPECT_EQ(launch_delay(st, task("k2")), 9); // the median of the clear launches (5, 9)
  EXPECT_EQ(launch_delay(st, task("k3")), 9);
  EXPECT_EQ(st.tasks.gap[task("orphan")], 10);
  EXPECT_EQ(launch_delay(st, task("orphan")), -1);
  EXPECT_EQ(st.warnings.gpu_ops_without_launch, 1);
  EXPECT_TRUE(st.tasks.flags[task("k1")] & kTaskIssuedByEdge);
  EXPECT_FALSE(st.tasks.flags[task("orphan")] & kTaskIssuedByEdge);
}

TEST(LaunchLatenciesPass, ABarrierFromTheSyncPassMakesATaskWaitForWork) {
  HandTrace h;
  const TrackId t = h.thread(1);
  const TrackId s = h.stream(7);
  h.api(t, "launch1", 0, 10, 1, 7);
  h.kernel(s, "k1", 4, 10, 1);
  h.api(t, "launch2", 100, 110, 2, 7);
  h.kernel(s, "k2", 250, 300, 2);
  const Trace trace = h.build();
  // As the sync pass leaves it: no barrier, so k2 waited 150 for its launch.
  graph_build::GraphBuildState st = run_passes(trace, "cuda_sync");
  const TaskId k2 = st.tasks.gpu_task[gpu_row(trace, "k2")];
  graph_build::GraphBuildState barred = st;
  graph_build::set_launch_latencies(st);
  EXPECT_EQ(launch_delay(st, k2), 150);
  EXPECT_EQ(st.tasks.gap[k2], 0);
  // With a barrier at 240 (an event on another stream) it waited for that: gap 10, and the
  // latency is capped at the typical one (k1's 4).
  barred.sync.stream_barrier[k2] = 240;
  graph_build::set_launch_latencies(barred);
  EXPECT_EQ(launch_delay(barred, k2), 4);
  EXPECT_EQ(barred.tasks.gap[k2], 10);
}

TEST(LaunchLatenciesPass, AGpuOpBeforeItsLaunchIsCountedAndClamped) {
  HandTrace h;
  const TrackId t = h.thread(1);
  const TrackId s = h.stream(7);
  h.api(t, "launch", 100, 110, 1, 7);
  h.kernel(s, "early", 90, 200, 1);
  const Trace trace = h.build();
  const graph_build::GraphBuildState st = run_passes(trace, "launch_latencies");
  EXPECT_EQ(launch_delay(st, st.tasks.gpu_task[gpu_row(trace, "early")]), 0);
  EXPECT_EQ(st.warnings.gpu_op_before_launch, 1);
}

} // namespace
} // namespace dreamscope
