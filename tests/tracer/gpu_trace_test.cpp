// The real CUPTI path, where there is a GPU: cuda_train traced end to end. Kernels, copies,
// syncs, API calls and annotations are present and linked. Skipped without a GPU.
#include "run_helpers.h"

#include <dreamscope/graph/dependency_graph.h>

#include <map>
#include <set>

namespace dreamscope::test {
namespace {

TEST(GpuTrace, CudaTrainKernelsCopiesSyncsAndTheirLaunches) {
  const std::string cuda_train = from_env_or("DREAMSCOPE_TEST_CUDA_TRAIN", CUDA_TRAIN);
  if (cuda_train.empty()) GTEST_SKIP() << "cuda_train was not built (no nvcc)";
  const std::vector<std::string> args = {cuda_train, "--steps", "5", "--batch-size", "64", "--input-dim", "128",
                                         "--hidden", "256"};
  RunResult probe = run(args);
  if (probe.exit_code != 0) GTEST_SKIP() << "no usable GPU here: " << probe.output;

  const auto dir = scratch_dir("gpu");
  const auto out = dir / "cuda.db";
  RunResult r = run(traced(out, args));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  Trace t = read_trace(out);
  EXPECT_TRUE(t.complete());
  EXPECT_EQ(t.dropped_events(), 0);
  ASSERT_GE(t.devices().size(), 1u);
  EXPECT_GT(t.devices()[0].sm_count, 0);

  const auto& ops = t.gpu_ops();
  std::map<GpuOpKind, std::size_t> kinds;
  std::size_t hand_written = 0;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    ++kinds[ops.kind[i]];
    const std::string_view name = t.str(ops.name[i]);
    for (const char* k : {"bias_relu", "add_bias", "softmax_xent", "relu_backward", "row_sum", "sgd"}) {
      if (ops.kind[i] == GpuOpKind::Kernel && name.find(k) != std::string_view::npos) {
        ++hand_written;
        break;
      }
    }
    // Every GPU operation was launched by an API call recorded on a CPU thread.
    if (ops.kind[i] == GpuOpKind::Kernel || ops.kind[i] == GpuOpKind::Memcpy) {
      EXPECT_TRUE(t.cuda_api_with_correlation(ops.correlation[i]).has_value()) << name;
    }
  }
  EXPECT_EQ(hand_written, 5u * 10u);
  EXPECT_GE(kinds[GpuOpKind::Kernel], 5u * 15u) << "10 hand-written kernels and 5 SGEMMs per step";
  EXPECT_GE(kinds[GpuOpKind::Memcpy], 5u * 3u);
  EXPECT_GE(kinds[GpuOpKind::Memset], 5u);
  EXPECT_GE(kinds[GpuOpKind::Sync], 5u);

  // API calls made inside a dreamscope range carry that range's external id.
  std::set<std::int64_t> range_ids;
  for (std::size_t i = 0; i < t.annotations().size(); ++i) {
    if (t.annotations().external_id[i] != kNoValue) range_ids.insert(t.annotations().external_id[i]);
  }
  std::size_t linked = 0;
  for (std::size_t i = 0; i < t.cuda_api().size(); ++i) linked += range_ids.count(t.cuda_api().external_id[i]);
  EXPECT_GT(linked, 0u);
  // ... and are on that range's thread: CUPTI reports OS thread ids, not pthread_self()
  // values that name no thread (the first H100 traces had every call of the main thread on a
  // track of its own).
  std::map<std::int64_t, TrackId> range_track;
  for (std::size_t i = 0; i < t.annotations().size(); ++i) {
    if (t.annotations().external_id[i] != kNoValue) range_track[t.annotations().external_id[i]] = t.annotations().track[i];
  }
  for (std::size_t i = 0; i < t.cuda_api().size(); ++i) {
    const auto r = range_track.find(t.cuda_api().external_id[i]);
    if (r != range_track.end()) {
      EXPECT_EQ(t.cuda_api().track[i], r->second) << t.str(t.cuda_api().name[i]);
    }
  }
  for (const TrackInfo& track : t.tracks()) {
    if (track.kind == TrackKind::CpuThread) {
      EXPECT_LT(track.tid, 1 << 22) << "not an OS thread id (pid_max is 2^22)";
    }
  }

  // Every wait of the copy/compute handshake resolves: the event recorded on the copy
  // stream, the compute stream's wait for it, the synchronize on the compute stream.
  const DependencyGraph g = build_dependency_graph(t);
  EXPECT_EQ(g.warnings().unresolved_event, 0) << g.warnings().describe();
  EXPECT_EQ(g.warnings().unknown_sync_stream, 0) << g.warnings().describe();
  std::map<SyncOp, std::size_t> actions;
  for (const auto& a : g.sync_actions()) ++actions[a.op];
  EXPECT_GE(actions[SyncOp::RecordEvent], 5u);
  EXPECT_GE(actions[SyncOp::StreamWaitEvent], 5u);
  EXPECT_GE(actions[SyncOp::WaitStreams], 5u);

  // The default recording: CUPTI was told not to record the per-launch queries, so none is
  // in the trace; the calibration's own calls (the writer thread's) never are.
  for (std::size_t i = 0; i < t.cuda_api().size(); ++i) {
    const std::string_view name = t.str(t.cuda_api().name[i]);
    EXPECT_NE(name, "cuKernelGetName");
    EXPECT_NE(name, "cuDriverGetVersion");
    EXPECT_NE(name, "cudaGetDevice");
  }
  // CUPTI's cost per call, timed by the writer a moment after CUDA started, where the run
  // lasted that long: a plausible figure from calls CUPTI did record.
  for (const CalibrationRecord& c : t.calibration()) {
    if (c.event_kind != "cuda_api") continue;
    EXPECT_GE(c.cost_ns, 0.0);
    EXPECT_LT(c.cost_ns, 20'000.0);
    EXPECT_EQ(t.meta_value("cuda_api_calibration_calls"), std::to_string(c.samples));
  }
  std::filesystem::remove_all(dir);
}

} // namespace
} // namespace dreamscope::test
