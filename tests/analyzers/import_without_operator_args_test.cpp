// `dreamscope analyze` of a job imports each PyTorch trace for its rank summary alone, and
// `analyze --only` of analyses that read no operator's args imports the trace without them
// (ImportDetail::WithoutOperatorArgs: CPU operators' args skipped, but collectives'), or,
// where they read no operator at all, without the operators either
// (ImportDetail::WithoutOperators: counted, not kept, but steps, DataLoader iterations and
// collectives). The summary and those analyses must be what a full import gives, for every
// Kineto trace we have: the real ones of ../shared/data (PyTorch 1.8 to 2.x, ROCm, MTIA, the
// 8-rank NCCL job, the hostile inputs) and the hand-written fixtures. An analysis that came
// to read what an import skipped, without report.h's reads_operator_args or reads_operators
// saying so, fails here.
#include "../common/required_data.h"
#include "dreamscope/storage/collectives.h"
#include "dreamscope/storage/importers.h"
#include "dreamscope/analyzers/job_analysis.h"
#include "dreamscope/analyzers/report.h"
#include "dreamscope/storage/trace_summary.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

namespace dreamscope {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> kineto_traces() {
  std::vector<fs::path> out;
  for (const fs::path& root : {fs::path(DREAMSCOPE_SHARED_DATA_DIR), fs::path(DREAMSCOPE_TEST_DATA_DIR) / "importers"}) {
    if (!fs::exists(root)) continue;
    for (const auto& e : fs::recursive_directory_iterator(root)) {
      if (!e.is_regular_file() || e.file_size() == 0) continue;
      if (detect_trace_format(e.path()) == TraceFormat::KinetoJson) out.push_back(e.path());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The job report of the file as one rank, the report of the analyses of one trace that
// `reads` says read nothing the import skips, and what an import that kept nothing would
// say; or the error its import gave. `summarized`, where given, adds the events the import
// counted without keeping.
std::string reports_of(const fs::path& path, ImportDetail detail, bool (*reads)(analyzers::ReportSection),
                       std::size_t* summarized = nullptr) {
  try {
    const Trace t = load_trace(path, nullptr, {}, detail);
    if (summarized) *summarized += static_cast<std::size_t>(summarized_event_count(t));
    analyzers::ReportOptions options;
    options.sections.clear();
    for (const analyzers::ReportSection s : analyzers::kAllSections) {
      if (!reads(s)) options.sections.push_back(s);
    }
    return analyzers::render_job_json(analyzers::analyze_job({analyzers::summarize_rank(t, 0, path.filename().string())})) +
           analyzers::render_json(analyzers::analyze_trace(t, path.filename().string(), options)) + "\n" +
           empty_import_problem(t);
  } catch (const TraceError& e) {
    return std::string("error: ") + e.what();
  }
}

// Every Kineto trace imported in full and with `detail` gives the same reports.
void expect_reports_of_a_full_import(ImportDetail detail, bool (*reads)(analyzers::ReportSection),
                                     std::size_t* summarized = nullptr) {
  const std::vector<fs::path> traces = kineto_traces();
  DREAMSCOPE_REQUIRE_DATA(DREAMSCOPE_SHARED_DATA_DIR);
  ASSERT_GE(traces.size(), 40u) << "the Kineto traces of shared/data and tests/data are not where they were";
  for (const fs::path& path : traces) {
    SCOPED_TRACE(path.string());
    EXPECT_EQ(reports_of(path, ImportDetail::Full, reads), reports_of(path, detail, reads, summarized));
  }
}

TEST(ImportWithoutOperatorArgs, EveryKinetoTraceGivesTheSummaryAndAnalysesOfAFullImport) {
  expect_reports_of_a_full_import(ImportDetail::WithoutOperatorArgs, analyzers::reads_operator_args);
}

// `dreamscope analyze` of a job's files imports each for its rank summary alone, and
// `analyze --only` of analyses that read no operator (hta, data-stalls, top-kernels) the
// trace the same way (ImportDetail::WithoutOperators): operators and Python functions
// other than steps, DataLoader iterations and collectives are counted, not kept.
TEST(ImportWithoutOperators, EveryKinetoTraceGivesTheJobReportAndAnalysesOfAFullImport) {
  std::size_t summarized = 0;
  expect_reports_of_a_full_import(ImportDetail::WithoutOperators, analyzers::reads_operators, &summarized);
  if (!IsSkipped()) {
    EXPECT_GT(summarized, 100'000u) << "the imports without operators kept every operator";
  }
}

TEST(ImportWithoutOperators, KeepsStepsDataLoaderRangesCollectivesAndAnnotationsAndCountsTheRest) {
  const fs::path file = fs::path(DREAMSCOPE_SHARED_DATA_DIR) / "wild" / "param-dlrm-v100x8-nccl" /
                        "worker0_step_12.1694128201545.pt.trace.json";
  DREAMSCOPE_REQUIRE_DATA(file);
  const Trace full = load_trace(file);
  const Trace without = load_trace(file, nullptr, {}, ImportDetail::WithoutOperators);
  EXPECT_EQ(summarized_event_count(full), 0);
  EXPECT_GT(summarized_event_count(without), 0);
  EXPECT_EQ(full.event_count(), without.event_count() + static_cast<std::size_t>(summarized_event_count(without)));
  EXPECT_EQ(full.begin_time(), without.begin_time());
  EXPECT_EQ(full.end_time(), without.end_time());
  EXPECT_EQ(full.tracks().size(), without.tracks().size());
  EXPECT_EQ(full.gpu_ops().size(), without.gpu_ops().size());
  EXPECT_EQ(full.cuda_api().size(), without.cuda_api().size());
  auto kept_ranges = [](const Trace& t) {
    std::size_t n = 0;
    for (AnnotationIndex i{0}; i < t.annotations().size(); ++i) {
      if (t.tracks()[t.annotations().track[i]].kind == TrackKind::CpuThread &&
          kept_without_operators(t.str(t.annotations().category[i]), t.str(t.annotations().name[i]))) {
        ++n;
      }
    }
    return n;
  };
  EXPECT_GT(kept_ranges(full), 0u);
  EXPECT_EQ(kept_ranges(without), kept_ranges(full));
  // Every CPU range kept is one that kept_without_operators keeps.
  std::size_t cpu_ranges = 0;
  for (AnnotationIndex i{0}; i < without.annotations().size(); ++i) {
    cpu_ranges += without.tracks()[without.annotations().track[i]].kind == TrackKind::CpuThread;
  }
  EXPECT_EQ(cpu_ranges, kept_ranges(without));
}

TEST(ImportWithoutOperatorArgs, KeepsEveryEventAndTheArgsOfCollectivesAndGpuWork) {
  // A rank of the 8-rank NCCL job: record_param_comms and nccl:* ranges with their args, and
  // kernels with theirs; other operators without.
  const fs::path file = fs::path(DREAMSCOPE_SHARED_DATA_DIR) / "wild" / "param-dlrm-v100x8-nccl" /
                        "worker0_step_12.1694128201545.pt.trace.json";
  DREAMSCOPE_REQUIRE_DATA(file);
  const Trace full = load_trace(file);
  const Trace summary = load_trace(file, nullptr, {}, ImportDetail::WithoutOperatorArgs);
  EXPECT_EQ(full.event_count(), summary.event_count());
  auto args_of = [](const Trace& t, EventTable table, auto keep) {
    std::size_t n = 0;
    const std::size_t rows = table == EventTable::GpuOp ? t.gpu_ops().size() : t.annotations().size();
    for (std::uint32_t i = 0; i < rows; ++i) {
      if (keep(t, i)) n += t.args_of(EventRow{table, i}).size();
    }
    return n;
  };
  auto collective = [](const Trace& t, std::uint32_t i) {
    return collective_args_read(t.str(t.annotations().name[i]));
  };
  auto other = [&](const Trace& t, std::uint32_t i) {
    return !collective(t, i) && t.tracks()[t.annotations().track[i]].kind == TrackKind::CpuThread;
  };
  auto every = [](const Trace&, std::uint32_t) { return true; };
  EXPECT_GT(args_of(full, EventTable::Annotation, collective), 0u);
  EXPECT_EQ(args_of(summary, EventTable::Annotation, collective), args_of(full, EventTable::Annotation, collective));
  EXPECT_EQ(args_of(summary, EventTable::GpuOp, every), args_of(full, EventTable::GpuOp, every));
  EXPECT_GT(args_of(full, EventTable::Annotation, other), 0u);
  EXPECT_EQ(args_of(summary, EventTable::Annotation, other), 0u);
}

} // namespace
} // namespace dreamscope
