// The job report across ranks on hand-built jobs whose waits are known exactly: the split of
// each rank's steps, the collective wait against transfer, and each step's straggler with its
// cause (a rank with longer compute, one with a longer data wait, a chain where one rank
// waits for another); clocks of another host; the summary file and its refusals.
#include "job_traces.h"
#include "../common/scratch_dir.h"

#include <dreamscope/analyzers/job_analysis.h>
#include <dreamscope/analyzers/pipeline.h>
#include <dreamscope/storage/trace_file.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include <fstream>

namespace dreamscope {
namespace {

using analyzers::RankSummary;
using analyzers::StragglerCause;
using test::collective;
using test::compute;
using test::data_wait;

constexpr TimeNs us(std::int64_t v) { return v * 1000; }

std::vector<RankSummary> summaries_of(const std::vector<Trace>& traces) {
  std::vector<RankSummary> out;
  for (std::size_t r = 0; r < traces.size(); ++r) {
    out.push_back(analyzers::summarize_rank(traces[r], static_cast<std::int64_t>(r), "rank" + std::to_string(r)));
  }
  return out;
}

analyzers::JobReport job_of(const std::vector<Trace>& traces) { return analyzers::analyze_job(summaries_of(traces)); }

// Four ranks, three steps of: data wait 10 us, compute 100 us, an all-reduce of 20 us. In step
// 1, rank `slow` computes `extra_compute` longer or waits `extra_data` longer for its batch.
std::vector<Trace> balanced_job(std::int64_t slow, TimeNs extra_compute, TimeNs extra_data,
                                const test::JobTraceOptions& options = {}) {
  return test::simulate_job(
      4, 3,
      [=](std::int64_t rank, std::int64_t step) {
        const bool late = rank == slow && step == 1;
        return std::vector<test::JobAction>{data_wait(us(10) + (late ? extra_data : 0)),
                                            compute(us(100) + (late ? extra_compute : 0)), collective(us(20))};
      },
      options);
}

const analyzers::RankStepSplit& split_of(const analyzers::StepStraggler& s, std::int64_t rank) {
  for (const auto& r : s.ranks) {
    if (r.rank == rank) return r;
  }
  throw std::runtime_error("no rank " + std::to_string(rank) + " in step " + s.name);
}

TEST(JobAnalysis, ASummaryHoldsTheRanksStepsWaitsAndCollectives) {
  const auto traces = balanced_job(2, us(50), 0);
  const RankSummary s = analyzers::summarize_rank(traces[2], 2, "rank2.db");
  EXPECT_EQ(s.rank, 2);
  EXPECT_EQ(s.world_size, 4);
  EXPECT_EQ(s.local_rank, 2);
  EXPECT_EQ(s.host, "node-a");
  ASSERT_EQ(s.steps.size(), 3u);
  EXPECT_EQ(s.steps[1].number, 1);
  EXPECT_EQ(s.steps[1].name, "step 1");
  EXPECT_EQ(s.steps[1].data_wait, us(10));
  EXPECT_EQ(s.steps[1].end - s.steps[1].start, us(10 + 150 + 20));
  ASSERT_EQ(s.data_waits.size(), 3u);
  // The per-step data wait is data_stalls' own.
  const analyzers::DataStalls d = analyzers::data_stalls(traces[2]);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(s.steps[i].data_wait, d.steps[i].data_wait);
  ASSERT_EQ(s.collectives.size(), 3u);
  EXPECT_EQ(s.collectives[1].op, "all_reduce");
  EXPECT_EQ(s.collectives[1].communicator, "0");
  EXPECT_EQ(s.collectives[1].sequence, 1);
  EXPECT_EQ(s.collectives[1].step, 1);
}

TEST(JobAnalysis, ARankWithLongerComputeIsTheStragglerBecauseOfItsCompute) {
  const auto r = job_of(balanced_job(2, us(50), 0));
  ASSERT_EQ(r.steps.size(), 3u);
  EXPECT_EQ(r.steps[0].straggler, kNoValue); // every rank arrived at once
  EXPECT_EQ(r.steps[2].straggler, kNoValue);
  const auto& s = r.steps[1];
  EXPECT_EQ(s.straggler, 2);
  EXPECT_EQ(s.caused_wait, 3 * us(50)); // three ranks waited 50 us each
  EXPECT_EQ(s.late_arrivals, 1);
  EXPECT_EQ(s.late_by, us(50));
  ASSERT_TRUE(s.cause);
  EXPECT_EQ(*s.cause, StragglerCause::Compute);
  EXPECT_EQ(s.excess_compute, us(50));
  EXPECT_EQ(s.excess_input, 0);
  EXPECT_EQ(s.excess_held, 0);
  EXPECT_EQ(s.job_wait, 3 * us(50));

  // Rank 0's step 1: its batch, its compute, 50 us waiting for rank 2, the transfer.
  const auto& r0 = split_of(s, 0);
  EXPECT_EQ(r0.duration, us(10 + 100 + 50 + 20));
  EXPECT_EQ(r0.data_wait, us(10));
  EXPECT_EQ(r0.own_work, us(100));
  EXPECT_EQ(r0.collective_wait, us(50));
  EXPECT_EQ(r0.transfer, us(20));
  const auto& r2 = split_of(s, 2);
  EXPECT_EQ(r2.own_work, us(150));
  EXPECT_EQ(r2.collective_wait, 0);
  EXPECT_EQ(r2.transfer, us(20));

  ASSERT_EQ(r.collective_ranks.size(), 4u);
  EXPECT_EQ(r.collective_ranks[2].last_arrivals, 1);
  EXPECT_EQ(r.collective_ranks[2].caused_wait, us(150));
  EXPECT_EQ(r.collective_ranks[2].wait, 0);
  EXPECT_EQ(r.collective_ranks[0].wait, us(50));
  EXPECT_EQ(r.collective_ranks[0].transfer, 3 * us(20));
  EXPECT_EQ(r.collective_ranks[0].in_collectives, us(50) + 3 * us(20));
  ASSERT_EQ(r.collective_ops.size(), 1u);
  EXPECT_EQ(r.collective_ops[0].op, "all_reduce");
  EXPECT_EQ(r.collective_ops[0].instances, 3);
  EXPECT_EQ(r.collective_ops[0].calls, 12);
  EXPECT_EQ(r.collective_ops[0].wait, us(150));
  EXPECT_EQ(r.collective_ops[0].transfer, 12 * us(20));
  EXPECT_EQ(r.instances, 3u);
  EXPECT_EQ(r.unmatched_calls, 0u);
}

TEST(JobAnalysis, ARankWithALongerDataWaitIsLateBecauseOfItsInputPipeline) {
  const auto r = job_of(balanced_job(1, 0, us(60)));
  const auto& s = r.steps[1];
  EXPECT_EQ(s.straggler, 1);
  EXPECT_EQ(s.caused_wait, 3 * us(60));
  ASSERT_TRUE(s.cause);
  EXPECT_EQ(*s.cause, StragglerCause::InputPipeline);
  EXPECT_EQ(s.excess_input, us(60));
  EXPECT_EQ(s.excess_compute, 0);
  EXPECT_EQ(split_of(s, 1).data_wait, us(70));
  EXPECT_EQ(split_of(s, 3).collective_wait, us(60));
}

// Ranks 0 and 1 exchange in their own group before the all-reduce of all four. In step 1,
// rank 1 computes 30 us longer before the exchange, holding rank 0 there, and rank 0 then
// reaches the all-reduce last: it is the step's straggler, because it waited for rank 1.
std::vector<Trace> chain_job() {
  return test::simulate_job(4, 3, [](std::int64_t rank, std::int64_t step) {
    const bool slow = step == 1;
    std::vector<test::JobAction> a;
    if (rank <= 1) {
      a.push_back(compute(us(rank == 1 && slow ? 130 : 100)));
      a.push_back(collective(us(10), "send", "pair", {0, 1}));
      a.push_back(compute(us(rank == 1 && slow ? 90 : 100)));
    } else {
      a.push_back(compute(us(210)));
    }
    a.push_back(collective(us(20), "allreduce", "world"));
    return a;
  });
}

TEST(JobAnalysis, ARankHeldByAnotherRankIsLateBecauseItWaitedForThatRank) {
  const auto r = job_of(chain_job());
  EXPECT_EQ(r.steps[0].straggler, kNoValue);
  EXPECT_EQ(r.steps[2].straggler, kNoValue);
  const auto& s = r.steps[1];
  // Rank 1 cost rank 0 30 us at the exchange; rank 0 cost the others 10 + 30 + 30 at the all-reduce.
  EXPECT_EQ(s.straggler, 0);
  EXPECT_EQ(s.caused_wait, us(70));
  ASSERT_TRUE(s.cause);
  EXPECT_EQ(*s.cause, StragglerCause::OtherRank);
  EXPECT_EQ(s.held_by, 1);
  EXPECT_EQ(s.excess_held, us(30));
  EXPECT_EQ(s.excess_compute, -us(10)); // 200 us against the others' median 210
  EXPECT_EQ(s.excess_transfer, us(10)); // the exchange's own transfer, which ranks 2 and 3 had not
  EXPECT_EQ(s.late_by, us(30));         // arrived at 240 against the others' median 210
  ASSERT_EQ(r.collective_ranks.size(), 4u);
  EXPECT_EQ(r.collective_ranks[1].caused_wait, us(30));
  EXPECT_EQ(r.collective_ranks[0].caused_wait, us(70));
  EXPECT_EQ(r.collective_ranks[0].wait, us(30));
  // Two groups, each its own row.
  ASSERT_EQ(r.collective_ops.size(), 2u);
}

TEST(JobAnalysis, AStragglerWhoseSummaryShowsNothingLateBeganLate) {
  // Rank 3 starts its first step 40 us after the others (its process, or its profile, began
  // later) and then does what they do: nothing in its step explains its lateness.
  test::JobTraceOptions o;
  o.late_start = {{3, us(40)}};
  const auto r = job_of(test::simulate_job(
      4, 1,
      [](std::int64_t, std::int64_t) {
        return std::vector<test::JobAction>{compute(us(100)), collective(us(20))};
      },
      o));
  const auto& s = r.steps[0];
  EXPECT_EQ(s.straggler, 3);
  EXPECT_EQ(s.caused_wait, 3 * us(40));
  EXPECT_EQ(s.late_by, us(40));
  EXPECT_EQ(s.excess_compute, 0);
  ASSERT_TRUE(s.cause);
  EXPECT_EQ(*s.cause, StragglerCause::Unexplained);
}

TEST(JobAnalysis, RanksOfAnotherHostArePutOnTheFirstRanksClockByTheirCollectives) {
  test::JobTraceOptions o;
  o.hosts = {{2, "node-b"}, {3, "node-b"}};
  const auto same = job_of(balanced_job(2, us(50), 0, o));
  o.clock_skew = {{2, 5'000'000}, {3, 5'000'000}}; // node-b's clock 5 ms ahead
  const auto skewed = job_of(balanced_job(2, us(50), 0, o));
  EXPECT_EQ(skewed.collective_ranks[2].clock_shift, -5'000'000);
  EXPECT_EQ(skewed.collective_ranks[3].clock_shift, -5'000'000);
  EXPECT_EQ(skewed.collective_ranks[0].clock_shift, 0);
  ASSERT_FALSE(skewed.notes.empty());
  EXPECT_NE(skewed.notes[0].find("Ranks 2, 3 on another clock: shifted by -5.000 ms onto rank 0's"), std::string::npos)
      << skewed.notes[0];
  // On one clock, the same answers as a job that had one.
  EXPECT_EQ(skewed.steps[1].straggler, 2);
  EXPECT_EQ(skewed.steps[1].caused_wait, same.steps[1].caused_wait);
  EXPECT_EQ(*skewed.steps[1].cause, StragglerCause::Compute);
  EXPECT_EQ(skewed.begin, same.begin);
  EXPECT_EQ(skewed.end, same.end);
  // Without another host, no clock is shifted, whatever the differences.
  EXPECT_TRUE(same.notes.empty());
}

TEST(JobAnalysis, TwoSummariesOfOneRankOrOneOfNoRankAreRefused) {
  auto s = summaries_of(balanced_job(2, 0, 0));
  s[1].rank = 0;
  try {
    (void)analyzers::analyze_job(s);
    FAIL() << "no error";
  } catch (const TraceError& e) {
    EXPECT_STREQ(e.what(), "rank0 and rank1 are both rank 0; a job has one trace per rank");
  }
  s[1].rank = kNoValue;
  EXPECT_THROW((void)analyzers::analyze_job(s), TraceError);
  EXPECT_THROW((void)analyzers::analyze_job({}), TraceError);
}

TEST(JobAnalysis, AMissingRankIsNoted) {
  auto s = summaries_of(balanced_job(2, 0, 0));
  s.erase(s.begin() + 1);
  const auto r = analyzers::analyze_job(s);
  ASSERT_FALSE(r.notes.empty());
  EXPECT_NE(r.notes.back().find("World size 4, 3 rank(s) given: no trace of rank 1."), std::string::npos)
      << r.notes.back();
}

// Issue 38: every step number looked every rank's steps through (seconds for a job of 2 x
// 20k steps), and the JSON listed every step twice over. The straggler of a step among 1500
// is found as among three, and the per-step tables list at most 1000 steps (text: --top)
// unless asked for all.
TEST(JobAnalysis, AJobOfManyStepsFindsItsStragglerAndListsItsStepsBoundedByDefault) {
  constexpr std::int64_t kSteps = 1500, kSlowStep = 700;
  const auto traces = test::simulate_job(2, kSteps, [](std::int64_t rank, std::int64_t step) {
    const bool late = rank == 1 && step == kSlowStep;
    return std::vector<test::JobAction>{data_wait(us(10)), compute(us(100) + (late ? us(500) : 0)), collective(us(20))};
  });
  analyzers::JobReport r = job_of(traces);
  ASSERT_EQ(r.steps.size(), static_cast<std::size_t>(kSteps));
  for (const auto& st : r.steps) {
    if (st.step == kSlowStep) {
      EXPECT_EQ(st.straggler, 1);
      EXPECT_EQ(st.caused_wait, us(500));
      ASSERT_TRUE(st.cause);
      EXPECT_EQ(*st.cause, StragglerCause::Compute);
    } else {
      EXPECT_EQ(st.straggler, kNoValue) << st.name;
    }
    EXPECT_EQ(st.ranks.size(), 2u) << st.name;
  }

  auto json_of = [&](bool all_steps) {
    r.options.all_steps = all_steps;
    return nlohmann::json::parse(analyzers::render_job_json(r));
  };
  const auto bounded = json_of(false);
  EXPECT_EQ(bounded["stragglers"]["step_count"], kSteps);
  EXPECT_EQ(bounded["stragglers"]["steps_left_out"], kSteps - 1000);
  ASSERT_EQ(bounded["stragglers"]["steps"].size(), 1000u);
  bool slow_listed = false;
  for (const auto& st : bounded["stragglers"]["steps"]) slow_listed = slow_listed || st["step"] == kSlowStep;
  EXPECT_TRUE(slow_listed) << "the slowest step is listed";
  for (const auto& rank : bounded["ranks"]) {
    EXPECT_EQ(rank["step_count"], kSteps);
    EXPECT_EQ(rank["steps"].size(), 1000u);
  }
  const auto all = json_of(true);
  EXPECT_EQ(all["stragglers"]["steps"].size(), static_cast<std::size_t>(kSteps));
  EXPECT_EQ(all["stragglers"]["steps_left_out"], 0);
  for (const auto& rank : all["ranks"]) EXPECT_EQ(rank["steps"].size(), static_cast<std::size_t>(kSteps));

  r.options.all_steps = false;
  const std::string text = analyzers::render_job_text(r);
  EXPECT_NE(text.find("15 of 1500 steps listed: the first 5, the 5 slowest and 5 around the median duration"),
            std::string::npos);
  EXPECT_NE(text.find("step 700"), std::string::npos);
}

TEST(JobAnalysis, HtaKernelTypesAddUpOverTheRanks) {
  // Two GPU ranks: a compute kernel on one, a compute and an NCCL kernel on the other.
  std::vector<RankSummary> s(2);
  s[0].rank = 0;
  s[0].hta.kernel_types = {{"COMPUTATION", 30, 100.0}};
  s[0].hta.kernels = {{.name = "gemm", .type = analyzers::KernelType::Computation, .count = 3, .sum = 30}};
  s[1].rank = 1;
  s[1].hta.kernel_types = {{"COMPUTATION", 50, 50.0}, {"COMMUNICATION", 50, 50.0}};
  s[1].hta.kernels = {
      {.name = "gemm", .type = analyzers::KernelType::Computation, .count = 5, .sum = 50},
      {.name = "ncclKernel_AllReduce", .type = analyzers::KernelType::Communication, .count = 1, .sum = 50}};
  const auto r = analyzers::analyze_job(s);
  ASSERT_EQ(r.kernel_types.size(), 2u);
  EXPECT_EQ(r.kernel_types[0].kernel_type, "COMPUTATION");
  EXPECT_EQ(r.kernel_types[0].sum, 80);
  EXPECT_DOUBLE_EQ(r.kernel_types[0].percentage, 61.5);
  EXPECT_DOUBLE_EQ(r.kernel_types[1].percentage, 38.5);
  ASSERT_EQ(r.kernels.size(), 2u);
  EXPECT_EQ(r.kernels[0].name, "gemm");
  EXPECT_EQ(r.kernels[0].ranks, 2);
  EXPECT_EQ(r.kernels[0].count, 8);
  EXPECT_EQ(r.kernels[0].min_rank, 0);
  EXPECT_EQ(r.kernels[0].max_rank, 1);
  EXPECT_EQ(r.kernels[0].max_rank_sum, 50);
}

TEST(JobAnalysis, EveryRenderingSaysTheStragglerAndItsCause) {
  const auto r = job_of(balanced_job(1, 0, us(60)));
  const std::string text = analyzers::render_job_text(r);
  EXPECT_NE(text.find("job of 4 ranks (world size 4), 1 host"), std::string::npos) << text;
  EXPECT_NE(text.find("input pipeline"), std::string::npos) << text;
  EXPECT_NE(text.find("== The straggler of every step =="), std::string::npos);
  const std::string md = analyzers::render_job_markdown(r);
  EXPECT_NE(md.find("## Collectives across ranks"), std::string::npos);
  EXPECT_NE(md.find("| step 1 | 1 |"), std::string::npos) << md;
  const std::string html = analyzers::render_job_html(r);
  EXPECT_NE(html.find("<h2 id=\"job-stragglers\">"), std::string::npos);
  EXPECT_NE(html.find("<svg class=\"chart\""), std::string::npos);
  const auto j = nlohmann::json::parse(analyzers::render_job_json(r));
  EXPECT_EQ(j["schema"], "dreamscope-analyze-job/1");
  EXPECT_EQ(j["stragglers"]["steps"][1]["straggler"], 1);
  EXPECT_EQ(j["stragglers"]["steps"][1]["cause"], "input pipeline");
  EXPECT_EQ(j["stragglers"]["steps"][1]["caused_wait_ns"], 3 * us(60));
  EXPECT_EQ(j["stragglers"]["steps"][0]["straggler"], nullptr);
  EXPECT_EQ(j["collectives"]["ranks"][3]["wait_ns"], us(60));
  EXPECT_EQ(j["ranks"].size(), 4u);

  analyzers::JobReportOptions only;
  only.hta = only.collectives = false;
  auto s = summaries_of(balanced_job(1, 0, us(60)));
  const auto j2 = nlohmann::json::parse(analyzers::render_job_json(analyzers::analyze_job(s, only)));
  EXPECT_EQ(j2["sections"], nlohmann::json::array({"stragglers"}));
  EXPECT_FALSE(j2.contains("collectives"));
}

// ---- The summary file

void expect_same(const RankSummary& a, const RankSummary& b) {
  EXPECT_EQ(a.rank, b.rank);
  EXPECT_EQ(a.local_rank, b.local_rank);
  EXPECT_EQ(a.world_size, b.world_size);
  EXPECT_EQ(a.host, b.host);
  EXPECT_EQ(a.trace_name, b.trace_name);
  EXPECT_EQ(a.source, b.source);
  EXPECT_EQ(a.begin, b.begin);
  EXPECT_EQ(a.end, b.end);
  EXPECT_EQ(a.events, b.events);
  EXPECT_EQ(a.data_source, b.data_source);
  EXPECT_EQ(a.steps, b.steps);
  EXPECT_EQ(a.data_waits, b.data_waits);
  EXPECT_EQ(a.collectives, b.collectives);
  // HTA's numbers through their own rendering, which prints every field.
  const auto json_of = [](const RankSummary& s) {
    return nlohmann::json::parse(analyzers::render_job_json(analyzers::analyze_job({s})))["ranks"][0];
  };
  EXPECT_EQ(json_of(a), json_of(b));
}

TEST(RankSummaryFile, RoundTripsEveryField) {
  test::ScratchDir dir;
  const auto traces = balanced_job(2, us(50), us(5));
  RankSummary s = analyzers::summarize_rank(traces[2], 2, "rank2.db");
  // Fields the CPU job leaves empty, so that they travel too.
  s.hta.temporal = {.idle = 5,
                    .compute = 7,
                    .non_compute = 3,
                    .kernel_time = 15,
                    .idle_pct = 33.33,
                    .compute_pct = 46.67,
                    .non_compute_pct = 20.0};
  s.hta.comm_comp_overlap_pct = 4.503311258278146;
  s.hta.kernel_types = {{"COMPUTATION", 7, 70.0}, {"COMPUTATION overlapping COMMUNICATION", 3, 30.0}};
  s.hta.kernels = {{.name = "gemm",
                    .type = analyzers::KernelType::Computation,
                    .count = 2,
                    .sum = 7,
                    .min = 3,
                    .max = 4,
                    .mean = 3.5,
                    .stddev = 0.7071067811865476}};
  s.hta.idle_time = {{.device = 0,
                      .stream = 7,
                      .host_wait = 5,
                      .kernel_wait = 1,
                      .other = 0,
                      .host_wait_ratio = 0.83,
                      .kernel_wait_ratio = 0.17,
                      .other_ratio = 0}};
  s.hta.launches = {.count = 2,
                    .mean_cpu_duration = 9.04,
                    .mean_gpu_duration = 26.25,
                    .mean_launch_delay = 60.66,
                    .max_launch_delay = 1482,
                    .short_kernels = 1};
  s.hta.profiler_steps = 3;
  s.hta.step_filter_applied = true;
  s.collectives[0].bytes = 4096;
  const auto path = dir / "rank2.summary.db";
  analyzers::write_rank_summary(s, path);
  EXPECT_TRUE(analyzers::is_rank_summary_file(path));
  EXPECT_LT(std::filesystem::file_size(path), 64u * 1024);
  expect_same(analyzers::read_rank_summary(path), s);
  // Written again over itself.
  analyzers::write_rank_summary(s, path);
  expect_same(analyzers::read_rank_summary(path), s);
}

void sql(const std::filesystem::path& db, const std::string& statement) {
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &h), SQLITE_OK);
  char* error = nullptr;
  EXPECT_EQ(sqlite3_exec(h, statement.c_str(), nullptr, nullptr, &error), SQLITE_OK) << (error ? error : "");
  sqlite3_free(error);
  sqlite3_close(h);
}

std::string read_error(const std::filesystem::path& path) {
  try {
    (void)analyzers::read_rank_summary(path);
  } catch (const TraceError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(RankSummaryFile, AWrongFileIsRefusedInOneLineNamingIt) {
  test::ScratchDir dir;
  const auto traces = balanced_job(2, 0, 0);
  const RankSummary s = analyzers::summarize_rank(traces[0], 0, "rank0.db");
  const auto good = dir / "good.summary.db";
  analyzers::write_rank_summary(s, good);
  auto copy = [&](const char* name) {
    const auto p = dir / name;
    std::filesystem::copy_file(good, p);
    return p;
  };

  const auto text = dir / "text.summary.db";
  std::ofstream(text) << "rank 0\n";
  EXPECT_EQ(read_error(text), text.string() + ": not a rank summary (not an SQLite file)");
  EXPECT_FALSE(analyzers::is_rank_summary_file(text));

  const auto trace = dir / "trace.db";
  write_trace(traces[0], trace);
  EXPECT_EQ(read_error(trace), trace.string() + ": not a rank summary (an SQLite file with no summary_meta table)");
  EXPECT_FALSE(analyzers::is_rank_summary_file(trace));

  const auto newer = copy("newer.summary.db");
  sql(newer, "UPDATE summary_meta SET value = '2' WHERE key = 'version'");
  EXPECT_EQ(read_error(newer), newer.string() +
                                   ": rank summary version 2; this dreamscope reads version 1 (summarise the rank "
                                   "again with this dreamscope)");

  const auto other = copy("other.summary.db");
  sql(other, "UPDATE summary_meta SET value = 'something-else' WHERE key = 'format'");
  EXPECT_EQ(read_error(other), other.string() + ": not a rank summary (format 'something-else')");

  const auto backwards = copy("backwards.summary.db");
  sql(backwards, "UPDATE step SET end_ns = start_ns - 1 WHERE rowid = 2");
  EXPECT_EQ(read_error(backwards), backwards.string() + ": row 2 of table step: ends before it starts");

  const auto typed = copy("typed.summary.db");
  sql(typed, "UPDATE collective SET start_ns = 'soon' WHERE rowid = 1");
  EXPECT_EQ(read_error(typed), typed.string() + ": row 1 of table collective: column start_ns is not an integer");

  const auto missing = copy("missing.summary.db");
  sql(missing, "DROP TABLE data_wait");
  EXPECT_EQ(read_error(missing), missing.string() + ": no such table: data_wait");

  const auto two = copy("two.summary.db");
  sql(two, "INSERT INTO rank_info SELECT * FROM rank_info");
  EXPECT_EQ(read_error(two), two.string() + ": table rank_info has 2 rows, not 1");

  const auto kind = copy("kind.summary.db");
  sql(kind, "INSERT INTO hta_kernel VALUES ('k', 'SOMETHING', 1, 1, 1, 1, 1.0, 0.0)");
  EXPECT_EQ(read_error(kind), kind.string() + ": row 1 of table hta_kernel: names an unknown kernel type 'SOMETHING'");

  // What can only be a count, a duration or a share is range-checked (round2's
  // summary_negative.summary.db: a kernel's mean of -2^63 us was reported as it was).
  const auto negative = copy("negative.summary.db");
  sql(negative, "INSERT INTO hta_kernel VALUES ('k', 'COMPUTATION', 1, -5, 1, 1, -9.2e18, 0.0)");
  EXPECT_EQ(read_error(negative), negative.string() + ": row 1 of table hta_kernel: column sum_us is -5, not at least 0");
  const auto mean = copy("mean.summary.db");
  sql(mean, "INSERT INTO hta_kernel VALUES ('k', 'COMPUTATION', 1, 5, 1, 9, -9.2e18, 0.0)");
  EXPECT_EQ(read_error(mean),
            mean.string() + ": row 1 of table hta_kernel: column mean_us is -9.2e+18, not a finite number of at least 0");
  const auto share = copy("share.summary.db");
  sql(share, "UPDATE hta_rank SET idle_pct = 250.0");
  EXPECT_EQ(read_error(share), share.string() + ": row 1 of table hta_rank: column idle_pct is 250, not between 0 and 100");
  const auto order = copy("order.summary.db");
  sql(order, "INSERT INTO hta_kernel VALUES ('k', 'COMPUTATION', 2, 10, 9, 1, 5.0, 0.0)");
  EXPECT_EQ(read_error(order), order.string() + ": row 1 of table hta_kernel: has min_us 9 above max_us 1");

  EXPECT_EQ(read_error(dir / "absent.summary.db"), (dir / "absent.summary.db").string() + ": no such file");
  EXPECT_THROW(analyzers::write_rank_summary(s, dir / "no-such-folder" / "x.summary.db"), TraceError);
}

} // namespace
} // namespace dreamscope
