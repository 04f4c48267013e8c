// Every analysis on hand-built traces, against breakdowns worked out by hand.
#include "analysis_traces.h"

#include <dreamscope/analyzers/hta.h>
#include <dreamscope/analyzers/pipeline.h>
#include <dreamscope/analyzers/tensorboard.h>
#include <dreamscope/storage/importers.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

namespace dreamscope::analyzers {

// For gtest's messages (found by argument-dependent lookup, hence outside the unnamed namespace).
static void PrintTo(const ModuleTree& m, std::ostream* os) {
  *os << "{\"" << m.name << "\", " << m.module_id << ", {";
  for (std::size_t i = 0; i < m.children.size(); ++i) {
    if (i > 0) *os << ", ";
    PrintTo(m.children[i], os);
  }
  *os << "}}";
}

namespace {

using test::TraceMaker;
using test::us;

const OperationTime& op(const CrossStackBreakdown& b, std::string_view name) {
  auto it = std::find_if(b.operations.begin(), b.operations.end(), [&](const auto& o) { return o.name == name; });
  if (it == b.operations.end()) throw std::runtime_error("no operation " + std::string(name));
  return *it;
}

// forward [0,100) launches K1 [30,150) with an API call [10,20); backward [200,300) launches
// K2 [220,260) with a call [210,230).
TraceMaker two_operations() {
  TraceMaker m;
  m.annotation("forward", 0, 100);
  m.api("cudaLaunchKernel", 10, 20, 1);
  m.gpu(7, "k1", 30, 150, 1);
  m.annotation("backward", 200, 300);
  m.api("cudaLaunchKernel", 210, 230, 2);
  m.gpu(7, "k2", 220, 260, 2);
  return m;
}

TEST(CrossStack, SplitsEachOperationByWhatTheStackWasDoing) {
  const Trace t = two_operations().build();
  const CrossStackBreakdown b = cross_stack_breakdown(t);
  const auto& fwd = op(b, "forward");
  EXPECT_EQ(fwd.cpu_framework, 20);    // [0,10) + [20,30)
  EXPECT_EQ(fwd.cpu_cuda_api, 10);     // [10,20)
  EXPECT_EQ(fwd.cpu_gpu_overlap, 70);  // [30,100)
  EXPECT_EQ(fwd.gpu_only, 50);         // [100,150): K1 outlives forward, billed to its launcher
  EXPECT_EQ(fwd.instances, 1);
  const auto& bwd = op(b, "backward");
  EXPECT_EQ(bwd.cpu_framework, 50);    // [200,210) + [260,300)
  EXPECT_EQ(bwd.cpu_cuda_api, 10);     // [210,220)
  EXPECT_EQ(bwd.cpu_gpu_overlap, 40);  // [220,260), in and after the call
  EXPECT_EQ(bwd.gpu_only, 0);
  EXPECT_EQ(b.all.total(), 250);       // everything but the idle gap [150,200)
  EXPECT_EQ(b.operations.front().name, "forward");
}

TEST(CrossStack, InnermostOperationOwnsTheTimeAndTheParentKeepsItsOwn) {
  TraceMaker m = two_operations();
  m.annotation("train_step", 0, 300);
  const Trace t = std::move(m).build();
  const CrossStackBreakdown b = cross_stack_breakdown(t);
  const auto& step = op(b, "train_step");
  EXPECT_EQ(step.cpu_gpu_overlap, 50); // [100,150): K1 runs while the step's own code runs
  EXPECT_EQ(step.cpu_framework, 50);   // [150,200)
  EXPECT_EQ(op(b, "forward").gpu_only, 0);
  EXPECT_EQ(op(b, "forward").total(), 100);
  EXPECT_EQ(b.all.total(), 300);
}

TEST(CrossStack, UnannotatedWorkIsItsOwnRow) {
  TraceMaker m;
  m.api("cudaMalloc", 0, 40, kNoValue);
  const Trace t = std::move(m).build();
  const auto b = cross_stack_breakdown(t);
  ASSERT_EQ(b.operations.size(), 1u);
  EXPECT_EQ(b.operations[0].name, "(no operation)");
  EXPECT_EQ(b.operations[0].cpu_cuda_api, 40);
}

TEST(CrossStack, EveryCallOfAnOperatorThatEmitNvtxNamedIsOneRow) {
  // PyTorch's emit_nvtx appends the call's details to the operator's name.
  TraceMaker m;
  m.annotation("aten::addmm, seq = 8, op_id = 42", 0, 100);
  m.annotation("aten::addmm, seq = 20, op_id = 97, sizes = [[10], [64, 16384], [16384, 10]]", 200, 250);
  m.annotation("aten::relu, op_id = 7, input_op_ids = [(6, 0)]", 300, 310);
  const Trace t = std::move(m).build();
  const auto b = cross_stack_breakdown(t);
  ASSERT_EQ(b.operations.size(), 2u);
  EXPECT_EQ(op(b, "aten::addmm").instances, 2);
  EXPECT_EQ(op(b, "aten::addmm").cpu_framework, 150);
  EXPECT_EQ(op(b, "aten::relu").instances, 1);
}

TEST(KernelType, FollowsHtaRegexesInOrder) {
  EXPECT_EQ(classify_kernel("ncclKernel_AllReduce_RING_LL_Sum_float"), KernelType::Communication);
  EXPECT_EQ(classify_kernel("void ncclKernel_Broadcast(int)"), KernelType::Communication);
  EXPECT_EQ(classify_kernel("hccl:allgather"), KernelType::Communication);
  EXPECT_EQ(classify_kernel("hipMemcpyAsync"), KernelType::Communication); // `hip` is tried first
  EXPECT_EQ(classify_kernel("Memcpy HtoD (Pageable -> Device)"), KernelType::Memory);
  EXPECT_EQ(classify_kernel("Memset (Device)"), KernelType::Memory);
  EXPECT_EQ(classify_kernel("dma_request"), KernelType::Memory);
  EXPECT_EQ(classify_kernel("Context Sync"), KernelType::Other);
  EXPECT_EQ(classify_kernel("Stream Wait Event"), KernelType::Other);
  EXPECT_EQ(classify_kernel("cudaLaunchKernel"), KernelType::Other);
  EXPECT_EQ(classify_kernel("runFunction - job"), KernelType::Other);
  EXPECT_EQ(classify_kernel("add-dtype_Float"), KernelType::Computation);
  EXPECT_EQ(classify_kernel("void at::native::vectorized_elementwise_kernel<4>"), KernelType::Computation);
  EXPECT_EQ(classify_kernel("my_dma_kernel"), KernelType::Other); // `.*dma`
}

TEST(Hta, TemporalBreakdownMergesKernelsAndSplitsComputeFromTheRest) {
  TraceMaker m;
  test::add_hta_workload(m);
  const Trace t = std::move(m).build();
  const auto tb = hta_temporal_breakdown(t);
  EXPECT_EQ(tb.kernel_time, 110); // [100, 210)
  EXPECT_EQ(tb.idle, 65);         // 110 - |[100,120) [130,135) [140,150) [200,210)|
  EXPECT_EQ(tb.compute, 30);
  EXPECT_EQ(tb.non_compute, 15);
  EXPECT_DOUBLE_EQ(tb.idle_pct, 59.09);
  EXPECT_DOUBLE_EQ(tb.compute_pct, 27.27);
  EXPECT_DOUBLE_EQ(tb.non_compute_pct, 13.64);
}

TEST(Hta, TimesAreRoundedToMicrosecondsAsHtaParsesFloatTimestamps) {
  TraceMaker m(TraceSource::Kineto);
  m.gpu(7, "gemm", 1500, 4400, 1); // ts 1.5 -> 2, end floor(1.5 + 2.9) = 4
  m.gpu(7, "gemm", 5000, 6999, 2); // ts 5, end floor(6.999) = 6
  const Trace t = std::move(m).build();
  const auto tb = hta_temporal_breakdown(t);
  EXPECT_EQ(tb.kernel_time, 4); // [2, 6)
  EXPECT_EQ(tb.compute, 3);     // [2,4) + [5,6)
  EXPECT_EQ(tb.idle, 1);
}

TEST(Hta, IdleTimeSplitsGapsByWhatTheStreamWaitedFor) {
  TraceMaker m;
  test::add_hta_workload(m);
  const Trace t = std::move(m).build();
  const auto idle = hta_idle_time_breakdown(t);
  ASSERT_EQ(idle.size(), 2u);
  const auto& s7 = idle[0].stream == 7 ? idle[0] : idle[1];
  const auto& s9 = idle[0].stream == 9 ? idle[0] : idle[1];
  EXPECT_EQ(s7.host_wait, 20);   // 110 -> 130, the memcpy's call began at 125
  EXPECT_EQ(s7.kernel_wait, 5);  // 135 -> 140, call at 132, gap under 30
  EXPECT_EQ(s7.other, 50);       // 150 -> 200, call at 150 is not after the previous end
  EXPECT_DOUBLE_EQ(s7.host_wait_ratio, 0.27);
  EXPECT_DOUBLE_EQ(s7.kernel_wait_ratio, 0.07);
  EXPECT_DOUBLE_EQ(s7.other_ratio, 0.67);
  EXPECT_EQ(s9.total(), 0);
}

TEST(Hta, KernelBreakdownByTypeLabelsOverlapsAndByNameKeepsStatistics) {
  TraceMaker m;
  test::add_hta_workload(m);
  const Trace t = std::move(m).build();
  const auto kb = hta_kernel_breakdown(t);
  ASSERT_EQ(kb.by_type.size(), 4u);
  EXPECT_EQ(kb.by_type[0].kernel_type, "COMPUTATION");
  EXPECT_EQ(kb.by_type[0].sum, 25);
  EXPECT_DOUBLE_EQ(kb.by_type[0].percentage, 55.6);
  EXPECT_EQ(kb.by_type[1].kernel_type, "COMMUNICATION");
  EXPECT_EQ(kb.by_type[1].sum, 10);
  EXPECT_EQ(kb.by_type[2].kernel_type, "COMPUTATION overlapping COMMUNICATION");
  EXPECT_EQ(kb.by_type[2].sum, 5);
  EXPECT_EQ(kb.by_type[3].kernel_type, "MEMORY");
  EXPECT_EQ(kb.by_type[3].sum, 5);

  auto gemm = std::find_if(kb.by_name.begin(), kb.by_name.end(), [](const auto& k) { return k.name == "gemm"; });
  ASSERT_NE(gemm, kb.by_name.end());
  EXPECT_EQ(gemm->count, 3);
  EXPECT_EQ(gemm->sum, 30);
  EXPECT_DOUBLE_EQ(gemm->mean, 10);
  EXPECT_DOUBLE_EQ(gemm->stddev, 0);

  HtaOptions no_memory;
  no_memory.include_memory_kernels = false;
  const auto without = hta_kernel_breakdown(t, no_memory);
  EXPECT_EQ(without.by_type.size(), 3u);
  EXPECT_TRUE(std::none_of(without.by_name.begin(), without.by_name.end(),
                           [](const auto& k) { return k.type == KernelType::Memory; }));
}

TEST(Hta, CommunicationComputationOverlap) {
  TraceMaker m;
  test::add_hta_workload(m);
  const Trace t = std::move(m).build();
  auto overlap = hta_comm_comp_overlap(t);
  ASSERT_TRUE(overlap.has_value());
  EXPECT_NEAR(*overlap, 100.0 / 3.0, 1e-9); // [105,110) of [105,120)

  TraceMaker none;
  none.gpu(7, "gemm", 0, 1000, 1);
  EXPECT_FALSE(hta_comm_comp_overlap(std::move(none).build()).has_value());
}

TEST(Hta, LaunchStatsPairCallsWithTheirKernels) {
  TraceMaker m;
  test::add_hta_workload(m);
  const Trace t = std::move(m).build();
  const auto launches = hta_kernel_launches(t);
  ASSERT_EQ(launches.size(), 5u);
  EXPECT_EQ(launches[0].correlation, 1);
  EXPECT_EQ(launches[0].cpu_duration, 5);
  EXPECT_EQ(launches[0].gpu_duration, 10);
  EXPECT_EQ(launches[0].launch_delay, 5);
  EXPECT_EQ(launches[1].correlation, 2);
  EXPECT_EQ(launches[1].runtime_name, "cudaMemcpyAsync");
  EXPECT_EQ(launches[1].launch_delay, 3);
  EXPECT_EQ(launches[3].launch_delay, 48);
  EXPECT_EQ(launches[4].launch_delay, 6);
}

TEST(Hta, LaunchDelayIsNeverNegative) {
  TraceMaker m;
  m.api("cudaLaunchKernel", us(10), us(20), 1);
  m.gpu(7, "gemm", us(15), us(30), 1); // starts before the call returns
  const auto launches = hta_kernel_launches(std::move(m).build());
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_EQ(launches[0].launch_delay, 0);
}

TEST(Hta, QueueLengthCountsLaunchedButNotStartedOps) {
  TraceMaker m;
  test::add_hta_workload(m);
  // Two launches in flight at once on stream 7.
  m.api("cudaLaunchKernel", us(300), us(301), 6);
  m.api("cudaLaunchKernel", us(302), us(303), 7);
  m.gpu(7, "gemm", us(310), us(320), 6);
  m.gpu(7, "gemm", us(320), us(330), 7);
  const Trace t = std::move(m).build();
  const auto q = hta_queue_length(t);
  ASSERT_EQ(q.size(), 2u);
  const auto& s7 = q[0].stream == 7 ? q[0] : q[1];
  EXPECT_EQ(s7.max, 2);
  ASSERT_EQ(s7.series.size(), 12u);
  EXPECT_EQ(s7.series[0].ts, 90);
  EXPECT_EQ(s7.series[0].queue_length, 1);
  EXPECT_EQ(s7.series[9].queue_length, 2);
  EXPECT_EQ(s7.series.back().queue_length, 0);
}

TEST(Hta, ProfilerStepFilterDropsTheLastStepLikeHta) {
  TraceMaker m(TraceSource::Kineto);
  test::add_hta_workload(m);
  m.annotation("ProfilerStep#1", us(80), us(160), "user_annotation");
  m.annotation("ProfilerStep#2", us(160), us(260), "user_annotation");
  m.annotation("forward", us(100), us(130), "user_annotation");
  m.annotation("forward", us(100), us(150.7), "gpu_user_annotation", kNoValue, m.stream(7));
  m.annotation("aten::mm", us(100), us(101), "cpu_op");
  m.api("cudaLaunchKernel", us(170), us(171), 6); // in the last step: left out with its kernel
  m.gpu(7, "gemm", us(180), us(190), 6);
  const Trace t = std::move(m).build();

  const auto r = hta_analyze(t);
  EXPECT_EQ(r.profiler_steps, 2);
  EXPECT_TRUE(r.step_filter_applied);
  EXPECT_EQ(r.temporal.kernel_time, 110);
  EXPECT_EQ(r.temporal.idle, 65);
  EXPECT_EQ(r.launches.size(), 5u);
  ASSERT_EQ(r.cpu_annotations.size(), 2u); // ProfilerStep#2 starts at the last step's start
  EXPECT_EQ(r.cpu_annotations[0].name, "ProfilerStep#1");
  EXPECT_EQ(r.cpu_annotations[0].sum, 80);
  EXPECT_EQ(r.cpu_annotations[1].name, "forward");
  EXPECT_EQ(r.cpu_annotations[1].sum, 30);
  ASSERT_EQ(r.gpu_annotations.size(), 1u);
  EXPECT_EQ(r.gpu_annotations[0].sum, 50); // floor(150.7) - 100

  HtaOptions keep_all;
  keep_all.profiler_step_filter = false;
  const auto all = hta_analyze(t, keep_all);
  EXPECT_FALSE(all.step_filter_applied);
  EXPECT_EQ(all.temporal.idle, 55); // the kernel at [180,190) is counted
  EXPECT_EQ(all.launches.size(), 6u);
  EXPECT_EQ(all.cpu_annotations.size(), 3u);
}

TEST(Hta, OneProfilerStepFiltersNothing) {
  TraceMaker m(TraceSource::Kineto);
  test::add_hta_workload(m);
  m.annotation("ProfilerStep#1", us(80), us(160), "user_annotation");
  const auto r = hta_analyze(std::move(m).build());
  EXPECT_FALSE(r.step_filter_applied);
  EXPECT_EQ(r.profiler_steps, 1);
  EXPECT_EQ(r.launches.size(), 5u);
}

TEST(Steps, EachCategoryClaimsWhatNoHigherOneClaimed) {
  TraceMaker m;
  m.annotation("ProfilerStep#1", 0, 100, "user_annotation");
  m.annotation("aten::mm", 0, 60, "cpu_op");
  m.annotation("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 60, 80, "cpu_op");
  m.api("cudaLaunchKernel", 0, 15, 1);
  m.gpu(7, "gemm", 10, 30, 1);
  m.gpu(7, "Memcpy DtoD", 20, 40, 2, GpuOpKind::Memcpy);
  m.annotation("ProfilerStep#2", 100, 150, "user_annotation");
  // Launched from inside the step, or the step would be dropped as a trailing one without GPU work.
  m.api("cudaLaunchKernel", 100, 102, 3);
  m.api("cudaMemsetAsync", 102, 104, 4);
  m.gpu(9, "ncclKernel_AllReduce", 100, 120, 3);
  m.gpu(7, "Memset (Device)", 110, 130, 4, GpuOpKind::Memset);
  const Trace t = std::move(m).build();
  const auto b = step_breakdown(t);
  ASSERT_EQ(b.steps.size(), 2u);
  auto at = [](const StepTime& s, StepCategory c) { return s.time[static_cast<std::size_t>(c)]; };
  const auto& s1 = b.steps[0];
  EXPECT_EQ(at(s1, StepCategory::Runtime), 10);
  EXPECT_EQ(at(s1, StepCategory::Kernel), 20);
  EXPECT_EQ(at(s1, StepCategory::Memcpy), 10);
  EXPECT_EQ(at(s1, StepCategory::CpuExec), 20);
  EXPECT_EQ(at(s1, StepCategory::DataLoader), 20);
  EXPECT_EQ(at(s1, StepCategory::Other), 20);
  const auto& s2 = b.steps[1];
  EXPECT_EQ(at(s2, StepCategory::Communication), 10); // [100,110); memset outranks it after
  EXPECT_EQ(at(s2, StepCategory::Memset), 20);
  EXPECT_EQ(at(s2, StepCategory::Other), 20);
  for (const auto& s : b.steps) {
    TimeNs sum = 0;
    for (TimeNs v : s.time) sum += v;
    EXPECT_EQ(sum, s.duration());
  }
  EXPECT_EQ(b.average[static_cast<std::size_t>(StepCategory::Other)], 20);
}

TEST(Steps, ExtendToTheEndOfTheGpuWorkTheirLaunchesCausedAndDropTrailingOnesWithout) {
  TraceMaker m;
  m.annotation("ProfilerStep#1", 0, 100, "user_annotation");
  m.api("cudaLaunchKernel", 10, 20, 1);
  m.gpu(7, "gemm", 50, 160, 1);
  m.annotation("ProfilerStep#2", 100, 200, "user_annotation");
  m.api("cudaLaunchKernel", 110, 120, 2);
  m.gpu(7, "gemm", 160, 180, 2);
  m.annotation("ProfilerStep#3", 200, 250, "user_annotation"); // launched nothing
  const auto b = step_breakdown(std::move(m).build());
  ASSERT_EQ(b.steps.size(), 2u);
  auto at = [](const StepTime& s, StepCategory c) { return s.time[static_cast<std::size_t>(c)]; };
  EXPECT_EQ(b.steps[0].start, 0);
  EXPECT_EQ(b.steps[0].end, 160); // its kernel's end
  EXPECT_EQ(b.steps[0].host_end, 100);
  EXPECT_EQ(b.steps[0].device_ops, 1);
  EXPECT_EQ(at(b.steps[0], StepCategory::Kernel), 110);
  EXPECT_EQ(at(b.steps[0], StepCategory::Runtime), 10);
  EXPECT_EQ(at(b.steps[0], StepCategory::Other), 40);
  EXPECT_EQ(b.steps[1].start, 160); // where step 1 now ends
  EXPECT_EQ(b.steps[1].end, 200);
  EXPECT_EQ(at(b.steps[1], StepCategory::Kernel), 20);
  EXPECT_EQ(at(b.steps[1], StepCategory::Other), 20); // its launch [110,120) is step 1's time now
  EXPECT_EQ(b.average_duration, 100);
}

// The plugin holds Kineto's µs in float64: at epoch timestamps those are 0.25 µs apart, and
// its numbers are rounded so; ours follow, for Kineto traces.
TEST(Steps, KinetoTimesAsTheTensorBoardPluginReadsThem) {
  const TimeNs start = 1712195495519689000; // 1712195495519689.0 µs
  for (TraceSource source : {TraceSource::Kineto, TraceSource::Tracer}) {
    TraceMaker m(source);
    m.annotation("ProfilerStep#1", start, start + 63813, "user_annotation"); // dur 63.813 µs
    const auto b = step_breakdown(std::move(m).build());
    ASSERT_EQ(b.steps.size(), 1u);
    EXPECT_EQ(b.steps[0].duration(), source == TraceSource::Kineto ? 63750 : 63813); // ts + dur = ...752.75
  }
}

TEST(Steps, DreamscopeStepsWithDataAnnotations) {
  TraceMaker m;
  m.annotation("step", 0, 100, "step", 0);
  m.annotation("wait", 0, 30, "wait", 7);
  m.annotation("forward", 30, 100, "operation");
  const auto b = step_breakdown(std::move(m).build());
  ASSERT_EQ(b.steps.size(), 1u);
  EXPECT_EQ(b.steps[0].name, "step 0");
  EXPECT_EQ(b.steps[0].time[static_cast<std::size_t>(StepCategory::DataLoader)], 30);
  EXPECT_EQ(b.steps[0].time[static_cast<std::size_t>(StepCategory::CpuExec)], 70);
}

TEST(Steps, WithoutStepsTheWholeTraceIsOneStep) {
  TraceMaker m;
  m.gpu(7, "gemm", 0, 30, 1);
  m.api("cudaLaunchKernel", 40, 50, 1);
  const auto b = step_breakdown(std::move(m).build());
  ASSERT_EQ(b.steps.size(), 1u);
  EXPECT_EQ(b.steps[0].name, "(whole trace)");
  EXPECT_EQ(b.steps[0].time[static_cast<std::size_t>(StepCategory::Kernel)], 30);
  EXPECT_EQ(b.steps[0].time[static_cast<std::size_t>(StepCategory::Runtime)], 10);
  EXPECT_EQ(b.steps[0].time[static_cast<std::size_t>(StepCategory::Other)], 10);
}

// A Kineto trace from its JSON text, through the importer.
Trace kineto_text(const std::string& tag, std::string_view json) {
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("dreamscope_" + tag + "_" + std::to_string(::getpid()) + ".json");
  std::ofstream(path) << json;
  Trace t = load_trace(path);
  std::filesystem::remove(path);
  return t;
}

// With nn.Module scopes and forward-backward flows, the TensorBoard plugin moves the backward
// operators a module's forward operators point at under "<module>.backward" in the main
// thread, and leaves out those no flow reaches.
TEST(OperatorViews, BackwardOperatorsGoUnderTheirModule) {
  const Trace t = kineto_text("backward_modules", R"json({"traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 1000},
    {"ph": "X", "cat": "python_function", "name": "nn.Module: Net", "pid": 1, "tid": 1, "ts": 10, "dur": 90,
     "args": {"Python id": 2, "Python module id": 0}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 1, "tid": 1, "ts": 20, "dur": 40, "args": {"External id": 1}},
    {"ph": "X", "cat": "cpu_op", "name": "autograd::engine::evaluate_function: AddmmBackward0", "pid": 1, "tid": 2, "ts": 500, "dur": 100},
    {"ph": "X", "cat": "cpu_op", "name": "AddmmBackward0", "pid": 1, "tid": 2, "ts": 510, "dur": 80},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 2, "ts": 520, "dur": 60},
    {"ph": "X", "cat": "cpu_op", "name": "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad", "pid": 1, "tid": 2, "ts": 600, "dur": 20},
    {"ph": "X", "cat": "cpu_op", "name": "torch::autograd::AccumulateGrad", "pid": 1, "tid": 2, "ts": 605, "dur": 10},
    {"ph": "X", "cat": "cpu_op", "name": "autograd::engine::evaluate_function: OtherBackward", "pid": 1, "tid": 2, "ts": 700, "dur": 20},
    {"ph": "X", "cat": "cpu_op", "name": "OtherBackward", "pid": 1, "tid": 2, "ts": 705, "dur": 10},
    {"ph": "s", "cat": "fwdbwd", "name": "fwdbwd", "id": 1, "pid": 1, "tid": 1, "ts": 20},
    {"ph": "f", "cat": "fwdbwd", "name": "fwdbwd", "id": 1, "pid": 1, "tid": 2, "ts": 510, "bp": "e"}
  ]})json");
  const OperatorKernelViews v = operator_kernel_views(t);
  auto has = [&](std::string_view name) {
    return std::any_of(v.by_name.begin(), v.by_name.end(), [&](const OperatorStats& o) { return o.name == name; });
  };
  for (const char* name : {"aten::linear", "AddmmBackward0", "aten::mm", "torch::autograd::AccumulateGrad",
                           "autograd::engine::evaluate_function: AddmmBackward0"}) {
    EXPECT_TRUE(has(name)) << name;
  }
  EXPECT_FALSE(has("OtherBackward"));
  EXPECT_FALSE(has("autograd::engine::evaluate_function: OtherBackward"));
}

// A module view row: name, module id, occurrences, operators, then host, self host, device,
// self device and average in µs.
void expect_module(const ModuleStats& s, std::string_view name, std::int64_t id, std::int64_t occurrences,
                   std::int64_t operators, std::array<double, 5> times) {
  SCOPED_TRACE(std::string(name) + " " + std::to_string(id));
  EXPECT_EQ(s.name, name);
  EXPECT_EQ(s.module_id, id);
  EXPECT_EQ(s.occurrences, occurrences);
  EXPECT_EQ(s.operators, operators);
  EXPECT_EQ(s.host, us(times[0]));
  EXPECT_EQ(s.self_host, us(times[1]));
  EXPECT_EQ(s.device, us(times[2]));
  EXPECT_EQ(s.self_device, us(times[3]));
  EXPECT_DOUBLE_EQ(s.average, static_cast<double>(us(times[4])));
}

// The TensorBoard plugin's module view on nested modules that launch kernels, with the
// non-module Python functions Kineto records between them. Expected values by hand from the
// plugin's module_op.py and node.py (docs/analyze.md):
// - Hierarchy: the walk up from the innermost functions (Python ids 5, 6, 9, 7, 8) finds
//   Linear 12 -> Sequential -> Net ("forward" skipped), then Linear 13 -> Net, then each Loss
//   call, one tree twice. Net's children stay in that order (not by name); roots go by name.
//   "nn.Module: Identity" has a null module id: a plain Python function, no module.
// - Host: a module's span; self host = span - the spans of the nodes it calls (Python
//   functions are no nodes): Net 200 - (100 + 60 + 10) = 30, Sequential 100 - (50 + 10) = 40,
//   each Linear its span - its aten::linear, Loss (20 - 10) + (30 - 20) = 20.
// - Device: the kernels launched below it: Net 20 + 8 + 30 + 4 = 62, Sequential 20 + 8. Self
//   device: the device time of the plain operators it calls directly, not of its modules: Net
//   aten::add 4, Sequential aten::relu 8, Linear 12 its aten::linear 20, Loss 6 + 10.
// - Operators: plain operators it calls directly (aten::linear, not the aten::addmm in it).
// - Average: device / occurrences, as there is device time.
TEST(ModuleView, NestedModulesWithKernels) {
  const Trace t = kineto_text("modules", R"json({"schemaVersion": 1, "traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 300},
    {"ph": "X", "cat": "python_function", "name": "train", "pid": 1, "tid": 1, "ts": 1, "dur": 298,
     "args": {"Python id": 1}},
    {"ph": "X", "cat": "python_function", "name": "nn.Module: Net", "pid": 1, "tid": 1, "ts": 10, "dur": 200,
     "args": {"Python id": 2, "Python parent id": 1, "Python module id": 10}},
    {"ph": "X", "cat": "python_function", "name": "nn.Module: Sequential", "pid": 1, "tid": 1, "ts": 20, "dur": 100,
     "args": {"Python id": 3, "Python parent id": 2, "Python module id": 11}},
    {"ph": "X", "cat": "python_function", "name": "forward", "pid": 1, "tid": 1, "ts": 25, "dur": 90,
     "args": {"Python id": 4, "Python parent id": 3}},
    {"ph": "X", "cat": "python_function", "name": "nn.Module: Linear", "pid": 1, "tid": 1, "ts": 30, "dur": 50,
     "args": {"Python id": 5, "Python parent id": 4, "Python module id": 12}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 1, "tid": 1, "ts": 32, "dur": 40,
     "args": {"External id": 100}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "pid": 1, "tid": 1, "ts": 35, "dur": 30,
     "args": {"External id": 101}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 40, "dur": 5,
     "args": {"External id": 101, "correlation": 1}},
    {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 46, "dur": 20,
     "args": {"device": 0, "stream": 7, "correlation": 1, "External id": 101}},
    {"ph": "X", "cat": "python_function", "name": "nn.Module: Identity", "pid": 1, "tid": 1, "ts": 81, "dur": 2,
     "args": {"Python id": 9, "Python parent id": 4, "Python module id": null}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::relu", "pid": 1, "tid": 1, "ts": 85, "dur": 10,
     "args": {"External id": 102}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 87, "dur": 3,
     "args": {"External id": 102, "correlation": 2}},
    {"ph": "X", "cat": "kernel", "name": "relu_kernel", "pid": 0, "tid": 7, "ts": 91, "dur": 8,
     "args": {"device": 0, "stream": 7, "correlation": 2, "External id": 102}},
    {"ph": "X", "cat": "python_function", "name": "nn.Module: Linear", "pid": 1, "tid": 1, "ts": 130, "dur": 60,
     "args": {"Python id": 6, "Python parent id": 2, "Python module id": 13}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 1, "tid": 1, "ts": 132, "dur": 50,
     "args": {"External id": 103}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "pid": 1, "tid": 1, "ts": 135, "dur": 40,
     "args": {"External id": 104}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 140, "dur": 5,
     "args": {"External id": 104, "correlation": 3}},
    {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 146, "dur": 30,
     "args": {"device": 0, "stream": 7, "correlation": 3, "External id": 104}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 195, "dur": 10,
     "args": {"External id": 105}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 197, "dur": 2,
     "args": {"External id": 105, "correlation": 4}},
    {"ph": "X", "cat": "kernel", "name": "add_kernel", "pid": 0, "tid": 7, "ts": 200, "dur": 4,
     "args": {"device": 0, "stream": 7, "correlation": 4, "External id": 105}},
    {"ph": "X", "cat": "python_function", "name": "nn.Module: Loss", "pid": 1, "tid": 1, "ts": 220, "dur": 20,
     "args": {"Python id": 7, "Python parent id": 1, "Python module id": 20}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::nll_loss", "pid": 1, "tid": 1, "ts": 222, "dur": 10,
     "args": {"External id": 106}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 224, "dur": 2,
     "args": {"External id": 106, "correlation": 5}},
    {"ph": "X", "cat": "kernel", "name": "nll_kernel", "pid": 0, "tid": 7, "ts": 227, "dur": 6,
     "args": {"device": 0, "stream": 7, "correlation": 5, "External id": 106}},
    {"ph": "X", "cat": "python_function", "name": "nn.Module: Loss", "pid": 1, "tid": 1, "ts": 250, "dur": 30,
     "args": {"Python id": 8, "Python parent id": 1, "Python module id": 20}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::nll_loss", "pid": 1, "tid": 1, "ts": 252, "dur": 20,
     "args": {"External id": 107}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 255, "dur": 3,
     "args": {"External id": 107, "correlation": 6}},
    {"ph": "X", "cat": "kernel", "name": "nll_kernel", "pid": 0, "tid": 7, "ts": 259, "dur": 10,
     "args": {"device": 0, "stream": 7, "correlation": 6, "External id": 107}}
  ]})json");

  const ModuleTree linear12{"nn.Module: Linear", 12, {}}, linear13{"nn.Module: Linear", 13, {}};
  const std::vector<ModuleTree> roots = module_hierarchy(t);
  ASSERT_EQ(roots.size(), 2u);
  EXPECT_EQ(roots[0], (ModuleTree{"nn.Module: Loss", 20, {}}));
  EXPECT_EQ(roots[1], (ModuleTree{"nn.Module: Net", 10, {{"nn.Module: Sequential", 11, {linear12}}, linear13}}));

  const std::vector<ModuleStats> stats = module_view(t);
  ASSERT_EQ(stats.size(), 2u);
  expect_module(stats[0], "Loss", 20, 2, 2, {50, 20, 16, 16, 8});
  EXPECT_TRUE(stats[0].children.empty());
  const ModuleStats& net = stats[1];
  expect_module(net, "Net", 10, 1, 1, {200, 30, 62, 4, 62});
  ASSERT_EQ(net.children.size(), 2u);
  expect_module(net.children[0], "Sequential", 11, 1, 1, {100, 40, 28, 8, 28});
  ASSERT_EQ(net.children[0].children.size(), 1u);
  expect_module(net.children[0].children[0], "Linear", 12, 1, 1, {50, 10, 20, 20, 20});
  expect_module(net.children[1], "Linear", 13, 1, 1, {60, 10, 30, 30, 30});
  EXPECT_TRUE(net.children[1].children.empty());

  // Modules stay out of the operator view.
  const OperatorKernelViews v = operator_kernel_views(t);
  ASSERT_EQ(v.by_name.size(), 5u);
  for (const OperatorStats& o : v.by_name) EXPECT_FALSE(o.name.starts_with("nn.Module")) << o.name;
}

// A module whose scope straddles its caller's end is left out of the call trees, as the plugin
// leaves it out, yet its Python ids place it in the hierarchy: its row has zeros, where the
// plugin fails on the trace (KeyError). Outer's self host is 100 - 20 (aten::mm only).
TEST(ModuleView, ModuleLeftOutOfTheTreesHasZeros) {
  const Trace t = kineto_text("module_straddles", R"json({"traceEvents": [
    {"ph": "X", "cat": "python_function", "name": "nn.Module: Outer", "pid": 1, "tid": 1, "ts": 0, "dur": 100,
     "args": {"Python id": 1, "Python module id": 1}},
    {"ph": "X", "cat": "python_function", "name": "nn.Module: Inner", "pid": 1, "tid": 1, "ts": 50, "dur": 100,
     "args": {"Python id": 2, "Python parent id": 1, "Python module id": 2}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 20,
     "args": {"External id": 1}}
  ]})json");
  const std::vector<ModuleStats> stats = module_view(t);
  ASSERT_EQ(stats.size(), 1u);
  expect_module(stats[0], "Outer", 1, 1, 1, {100, 80, 0, 0, 100});
  ASSERT_EQ(stats[0].children.size(), 1u);
  expect_module(stats[0].children[0], "Inner", 2, 0, 0, {0, 0, 0, 0, 0});
}

TEST(GpuEfficiency, UtilizationSmEfficiencyAndOccupancyAsTensorBoardEstimates) {
  TraceMaker m;
  m.annotation("ProfilerStep#1", 0, 100, "user_annotation");
  LaunchConfig half{.grid = {5, 1, 1}, .block = {128, 1, 1}};
  m.gpu(7, "gemm", 0, 40, 1, GpuOpKind::Kernel, half);
  LaunchConfig full{.grid = {40, 1, 1}, .block = {256, 1, 1}, .registers_per_thread = 64};
  m.gpu(7, "big", 50, 60, 2, GpuOpKind::Kernel, full);
  m.gpu(7, "outside", 120, 200, 3, GpuOpKind::Kernel, half); // after the step: not counted
  const Trace t = std::move(m).build();
  const auto eff = gpu_efficiency(t);
  ASSERT_EQ(eff.size(), 1u);
  EXPECT_EQ(eff[0].steps_time, 100);
  EXPECT_EQ(eff[0].busy, 50);
  EXPECT_DOUBLE_EQ(eff[0].gpu_utilization, 0.5);
  ASSERT_TRUE(eff[0].sm_efficiency.has_value());
  EXPECT_DOUBLE_EQ(*eff[0].sm_efficiency, (40 * 0.5 + 10 * 1.0) / 100);
  // gemm: 640 threads / 10 SMs / 2048 per SM; big: 10240 / 10 / 2048 = 0.5, but 64 registers
  // a thread leave room for 4 blocks of 8 warps: theoretical 0.5.
  EXPECT_DOUBLE_EQ(theoretical_occupancy(full, t.devices()[0]), 0.5);
  ASSERT_TRUE(eff[0].achieved_occupancy.has_value());
  EXPECT_NEAR(*eff[0].achieved_occupancy, (40 * 0.03125 + 10 * 0.5) / 50, 1e-12);
}

TEST(GpuEfficiency, KinetosOwnOccupancyEstimateWinsWhenRecorded) {
  TraceBuilder b;
  auto p = b.add_process(ProcessInfo{.pid = 1});
  DeviceInfo d;
  d.sm_count = 10;
  d.compute_capability_major = 8;
  auto dev = b.add_device(d);
  b.thread_track(p, 1);
  const TrackId s = b.stream_track(dev, 7);
  LaunchConfig l{.grid = {40, 1, 1}, .block = {256, 1, 1}};
  const GpuOpIndex k = b.add(GpuOpRecord{.track = s, .start = 0, .end = 100, .name = b.intern("k"), .launch = l});
  b.add_arg(k, "est. achieved occupancy %", std::int64_t{25});
  const auto eff = gpu_efficiency(std::move(b).build());
  ASSERT_EQ(eff.size(), 1u);
  ASSERT_TRUE(eff[0].achieved_occupancy.has_value());
  EXPECT_DOUBLE_EQ(*eff[0].achieved_occupancy, 0.25); // our estimate would say 0.5
}

TEST(GpuEfficiency, NoLaunchConfigsMeansNoEstimate) {
  TraceMaker m;
  m.gpu(7, "gemm", 0, 40, 1);
  const auto eff = gpu_efficiency(std::move(m).build());
  ASSERT_EQ(eff.size(), 1u);
  EXPECT_DOUBLE_EQ(eff[0].gpu_utilization, 1.0);
  EXPECT_FALSE(eff[0].sm_efficiency.has_value());
  EXPECT_FALSE(eff[0].achieved_occupancy.has_value());
}

TEST(DataStalls, FromDreamscopeAnnotationsPerStepAndBatch) {
  TraceMaker m;
  TrackId w = m.worker(2);
  m.annotation("step", 0, 100, "step", 0);
  m.annotation("step", 100, 200, "step", 1);
  m.annotation("wait", 0, 30, "wait", 1);
  m.annotation("wait", 100, 110, "wait", 2);
  m.annotation("fetch", 0, 20, "fetch", 1, w);
  m.annotation("prep", 20, 35, "prep", 1, w);
  m.annotation("fetch", 35, 40, "fetch", 2, w);
  const auto d = data_stalls(std::move(m).build());
  EXPECT_EQ(d.source, "dreamscope annotations");
  ASSERT_EQ(d.steps.size(), 2u);
  EXPECT_EQ(d.steps[0].step, "step 0");
  EXPECT_EQ(d.steps[0].data_wait, 30);
  EXPECT_EQ(d.steps[0].fetch, 20);
  EXPECT_EQ(d.steps[0].prep, 15);
  EXPECT_EQ(d.steps[0].batches, 1);
  EXPECT_DOUBLE_EQ(d.steps[0].stall_fraction(), 0.3);
  EXPECT_EQ(d.steps[1].data_wait, 10);
  EXPECT_EQ(d.steps[1].fetch, 5);
  EXPECT_EQ(d.steps[1].prep, 0);
  EXPECT_EQ(d.total_wait, 40);
  EXPECT_EQ(d.total_time, 200);
}

TEST(DataStalls, FromPyTorchDataLoaderOperators) {
  TraceMaker m(TraceSource::Kineto);
  m.annotation("ProfilerStep#1", 0, 100, "user_annotation");
  m.annotation("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", 5, 45, "cpu_op");
  m.annotation("ProfilerStep#2", 100, 200, "user_annotation");
  m.annotation("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", 100, 102, "cpu_op");
  const auto d = data_stalls(std::move(m).build());
  EXPECT_EQ(d.source, "DataLoader operators");
  ASSERT_EQ(d.steps.size(), 2u);
  EXPECT_EQ(d.steps[0].data_wait, 40);
  EXPECT_EQ(d.steps[1].data_wait, 2);
}

TEST(TopKernels, ByTotalTimeWithShares) {
  TraceMaker m;
  m.gpu(7, "a", 0, 10, 1);
  m.gpu(7, "b", 10, 40, 2);
  m.gpu(7, "a", 40, 60, 3);
  m.gpu(7, "copy", 60, 100, 4, GpuOpKind::Memcpy); // not a kernel
  const auto k = top_kernels(std::move(m).build(), 1);
  ASSERT_EQ(k.size(), 1u);
  EXPECT_EQ(k[0].name, "a");
  EXPECT_EQ(k[0].count, 2);
  EXPECT_EQ(k[0].total, 30);
  EXPECT_EQ(k[0].min, 10);
  EXPECT_EQ(k[0].max, 20);
  EXPECT_DOUBLE_EQ(k[0].share, 0.5);
}

TEST(Analyzers, EmptyTraceGivesEmptyResults) {
  const Trace t = TraceBuilder().build();
  EXPECT_TRUE(cross_stack_breakdown(t).operations.empty());
  EXPECT_EQ(hta_temporal_breakdown(t).kernel_time, 0);
  EXPECT_TRUE(step_breakdown(t).steps.empty());
  EXPECT_TRUE(gpu_efficiency(t).empty());
  EXPECT_TRUE(top_kernels(t).empty());
  EXPECT_EQ(data_stalls(t).source, "none");
}

} // namespace
} // namespace dreamscope::analyzers
