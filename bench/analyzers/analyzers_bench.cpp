// Time of a full `dreamscope analyze` on the MTIA trace (448k events, the largest in
// ../shared/data), split into the import, each analysis and each rendering; and of a job's
// analysis: one rank's summary, the report from 64. The trace is imported once; the analyses
// are pure functions of it.
#include <dreamscope/storage/collectives.h>
#include <dreamscope/storage/importers.h>
#include <dreamscope/analyzers/hta.h>
#include <dreamscope/analyzers/job_analysis.h>
#include <dreamscope/analyzers/pipeline.h>
#include <dreamscope/analyzers/report.h>
#include <dreamscope/analyzers/tensorboard.h>

#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

namespace {

namespace fs = std::filesystem;
using namespace dreamscope;
using namespace dreamscope::analyzers;

const fs::path kMtia = fs::path(DREAMSCOPE_SHARED_DATA_DIR) / "kineto-hta/mtia_trace_single_rank/mtia_rank_0.json.gz";

const Trace& mtia() {
  static const Trace trace = [] {
    if (!fs::exists(kMtia)) {
      std::fprintf(stderr, "analyzers_bench: %s not found\n", kMtia.c_str());
      std::exit(1);
    }
    return load_trace(kMtia);
  }();
  return trace;
}

void count_events(benchmark::State& state) {
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * mtia().event_count()));
  state.counters["events"] = static_cast<double>(mtia().event_count());
}

void BM_Import(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(load_trace(kMtia));
  count_events(state);
}
BENCHMARK(BM_Import)->Unit(benchmark::kMillisecond);

// As `dreamscope analyze` of a job imports each rank: for its summary alone (importers.h,
// ImportDetail::WithoutOperators), the operators no summary reads counted, not kept.
void BM_ImportForRankSummary(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(load_trace(kMtia, nullptr, {}, ImportDetail::WithoutOperators));
  count_events(state);
}
BENCHMARK(BM_ImportForRankSummary)->Unit(benchmark::kMillisecond);

void BM_FullAnalyze(benchmark::State& state) {
  const Trace& t = mtia();
  for (auto _ : state) {
    const AnalysisReport r = analyze_trace(t, "mtia_rank_0.json.gz");
    benchmark::DoNotOptimize(render_text(r));
    benchmark::DoNotOptimize(render_json(r));
    benchmark::DoNotOptimize(render_html(r));
  }
  count_events(state);
}
BENCHMARK(BM_FullAnalyze)->Unit(benchmark::kMillisecond);

void BM_ImportAndAnalyze(benchmark::State& state) {
  for (auto _ : state) {
    const Trace t = load_trace(kMtia);
    benchmark::DoNotOptimize(render_text(analyze_trace(t, "mtia_rank_0.json.gz")));
  }
  count_events(state);
}
BENCHMARK(BM_ImportAndAnalyze)->Unit(benchmark::kMillisecond);

template <typename F>
void analysis(benchmark::State& state, F f) {
  const Trace& t = mtia();
  for (auto _ : state) benchmark::DoNotOptimize(f(t));
  count_events(state);
}
void BM_CrossStack(benchmark::State& s) { analysis(s, [](const Trace& t) { return cross_stack_breakdown(t); }); }
void BM_Hta(benchmark::State& s) { analysis(s, [](const Trace& t) { return hta_analyze(t); }); }
void BM_StepBreakdown(benchmark::State& s) { analysis(s, [](const Trace& t) { return step_breakdown(t); }); }
void BM_GpuEfficiency(benchmark::State& s) { analysis(s, [](const Trace& t) { return gpu_efficiency(t); }); }
void BM_DataStalls(benchmark::State& s) { analysis(s, [](const Trace& t) { return data_stalls(t); }); }
void BM_TopKernels(benchmark::State& s) { analysis(s, [](const Trace& t) { return top_kernels(t); }); }
BENCHMARK(BM_CrossStack)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Hta)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_StepBreakdown)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_GpuEfficiency)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DataStalls)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TopKernels)->Unit(benchmark::kMillisecond);

// A job's analysis per rank (bench/job_analysis.sh runs 64 of them end to end): the rank's
// summary, its parts, and the job report from 64 such summaries.
void BM_RankSummary(benchmark::State& s) {
  analysis(s, [](const Trace& t) { return summarize_rank(t, 0, "mtia_rank_0.json.gz"); });
}
void BM_FindCollectives(benchmark::State& s) { analysis(s, [](const Trace& t) { return find_collectives(t); }); }
BENCHMARK(BM_RankSummary)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FindCollectives)->Unit(benchmark::kMillisecond);

void BM_JobReportOf64Ranks(benchmark::State& state) {
  const RankSummary one = summarize_rank(mtia(), 0, "mtia_rank_0.json.gz");
  std::vector<RankSummary> ranks(64, one);
  for (std::int64_t r = 0; r < 64; ++r) ranks[static_cast<std::size_t>(r)].rank = r;
  for (auto _ : state) {
    const JobReport report = analyze_job(ranks);
    benchmark::DoNotOptimize(render_job_text(report));
    benchmark::DoNotOptimize(render_job_json(report));
  }
}
BENCHMARK(BM_JobReportOf64Ranks)->Unit(benchmark::kMillisecond);

} // namespace

BENCHMARK_MAIN();
