// Pass 3, CUDA synchronization: which SyncActions, sync edges, waits and stream barriers the
// sync calls of a trace become, read from the calls' stream and event columns and from the
// GPU sync records only.
#include "../common/hand_trace.h"
#include "passes/passes.h"

#include <gtest/gtest.h>

namespace dreamscope {
namespace {

using graph_build::run_passes;
using test::api_row;
using test::gpu_row;
using test::HandTrace;

TEST(CudaSyncPass, AStreamWaitSetsTheBarrierOfTheNextTaskIssuedToItsStream) {
  HandTrace h;
  const TrackId t = h.thread(1);
  const TrackId s = h.stream(7), other = h.stream(8);
  h.api(t, "launchA", 0, 10, 1, 8);
  h.kernel(other, "ka", 20, 220, 1);
  h.api(t, "cudaEventRecord", 12, 14, kNoValue, 8, 99);
  h.api(t, "cudaStreamWaitEvent", 16, 18, kNoValue, 7, 99);
  h.api(t, "launchB", 20, 30, 2, 7);
  h.kernel(s, "kb", 222, 322, 2);
  const Trace trace = h.build();
  const graph_build::GraphBuildState st = run_passes(trace, "cuda_sync");
  const TaskId ka = st.tasks.gpu_task[gpu_row(trace, "ka")], kb = st.tasks.gpu_task[gpu_row(trace, "kb")];
  EXPECT_EQ(st.sync.stream_barrier[kb], 220); // ka's end, as measured
  EXPECT_EQ(st.sync.stream_barrier[ka], kNoValue);
  ASSERT_EQ(st.sync.actions.size(), 2u);
  EXPECT_EQ(st.sync.actions[0].op, SyncOp::RecordEvent);
  EXPECT_EQ(st.sync.actions[0].stream, other);
  EXPECT_EQ(st.sync.actions[1].op, SyncOp::StreamWaitEvent);
  EXPECT_EQ(st.sync.actions[1].stream, s);
  EXPECT_EQ(st.sync.actions[0].event, st.sync.actions[1].event);
  EXPECT_EQ(st.sync.event_count, 1u);
  EXPECT_TRUE(st.tasks.flags[st.tasks.api_first[api_row(trace, "cudaEventRecord")]] & kTaskHasSync);
  // A stream wait does not block its call.
  EXPECT_EQ(st.wait_end[st.tasks.api_last[api_row(trace, "cudaStreamWaitEvent")]], kNoValue);
}

TEST(CudaSyncPass, WaitsBlockTheirCallAndRecordWhatTheyWaitedFor) {
  HandTrace h;
  const TrackId t = h.thread(1);
  const TrackId s = h.stream(7), other = h.stream(8);
  h.api(t, "launch", 0, 10, 1, 7);
  h.kernel(s, "k", 20, 300, 1);
  h.api(t, "launch2", 11, 15, 2, 8);
  h.kernel(other, "k2", 20, 50, 2);
  h.api(t, "cudaEventRecord", 16, 17, kNoValue, 7, 5);
  h.api(t, "cudaEventSynchronize", 18, 320, kNoValue, kNoValue, 5);
  h.api(t, "cudaStreamSynchronize", 330, 340, kNoValue, 8);
  h.api(t, "cudaMemcpy", 400, 500, 3, 7);
  h.gpu(s, GpuOpKind::Memcpy, "copy", 410, 480, 3);
  const Trace trace = h.build();
  const graph_build::GraphBuildState st = run_passes(trace, "cuda_sync");
  const TaskId event_sync = st.tasks.api_last[api_row(trace, "cudaEventSynchronize")];
  const TaskId stream_sync = st.tasks.api_last[api_row(trace, "cudaStreamSynchronize")];
  const TaskId copy_call = st.tasks.api_last[api_row(trace, "cudaMemcpy")];
  EXPECT_EQ(st.wait_end[event_sync], 300);
  EXPECT_EQ(st.wait_end[stream_sync], 50);
  EXPECT_EQ(st.wait_end[copy_call], 480);
  for (TaskId w : {event_sync, stream_sync, copy_call}) EXPECT_TRUE(st.tasks.flags[w] & kTaskBlocking);
  // The blocking copy is an edge from its copy; the others are symbolic.
  ASSERT_EQ(st.edges.ends.size(), 1u);
  EXPECT_EQ(st.edges.ends[0], (std::pair<std::uint32_t, std::uint32_t>{st.tasks.gpu_task[gpu_row(trace, "copy")], copy_call}));
  EXPECT_EQ(st.edges.info[0].kind, EdgeKind::Sync);
  ASSERT_EQ(st.sync.stream_groups.size(), 1u);
  EXPECT_EQ(st.sync.stream_groups[0], (std::vector<ResourceId>{other}));
}

// A stream sync whose call names no stream takes the stream of the GPU sync record with its
// correlation id, unless that record is context-wide; then it waits for every stream.
TEST(CudaSyncPass, AStreamSyncWithoutAStreamAsksItsSyncRecord) {
  HandTrace h;
  const TrackId t = h.thread(1);
  const TrackId s = h.stream(7), other = h.stream(8), context = h.stream(kContextWideStream);
  h.api(t, "launch", 0, 10, 1, 7);
  h.kernel(s, "k", 20, 100, 1);
  h.api(t, "launch2", 11, 15, 2, 8);
  h.kernel(other, "k2", 20, 50, 2);
  h.api(t, "cudaStreamSynchronize", 16, 110, 3);
  h.gpu(s, GpuOpKind::Sync, "Stream Sync", 16, 110, 3);
  h.api(t, "cudaStreamSynchronize", 120, 130, 4);
  h.gpu(context, GpuOpKind::Sync, "Context Sync", 120, 130, 4);
  const Trace trace = h.build();
  const graph_build::GraphBuildState st = run_passes(trace, "cuda_sync");
  ASSERT_EQ(st.sync.actions.size(), 2u);
  EXPECT_EQ(st.sync.stream_groups[st.sync.actions[0].streams], (std::vector<ResourceId>{s}));
  EXPECT_EQ(st.sync.stream_groups[st.sync.actions[1].streams], (std::vector<ResourceId>{s, other, context}));
  EXPECT_EQ(st.warnings.unknown_sync_stream, 1);
}

} // namespace
} // namespace dreamscope
