// The traces the tracer recorded on an H100 (tests/data/gpu/README.md), read on machines
// without a GPU: what a GPU trace must hold, and what the graph makes of it.
#include <dreamscope/graph/dependency_graph.h>
#include <dreamscope/storage/trace_file.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>

namespace dreamscope {
namespace {

std::filesystem::path gpu_data(const std::string& name) {
  return std::filesystem::path(DREAMSCOPE_TEST_DATA_DIR) / "gpu" / name;
}

// What every trace of a CUDA program must hold, whichever program it is.
void expect_whole_gpu_trace(const Trace& t) {
  EXPECT_TRUE(t.complete());
  EXPECT_EQ(t.dropped_events(), 0);
  ASSERT_EQ(t.devices().size(), 1u);
  const std::string& device = t.devices()[0].name;
  EXPECT_TRUE(device.find("H100") != std::string::npos || device.find("H200") != std::string::npos) << device;
  EXPECT_EQ(t.devices()[0].sm_count, 132);
  EXPECT_EQ(t.devices()[0].compute_capability_major, 9);

  const auto& ops = t.gpu_ops();
  std::size_t kernels = 0, copies = 0;
  for (GpuOpIndex i{0}; i < ops.size(); ++i) {
    const GpuOpRecord op = ops.row(i, t.launch_configs());
    const std::string_view name = t.str(op.name);
    if (op.kind == GpuOpKind::Kernel) {
      ++kernels;
      // A launch configuration: the grid and block CUPTI read, registers per thread.
      EXPECT_GT(op.launch.grid[0], 0) << name;
      EXPECT_GT(op.launch.block[0], 0) << name;
      EXPECT_GT(op.launch.registers_per_thread, 0) << name;
    }
    if (op.kind == GpuOpKind::Memcpy) {
      ++copies;
      EXPECT_GT(op.bytes, 0) << "a copy without its size";
    }
    EXPECT_LT(op.start, op.end) << name;
    // Every GPU operation was started by an API call recorded on a CPU thread.
    if (op.kind == GpuOpKind::Kernel || op.kind == GpuOpKind::Memcpy || op.kind == GpuOpKind::Memset) {
      EXPECT_TRUE(t.cuda_api_with_correlation(op.correlation).has_value()) << name;
    }
  }
  EXPECT_GT(kernels, 0u);
  EXPECT_GT(copies, 0u);
  // Every call is on its thread's own track: CUPTI gave OS thread ids (the first H100 traces
  // had the main thread's calls on a nameless track named by a pthread_t value).
  std::set<TrackId> call_tracks(t.cuda_api().track.begin(), t.cuda_api().track.end());
  for (TrackId track : call_tracks) {
    EXPECT_EQ(t.tracks()[track].kind, TrackKind::CpuThread);
    EXPECT_LT(t.tracks()[track].tid, 1 << 22) << "not an OS thread id (pid_max is 2^22)";
    EXPECT_FALSE(t.tracks()[track].name.empty()) << "tid " << t.tracks()[track].tid;
  }

  // Every wait resolves: the event a stream waited for, the stream a sync waited for.
  const DependencyGraph g = build_dependency_graph(t);
  EXPECT_EQ(g.warnings().unresolved_event, 0) << g.warnings().describe();
  EXPECT_EQ(g.warnings().unknown_sync_stream, 0) << g.warnings().describe();
  EXPECT_EQ(g.warnings().gpu_ops_without_launch, 0) << g.warnings().describe();
}

// The external id each kernel's launch carried, and the range that pushed it.
std::map<std::int64_t, AnnotationIndex> ranges_by_external_id(const Trace& t) {
  std::map<std::int64_t, AnnotationIndex> out;
  const auto& ann = t.annotations();
  for (AnnotationIndex i{0}; i < ann.size(); ++i) {
    if (ann.external_id[i] != kNoValue) out.emplace(ann.external_id[i], i);
  }
  return out;
}

TEST(GpuFixtures, CudaTrainKernelsCopiesAndWaitsOfEveryStep) {
  const Trace t = read_trace(gpu_data("cuda_train.db"));
  expect_whole_gpu_trace(t);
  // samples/cuda_train/README.md: per step 5 SGEMMs (cuBLAS may split one in two kernels),
  // 10 hand-written kernels on the compute stream, 2 copies in and 1 out, a memset, the
  // copy stream's event, the compute stream's wait for it, and the synchronize.
  constexpr std::size_t kSteps = 20;
  std::size_t hand_written = 0, kernels = 0;
  std::map<GpuOpKind, std::size_t> kinds;
  for (std::size_t i = 0; i < t.gpu_ops().size(); ++i) {
    ++kinds[t.gpu_ops().kind[i]];
    if (t.gpu_ops().kind[i] != GpuOpKind::Kernel) continue;
    ++kernels;
    const std::string_view name = t.str(t.gpu_ops().name[i]);
    for (const char* k : {"bias_relu", "add_bias", "softmax_xent", "relu_backward", "row_sum", "sgd"}) {
      if (name.find(k) != std::string_view::npos) {
        ++hand_written;
        break;
      }
    }
  }
  EXPECT_EQ(hand_written, kSteps * 10);
  EXPECT_GE(kernels, kSteps * 15);
  EXPECT_GE(kinds[GpuOpKind::Memcpy], kSteps * 3);
  EXPECT_GE(kinds[GpuOpKind::Memset], kSteps);

  const DependencyGraph g = build_dependency_graph(t);
  std::map<SyncOp, std::size_t> actions;
  for (const auto& a : g.sync_actions()) ++actions[a.op];
  EXPECT_GE(actions[SyncOp::RecordEvent], kSteps);
  EXPECT_GE(actions[SyncOp::StreamWaitEvent], kSteps);
  EXPECT_GE(actions[SyncOp::WaitStreams], kSteps);

  // Every kernel's launch was made inside one of cuda_train's own ranges (forward, loss,
  // backward, optimizer), whose external id it carries.
  const auto ranges = ranges_by_external_id(t);
  std::set<std::string> phases;
  for (std::size_t i = 0; i < t.gpu_ops().size(); ++i) {
    if (t.gpu_ops().kind[i] != GpuOpKind::Kernel) continue;
    const auto api = t.cuda_api_with_correlation(t.gpu_ops().correlation[i]);
    ASSERT_TRUE(api.has_value());
    const auto range = ranges.find(t.cuda_api().external_id[*api]);
    ASSERT_NE(range, ranges.end()) << t.str(t.gpu_ops().name[i]) << " launched outside every range";
    phases.insert(std::string(t.str(t.annotations().name[range->second])));
  }
  EXPECT_EQ(phases, (std::set<std::string>{"forward", "loss", "backward", "optimizer"}));
}

TEST(GpuFixtures, PyTorchKernelsLinkToTheOperatorThatLaunchedThem) {
  const Trace t = read_trace(gpu_data("pytorch_train.db"));
  expect_whole_gpu_trace(t);
  // train.py: the main process and its two DataLoader workers, each worker's fetch and prep.
  ASSERT_EQ(t.processes().size(), 3u);
  std::map<std::string, std::size_t> categories;
  const auto& ann = t.annotations();
  for (AnnotationIndex i{0}; i < ann.size(); ++i) ++categories[std::string(t.str(ann.category[i]))];
  EXPECT_EQ(categories["step"], 20u);
  EXPECT_EQ(categories["fetch"], 20u);
  EXPECT_EQ(categories["prep"], 20u);

  // --emit-nvtx: each kernel's launch carries the external id of PyTorch's range for the
  // innermost operator around it (aten::..., in the nvtx domain).
  const auto ranges = ranges_by_external_id(t);
  std::size_t kernels = 0, by_aten = 0;
  std::set<std::string> operators;
  for (std::size_t i = 0; i < t.gpu_ops().size(); ++i) {
    if (t.gpu_ops().kind[i] != GpuOpKind::Kernel) continue;
    ++kernels;
    const auto api = t.cuda_api_with_correlation(t.gpu_ops().correlation[i]);
    ASSERT_TRUE(api.has_value());
    const auto range = ranges.find(t.cuda_api().external_id[*api]);
    ASSERT_NE(range, ranges.end()) << t.str(t.gpu_ops().name[i]) << " linked to no operator";
    const std::string_view op = t.str(ann.name[range->second]);
    if (op.starts_with("aten::")) {
      ++by_aten;
      operators.insert(std::string(op.substr(0, op.find(','))));
    }
  }
  EXPECT_EQ(by_aten, kernels);
  for (const char* op : {"aten::cudnn_convolution", "aten::convolution_backward", "aten::max_pool2d_with_indices",
                         "aten::addmm", "aten::_foreach_add_"}) {
    EXPECT_TRUE(operators.count(op)) << op << " launched no kernel";
  }
}

// The zero-code PyTorch layer on CUDA (`dreamscope trace --python-ops --python-modules 2`, no
// annotation in train.py): steps, batch waits, the workers' fetch and collate, module
// forwards, backward on the caller's thread and on the autograd engine's, and PyTorch's
// operator ranges that every kernel's launch links to.
TEST(GpuFixtures, PyTorchWithNoCodeChangeHasItsFrameworkLayer) {
  const Trace t = read_trace(gpu_data("pytorch_auto.db"));
  expect_whole_gpu_trace(t);
  ASSERT_EQ(t.processes().size(), 3u);
  const auto& ann = t.annotations();
  std::map<std::string, std::size_t> by_name;             // dreamscope.auto ranges by name
  std::map<std::string, std::set<std::string>> threads_of; // and the threads that hold them
  for (AnnotationIndex i{0}; i < ann.size(); ++i) {
    if (t.str(ann.domain[i]) != "dreamscope.auto") continue;
    const std::string name(t.str(ann.name[i]));
    ++by_name[name];
    threads_of[name].insert(t.tracks()[ann.track[i]].name);
  }
  constexpr std::size_t kSteps = 20;
  for (const char* name : {"step", "wait", "fetch", "prep", "forward", "forward: conv1", "forward: fc", "optimizer.step",
                           "zero_grad"}) {
    EXPECT_EQ(by_name[name], kSteps) << name;
  }
  EXPECT_EQ(threads_of["fetch"], std::set<std::string>{"pt_data_worker"});
  // The caller's backward and the engine's: CUDA runs the pass on a thread of its own.
  EXPECT_EQ(by_name["backward"], 2 * kSteps);
  EXPECT_EQ(threads_of["backward"], (std::set<std::string>{"python3", "pt_autograd_0"}));

  // --python-ops: every kernel's launch carries the external id of an aten:: operator range.
  const auto ranges = ranges_by_external_id(t);
  std::size_t kernels = 0, by_aten = 0;
  for (std::size_t i = 0; i < t.gpu_ops().size(); ++i) {
    if (t.gpu_ops().kind[i] != GpuOpKind::Kernel) continue;
    ++kernels;
    const auto api = t.cuda_api_with_correlation(t.gpu_ops().correlation[i]);
    ASSERT_TRUE(api.has_value());
    const auto range = ranges.find(t.cuda_api().external_id[*api]);
    if (range != ranges.end() && t.str(ann.name[range->second]).starts_with("aten::")) ++by_aten;
  }
  EXPECT_GT(kernels, 40 * kSteps);
  EXPECT_EQ(by_aten, kernels);
}

} // namespace
} // namespace dreamscope
