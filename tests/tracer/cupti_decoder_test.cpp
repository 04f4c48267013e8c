// The CUPTI decoder fed fabricated records of the real CUDA 13 CUPTI struct types, through
// the same buffer walk the tracer's writer thread uses: every field lands in the trace.
#include "../common/fabricated_cupti.h"
#include "cupti_decoder.h"

#include <dreamscope/graph/dependency_graph.h>
#include <dreamscope/storage/trace_file.h>

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <unistd.h>

namespace dreamscope::tracer {
namespace {

using namespace fabricated;

class CuptiDecoderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = std::filesystem::temp_directory_path() / ("ds-cupti-decoder-" + std::to_string(getpid()) + ".db");
  }
  void TearDown() override { std::filesystem::remove(path_); }

  // Decodes the buffers, in order, into a fresh trace whose process has the CPU thread
  // 4242, then ends the decoder as the tracer does when the part closes.
  Trace decode(std::vector<FabricatedBuffer*> buffers, bool all_api, CuptiDecoderCounts* counts = nullptr) {
    TraceWriter writer(path_);
    const ProcessId process = writer.add_process(ProcessInfo{.pid = 4242, .name = "train"});
    TraceTarget target(writer, process);
    target.thread_track(4242, 0, "main");
    CuptiDecoder decoder(target, CuptiDecoderOptions{all_api, callback_name});
    for (FabricatedBuffer* b : buffers) decoder.decode_buffer(b->data(), b->size(), b->walker());
    decoder.finish();
    EXPECT_EQ(decoder.waiting_api_rows(), 0u);
    EXPECT_EQ(decoder.waiting_correlations(), 0u);
    if (counts) *counts = decoder.counts();
    writer.close();
    return read_trace(path_);
  }
  Trace decode(FabricatedBuffer& buffer, bool all_api, CuptiDecoderCounts* counts = nullptr) {
    return decode(std::vector<FabricatedBuffer*>{&buffer}, all_api, counts);
  }

  std::filesystem::path path_;
};


TEST_F(CuptiDecoderTest, EveryKindLandsWithEveryField) {
  FabricatedBuffer b;
  b.add(device_record());
  b.add(context_record());
  b.add(external_record(11, (std::uint64_t{3} << 40) | 17));
  b.add(api_record(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 11, 990'000, 995'000));
  b.add(kernel_record());
  b.add(memcpy_record(12, 2'000'000, 2'100'000, 9));

  cupti::MemsetRecord s{};
  s.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  s.bytes = 4096;
  s.start = 3'000'000;
  s.end = 3'010'000;
  s.deviceId = 0;
  s.streamId = 7;
  s.correlationId = 13;
  b.add(s);

  b.add(sync_record(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT, 14, 4'000'000, 4'000'500, 7, 5));
  b.add(event_record(15, 9, 5));
  b.add(api_record(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020, 15, 2'150'000,
                   2'152'000));
  b.add(api_record(CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 16, 5'000'000, 5'004'000));
  // Noisy: skipped by default.
  b.add(api_record(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, 17, 6'000'000,
                   6'000'100));

  cupti::OverheadRecord o{};
  o.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
  o.overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH;
  o.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
  o.objectId.pt.processId = 4242;
  o.objectId.pt.threadId = 4242;
  o.start = 7'000'000;
  o.end = 7'020'000;
  b.add(o);

  CuptiDecoderCounts counts;
  Trace t = decode(b, false, &counts);
  EXPECT_EQ(counts.unknown, 0u);
  EXPECT_EQ(counts.api_skipped, 1u);

  ASSERT_EQ(t.devices().size(), 1u);
  const DeviceInfo& d = t.devices()[0];
  EXPECT_EQ(d.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(d.sm_count, 132);
  EXPECT_EQ(d.core_clock_khz, 1980000);
  EXPECT_EQ(d.memory_bandwidth_bytes_per_s, 3352000000ll * 1000);
  EXPECT_EQ(d.global_memory_bytes, 85520809984ll);
  EXPECT_EQ(d.compute_capability_major, 9);
  EXPECT_EQ(d.compute_capability_minor, 0);

  const auto& ops = t.gpu_ops();
  ASSERT_EQ(ops.size(), 4u);
  auto op_with = [&](std::int64_t correlation) {
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (ops.correlation[i] == correlation) return i;
    }
    ADD_FAILURE() << "no gpu op with correlation " << correlation;
    return std::size_t{0};
  };
  const std::size_t k = op_with(11);
  EXPECT_EQ(ops.kind[k], GpuOpKind::Kernel);
  EXPECT_EQ(ops.start[k], 1'000'000);
  EXPECT_EQ(ops.end[k], 1'250'000);
  EXPECT_EQ(t.str(ops.name[k]), "_Z6matmulPfS_S_i");
  EXPECT_EQ(t.tracks()[ops.track[k]].stream, 7);
  EXPECT_EQ(t.tracks()[ops.track[k]].kind, TrackKind::GpuStream);
  const LaunchConfig& lc = t.launch_configs()[ops.launch[k]];
  EXPECT_EQ(lc, (LaunchConfig{.grid = {128, 2, 1}, .block = {256, 1, 1}, .registers_per_thread = 40,
                              .shared_memory_static = 1024, .shared_memory_dynamic = 4096}));

  const std::size_t c = op_with(12);
  EXPECT_EQ(ops.kind[c], GpuOpKind::Memcpy);
  EXPECT_EQ(ops.subkind[c], static_cast<std::uint8_t>(CopyKind::HtoD));
  EXPECT_EQ(ops.bytes[c], 1 << 20);
  EXPECT_EQ(t.tracks()[ops.track[c]].stream, 9);
  EXPECT_EQ(t.str(ops.name[c]), "memcpy HtoD");

  const std::size_t ms = op_with(13);
  EXPECT_EQ(ops.kind[ms], GpuOpKind::Memset);
  EXPECT_EQ(ops.bytes[ms], 4096);
  EXPECT_EQ(ops.end[ms] - ops.start[ms], 10'000);

  const std::size_t sy = op_with(14);
  EXPECT_EQ(ops.kind[sy], GpuOpKind::Sync);
  EXPECT_EQ(ops.subkind[sy], static_cast<std::uint8_t>(SyncKind::StreamWaitEvent));
  EXPECT_EQ(ops.event[sy], 5);
  EXPECT_EQ(t.tracks()[ops.track[sy]].stream, 7);

  const auto& api = t.cuda_api();
  ASSERT_EQ(api.size(), 3u) << "cudaGetDevice is skipped by default";
  auto api_with = [&](std::int64_t correlation) {
    auto row = t.cuda_api_with_correlation(correlation);
    EXPECT_TRUE(row.has_value()) << correlation;
    return row.value_or(CudaApiIndex{0});
  };
  const std::size_t launch = api_with(11);
  EXPECT_EQ(t.str(api.name[launch]), "cudaLaunchKernel");
  EXPECT_EQ(api.cbid[launch], CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000);
  EXPECT_EQ(api.kind[launch], ApiKind::Runtime);
  EXPECT_EQ(api.start[launch], 990'000);
  EXPECT_EQ(api.end[launch], 995'000);
  EXPECT_EQ(api.external_id[launch], static_cast<std::int64_t>((std::uint64_t{3} << 40) | 17));
  EXPECT_EQ(t.tracks()[api.track[launch]].tid, 4242);
  EXPECT_EQ(t.tracks()[api.track[launch]].name, "main");
  // The launch and its kernel are linked by correlation id.
  EXPECT_EQ(t.gpu_ops_with_correlation(11).size(), 1u);

  const std::size_t record = api_with(15);
  EXPECT_EQ(t.str(api.name[record]), "cudaEventRecord");
  EXPECT_EQ(api.stream[record], 9);
  EXPECT_EQ(api.event[record], 5);

  const std::size_t driver = api_with(16);
  EXPECT_EQ(api.kind[driver], ApiKind::Driver);
  EXPECT_EQ(t.str(api.name[driver]), "cuLaunchKernel");

  ASSERT_EQ(t.overheads().size(), 1u);
  EXPECT_EQ(t.str(t.overheads()[0].kind), "cupti_buffer_flush");
  EXPECT_EQ(t.overheads()[0].end - t.overheads()[0].start, 20'000);
  EXPECT_EQ(t.tracks()[t.overheads()[0].track].tid, 4242);
}

TEST_F(CuptiDecoderTest, AllApiKeepsTheNoisyCalls) {
  FabricatedBuffer b;
  b.add(api_record(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, 1, 10, 20));
  b.add(api_record(CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent, 2, 30, 40));
  Trace t = decode(b, true);
  ASSERT_EQ(t.cuda_api().size(), 2u);
  EXPECT_EQ(t.str(t.cuda_api().name[0]), "cudaGetDevice");
}

// What PyTorch 2.11 called on every kernel launch on an H100 and no analysis uses: skipped
// (and, in the tracer, not recorded by CUPTI at all) unless --cuda-api all.
TEST_F(CuptiDecoderTest, PerLaunchQueriesAreSkippedAndLaunchesKept) {
  FabricatedBuffer b;
  b.add(api_record(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 1, 10, 20));
  b.add(api_record(CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuKernelGetName, 2, 12, 14));
  b.add(api_record(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaGetErrorString_v3020, 3, 30, 31));
  b.add(api_record(CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuOccupancyMaxActiveClusters, 4, 40, 45));
  b.add(api_record(CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, 5, 50, 60));
  CuptiDecoderCounts counts;
  Trace t = decode(b, false, &counts);
  ASSERT_EQ(t.cuda_api().size(), 2u);
  EXPECT_EQ(t.str(t.cuda_api().name[0]), "cudaLaunchKernel");
  EXPECT_EQ(t.str(t.cuda_api().name[1]), "cuLaunchKernelEx");
  EXPECT_EQ(counts.api_skipped, 3u);
  EXPECT_EQ(decode(b, true).cuda_api().size(), 5u);
}

// The tracer's writer times CUPTI's cost per call with calls of its own: they are counted,
// never written, even with --cuda-api all, and the job's calls around them are kept.
TEST_F(CuptiDecoderTest, TheCalibrationThreadsCallsAreCountedNotWritten) {
  TraceWriter writer(path_);
  const ProcessId process = writer.add_process(ProcessInfo{.pid = 4242, .name = "train"});
  TraceTarget target(writer, process);
  target.thread_track(4242, 0, "main");
  CuptiDecoder decoder(target, CuptiDecoderOptions{true, callback_name});
  FabricatedBuffer b;
  b.add(api_record(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 1, 10, 20));
  auto calibration_call = api_record(CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuDriverGetVersion, 2, 30, 31);
  calibration_call.threadId = 777;
  b.add(calibration_call);
  b.add(calibration_call);
  decoder.set_calibration_thread(777);
  decoder.decode_buffer(b.data(), b.size(), b.walker());
  decoder.finish();
  EXPECT_EQ(decoder.counts().calibration_api, 2u);
  EXPECT_EQ(decoder.counts().api, 1u);
  writer.close();
  Trace t = read_trace(path_);
  ASSERT_EQ(t.cuda_api().size(), 1u);
  EXPECT_EQ(t.str(t.cuda_api().name[0]), "cudaLaunchKernel");
}

TEST_F(CuptiDecoderTest, ThreadIdsMatchTheTracersThreadsByTidOrPthread) {
  TraceWriter writer(path_);
  const ProcessId process = writer.add_process(ProcessInfo{.pid = 1});
  TraceTarget target(writer, process);
  const TrackId by_tid = target.thread_track(100, 0xABCDEF0012345678ull, "worker");
  EXPECT_EQ(target.cupti_thread_track(100, true), by_tid);
  EXPECT_EQ(target.cupti_thread_track(100, false), by_tid);
  EXPECT_EQ(target.cupti_thread_track(0x12345678u, false), by_tid) << "a pthread_t truncated to 32 bits";
  EXPECT_NE(target.cupti_thread_track(0x12345678u, true), by_tid) << "an OS thread id is never a pthread_t";
  EXPECT_NE(target.cupti_thread_track(555, false), by_tid);
  writer.close();
}

// PyTorch's main thread initializes CUDA before it records a range: CUPTI's records of its
// calls reach the writer first. With OS thread ids, the thread's own events find the track
// those calls made (with pthread_self() values they found a track of their own: the first
// H100 traces).
TEST_F(CuptiDecoderTest, ApiCallsBeforeTheThreadsFirstRangeShareItsTrack) {
  TraceWriter writer(path_);
  const ProcessId process = writer.add_process(ProcessInfo{.pid = 1});
  TraceTarget target(writer, process);
  const TrackId from_cupti = target.cupti_thread_track(4242, true);
  EXPECT_EQ(target.thread_track(4242, 0x7F00DEADBEEFull, "python3"), from_cupti);
  writer.close();
  Trace t = read_trace(path_);
  ASSERT_LT(from_cupti, t.tracks().size());
  EXPECT_EQ(t.tracks()[from_cupti].name, "python3") << "the thread's name, once it is known";
}

constexpr std::uint32_t kInvalid = CUPTI_SYNCHRONIZATION_INVALID_VALUE;

// A flush can end a buffer between a call's correlation records and its API record, in
// either order: the external id written when the call starts lands a buffer before the
// API record written when it returns, and a CUDA event record may come a buffer after.
TEST_F(CuptiDecoderTest, CorrelationRecordsInTheNeighbouringBufferStillComplete) {
  FabricatedBuffer first, second, third;
  first.add(external_record(21, 777));
  first.add(api_record(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020, 22, 100, 110));
  second.add(api_record(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 21, 90, 120));
  second.add(event_record(22, 9, 5));
  third.add(api_record(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 23, 130, 140));
  CuptiDecoderCounts counts;
  Trace t = decode({&first, &second, &third}, false, &counts);
  ASSERT_EQ(t.cuda_api().size(), 3u);
  const auto launch = *t.cuda_api_with_correlation(21);
  EXPECT_EQ(t.cuda_api().external_id[launch], 777);
  const auto record = *t.cuda_api_with_correlation(22);
  EXPECT_EQ(t.cuda_api().stream[record], 9);
  EXPECT_EQ(t.cuda_api().event[record], 5);
  EXPECT_EQ(t.cuda_api().external_id[*t.cuda_api_with_correlation(23)], kNoValue);
  EXPECT_EQ(counts.attached_across_buffers, 2u);
  EXPECT_EQ(counts.unclaimed_correlations, 0u);
}

// The graph resolves waits from the API rows: a stream wait's row names the stream that
// waits and the event, a stream synchronize its stream, an event synchronize its event.
TEST_F(CuptiDecoderTest, WaitsCarryTheStreamAndEventTheirSyncRecordNames) {
  FabricatedBuffer b;
  b.add(api_record(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_v3020, 31, 100, 105));
  b.add(sync_record(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT, 31, 100, 105, 7, 5));
  b.add(sync_record(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, 32, 200, 300, 7, kInvalid));
  b.add(api_record(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, 32, 200, 300));
  b.add(api_record(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020, 33, 400, 500));
  b.add(sync_record(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE, 33, 400, 500, kInvalid, 6));
  b.add(api_record(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020, 34, 600, 700));
  b.add(sync_record(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE, 34, 600, 700, kInvalid, kInvalid));
  Trace t = decode(b, false);
  const auto& api = t.cuda_api();
  ASSERT_EQ(api.size(), 4u);
  const auto wait = *t.cuda_api_with_correlation(31);
  EXPECT_EQ(api.stream[wait], 7);
  EXPECT_EQ(api.event[wait], 5);
  const auto stream_sync = *t.cuda_api_with_correlation(32);
  EXPECT_EQ(api.stream[stream_sync], 7);
  EXPECT_EQ(api.event[stream_sync], kNoValue);
  const auto event_sync = *t.cuda_api_with_correlation(33);
  EXPECT_EQ(api.stream[event_sync], kNoValue);
  EXPECT_EQ(api.event[event_sync], 6);
  const auto device_sync = *t.cuda_api_with_correlation(34);
  EXPECT_EQ(api.stream[device_sync], kNoValue);
  EXPECT_EQ(api.event[device_sync], kNoValue);
  EXPECT_EQ(t.gpu_ops().size(), 4u) << "the sync records stay GPU sync rows too";
}

// Frameworks call the skipped APIs millions of times inside NVTX ranges: their external
// correlation records must not pile up in the decoder.
TEST_F(CuptiDecoderTest, SkippedCallsLeaveNothingWaiting) {
  TraceWriter writer(path_);
  TraceTarget target(writer, writer.add_process(ProcessInfo{.pid = 4242}));
  CuptiDecoder decoder(target, CuptiDecoderOptions{false, callback_name});
  std::uint32_t correlation = 1;
  for (int buffer = 0; buffer < 3; ++buffer) {
    FabricatedBuffer b;
    for (int i = 0; i < 10'000; ++i, ++correlation) {
      b.add(external_record(correlation, 99));
      b.add(api_record(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, correlation, i, i + 1));
    }
    decoder.decode_buffer(b.data(), b.size(), b.walker());
    EXPECT_EQ(decoder.waiting_correlations(), 0u);
    EXPECT_EQ(decoder.waiting_api_rows(), 0u);
  }
  EXPECT_EQ(decoder.counts().api_skipped, 30'000u);
  writer.close();
}

// A correlation record whose API row never comes (CUPTI dropped it) is forgotten after a
// bounded number of buffers; an API row is written once a whole later buffer has passed.
TEST_F(CuptiDecoderTest, WaitingIsBounded) {
  TraceWriter writer(path_);
  TraceTarget target(writer, writer.add_process(ProcessInfo{.pid = 4242}));
  CuptiDecoder decoder(target, CuptiDecoderOptions{false, callback_name});
  FabricatedBuffer orphan;
  orphan.add(external_record(1, 5));
  orphan.add(api_record(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 2, 10, 20));
  decoder.decode_buffer(orphan.data(), orphan.size(), orphan.walker());
  EXPECT_EQ(decoder.waiting_api_rows(), 1u) << "waits for the next buffer";
  EXPECT_EQ(decoder.waiting_correlations(), 1u);
  FabricatedBuffer empty;
  decoder.decode_buffer(empty.data(), 0, empty.walker());
  EXPECT_EQ(decoder.waiting_api_rows(), 0u);
  int buffers = 1;
  while (decoder.waiting_correlations() > 0 && buffers < 1000) {
    decoder.decode_buffer(empty.data(), 0, empty.walker());
    ++buffers;
  }
  EXPECT_LE(buffers, 66);
  EXPECT_GE(buffers, 64);
  EXPECT_EQ(decoder.counts().unclaimed_correlations, 1u);
  writer.close();
}

// One step of cuda_train as CUPTI reports it, split over two buffers: the batch copied on
// the copy stream, an event recorded there, the compute stream made to wait for it, a
// kernel, a stream synchronize. The graph built from the decoded trace resolves every wait.
TEST_F(CuptiDecoderTest, ACopyComputeStepDecodesIntoAGraphWithEveryWaitResolved) {
  FabricatedBuffer first, second;
  first.add(device_record());
  first.add(context_record());
  first.add(api_record(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, 1, 1'000, 1'010));
  first.add(memcpy_record(1, 1'020, 1'500, 9));
  first.add(api_record(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020, 2, 1'011, 1'015));
  first.add(api_record(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_v3020, 3, 1'016, 1'020));
  // The flush falls here: the event and wait records come in the next buffer.
  second.add(event_record(2, 9, 5));
  second.add(sync_record(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT, 3, 1'016, 1'020, 7, 5));
  second.add(api_record(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 4, 1'021, 1'030));
  cupti::KernelRecord k = kernel_record();
  k.correlationId = 4;
  k.start = 1'510;
  k.end = 2'000;
  second.add(k);
  second.add(api_record(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, 5, 1'031,
                        2'010));
  second.add(sync_record(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, 5, 1'031, 2'010, 7, kInvalid));
  Trace t = decode({&first, &second}, false);

  const DependencyGraph g = build_dependency_graph(t);
  EXPECT_EQ(g.warnings().unresolved_event, 0);
  EXPECT_EQ(g.warnings().unknown_sync_stream, 0);
  EXPECT_EQ(g.warnings().sync_target_after_return, 0);
  std::vector<SyncOp> ops;
  for (const auto& a : g.sync_actions()) ops.push_back(a.op);
  EXPECT_EQ(ops, (std::vector<SyncOp>{SyncOp::RecordEvent, SyncOp::StreamWaitEvent, SyncOp::WaitStreams}));
  EXPECT_EQ(g.event_count(), 1u);
  const SyncAction& stream_sync = g.sync_actions()[2];
  ASSERT_EQ(g.stream_groups()[stream_sync.streams].size(), 1u);
  EXPECT_EQ(t.tracks()[g.stream_groups()[stream_sync.streams][0]].stream, 7) << "only the compute stream";
  // The kernel's start is explained by the copy it waited for through the event.
  const TaskId kernel = g.gpu_task(*t.gpu_ops_with_correlation(4).begin());
  EXPECT_EQ(g.gap(kernel), 10);
}

// `--cuda-api used` asks CUPTI for these calls alone: every call that puts work on the GPU,
// waits for it or moves memory, runtime and driver alike, and none of the queries.
TEST(CuptiDecoderNames, UsedCallsAreThoseThatLaunchWaitOrMoveMemory) {
  for (const char* used : {"cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx",
                           "cudaGraphLaunch", "cudaMemcpyAsync", "cuMemcpyHtoDAsync", "cudaMemsetAsync",
                           "cudaDeviceSynchronize", "cudaStreamSynchronize", "cuCtxSynchronize", "cudaEventSynchronize",
                           "cudaEventRecord", "cudaEventRecordWithFlags", "cudaEventQuery", "cudaStreamWaitEvent",
                           "cuStreamWaitValue32", "cuStreamBatchMemOp", "cudaMalloc", "cudaFreeAsync", "cuMemAlloc",
                           "cudaHostAlloc", "cudaStreamBeginCapture", "cudaLaunchHostFunc"}) {
    EXPECT_TRUE(CuptiDecoder::is_used_api(used)) << used;
  }
  for (const char* unused : {"cudaGetDevice", "cuKernelGetName", "cudaGetErrorString", "cudaStreamIsCapturing",
                             "cudaStreamGetCaptureInfo", "cudaFuncSetAttribute", "cuOccupancyMaxActiveClusters",
                             "cudaEventCreateWithFlags", "cudaStreamCreateWithFlags", "cuLibraryGetKernel",
                             "cuDevicePrimaryCtxGetState", "cuGetProcAddress"}) {
    EXPECT_FALSE(CuptiDecoder::is_used_api(unused)) << unused;
  }
}

TEST(CuptiDecoderNames, VersionSuffixesAreStripped) {
  EXPECT_EQ(CuptiDecoder::api_display_name("cudaLaunchKernel_v7000"), "cudaLaunchKernel");
  EXPECT_EQ(CuptiDecoder::api_display_name("cudaMemcpyAsync_ptsz_v7000"), "cudaMemcpyAsync_ptsz");
  EXPECT_EQ(CuptiDecoder::api_display_name("cuLaunchKernel"), "cuLaunchKernel");
  EXPECT_EQ(CuptiDecoder::api_display_name("cu_vx"), "cu_vx");
  EXPECT_TRUE(CuptiDecoder::is_noisy_api("cudaGetDevice"));
  EXPECT_FALSE(CuptiDecoder::is_noisy_api("cudaLaunchKernel"));
}

} // namespace
} // namespace dreamscope::tracer
