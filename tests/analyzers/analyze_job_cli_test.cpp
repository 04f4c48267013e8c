// `dreamscope analyze` on a distributed job, end to end with the built binary: a folder, a glob
// or several files of per-rank traces, one trace of every rank, and the ranks' summaries
// written by separate `--summary` processes (the recipe for a job of many machines), which
// must give the report the traces give.
#include "../common/required_data.h"
#include "job_traces.h"
#include "../cli/run_command.h"
#include "../common/scratch_dir.h"

#include <dreamscope/storage/importers.h>
#include <dreamscope/storage/job.h>
#include <dreamscope/storage/trace_file.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <sys/wait.h>

namespace dreamscope {
namespace {

namespace fs = std::filesystem;
using test::ScratchDir;
using test::CommandResult;
using test::run_dreamscope;

// Runs a shell script (several dreamscope processes at once) from the repository root.
int run_script(const std::string& script) {
  const std::string cmd = "cd " DREAMSCOPE_SOURCE_DIR " && " + script;
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

const fs::path kDlrm = fs::path(DREAMSCOPE_SHARED_DATA_DIR) / "wild" / "param-dlrm-v100x8-nccl";
const std::string kBin = DREAMSCOPE_BIN_DIR "/dreamscope";

#define REQUIRE_DLRM() \
  DREAMSCOPE_REQUIRE_DATA(kDlrm)

std::vector<fs::path> dlrm_files() { return job_files({kDlrm.string()}); }

nlohmann::json json_of(const CommandResult& r) {
  EXPECT_EQ(r.exit_code, 0) << r.out.substr(0, 2000);
  return nlohmann::json::parse(r.out);
}

TEST(AnalyzeJobCli, AFolderOfRanksGivesHtasNumbersPerRank) {
  REQUIRE_DLRM();
  const auto j = json_of(run_dreamscope("analyze " + kDlrm.string() + " --format json"));
  EXPECT_EQ(j["schema"], "dreamscope-analyze-job/1");
  ASSERT_EQ(j["ranks"].size(), 8u);
  const std::int64_t idle[8] = {6419, 6428, 7046, 8145, 8887, 9121, 7051, 8308};
  const std::int64_t non_compute[8] = {5556, 11075, 3236, 9468, 6576, 6230, 3308, 1600};
  for (std::size_t r = 0; r < 8; ++r) {
    EXPECT_EQ(j["ranks"][r]["rank"], r);
    EXPECT_EQ(j["ranks"][r]["hta"]["temporal"]["idle_us"], idle[r]) << r;
    EXPECT_EQ(j["ranks"][r]["hta"]["temporal"]["non_compute_us"], non_compute[r]) << r;
  }
  EXPECT_EQ(j["collectives"]["instances"], 8);
  EXPECT_EQ(j["stragglers"]["steps"].size(), 1u);

  const CommandResult text = run_dreamscope("analyze " + kDlrm.string() + " --only hta");
  ASSERT_EQ(text.exit_code, 0) << text.out;
  EXPECT_NE(text.out.find(
                "     1 -    6428    1246       11075       18749  34.28      6.65         59.07                2.47"),
            std::string::npos)
      << text.out;
  EXPECT_EQ(text.out.find("Collectives across ranks"), std::string::npos);
}

TEST(AnalyzeJobCli, AGlobAndSeveralFilesAreTheSameJobAsTheFolder) {
  REQUIRE_DLRM();
  const CommandResult folder = run_dreamscope("analyze " + kDlrm.string());
  ASSERT_EQ(folder.exit_code, 0) << folder.out;
  const CommandResult glob = run_dreamscope("analyze '" + (kDlrm / "worker*.json").string() + "'");
  EXPECT_EQ(glob.out, folder.out);
  std::string list;
  for (const auto& f : dlrm_files()) list += " " + f.string();
  const CommandResult files = run_dreamscope("analyze" + list);
  EXPECT_EQ(files.out, folder.out);
}

TEST(AnalyzeJobCli, OneTraceOfEveryRankIsAJob) {
  REQUIRE_DLRM();
  ScratchDir dir;
  write_trace(load_job(dlrm_files()).trace, dir / "job.db");
  const CommandResult one = run_dreamscope("analyze " + (dir / "job.db").string());
  const CommandResult folder = run_dreamscope("analyze " + kDlrm.string());
  ASSERT_EQ(one.exit_code, 0) << one.out;
  EXPECT_EQ(one.out, folder.out);
  // One rank of it, summarised.
  const CommandResult summary =
      run_dreamscope("analyze --summary --rank 3 -o " + (dir / "rank3.summary.db").string() + " " + (dir / "job.db").string());
  ASSERT_EQ(summary.exit_code, 0) << summary.out;
  EXPECT_TRUE(fs::exists(dir / "rank3.summary.db"));
  const CommandResult no_rank =
      run_dreamscope("analyze --summary -o " + (dir / "x.summary.db").string() + " " + (dir / "job.db").string());
  EXPECT_EQ(no_rank.exit_code, 1);
  EXPECT_NE(no_rank.out.find("job.db: holds 8 ranks; --rank R says which one to summarise"), std::string::npos)
      << no_rank.out;
}

TEST(AnalyzeJobCli, OneRanksFileAloneIsTheSingleTraceReport) {
  REQUIRE_DLRM();
  const CommandResult r = run_dreamscope("analyze " + dlrm_files()[1].string() + " --only hta");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("== HTA-compatible analyses"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("6428    1246       11075       18749"), std::string::npos) << r.out;
}

// The recipe of docs/multi-rank.md for a job of many machines, on one: every rank summarised
// by its own process, all at once, then the report from the summaries alone.
TEST(AnalyzeJobCli, SummariesWrittenBySeparateProcessesGiveTheReportOfTheTraces) {
  REQUIRE_DLRM();
  ScratchDir dir;
  const fs::path summaries = dir / "summaries";
  fs::create_directory(summaries);
  std::string script;
  const auto files = dlrm_files();
  for (std::size_t r = 0; r < files.size(); ++r) {
    script += kBin + " analyze --summary -o " + (summaries / ("rank-" + std::to_string(r) + ".summary.db")).string() +
              " " + files[r].string() + " & ";
  }
  script += "wait";
  ASSERT_EQ(run_script(script), 0);
  for (std::size_t r = 0; r < files.size(); ++r) {
    EXPECT_TRUE(fs::exists(summaries / ("rank-" + std::to_string(r) + ".summary.db"))) << r;
  }
  for (const char* format : {"text", "json", "md", "html"}) {
    const CommandResult from_traces = run_dreamscope("analyze " + kDlrm.string() + " --format " + format);
    const CommandResult from_summaries = run_dreamscope("analyze " + summaries.string() + " --format " + format);
    ASSERT_EQ(from_summaries.exit_code, 0) << from_summaries.out;
    EXPECT_EQ(from_summaries.out, from_traces.out) << format;
  }
  // A glob of summaries, and summaries beside traces of the other ranks.
  const CommandResult glob = run_dreamscope("analyze '" + (summaries / "rank-*.summary.db").string() + "'");
  const CommandResult folder = run_dreamscope("analyze " + kDlrm.string());
  EXPECT_EQ(glob.out, folder.out);
  std::string mixed;
  for (std::size_t r = 0; r < files.size(); ++r) {
    mixed += " " + (r < 4 ? (summaries / ("rank-" + std::to_string(r) + ".summary.db")).string() : files[r].string());
  }
  EXPECT_EQ(run_dreamscope("analyze" + mixed).out, folder.out);
}

TEST(AnalyzeJobCli, BadInputGetsOneLineNamingTheFile) {
  REQUIRE_DLRM();
  ScratchDir dir;
  const fs::path bad = dir / "rank9.summary.db";
  std::ofstream(bad) << "not a summary\n";
  const auto files = dlrm_files();
  auto one_line = [](const CommandResult& r) { return std::count(r.out.begin(), r.out.end(), '\n') == 1; };
  const CommandResult r = run_dreamscope("analyze " + files[0].string() + " " + files[1].string() + " " + bad.string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "dreamscope analyze: " + bad.string() + ": not a rank summary (not an SQLite file)\n");

  const fs::path junk = dir / "junk.json";
  std::ofstream(junk) << "{ not json";
  const CommandResult j = run_dreamscope("analyze " + files[0].string() + " " + junk.string());
  EXPECT_EQ(j.exit_code, 1);
  EXPECT_TRUE(one_line(j)) << j.out;
  EXPECT_NE(j.out.find(junk.string()), std::string::npos) << j.out;

  const CommandResult nothing = run_dreamscope("analyze '" + (dir / "nothing-*.json").string() + "'");
  EXPECT_EQ(nothing.exit_code, 1);
  EXPECT_TRUE(one_line(nothing)) << nothing.out;
  EXPECT_NE(nothing.out.find("nothing-*.json: no file matches the pattern"), std::string::npos) << nothing.out;

  fs::copy_file(files[2], dir / "again.json");
  const CommandResult same_rank = run_dreamscope("analyze " + files[2].string() + " " + (dir / "again.json").string());
  EXPECT_EQ(same_rank.exit_code, 1);
  EXPECT_TRUE(one_line(same_rank)) << same_rank.out;
  EXPECT_NE(same_rank.out.find("rank 2"), std::string::npos) << same_rank.out;

  // A summary of a rank given beside its trace, or twice.
  const fs::path summary = dir / "worker2.summary.db";
  ASSERT_EQ(run_dreamscope("analyze --summary -o " + summary.string() + " " + files[2].string()).exit_code, 0);
  const fs::path copy = dir / "copy.summary.db";
  fs::copy_file(summary, copy);
  const CommandResult twice = run_dreamscope("analyze " + summary.string() + " " + copy.string());
  EXPECT_EQ(twice.exit_code, 1);
  EXPECT_EQ(twice.out, "dreamscope analyze: " + summary.string() + " and " + copy.string() +
                           " are both rank 2; a job has one trace per rank\n");
  const CommandResult beside = run_dreamscope("analyze " + summary.string() + " " + files[2].string());
  EXPECT_EQ(beside.exit_code, 1);
  EXPECT_TRUE(one_line(beside)) << beside.out;
  EXPECT_NE(beside.out.find(summary.string() + " and " + files[2].filename().string() + " are both rank 2"),
            std::string::npos)
      << beside.out;
}

TEST(AnalyzeJobCli, CommandLineMistakes) {
  REQUIRE_DLRM();
  ScratchDir dir;
  const auto files = dlrm_files();
  const CommandResult no_output = run_dreamscope("analyze --summary " + files[0].string());
  EXPECT_EQ(no_output.exit_code, 2);
  EXPECT_NE(no_output.out.find("--summary needs -o FILE"), std::string::npos) << no_output.out;
  const CommandResult two = run_dreamscope("analyze --summary -o " + (dir / "a.summary.db").string() + " " + files[0].string() +
                                " " + files[1].string());
  EXPECT_EQ(two.exit_code, 2);
  EXPECT_NE(two.out.find("--summary summarises one rank"), std::string::npos) << two.out;
  const CommandResult steps = run_dreamscope("analyze " + kDlrm.string() + " --only steps");
  EXPECT_EQ(steps.exit_code, 2);
  EXPECT_NE(steps.out.find("--only steps is an analysis of one trace"), std::string::npos) << steps.out;
  const CommandResult unknown = run_dreamscope("analyze " + kDlrm.string() + " --only bogus");
  EXPECT_EQ(unknown.exit_code, 2);
  const CommandResult rank = run_dreamscope("analyze " + kDlrm.string() + " --rank 2");
  EXPECT_EQ(rank.exit_code, 2);
  const CommandResult wrong_rank =
      run_dreamscope("analyze --summary --rank 3 -o " + (dir / "a.summary.db").string() + " " + files[1].string());
  EXPECT_EQ(wrong_rank.exit_code, 1);
  EXPECT_NE(wrong_rank.out.find("is rank 1, not 3"), std::string::npos) << wrong_rank.out;
  const CommandResult unwritable = run_dreamscope("analyze " + kDlrm.string() + " -o " + (dir / "no" / "x.txt").string());
  EXPECT_EQ(unwritable.exit_code, 1);
}

// A job whose rank 2 is slowed on purpose in step 1, as files of our own trace format: the
// command names the rank and the cause.
TEST(AnalyzeJobCli, NamesTheRankSlowedOnPurposeAndWhy) {
  ScratchDir dir;
  const auto traces = test::simulate_job(8, 4, [](std::int64_t rank, std::int64_t step) {
    const bool slow = rank == 5 && step == 2;
    return std::vector<test::JobAction>{test::data_wait(10'000), test::compute(slow ? 400'000 : 100'000),
                                        test::collective(20'000)};
  });
  for (std::size_t r = 0; r < traces.size(); ++r) write_trace(traces[r], dir / ("trace-" + std::to_string(r) + ".db"));
  const auto j = json_of(run_dreamscope("analyze " + dir.path().string() + " --format json --only stragglers"));
  ASSERT_EQ(j["stragglers"]["steps"].size(), 4u);
  const auto& step = j["stragglers"]["steps"][2];
  EXPECT_EQ(step["name"], "step 2");
  EXPECT_EQ(step["straggler"], 5);
  EXPECT_EQ(step["cause"], "compute");
  EXPECT_EQ(step["caused_wait_ns"], 7 * 300'000);
  const CommandResult text = run_dreamscope("analyze " + dir.path().string() + " --only stragglers");
  EXPECT_NE(text.out.find("Most costly straggler: rank 5, the straggler of 1 of 1 step(s)"), std::string::npos)
      << text.out;
}

// docs/multi-rank.md promises that the examples of its "Analysing a job" section run as
// written from the repository root, in order (the summaries before the report of them).
TEST(AnalyzeJobDocs, EveryExampleRuns) {
  REQUIRE_DLRM();
  std::ifstream doc(fs::path(DREAMSCOPE_SOURCE_DIR) / "docs/multi-rank.md");
  ASSERT_TRUE(doc) << "docs/multi-rank.md";
  ScratchDir dir;
  const std::string prefix = "$ dreamscope analyze ";
  bool in_section = false;
  int examples = 0;
  for (std::string line; std::getline(doc, line);) {
    if (line.rfind("## ", 0) == 0) in_section = line.rfind("## Analysing a job", 0) == 0;
    if (!in_section || line.rfind(prefix, 0) != 0) continue;
    std::string args = line.substr(prefix.size());
    const std::string scratch = dir.path().string() + "/";
    for (std::size_t p = args.find("/tmp/"); p != std::string::npos; p = args.find("/tmp/", p + scratch.size())) {
      args.replace(p, 5, scratch);
    }
    const CommandResult r = run_dreamscope("analyze " + args);
    EXPECT_EQ(r.exit_code, 0) << line << "\n" << r.out.substr(0, 2000);
    ++examples;
  }
  EXPECT_GE(examples, 6);
  EXPECT_TRUE(fs::exists(dir / "job.html"));
}

} // namespace
} // namespace dreamscope
