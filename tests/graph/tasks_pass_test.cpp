// Pass 1, tasks: how threads and streams are cut into tasks (dependency_graph_test.cpp has
// the nesting cases), and that no time an event may hold ends the cut early.
#include "../common/hand_trace.h"
#include "passes/passes.h"

#include <dreamscope/limits.h>
#include <dreamscope/graph.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>

namespace dreamscope {
namespace {

using graph_build::run_passes;
using test::annotation_row;
using test::api_row;
using test::gpu_row;
using test::HandTrace;

// The latest instant a Trace may hold (limits.h): INT64_MAX itself no longer loads, but the
// cut must close events at the bound as at any other time.
constexpr TimeNs kMaxTime = limits::kMaxAbsTimestampNs - 1;

TEST(TasksPass, StreamsKeepTheirOpsAndLeaveSyncRecordsOut) {
  HandTrace h;
  const TrackId t = h.thread(1);
  const TrackId s = h.stream(7);
  h.api(t, "cudaLaunchKernel", 100, 110, 1, 7);
  h.kernel(s, "k1", 120, 200, 1);
  h.gpu(s, GpuOpKind::Memcpy, "copy", 200, 250);
  h.gpu(s, GpuOpKind::Sync, "sync record", 250, 260);
  const Trace trace = h.build();
  const graph_build::GraphBuildState st = run_passes(trace, "tasks");
  const graph_build::TaskTable& tasks = st.tasks;
  ASSERT_EQ(tasks.end(s) - tasks.first(s), 2u);
  EXPECT_EQ(tasks.kind[tasks.first(s)], TaskKind::Kernel);
  EXPECT_EQ(tasks.kind[tasks.first(s) + 1], TaskKind::Memcpy);
  EXPECT_EQ(tasks.gpu_task[gpu_row(trace, "k1")], tasks.first(s));
  EXPECT_EQ(tasks.gpu_task[gpu_row(trace, "sync record")], kNoTask);
  EXPECT_EQ(st.warnings.sync_ops_skipped, 1);
  // The thread's first task is idle since the run's begin (the kernel's stream has none).
  EXPECT_EQ(tasks.gap[tasks.first(t)], 0);
  EXPECT_TRUE(std::all_of(st.wait_end.begin(), st.wait_end.end(), [](TimeNs w) { return w == kNoValue; }));
}

TEST(TasksPass, AThreadThatStartsLaterIsIdleSinceTheRunsBegin) {
  HandTrace h;
  const TrackId a = h.thread(1), b = h.thread(2);
  h.api(a, "cudaMalloc", 100, 200);
  h.api(b, "cudaFree", 350, 400);
  const Trace trace = h.build();
  const graph_build::TaskTable tasks = run_passes(trace, "tasks").tasks;
  EXPECT_EQ(tasks.gap[tasks.first(a)], 0);
  EXPECT_EQ(tasks.gap[tasks.first(b)], 250);
}

// issue 13: a call ending at INT64_MAX (a fuzzed Kineto trace) was never closed, because the
// cut used INT64_MAX as "no more boundaries", and the sync pass then read its last task,
// kNoTask, out of bounds. The cut now stops when every event is closed, whatever the times.
TEST(TasksPass, EventsEndingAtTheLargestTimeAreClosed) {
  HandTrace h;
  const TrackId t = h.thread(1);
  const TrackId s = h.stream(7);
  h.annotation(t, "forever", "operation", kMaxTime - 1000, kMaxTime);
  h.api(t, "cudaMemcpy", kMaxTime - 807, kMaxTime, 5, 7);
  h.api(t, "cudaDeviceSynchronize", kMaxTime, kMaxTime); // starts at the largest time too
  h.gpu(s, GpuOpKind::Memcpy, "copy", kMaxTime - 500, kMaxTime - 100, 5);
  const Trace trace = h.build();
  const graph_build::TaskTable tasks = run_passes(trace, "tasks").tasks;
  const EventIndex copy_call = api_row(trace, "cudaMemcpy"), sync = api_row(trace, "cudaDeviceSynchronize");
  ASSERT_NE(tasks.api_last[copy_call], kNoTask);
  EXPECT_EQ(tasks.measured_end[tasks.api_last[copy_call]], kMaxTime);
  ASSERT_NE(tasks.api_first[sync], kNoTask);
  EXPECT_EQ(tasks.api_first[sync], tasks.api_last[sync]);
  const EventIndex forever = annotation_row(trace, "forever");
  ASSERT_NE(tasks.annotation_last[forever], kNoTask);
  EXPECT_EQ(tasks.measured_start[tasks.annotation_first[forever]], kMaxTime - 1000);
  EXPECT_EQ(tasks.end(t) - tasks.first(t), 3u); // forever's own piece, the copy call, the sync

  // The whole build links the blocking copy to its copy and the sync to the stream.
  const DependencyGraph g = build_dependency_graph(trace);
  const TaskId call = g.api_last(copy_call);
  EXPECT_EQ(g.completion_in_degree(call), 1u);
  EXPECT_TRUE(g.blocking(call));
  EXPECT_EQ(g.base_duration(call), 100); // what it took after its copy ended
  ASSERT_EQ(g.sync_actions().size(), 1u);
  EXPECT_EQ(g.sync_actions()[0].op, SyncOp::WaitStreams);
}

} // namespace
} // namespace dreamscope
