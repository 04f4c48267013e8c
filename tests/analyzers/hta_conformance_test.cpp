// Every number HTA reports on the traces in ../shared/data (README there), reproduced
// through the importer and the analyzers. Exact, except launch delay where HTA's own tests
// allow ±2 µs.
#include "../common/required_data.h"
#include <dreamscope/analyzers/hta.h>
#include <dreamscope/analyzers/pipeline.h>
#include <dreamscope/analyzers/tensorboard.h>
#include <dreamscope/storage/importers.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <map>

namespace dreamscope::analyzers {
namespace {

namespace fs = std::filesystem;

fs::path data(const std::string& rel) { return fs::path(DREAMSCOPE_SHARED_DATA_DIR) / "kineto-hta" / rel; }

// Each trace is imported once for the whole suite.
const Trace& trace_of(const std::string& rel) {
  static std::map<std::string, Trace> cache;
  auto it = cache.find(rel);
  if (it == cache.end()) it = cache.emplace(rel, load_trace(data(rel))).first;
  return it->second;
}

#define REQUIRE_DATA(rel) DREAMSCOPE_REQUIRE_DATA(data(rel))

const char* const kMtia = "mtia_trace_single_rank/mtia_rank_0.json.gz";
const char* const kNsResolution = "ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz";
const char* const kNccl = "nccl_parser_config/nccl_data.json.gz";

TEST(HtaConformance, MtiaTemporalBreakdown) {
  REQUIRE_DATA(kMtia);
  const auto t = hta_temporal_breakdown(trace_of(kMtia));
  EXPECT_EQ(t.idle, 5649476);
  EXPECT_EQ(t.compute, 7305597);
  EXPECT_EQ(t.non_compute, 372998);
  EXPECT_EQ(t.kernel_time, 13328071);
  EXPECT_DOUBLE_EQ(t.idle_pct, 42.39);
  EXPECT_DOUBLE_EQ(t.compute_pct, 54.81);
  EXPECT_DOUBLE_EQ(t.non_compute_pct, 2.80);
}

TEST(HtaConformance, MtiaKernelBreakdown) {
  REQUIRE_DATA(kMtia);
  const auto k = hta_kernel_breakdown(trace_of(kMtia));
  ASSERT_FALSE(k.by_type.empty());
  EXPECT_EQ(k.by_type[0].kernel_type, "COMPUTATION");
  EXPECT_EQ(k.by_type[0].sum, 7305597);
  auto sum_of = [&](KernelType type, std::string_view name) -> TimeUs {
    for (const auto& s : k.by_name) {
      if (s.type == type && s.name == name) return s.sum;
    }
    return -1;
  };
  EXPECT_EQ(sum_of(KernelType::Computation, "add-dtype_Float"), 77283);
  EXPECT_EQ(sum_of(KernelType::Memory, "dma_request"), 400892);
}

TEST(HtaConformance, MtiaIdleTimeBreakdown) {
  REQUIRE_DATA(kMtia);
  const auto idle = hta_idle_time_breakdown(trace_of(kMtia));
  auto stream = [&](std::int64_t s) {
    return std::find_if(idle.begin(), idle.end(), [&](const auto& x) { return x.stream == s; });
  };
  ASSERT_NE(stream(1), idle.end());
  EXPECT_EQ(stream(1)->host_wait, 417937);
  EXPECT_DOUBLE_EQ(stream(1)->host_wait_ratio, 0.07);
  EXPECT_EQ(stream(1)->other, 5200945);
  EXPECT_DOUBLE_EQ(stream(1)->other_ratio, 0.93);
  EXPECT_NE(stream(102), idle.end());
  EXPECT_TRUE(stream(1)->intervals.empty()); // kept only when asked for
}

// HTA's show_idle_interval_stats on this trace (f4d0062, run on it): stream 1 has 1365
// host_wait, 6899 kernel_wait and 17364 other gaps; each category's gaps add up to its time.
TEST(HtaConformance, MtiaIdleIntervals) {
  REQUIRE_DATA(kMtia);
  HtaOptions options;
  options.idle_intervals = true;
  const auto idle = hta_idle_time_breakdown(trace_of(kMtia), options);
  for (const StreamIdleTime& s : idle) {
    std::array<TimeUs, 3> sum{};
    std::array<std::int64_t, 3> count{};
    for (const IdleInterval& i : s.intervals) {
      sum[static_cast<std::size_t>(i.category)] += i.gap;
      ++count[static_cast<std::size_t>(i.category)];
    }
    EXPECT_EQ(sum[0], s.host_wait) << s.stream;
    EXPECT_EQ(sum[1], s.kernel_wait) << s.stream;
    EXPECT_EQ(sum[2], s.other) << s.stream;
    if (s.stream == 1) {
      EXPECT_EQ(count, (std::array<std::int64_t, 3>{1365, 6899, 17364}));
    }
  }
}

TEST(HtaConformance, MtiaKernelLaunchStats) {
  REQUIRE_DATA(kMtia);
  const auto launches = hta_kernel_launches(trace_of(kMtia));
  auto it = std::find_if(launches.begin(), launches.end(), [](const auto& l) { return l.correlation == 423; });
  ASSERT_NE(it, launches.end());
  EXPECT_EQ(it->cpu_duration, 434);
  EXPECT_EQ(it->gpu_duration, 124);
  EXPECT_NEAR(it->launch_delay, 0, 2);
}

std::map<std::string, std::pair<TimeUs, std::int64_t>> by_name(const std::vector<AnnotationTotal>& v) {
  std::map<std::string, std::pair<TimeUs, std::int64_t>> m;
  for (const auto& a : v) m[a.name] = {a.sum, a.count};
  return m;
}

TEST(HtaConformance, NsResolutionGpuUserAnnotations) {
  REQUIRE_DATA(kNsResolution);
  const auto gpu = by_name(hta_gpu_annotations(trace_of(kNsResolution)));
  EXPECT_EQ(gpu.at("DistributedDataParallel.forward"), std::make_pair(TimeUs{123880}, std::int64_t{4}));
  EXPECT_EQ(gpu.at("Optimizer.step#SGD.step"), std::make_pair(TimeUs{3334}, std::int64_t{3}));
  EXPECT_EQ(gpu.at("## backward ##"), std::make_pair(TimeUs{81}, std::int64_t{3}));
}

TEST(HtaConformance, NsResolutionCpuUserAnnotations) {
  REQUIRE_DATA(kNsResolution);
  const auto cpu = by_name(hta_cpu_annotations(trace_of(kNsResolution)));
  EXPECT_EQ(cpu.size(), 12u);
  auto sum = [&](const std::string& n) { return cpu.count(n) ? cpu.at(n).first : -1; };
  EXPECT_EQ(sum("## backward ##"), 184802);
  EXPECT_EQ(sum("## forward ##"), 107489);
  EXPECT_EQ(sum("## optimizer ##"), 3790);
  EXPECT_EQ(sum("DistributedDataParallel.forward"), 107037);
  EXPECT_EQ(sum("Optimizer.step#SGD.step"), 3668);
  EXPECT_EQ(sum("Optimizer.zero_grad#SGD.zero_grad"), 838);
  EXPECT_EQ(sum("ProfilerStep#101"), 35115);
  EXPECT_EQ(sum("ProfilerStep#102"), 72076);
  EXPECT_EQ(sum("ProfilerStep#103"), 95697);
  EXPECT_EQ(sum("ProfilerStep#104"), 95550);
  EXPECT_EQ(cpu.count("ProfilerStep#105"), 0u); // the last step, left out as HTA does
  EXPECT_EQ(cpu.at("nccl:all_reduce"), std::make_pair(TimeUs{446}, std::int64_t{20}));
  EXPECT_EQ(cpu.at("nccl:broadcast"), std::make_pair(TimeUs{148}, std::int64_t{8}));
}

TEST(HtaConformance, NcclKernelsWithCollectiveMetadata) {
  REQUIRE_DATA(kNccl);
  const Trace& t = trace_of(kNccl);
  const auto& gpu = t.gpu_ops();
  std::vector<GpuOpIndex> nccl;
  for (GpuOpIndex i{0}; i < gpu.size(); ++i) {
    if (t.str(gpu.name[i]).find("ncclKernel") != std::string_view::npos) nccl.push_back(i);
  }
  ASSERT_EQ(nccl.size(), 21u);
  const GpuOpIndex longest = *std::max_element(nccl.begin(), nccl.end(), [&](GpuOpIndex a, GpuOpIndex b) {
    return gpu.end[a] - gpu.start[a] < gpu.end[b] - gpu.start[b];
  });
  EXPECT_EQ(gpu.end[longest] - gpu.start[longest], 5993392); // 5993.392 µs, exact in ns
  EXPECT_EQ(classify_kernel(t.str(gpu.name[longest])), KernelType::Communication);
  EXPECT_EQ(t.arg_text(longest, "Collective name"), "allreduce");
  EXPECT_EQ(t.arg_int(longest, "In msg nelems"), 2049000);
  EXPECT_EQ(t.arg_int(longest, "Out msg nelems"), 2049000);
  // NCCL on its own stream overlaps the compute stream.
  const auto overlap = hta_comm_comp_overlap(t);
  ASSERT_TRUE(overlap.has_value());
  EXPECT_GE(*overlap, 0.0);
  EXPECT_LE(*overlap, 100.0);
}

TEST(HtaConformance, CuptiProfilerCounters) {
  const char* rel = "cupti_profiler/benchmark_result_924719_1679055439_trace.json.gz";
  REQUIRE_DATA(rel);
  const Trace& t = trace_of(rel);
  const auto& ann = t.annotations();
  std::vector<AnnotationIndex> ranges;
  for (AnnotationIndex i{0}; i < ann.size(); ++i) {
    if (t.str(ann.category[i]) == "cuda_profiler_range") ranges.push_back(i);
  }
  ASSERT_EQ(ranges.size(), 77u);
  std::stable_sort(ranges.begin(), ranges.end(),
                   [&](AnnotationIndex a, AnnotationIndex b) { return ann.start[a] < ann.start[b]; });
  EXPECT_EQ(t.arg_int(ranges[5], "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum"), 86114304);
}

TEST(HtaConformance, TritonOperator) {
  const char* dir = "triton_example";
  DREAMSCOPE_REQUIRE_DATA(data(dir));
  const fs::path file = fs::directory_iterator(data(dir))->path();
  const Trace t = load_trace(file);
  const auto& ann = t.annotations();
  std::vector<std::string> triton;
  for (AnnotationIndex i{0}; i < ann.size(); ++i) {
    if (t.str(ann.category[i]) == "cpu_op" && t.arg_text(i, "kernel_backend") == "triton") {
      triton.emplace_back(t.str(ann.name[i]));
    }
  }
  ASSERT_EQ(triton.size(), 1u);
  EXPECT_EQ(triton[0], "triton_poi_fused_add_cos_sin_0");
}

// The other traces: every analysis runs on every variant without failing, and its
// invariants hold (what HTA computes on them is not in the README).
TEST(HtaConformance, EveryVariantAnalyzes) {
  for (const char* rel : {"amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
                          "critical_path/simple_add/benchmark_result_493459_1694039959_trace.json.gz",
                          "critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz",
                          "trace_file_list/inference_rank_1.json.gz",
                          "mtia_inference_trace/mtia_inference_rank_0.json.gz",
                          "trace_compare/base/base.json.gz"}) {
    if (!fs::exists(data(rel))) continue;
    SCOPED_TRACE(rel);
    const Trace& t = trace_of(rel);
    const HtaReport r = hta_analyze(t);
    EXPECT_EQ(r.temporal.idle + r.temporal.compute + r.temporal.non_compute, r.temporal.kernel_time);
    EXPECT_GE(r.temporal.non_compute, 0);
    for (const auto& l : r.launches) EXPECT_GE(l.launch_delay, 0);
    const auto cs = cross_stack_breakdown(t);
    EXPECT_LE(cs.all.total(), t.end_time() - t.begin_time());
    const auto steps = step_breakdown(t);
    for (const auto& s : steps.steps) {
      TimeNs sum = 0;
      for (TimeNs v : s.time) sum += v;
      EXPECT_EQ(sum, s.duration());
    }
  }
}

// The tracer names copies and waits as CUPTI does, not as Kineto does ("memcpy HtoD",

// HTA's get_gpu_kernels_with_user_annotations on this trace (f4d0062, run on the file): 4876
// kernels, copies and memsets in the four kept steps, 1840 of them under
// DistributedDataParallel.forward (118956 µs), 2992 under none; times from the first event.
TEST(HtaConformance, NsResolutionKernelsWithUserAnnotations) {
  REQUIRE_DATA(kNsResolution);
  const Trace& t = trace_of(kNsResolution);
  const AnnotatedKernels k = hta_kernels_with_annotations(t);
  ASSERT_TRUE(k.has_gpu_annotations);
  ASSERT_EQ(k.ts.size(), 4876u);
  std::map<std::string, std::pair<int, TimeUs>> by_annotation;
  for (std::size_t i = 0; i < k.ts.size(); ++i) {
    auto& [count, sum] = by_annotation[k.annotation[i] < 0 ? "" : k.names[static_cast<std::size_t>(k.annotation[i])]];
    ++count;
    sum += k.dur[i];
  }
  EXPECT_EQ(by_annotation[""], std::make_pair(2992, TimeUs{252212}));
  EXPECT_EQ(by_annotation["DistributedDataParallel.forward"], std::make_pair(1840, TimeUs{118956}));
  EXPECT_EQ(by_annotation["Optimizer.step#SGD.step"], std::make_pair(27, TimeUs{3298}));
  EXPECT_EQ(by_annotation["## backward ##"], std::make_pair(17, TimeUs{55}));
  const auto start = hta_trace_start(t);
  ASSERT_TRUE(start);
  EXPECT_EQ(k.ts[0] - *start, 3488);
  EXPECT_EQ(k.iteration[0], 101);
}

// What HTA's straggler analysis reads of the NCCL trace (f4d0062): steps 4 and 5 kept, their
// events spanning 442229 µs, 14 ncclKernel kernels in them.
TEST(HtaConformance, NcclStragglerEvents) {
  REQUIRE_DATA(kNccl);
  const StragglerEvents e = hta_straggler_events(trace_of(kNccl));
  ASSERT_EQ(e.iterations.size(), 2u);
  EXPECT_EQ(e.iterations[0].iteration, 4);
  EXPECT_EQ(e.iterations[1].iteration, 5);
  EXPECT_EQ(e.iterations[1].end - e.iterations[0].start, 442229);
  EXPECT_EQ(e.ts.size(), 14u);
  for (std::size_t i = 0; i < e.ts.size(); ++i) {
    EXPECT_TRUE(e.names[e.name_index[i]].starts_with("ncclKernel"));
    EXPECT_EQ(e.stream[i], 40);
  }
}

// "cudaStreamWaitEvent" where Kineto writes "Memcpy HtoD (Pinned -> Device)", "Stream Wait
// Event"): HTA's kernel types follow what each GPU operation is, as they would on Kineto's
// trace of the same run.
TEST(HtaConformance, TracerCopiesAreMemoryAndWaitsAreNoComputation) {
  const fs::path trace = fs::path(DREAMSCOPE_TEST_DATA_DIR) / "gpu" / "cuda_train.db";
  const Trace t = load_trace(trace);
  const KernelBreakdown k = hta_kernel_breakdown(t);
  std::map<std::string, KernelType> types;
  for (const auto& row : k.by_name) types[row.name] = row.type;
  EXPECT_EQ(types.at("memcpy HtoD"), KernelType::Memory);
  EXPECT_EQ(types.at("memcpy DtoH"), KernelType::Memory);
  EXPECT_EQ(types.at("memset"), KernelType::Memory);
  // A wait is no kernel: HTA's breakdown has no row for it (it had one, as COMPUTATION).
  EXPECT_FALSE(types.count("cudaStreamWaitEvent"));
  std::size_t computation = 0;
  for (const auto& [name, type] : types) computation += type == KernelType::Computation;
  EXPECT_EQ(computation, types.size() - 3) << "the kernels";
}

} // namespace
} // namespace dreamscope::analyzers
