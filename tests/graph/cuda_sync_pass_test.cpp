// Pass 3, CUDA synchronization: which SyncActions, sync edges, waits and stream barriers the
// sync calls of a trace become, read from the calls' stream and event columns and from the
// GPU sync records only.
#include "../common/hand_trace.h"
#include "passes/passes.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

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

// A device-wide sync names its process's streams and those it leaves out (their last task
// ended after it returned), not the others.
TEST(CudaSyncPass, ADeviceSyncNamesTheStreamsItLeavesOut) {
  HandTrace h;
  const TrackId t = h.thread(1);
  const TrackId s7 = h.stream(7), s8 = h.stream(8), idle = h.stream(9);
  h.api(t, "launch1", 0, 10, 1, 7);
  h.kernel(s7, "k1", 20, 100, 1);
  h.api(t, "launch2", 11, 15, 2, 8);
  h.kernel(s8, "k2", 20, 300, 2);
  h.api(t, "cudaDeviceSynchronize1", 16, 200); // returns before k2 ends
  h.api(t, "cudaDeviceSynchronize2", 310, 320);
  const Trace trace = h.build();
  const graph_build::GraphBuildState st = run_passes(trace, "cuda_sync");
  const TaskId first = st.tasks.api_last[api_row(trace, "cudaDeviceSynchronize1")];
  const TaskId second = st.tasks.api_last[api_row(trace, "cudaDeviceSynchronize2")];
  ASSERT_EQ(st.sync.actions.size(), 2u);
  const SyncAction& a = st.sync.actions[0];
  const SyncAction& b = st.sync.actions[1];
  EXPECT_EQ(a.task, first);
  EXPECT_EQ(b.task, second);
  EXPECT_EQ(a.streams, b.streams) << "both name the process's streams";
  EXPECT_EQ(st.sync.stream_groups[a.streams], (std::vector<ResourceId>{s7, s8, idle}));
  ASSERT_NE(a.except, kNoIndex);
  EXPECT_EQ(st.sync.stream_groups[a.except], (std::vector<ResourceId>{s8}));
  EXPECT_EQ(b.except, kNoIndex);
  EXPECT_EQ(st.sync.stream_groups.size(), 2u);
  EXPECT_EQ(st.warnings.sync_target_after_return, 1);
  EXPECT_EQ(st.wait_end[first], 100); // k1's end: k2's is not waited for
  EXPECT_EQ(st.wait_end[second], 300);
}

// One whose every stream's last task ended after it returned waits for nothing: no action.
TEST(CudaSyncPass, ADeviceSyncThatLeavesEveryStreamOutIsNoAction) {
  HandTrace h;
  const TrackId t = h.thread(1);
  const TrackId s7 = h.stream(7), s8 = h.stream(8);
  h.api(t, "launch1", 0, 10, 1, 7);
  h.kernel(s7, "k1", 20, 300, 1);
  h.api(t, "launch2", 11, 15, 2, 8);
  h.kernel(s8, "k2", 20, 300, 2);
  h.api(t, "cudaDeviceSynchronize", 16, 200);
  const Trace trace = h.build();
  const graph_build::GraphBuildState st = run_passes(trace, "cuda_sync");
  const TaskId sync = st.tasks.api_last[api_row(trace, "cudaDeviceSynchronize")];
  EXPECT_TRUE(st.sync.actions.empty());
  EXPECT_EQ(st.warnings.sync_target_after_return, 2);
  EXPECT_FALSE(st.tasks.flags[sync] & kTaskBlocking);
  EXPECT_EQ(st.wait_end[sync], kNoValue);
}

// Random traces of up to three processes, each with its GPU, streams (one of them, now and
// then, without a task) and threads launching onto them, with device syncs and stream syncs
// naming no stream that return as every stream is done or, now and then, too early: each sync
// waits for what a look at each of its process's streams finds, as measured (the last kernel
// launched before it, unless that ended after it returned).
TEST(CudaSyncPass, WholeProcessWaitsMatchALookAtEachStream) {
  std::mt19937_64 rng(5);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  struct Stream {
    TrackId track;
    std::int64_t id;
    std::vector<std::pair<TimeNs, TimeNs>> kernels; // (its launch's start, its end), in launch order
  };
  struct Process {
    std::vector<TrackId> threads;
    std::vector<Stream> streams;
    int idle = -1; // a stream left without a task
  };
  struct Sync {
    int process;
    std::string name;
    TimeNs start, end;
  };
  int left_out_rounds = 0, every_stream_out = 0;
  for (int round = 0; round < 200; ++round) {
    HandTrace h;
    std::vector<Process> processes(uniform(1, 3));
    for (std::size_t p = 0; p < processes.size(); ++p) {
      Process& pr = processes[p];
      ProcessId process{0};
      DeviceId device{0};
      if (p > 0) {
        process = h.process({.pid = 2000 + static_cast<std::int64_t>(p), .name = "worker"});
        device = h.device(process, "gpu" + std::to_string(p));
      }
      for (int k = uniform(1, 2); k > 0; --k) pr.threads.push_back(h.thread(process, 10 + k));
      for (int k = uniform(1, 4); k > 0; --k) {
        const std::int64_t id = 7 + k;
        pr.streams.push_back({p == 0 ? h.stream(id) : h.stream(device, id), id, {}});
      }
      std::sort(pr.streams.begin(), pr.streams.end(), [](const Stream& a, const Stream& b) { return a.track < b.track; });
      if (pr.streams.size() > 1 && uniform(0, 2) == 0) pr.idle = uniform(0, static_cast<int>(pr.streams.size()) - 1);
    }
    std::vector<Sync> syncs;
    TimeNs now = 0;
    std::int64_t correlation = 1;
    int stream_syncs = 0;
    for (int op = uniform(5, 40); op > 0; --op) {
      const int p = uniform(0, static_cast<int>(processes.size()) - 1);
      Process& pr = processes[p];
      const TrackId thread = pr.threads[uniform(0, static_cast<int>(pr.threads.size()) - 1)];
      const int st = uniform(0, static_cast<int>(pr.streams.size()) - 1);
      if (uniform(0, 2) > 0 && st != pr.idle) { // a launch and its kernel
        Stream& stream = pr.streams[st];
        h.api(thread, "cudaLaunchKernel" + std::to_string(correlation), now, now + 5'000, correlation, stream.id);
        const TimeNs start = std::max(now + 3'000, stream.kernels.empty() ? 0 : stream.kernels.back().second);
        const TimeNs end = start + uniform(1, 20) * 1'000;
        h.kernel(stream.track, "k" + std::to_string(correlation), start, end, correlation);
        stream.kernels.emplace_back(now, end);
        ++correlation;
        now += 5'000 + uniform(0, 3) * 1'000;
      } else { // a sync of the whole process: returns as its streams are done, or too early
        TimeNs done = now + 1'000;
        for (const Stream& stream : pr.streams) {
          if (!stream.kernels.empty()) done = std::max(done, stream.kernels.back().second);
        }
        if (uniform(0, 2) == 0) done = now + uniform(1, 20) * 1'000;
        const bool stream_sync = uniform(0, 3) == 0;
        stream_syncs += stream_sync;
        syncs.push_back({p, (stream_sync ? "cudaStreamSynchronize" : "cudaDeviceSynchronize") + std::to_string(syncs.size()), now, done});
        h.api(thread, syncs.back().name, now, done);
        now = done + 1'000;
      }
    }
    const Trace trace = h.build();
    const graph_build::GraphBuildState st = run_passes(trace, "cuda_sync");
    std::int64_t after_return = 0;
    bool left_out = false;
    for (const Sync& sync : syncs) {
      const TaskId task = st.tasks.api_last[api_row(trace, sync.name)];
      std::vector<ResourceId> all, out, kept;
      TimeNs wait_end = kNoValue;
      for (const Stream& stream : processes[sync.process].streams) {
        all.push_back(stream.track);
        TimeNs target_end = kNoValue;
        for (const auto& [launched, end] : stream.kernels) {
          if (launched < sync.start) target_end = end;
        }
        if (target_end != kNoValue && target_end > sync.end) {
          out.push_back(stream.track);
          continue;
        }
        kept.push_back(stream.track);
        wait_end = std::max(wait_end, target_end);
      }
      after_return += static_cast<std::int64_t>(out.size());
      left_out |= !out.empty() && !kept.empty();
      every_stream_out += kept.empty();
      const auto action = std::find_if(st.sync.actions.begin(), st.sync.actions.end(), [&](const SyncAction& a) { return a.task == task; });
      if (kept.empty()) {
        EXPECT_EQ(action, st.sync.actions.end()) << "round " << round << ", " << sync.name;
        EXPECT_FALSE(st.tasks.flags[task] & kTaskBlocking) << "round " << round << ", " << sync.name;
        continue;
      }
      ASSERT_NE(action, st.sync.actions.end()) << "round " << round << ", " << sync.name;
      EXPECT_EQ(action->op, SyncOp::WaitStreams);
      EXPECT_EQ(st.sync.stream_groups[action->streams], all) << "round " << round << ", " << sync.name;
      if (out.empty()) {
        EXPECT_EQ(action->except, kNoIndex) << "round " << round << ", " << sync.name;
      } else {
        ASSERT_NE(action->except, kNoIndex) << "round " << round << ", " << sync.name;
        EXPECT_EQ(st.sync.stream_groups[action->except], out) << "round " << round << ", " << sync.name;
      }
      EXPECT_EQ(st.wait_end[task], wait_end) << "round " << round << ", " << sync.name;
      EXPECT_TRUE(st.tasks.flags[task] & kTaskBlocking);
    }
    left_out_rounds += left_out;
    EXPECT_EQ(st.warnings.sync_target_after_return, after_return) << "round " << round;
    EXPECT_EQ(st.warnings.unknown_sync_stream, stream_syncs) << "round " << round;
  }
  EXPECT_GT(left_out_rounds, 30) << "the random syncs should leave some streams out";
  EXPECT_GT(every_stream_out, 20) << "and now and then every stream";
}

} // namespace
} // namespace dreamscope
