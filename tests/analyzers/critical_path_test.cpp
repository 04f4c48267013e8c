// The critical path of the replayed run: a hand-built launch/sync trace whose path is worked
// out on paper, and real PyTorch traces whose path must tile the replayed run exactly.
#include "../common/required_data.h"
#include "analysis_traces.h"
#include "critical_path/critical_path.h"

#include <dreamscope/storage/importers.h>
#include <dreamscope/analyzers/critical_path.h>
#include <dreamscope/analyzers/report.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <numeric>
#include <string>

namespace dreamscope::analyzers {
namespace {

using test::TraceMaker;
using test::us;

// One thread launching two kernels onto stream 7, then synchronizing, then optimizer code:
//   c1 cudaLaunchKernel [0,2)  -> gemm_a [5,25)   (clear stream: launch latency 5)
//   c2 cudaLaunchKernel [3,4)  -> gemm_b [26,40)  (queued behind gemm_a: 1 µs stream gap)
//   cudaStreamSynchronize [5,42): returns 2 µs after gemm_b ends
//   optimizer [42,50)
// Path, last first: optimizer 8 (cpu) <- sync's 2 µs after the wake-up (cpu) <- sync hop 0
// <- gemm_b 14 (gpu) <- 1 µs gap on the stream <- gemm_a 20 (gpu) <- launch latency 5 <- c1's
// start at the run's begin. cpu 10 + gpu 34 + launch 5 + gap 1 = 50.
Trace launch_and_sync() {
  TraceMaker m;
  m.api("cudaLaunchKernel", us(0), us(2), 1);
  m.gpu(7, "gemm_a", us(5), us(25), 1);
  m.api("cudaLaunchKernel", us(3), us(4), 2);
  m.gpu(7, "gemm_b", us(26), us(40), 2);
  m.api("cudaStreamSynchronize", us(5), us(42), 3);
  m.annotation("optimizer", us(42), us(50));
  return std::move(m).build();
}

TimeNs category(const CriticalPathSummary& s, PathCategory c) { return s.by_category[static_cast<std::size_t>(c)]; }

const CriticalPathPart* part(const CriticalPathSummary& s, PathCategory c) {
  for (const auto& p : s.split) {
    if (p.category == c) return &p;
  }
  return nullptr;
}

// The analysis sums each step's unclipped stretch from running totals; walking every point
// of every step's path is the definition. Both must give the very same report.
void expect_same_summary(const CriticalPathSummary& a, const CriticalPathSummary& b) {
  SCOPED_TRACE(a.name);
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.begin, b.begin);
  EXPECT_EQ(a.end, b.end);
  EXPECT_EQ(a.by_category, b.by_category);
  EXPECT_EQ(a.tasks, b.tasks);
  EXPECT_EQ(a.ends_with, b.ends_with);
  EXPECT_EQ(a.share_of_run, b.share_of_run);
  ASSERT_EQ(a.split.size(), b.split.size());
  for (std::size_t i = 0; i < a.split.size(); ++i) {
    EXPECT_EQ(a.split[i].category, b.split[i].category);
    EXPECT_EQ(a.split[i].resource, b.split[i].resource);
    EXPECT_EQ(a.split[i].time, b.split[i].time);
    EXPECT_EQ(a.split[i].hops, b.split[i].hops);
    EXPECT_EQ(a.split[i].share, b.split[i].share);
  }
  ASSERT_EQ(a.operations.size(), b.operations.size());
  for (std::size_t i = 0; i < a.operations.size(); ++i) {
    EXPECT_EQ(a.operations[i].name, b.operations[i].name);
    EXPECT_EQ(a.operations[i].kind, b.operations[i].kind);
    EXPECT_EQ(a.operations[i].count, b.operations[i].count);
    EXPECT_EQ(a.operations[i].time, b.operations[i].time);
    EXPECT_EQ(a.operations[i].share, b.operations[i].share);
  }
}

constexpr std::size_t kAllSteps = static_cast<std::size_t>(-1);

void expect_steps_summed_as_walked(const Trace& t, std::size_t top_operations = 20) {
  const CriticalPathReport summed =
      detail::critical_path_analysis(t, top_operations, kAllSteps, detail::StepPaths::SumStretches);
  const CriticalPathReport walked =
      detail::critical_path_analysis(t, top_operations, kAllSteps, detail::StepPaths::WalkEveryPoint);
  expect_same_summary(summed.run, walked.run);
  ASSERT_EQ(summed.steps.size(), walked.steps.size());
  for (std::size_t i = 0; i < summed.steps.size(); ++i) expect_same_summary(summed.steps[i], walked.steps[i]);
}

// A training thread whose `step` ranges overlap (issue 38: N of them a nanosecond apart made
// the analysis walk N points for each), around launches, kernels, copies and syncs drawn at
// random, some kernels starting before their launch call (a skewed clock: a path that runs
// forward in time, which only a walk may bill) and a worker thread's ranges.
Trace tangled_steps(int steps, bool nested) {
  TraceMaker m;
  std::uint64_t seed = 38;
  auto draw = [&](std::uint64_t bound) {
    seed = seed * 6364136223846793005u + 1442695040888963407u;
    return static_cast<TimeNs>((seed >> 33) % bound);
  };
  const TimeNs span = us(40 + 3 * steps);
  for (int i = 0; i < steps; ++i) {
    const TimeNs start = nested ? us(i) : us(3 * i) + draw(2000);
    const TimeNs end = nested ? span + us(2 * steps - 2 * i) : start + us(40) + draw(us(60));
    m.annotation("step", start, end, "step", i);
  }
  TimeNs cpu = 0, gpu = 0;
  std::int64_t correlation = 1;
  while (cpu < span) {
    cpu += us(1) + draw(us(4));
    const TimeNs call_end = cpu + us(1) + draw(us(2));
    switch (draw(6)) {
      case 0: {
        m.api("cudaStreamSynchronize", cpu, std::max(call_end, gpu + us(1)), correlation++);
        cpu = std::max(call_end, gpu + us(1));
        continue;
      }
      case 1: m.annotation("forward", cpu, call_end); break;
      default: break;
    }
    m.api("cudaLaunchKernel", cpu, call_end, correlation);
    const TimeNs kernel_start = draw(10) == 0 ? cpu - us(1) : std::max(gpu, cpu) + draw(us(3));
    gpu = std::max(gpu, kernel_start) + us(1) + draw(us(8));
    m.gpu(7, draw(3) == 0 ? "gemm" : "relu", std::max(kernel_start, gpu - us(20)), gpu, correlation++,
          draw(8) == 0 ? GpuOpKind::Memcpy : GpuOpKind::Kernel);
    cpu = call_end;
  }
  const TrackId worker = m.worker(2);
  for (TimeNs t = 0; t < span; t += us(7)) m.annotation("prep", t, t + us(5), "prep", t, worker);
  return std::move(m).build();
}

TEST(CriticalPath, OverlappingStepsSumTheirPathsAsWalkingThemDoes) {
  const Trace t = tangled_steps(150, false);
  expect_steps_summed_as_walked(t);
  expect_steps_summed_as_walked(t, 1);
  const CriticalPathReport c = critical_path_analysis(t);
  ASSERT_EQ(c.steps.size(), 150u);
  for (const auto& s : c.steps) {
    const TimeNs sum = std::accumulate(s.by_category.begin(), s.by_category.end(), TimeNs{0});
    EXPECT_EQ(sum, s.length()) << s.name;
  }
}

TEST(CriticalPath, NestedStepsSumTheirPathsAsWalkingThemDoes) {
  expect_steps_summed_as_walked(tangled_steps(120, true));
}

TEST(CriticalPath, LaunchesAndASyncSplitExactly) {
  const Trace t = launch_and_sync();
  const CriticalPathReport c = critical_path_analysis(t);
  ASSERT_TRUE(c.available) << c.note;
  EXPECT_EQ(c.measured_span, us(50));
  EXPECT_EQ(c.replayed_span, us(50));
  const CriticalPathSummary& run = c.run;
  EXPECT_EQ(run.length(), us(50));
  EXPECT_EQ(run.ends_with, "optimizer on thread 1 MainThread");
  EXPECT_EQ(category(run, PathCategory::CpuWork), us(10));
  EXPECT_EQ(category(run, PathCategory::GpuWork), us(34));
  EXPECT_EQ(category(run, PathCategory::LaunchLatency), us(5));
  EXPECT_EQ(category(run, PathCategory::Gap), us(1));
  EXPECT_EQ(category(run, PathCategory::SyncWait), 0);
  EXPECT_EQ(category(run, PathCategory::DataFlowWait), 0);

  // The sync is crossed once even though it adds no time; the GPU work is on stream 7.
  const CriticalPathPart* sync = part(run, PathCategory::SyncWait);
  ASSERT_NE(sync, nullptr);
  EXPECT_EQ(sync->hops, 1);
  const CriticalPathPart* gpu = part(run, PathCategory::GpuWork);
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ(gpu->resource, "GPU 0 stream 7");
  EXPECT_EQ(gpu->time, us(34));
  EXPECT_DOUBLE_EQ(gpu->share, 34.0 / 50.0);
  const CriticalPathPart* gap = part(run, PathCategory::Gap);
  ASSERT_NE(gap, nullptr);
  EXPECT_EQ(gap->resource, "GPU 0 stream 7");

  // By own time on the path; the launch calls are reached at their start and add nothing.
  ASSERT_EQ(run.operations.size(), 4u);
  EXPECT_EQ(run.operations[0].name, "gemm_a");
  EXPECT_EQ(run.operations[0].kind, "kernel");
  EXPECT_EQ(run.operations[0].time, us(20));
  EXPECT_EQ(run.operations[1].name, "gemm_b");
  EXPECT_EQ(run.operations[1].time, us(14));
  EXPECT_EQ(run.operations[2].name, "optimizer");
  EXPECT_EQ(run.operations[2].time, us(8));
  EXPECT_EQ(run.operations[3].name, "cudaStreamSynchronize");
  EXPECT_EQ(run.operations[3].time, us(2));
  EXPECT_TRUE(c.steps.empty());
}

// Two steps; the second's path starts at its own start and reaches back no further.
TEST(CriticalPath, PerStepPathsTileTheirSteps) {
  TraceMaker m;
  m.annotation("step", us(0), us(50), "step", 1);
  m.api("cudaLaunchKernel", us(0), us(2), 1);
  m.gpu(7, "gemm_a", us(5), us(25), 1);
  m.api("cudaStreamSynchronize", us(3), us(27), 2);
  m.annotation("step", us(50), us(80), "step", 2);
  m.api("cudaLaunchKernel", us(50), us(52), 3);
  m.gpu(7, "gemm_b", us(55), us(75), 3);
  m.api("cudaStreamSynchronize", us(53), us(77), 4);
  const Trace t = std::move(m).build();
  const CriticalPathReport c = critical_path_analysis(t);
  expect_steps_summed_as_walked(t);
  ASSERT_EQ(c.steps.size(), 2u);
  for (const auto& s : c.steps) {
    const TimeNs sum = std::accumulate(s.by_category.begin(), s.by_category.end(), TimeNs{0});
    EXPECT_EQ(sum, s.length()) << s.name;
  }
  const CriticalPathSummary& second = c.steps[1];
  EXPECT_EQ(second.name, "step 2");
  EXPECT_EQ(second.length(), us(30));
  EXPECT_EQ(category(second, PathCategory::GpuWork), us(20));
  EXPECT_EQ(category(second, PathCategory::LaunchLatency), us(5));
  ASSERT_FALSE(second.operations.empty());
  EXPECT_EQ(second.operations.front().name, "gemm_b");
  EXPECT_DOUBLE_EQ(second.share_of_run, 30.0 / 80.0);
}

TEST(CriticalPath, EmptyTraceSaysWhy) {
  TraceMaker m;
  const Trace t = std::move(m).build();
  const CriticalPathReport c = critical_path_analysis(t);
  EXPECT_FALSE(c.available);
  EXPECT_FALSE(c.note.empty());
}

// On real PyTorch-profiler traces the path's stretches add up to the replayed run's length.
class CriticalPathOnKineto : public ::testing::TestWithParam<const char*> {};

TEST_P(CriticalPathOnKineto, PathTotalIsTheReplayedRun) {
  const std::filesystem::path file = std::filesystem::path(DREAMSCOPE_SHARED_DATA_DIR) / "kineto-hta" / GetParam();
  DREAMSCOPE_REQUIRE_DATA(file);
  const Trace t = load_trace(file);
  const CriticalPathReport c = critical_path_analysis(t);
  ASSERT_TRUE(c.available) << c.note;
  EXPECT_EQ(c.unscheduled, 0u);
  EXPECT_GT(c.replayed_span, 0);
  EXPECT_EQ(c.run.length(), c.replayed_span);
  const TimeNs sum = std::accumulate(c.run.by_category.begin(), c.run.by_category.end(), TimeNs{0});
  EXPECT_EQ(sum, c.replayed_span);
  TimeNs split_sum = 0;
  for (const auto& p : c.run.split) split_sum += p.time;
  EXPECT_EQ(split_sum, c.replayed_span);
  EXPECT_GT(category(c.run, PathCategory::GpuWork) + category(c.run, PathCategory::CpuWork), 0);
  EXPECT_GT(c.run.tasks, 1u);
  ASSERT_EQ(c.step_lengths.size(), c.steps.size());
  for (std::size_t i = 0; i < c.steps.size(); ++i) {
    const CriticalPathSummary& s = c.steps[i];
    const TimeNs step_sum = std::accumulate(s.by_category.begin(), s.by_category.end(), TimeNs{0});
    EXPECT_EQ(step_sum, s.length()) << s.name;
    EXPECT_LE(s.length(), c.replayed_span);
    EXPECT_EQ(s.index, i);
    EXPECT_EQ(c.step_lengths[i], s.length()) << s.name;
  }
  expect_steps_summed_as_walked(t);
}

INSTANTIATE_TEST_SUITE_P(Traces, CriticalPathOnKineto,
                         ::testing::Values("critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz",
                                           "ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"));

// With a step limit only the steps a report lists are walked (issue 38: 10^5 steps' summaries
// held 60 MB for a report that lists 1000); those are as the full analysis has them.
TEST_P(CriticalPathOnKineto, AStepLimitSummarizesTheListedStepsAsTheFullAnalysisDoes) {
  const std::filesystem::path file = std::filesystem::path(DREAMSCOPE_SHARED_DATA_DIR) / "kineto-hta" / GetParam();
  if (!std::filesystem::exists(file)) GTEST_SKIP() << "shared test data not found at " << file;
  const Trace t = load_trace(file);
  const CriticalPathReport all = critical_path_analysis(t, 5);
  const CriticalPathReport some = critical_path_analysis(t, 5, 2);
  EXPECT_EQ(some.step_lengths, all.step_lengths);
  const std::vector<std::size_t> listed = listed_steps(all.step_lengths, 2);
  ASSERT_EQ(some.steps.size(), listed.size());
  for (std::size_t k = 0; k < listed.size(); ++k) {
    const CriticalPathSummary& a = all.steps[listed[k]];
    const CriticalPathSummary& b = some.steps[k];
    EXPECT_EQ(b.index, listed[k]);
    EXPECT_EQ(b.name, a.name);
    EXPECT_EQ(b.begin, a.begin);
    EXPECT_EQ(b.end, a.end);
    EXPECT_EQ(b.by_category, a.by_category);
    EXPECT_EQ(b.tasks, a.tasks);
    EXPECT_EQ(b.ends_with, a.ends_with);
    EXPECT_EQ(b.share_of_run, a.share_of_run);
    ASSERT_EQ(b.operations.size(), a.operations.size());
    for (std::size_t o = 0; o < a.operations.size(); ++o) EXPECT_EQ(b.operations[o].name, a.operations[o].name);
  }
  EXPECT_EQ(some.run.by_category, all.run.by_category);
}

TEST(CriticalPath, AStepLimitWalksTheFirstTheSlowestAndTheMedianSteps) {
  TraceMaker m;
  TimeNs at = 0;
  for (int i = 0; i < 60; ++i) {
    const TimeNs length = i == 40 ? us(90) : us(10 + i % 3);
    m.annotation("ProfilerStep#" + std::to_string(i), at, at + length, "user_annotation");
    m.annotation("aten::mm", at + us(1), at + us(6), "cpu_op");
    at += length;
  }
  const Trace t = std::move(m).build();
  const CriticalPathReport c = critical_path_analysis(t, 3, 6);
  ASSERT_EQ(c.step_lengths.size(), 60u);
  EXPECT_EQ(c.step_lengths[40], us(90));
  ASSERT_EQ(c.steps.size(), 6u);
  std::vector<std::size_t> walked;
  for (const auto& s : c.steps) {
    walked.push_back(s.index);
    EXPECT_EQ(s.name, "ProfilerStep#" + std::to_string(s.index));
    EXPECT_EQ(s.length(), c.step_lengths[s.index]);
  }
  EXPECT_EQ(walked, listed_steps(c.step_lengths, 6));
  EXPECT_NE(std::find(walked.begin(), walked.end(), 40u), walked.end());
}

TEST(CriticalPathReport, RenderedInEveryFormat) {
  const Trace t = launch_and_sync();
  ReportOptions o;
  o.sections = {ReportSection::CriticalPath};
  const AnalysisReport r = analyze_trace(t, "sync.db", o);
  ASSERT_TRUE(r.critical_path);
  EXPECT_FALSE(r.top_kernels);

  const auto j = nlohmann::json::parse(render_json(r));
  const auto& cp = j["critical_path"];
  EXPECT_EQ(cp["replayed_span_ns"], us(50));
  EXPECT_EQ(cp["run"]["length_ns"], us(50));
  EXPECT_EQ(cp["run"]["by_category_ns"]["gpu work"], us(34));
  EXPECT_EQ(cp["run"]["by_category_ns"]["launch latency"], us(5));
  EXPECT_EQ(cp["run"]["operations"][0]["name"], "gemm_a");
  EXPECT_FALSE(j.contains("top_kernels"));

  const std::string text = render_text(r);
  EXPECT_NE(text.find("== Critical path (replay simulator) =="), std::string::npos);
  EXPECT_NE(text.find("gpu work on GPU 0 stream 7"), std::string::npos);
  EXPECT_NE(text.find("34.000 us"), std::string::npos);

  const std::string md = render_markdown(r);
  EXPECT_NE(md.find("## Critical path (replay simulator)"), std::string::npos);
  EXPECT_NE(md.find("| launch latency |"), std::string::npos);

  const std::string html = render_html(r);
  EXPECT_NE(html.find("id=\"chart-critical-path\""), std::string::npos);
  EXPECT_NE(html.find("aria-label=\"Critical path by what bound it\""), std::string::npos);
  EXPECT_NE(html.find("id=\"critical-path\""), std::string::npos);
}

} // namespace
} // namespace dreamscope::analyzers
