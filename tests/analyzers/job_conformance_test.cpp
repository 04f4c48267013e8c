// HTA's per-rank numbers on the 8-rank DLRM job (../shared/data/wild/README.md), through the
// job report: the ranks' files summarised one at a time, and the same ranks cut out of the
// job merged into one trace. Exact, rank by rank.
#include "../common/required_data.h"
#include <dreamscope/storage/importers.h>
#include <dreamscope/storage/job.h>
#include <dreamscope/analyzers/hta.h>
#include <dreamscope/analyzers/job_analysis.h>

#include <gtest/gtest.h>

#include <cmath>
#include <mutex>

namespace dreamscope::analyzers {
namespace {

namespace fs = std::filesystem;

const fs::path kDlrm = fs::path(DREAMSCOPE_SHARED_DATA_DIR) / "wild" / "param-dlrm-v100x8-nccl";

struct HtaRow {
  TimeUs idle, compute, non_compute, kernel_time;
  double overlap_pct;
};

// HTA (facebookresearch/HolisticTraceAnalysis @ f4d0062) on the folder as one job.
const HtaRow kReadme[8] = {
    {6419, 1034, 5556, 13009, 4.50}, {6428, 1246, 11075, 18749, 2.47}, {7046, 1068, 3236, 11350, 7.88},
    {8145, 1240, 9468, 18853, 3.31}, {8887, 1126, 6576, 16589, 0.56},  {9121, 1041, 6230, 16392, 0.64},
    {7051, 1051, 3308, 11410, 7.56}, {8308, 1059, 1600, 10967, 9.51},
};

void expect_readme(const JobReport& r) {
  ASSERT_EQ(r.ranks.size(), 8u);
  for (std::size_t i = 0; i < 8; ++i) {
    const RankSummary& s = r.ranks[i];
    SCOPED_TRACE("rank " + std::to_string(i));
    EXPECT_EQ(s.rank, static_cast<std::int64_t>(i));
    EXPECT_EQ(s.hta.temporal.idle, kReadme[i].idle);
    EXPECT_EQ(s.hta.temporal.compute, kReadme[i].compute);
    EXPECT_EQ(s.hta.temporal.non_compute, kReadme[i].non_compute);
    EXPECT_EQ(s.hta.temporal.kernel_time, kReadme[i].kernel_time);
    ASSERT_TRUE(s.hta.comm_comp_overlap_pct);
    EXPECT_EQ(std::round(*s.hta.comm_comp_overlap_pct * 100) / 100, kReadme[i].overlap_pct);
  }
}

std::vector<RankSummary> summaries_by_file() {
  std::mutex m;
  std::vector<RankSummary> out;
  for_each_rank(job_files({kDlrm.string()}), JobLoadOptions{.threads = 2},
                [&](std::int64_t rank, Trace&& t, const std::filesystem::path&) {
                  RankSummary s = summarize_rank(t, rank, "worker" + std::to_string(rank));
                  std::lock_guard lock(m);
                  out.push_back(std::move(s));
                });
  return out;
}

TEST(JobConformance, DlrmPerRankHtaNumbersFromEachRanksFile) {
  DREAMSCOPE_REQUIRE_DATA(kDlrm);
  const JobReport r = analyze_job(summaries_by_file());
  expect_readme(r);
  // The rank's own report says the same: the summary adds nothing and loses nothing.
  const auto files = job_files({kDlrm.string()});
  const HtaReport alone = hta_analyze(load_trace(files[1]));
  EXPECT_EQ(r.ranks[1].hta.launches.count, alone.launch_summary.count);
  EXPECT_EQ(r.ranks[1].hta.launches.max_launch_delay, alone.launch_summary.max_launch_delay);
  ASSERT_EQ(r.ranks[1].hta.idle_time.size(), alone.idle_time.size());
  for (std::size_t i = 0; i < alone.idle_time.size(); ++i) {
    EXPECT_EQ(r.ranks[1].hta.idle_time[i].host_wait, alone.idle_time[i].host_wait);
    EXPECT_EQ(r.ranks[1].hta.idle_time[i].kernel_wait, alone.idle_time[i].kernel_wait);
  }
  // HTA's multi-rank kernel-type breakdown: each type summed over the ranks.
  TimeUs communication = 0;
  for (const RankSummary& s : r.ranks) {
    for (const auto& k : s.hta.kernel_types) {
      if (k.kernel_type == "COMMUNICATION") communication += k.sum;
    }
  }
  ASSERT_FALSE(r.kernel_types.empty());
  EXPECT_EQ(r.kernel_types[0].kernel_type, "COMMUNICATION");
  EXPECT_EQ(r.kernel_types[0].sum, communication);

  // The job's collectives: DLRM's 5 all-to-alls and 3 all-reduces, every rank in each.
  EXPECT_EQ(r.instances, 8u);
  EXPECT_EQ(r.calls, 64u);
  EXPECT_EQ(r.unmatched_calls, 0u);
  ASSERT_EQ(r.steps.size(), 1u);
  EXPECT_EQ(r.steps[0].name, "ProfilerStep#10");
  EXPECT_EQ(r.steps[0].ranks.size(), 8u);
  TimeNs waits = 0;
  for (const auto& c : r.collective_ranks) {
    EXPECT_EQ(c.calls, 8);
    EXPECT_EQ(c.in_collectives, c.wait + c.transfer);
    waits += c.wait;
  }
  EXPECT_EQ(waits, r.steps[0].job_wait);
}

TEST(JobConformance, DlrmPerRankHtaNumbersFromTheJobMergedIntoOneTrace) {
  DREAMSCOPE_REQUIRE_DATA(kDlrm);
  const Trace job = load_job(job_files({kDlrm.string()})).trace;
  std::vector<RankSummary> summaries;
  for (const JobRank& r : job_ranks(job))
    summaries.push_back(summarize_rank(rank_subtrace(job, r.rank), r.rank, "job"));
  const JobReport merged = analyze_job(std::move(summaries));
  expect_readme(merged);
  // The same report as from the files, to the nanosecond.
  const JobReport by_file = analyze_job(summaries_by_file());
  EXPECT_EQ(render_job_text(merged), render_job_text(by_file));
}

} // namespace
} // namespace dreamscope::analyzers
