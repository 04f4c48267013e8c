// `dreamscope diff` end to end: the built binary on trace.db files, on HTA's Kineto pair and
// on a run against its own what-if prediction; every format, -o, the --fail-if gate and its
// exit code, the errors, and every example of docs/diff.md.
#include "../common/required_data.h"
#include "../analyzers/diff_test_traces.h"
#include "../common/scratch_dir.h"
#include "run_command.h"

#include <dreamscope/storage/trace_file.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace dreamscope {
namespace {

namespace fs = std::filesystem;
using test::CommandResult;
using test::ScratchDir;

// From the repository root, where the documented examples' relative paths start.
CommandResult dreamscope(const std::string& args) {
  return test::run_command("cd " DREAMSCOPE_SOURCE_DIR " && " + test::dreamscope_bin() + " " + args);
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::size_t lines(const std::string& s) { return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n')); }

struct LoopPair {
  ScratchDir dir{"dreamscope-diff-test"};
  fs::path a = dir / "a.db", b = dir / "b.db";
  LoopPair() {
    write_trace(test::training_loop(false), a);
    write_trace(test::training_loop(true), b);
  }
  std::string args() const { return a.string() + " " + b.string(); }
};

TEST(DiffCli, TextNamesTheChangesInOrderOfImpact) {
  LoopPair p;
  const CommandResult r = dreamscope("diff " + p.args());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto section = r.out.find("== What changed");
  const auto gemm = r.out.find("slower   gpu       gemm", section), load = r.out.find("vanished operation load", section),
             augment = r.out.find("appeared operation augment", section);
  ASSERT_NE(gemm, std::string::npos) << r.out;
  ASSERT_NE(load, std::string::npos) << r.out;
  ASSERT_NE(augment, std::string::npos) << r.out;
  EXPECT_LT(gemm, load);
  EXPECT_LT(load, augment);
  EXPECT_NE(r.out.find("median step: A 1.000 ms, B 900.000 us (-10.0 %)"), std::string::npos) << r.out;
}

TEST(DiffCli, EveryFormatRendersAndOutputWritesTheFile) {
  LoopPair p;
  for (const std::string format : {"text", "markdown", "md", "json", "html"}) {
    const fs::path out = p.dir / ("diff." + format);
    const CommandResult r = dreamscope("diff " + p.args() + " --format " + format + " -o " + out.string());
    ASSERT_EQ(r.exit_code, 0) << format << "\n" << r.out;
    EXPECT_TRUE(r.out.empty()) << r.out;
    const std::string text = slurp(out);
    EXPECT_NE(text.find("gemm"), std::string::npos) << format;
    if (format == "json") {
      const auto j = nlohmann::json::parse(text);
      EXPECT_EQ(j["schema"], "dreamscope-diff/1");
      EXPECT_EQ(j["a"]["name"], "a.db");
      EXPECT_EQ(j["operations"][0]["name"], "gemm");
    }
    if (format == "html") {
      EXPECT_NE(text.find("</html>"), std::string::npos);
    }
    if (format == "md" || format == "markdown") {
      EXPECT_NE(text.find("# dreamscope diff: `a.db` → `b.db`"), std::string::npos);
    }
  }
}

TEST(DiffCli, FailIfExitsThreeAndStillWritesTheReport) {
  LoopPair p;
  const fs::path out = p.dir / "report.md";
  const CommandResult r = dreamscope("diff " + p.args() + " --format md -o " + out.string() +
                                     " --fail-if 'top_regression_ms > 0.25' --fail-if 'step_change_pct > 1'");
  EXPECT_EQ(r.exit_code, 3) << r.out;
  EXPECT_NE(r.out.find("dreamscope diff: gate failed: top_regression_ms > 0.25"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("step_change_pct > 1 ("), std::string::npos) << r.out; // B's step is 10 % shorter
  EXPECT_EQ(lines(r.out), 1u) << r.out;
  EXPECT_NE(slurp(out).find("| slower | gpu | gemm |"), std::string::npos);
}

TEST(DiffCli, ATraceAgainstItselfPassesTheGate) {
  LoopPair p;
  const CommandResult r = dreamscope("diff " + p.a.string() + " " + p.a.string() + " --format json --fail-if 'step_change_pct > 1'");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  for (const auto& o : j["operations"]) EXPECT_EQ(o["change"], "unchanged") << o["name"];
  EXPECT_EQ(j["gates"]["step_change_pct"], 0.0);
}

// A run against its own prediction with mixed precision: every compute kernel faster, the
// NCCL kernel as it was (amp keeps communication kernels' time).
TEST(DiffCli, RunAgainstItsAmpPredictionShowsKernelsFaster) {
  ScratchDir dir;
  const std::string trace = "tests/data/importers/kineto/pytorch-1.13-gpu.json";
  const fs::path predicted = dir / "pred.db";
  const CommandResult w = dreamscope("whatif " + trace + " -s amp -o " + predicted.string() + " --no-data-stalls");
  ASSERT_EQ(w.exit_code, 0) << w.out;
  const CommandResult r = dreamscope("diff " + trace + " " + predicted.string() + " --format json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  int faster_kernels = 0;
  for (const auto& o : j["operations"]) {
    if (o["subject"] != "gpu") continue;
    const std::string name = o["name"];
    if (name.starts_with("ncclKernel")) {
      EXPECT_EQ(o["change"], "unchanged") << name;
    } else {
      EXPECT_EQ(o["change"], "faster") << name;
      EXPECT_LT(o["impact_ns"].get<double>(), 0) << name;
      ++faster_kernels;
    }
  }
  EXPECT_GE(faster_kernels, 1);
  EXPECT_LT(j["gates"]["gpu_change_pct"].get<double>(), 0);
  EXPECT_EQ(j["matched_by"], "number");
}

TEST(DiffCli, HtasTracePairAtIteration1010) {
  const fs::path base = fs::path(DREAMSCOPE_SHARED_DATA_DIR) / "kineto-hta/trace_compare/base/base.json.gz";
  DREAMSCOPE_REQUIRE_DATA(base);
  const CommandResult r = dreamscope("diff ../shared/data/kineto-hta/trace_compare/base/base.json.gz "
                                     "../shared/data/kineto-hta/trace_compare/test/test.json.gz --steps 1010 "
                                     "--format json --fail-if 'appeared > 0'");
  EXPECT_EQ(r.exit_code, 3) << r.out;
  const auto j = nlohmann::json::parse(r.out.substr(0, r.out.rfind("dreamscope diff: gate failed")));
  EXPECT_EQ(j["gates"]["appeared"], 3.0);
  EXPECT_EQ(j["gates"]["vanished"], 2.0); // nccl:all_reduce, and the kernel its launch in 1010 made
  EXPECT_EQ(j["operations"][0]["name"], "All2All_Pooled_Req");
}

TEST(DiffCli, RanksOfOneJobAndTheSlowedRank) {
  ScratchDir dir;
  const fs::path a = dir / "job.db", b = dir / "slowed.db";
  write_trace(test::job(false), a);
  write_trace(test::job(true), b);
  const CommandResult r = dreamscope("diff " + a.string() + " " + b.string());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("rank that changed most: rank 2: operation 'forward' +300.000 us per step"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("== Ranks =="), std::string::npos);

  const CommandResult two = dreamscope("diff " + b.string() + " " + b.string() + " --ranks 0,2 --format json");
  ASSERT_EQ(two.exit_code, 0) << two.out;
  const auto j = nlohmann::json::parse(two.out);
  EXPECT_EQ(j["a"]["name"], "slowed.db rank 0");
  EXPECT_EQ(j["b"]["name"], "slowed.db rank 2");
  bool forward = false;
  for (const auto& o : j["operations"]) {
    if (o["name"] == "forward") forward = o["change"] == "slower";
  }
  EXPECT_TRUE(forward);

  const CommandResult one = dreamscope("diff " + a.string() + " " + b.string() + " --rank 2 --format json");
  ASSERT_EQ(one.exit_code, 0) << one.out;
  EXPECT_EQ(nlohmann::json::parse(one.out)["b"]["name"], "slowed.db rank 2");
}

// A job given as a folder of per-rank Kineto traces: against itself every rank is paired and
// nothing changed; two of its ranks compare as two traces.
TEST(DiffCli, AJobFolderOfPerRankFiles) {
  const std::string job = "../shared/data/wild/param-dlrm-v100x8-nccl";
  DREAMSCOPE_REQUIRE_DATA(fs::path(DREAMSCOPE_SOURCE_DIR) / job);
  const CommandResult same = dreamscope("diff " + job + " '" + job + "/worker*.json' --format json");
  ASSERT_EQ(same.exit_code, 0) << same.out.substr(0, 2000);
  const auto j = nlohmann::json::parse(same.out);
  ASSERT_EQ(j["ranks"].size(), 8u);
  for (const auto& r : j["ranks"]) {
    EXPECT_EQ(r["rank_a"], r["rank_b"]);
    EXPECT_EQ(r["change_pct"], 0.0);
  }
  EXPECT_TRUE(j["most_changed_rank"].is_null());
  for (const auto& o : j["operations"]) EXPECT_EQ(o["change"], "unchanged") << o["name"];

  const CommandResult two = dreamscope("diff " + job + " " + job + " --ranks 0,3 --format json");
  ASSERT_EQ(two.exit_code, 0) << two.out.substr(0, 2000);
  const auto k = nlohmann::json::parse(two.out);
  EXPECT_EQ(k["a"]["name"], "param-dlrm-v100x8-nccl rank 0");
  EXPECT_EQ(k["b"]["name"], "param-dlrm-v100x8-nccl rank 3");
  EXPECT_TRUE(k["ranks"].empty());
  EXPECT_GT(k["gates"]["step_change_pct"].get<double>(), 0);
}

TEST(DiffCli, BadInputGetsOneLineNamingTheProblem) {
  LoopPair p;
  const std::string missing = (p.dir / "missing.db").string();
  const CommandResult no_file = dreamscope("diff " + p.a.string() + " " + missing);
  EXPECT_EQ(no_file.exit_code, 1) << no_file.out;
  EXPECT_NE(no_file.out.find(missing), std::string::npos) << no_file.out;
  EXPECT_EQ(lines(no_file.out), 1u) << no_file.out;

  const CommandResult no_rank = dreamscope("diff " + p.args() + " --rank 5");
  EXPECT_EQ(no_rank.exit_code, 1) << no_rank.out;
  EXPECT_NE(no_rank.out.find("a.db: the trace has no rank 5"), std::string::npos) << no_rank.out;
  EXPECT_EQ(lines(no_rank.out), 1u) << no_rank.out;

  const CommandResult bad_gate = dreamscope("diff " + p.args() + " --fail-if 'step_chnge_pct > 1'");
  EXPECT_EQ(bad_gate.exit_code, 1) << bad_gate.out;
  EXPECT_NE(bad_gate.out.find("step_chnge_pct"), std::string::npos) << bad_gate.out;
  EXPECT_EQ(lines(bad_gate.out), 1u) << bad_gate.out;

  const CommandResult not_condition = dreamscope("diff " + p.args() + " --fail-if 'step_ms_b * 2'");
  EXPECT_EQ(not_condition.exit_code, 1) << not_condition.out;
  EXPECT_NE(not_condition.out.find("is not a condition"), std::string::npos) << not_condition.out;

  const CommandResult no_step = dreamscope("diff " + p.args() + " --steps 42");
  EXPECT_EQ(no_step.exit_code, 1) << no_step.out;
  EXPECT_NE(no_step.out.find("a.db: no step numbered 42 (its steps: 1 to 3)"), std::string::npos) << no_step.out;

  const CommandResult unwritable = dreamscope("diff " + p.args() + " -o " + (p.dir / "no/such/dir.txt").string());
  EXPECT_EQ(unwritable.exit_code, 1) << unwritable.out;
  EXPECT_NE(unwritable.out.find("does not exist"), std::string::npos) << unwritable.out;

  EXPECT_EQ(dreamscope("diff " + p.args() + " --format pdf").exit_code, 2);
  EXPECT_EQ(dreamscope("diff " + p.a.string()).exit_code, 2);
  EXPECT_EQ(dreamscope("diff " + p.args() + " --rank 1 --ranks 0,1").exit_code, 2);
  EXPECT_EQ(dreamscope("diff " + p.args() + " --threshold -3").exit_code, 2);
}

// The fuzz reproducers of ../shared/data/fuzz (traces the other commands are tested on in
// hostile_input_test.cpp) as either side: a report, or one line naming the file.
TEST(DiffCli, HostileTracesGiveAReportOrOneLine) {
  const fs::path fuzz = fs::path(DREAMSCOPE_SHARED_DATA_DIR) / "fuzz";
  DREAMSCOPE_REQUIRE_DATA(fuzz);
  const std::string good = "tests/data/importers/kineto/pytorch-1.9-cpu-only.json";
  ScratchDir dir;
  const std::string report = (dir / "report").string();
  int files = 0;
  for (const auto& entry : fs::directory_iterator(fuzz)) {
    const std::string path = entry.path().string(), ext = entry.path().extension().string();
    if (ext == ".toml" || ext == ".md") continue;
    ++files;
    for (const std::string& args : {good + " " + path, path + " " + good, path + " " + path + " --allow-empty --format json"}) {
      const CommandResult r = dreamscope("diff " + args + " -o " + report);
      EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 1) << args << "\n" << r.out;
      if (r.exit_code == 1) {
        EXPECT_EQ(lines(r.out), 1u) << args << "\n" << r.out;
        EXPECT_NE(r.out.find(path), std::string::npos) << args << "\n" << r.out;
      }
    }
  }
  EXPECT_GE(files, 10);
}

TEST(DiffCli, HelpListsTheGateNamesAndComesAfterWhatif) {
  const CommandResult help = dreamscope("diff --help");
  ASSERT_EQ(help.exit_code, 0) << help.out;
  for (const char* name : {"step_change_pct", "slowest_step_change_pct", "top_regression_ms", "Examples:"}) {
    EXPECT_NE(help.out.find(name), std::string::npos) << name;
  }
  const CommandResult all = dreamscope("--help");
  const auto whatif = all.out.find("  whatif"), diff = all.out.find("  diff"), calibrate = all.out.find("  calibrate");
  ASSERT_NE(diff, std::string::npos) << all.out;
  EXPECT_LT(whatif, diff);
  EXPECT_LT(diff, calibrate);
}

// docs/diff.md promises that its examples run as written from the repository root: every line
// that starts with `$ dreamscope`, in order (a what-if writes the prediction a diff reads), files
// written under /tmp/ going to a scratch folder; a line that ends in `# exit N` exits with N.
TEST(DiffDocs, EveryExampleRuns) {
  const fs::path doc = fs::path(DREAMSCOPE_SOURCE_DIR) / "docs/diff.md";
  ASSERT_TRUE(fs::exists(doc)) << doc;
  DREAMSCOPE_REQUIRE_DATA(fs::path(DREAMSCOPE_SHARED_DATA_DIR) / "kineto-hta");
  ScratchDir dir;
  std::istringstream text(slurp(doc));
  const std::string prefix = "$ dreamscope ";
  int examples = 0;
  for (std::string line; std::getline(text, line);) {
    if (line.rfind(prefix, 0) != 0) continue;
    std::string args = line.substr(prefix.size());
    int expected = 0;
    if (const auto hash = args.find("# exit "); hash != std::string::npos) {
      expected = std::stoi(args.substr(hash + 7));
      args = args.substr(0, hash);
    }
    const std::string scratch = dir.path().string() + "/";
    for (std::size_t p = args.find("/tmp/"); p != std::string::npos; p = args.find("/tmp/", p + scratch.size())) {
      args.replace(p, 5, scratch);
    }
    const CommandResult r = dreamscope(args);
    EXPECT_EQ(r.exit_code, expected) << line << "\n" << r.out.substr(0, 2000);
    if (args.starts_with("diff")) ++examples;
  }
  EXPECT_GE(examples, 4);
}

} // namespace
} // namespace dreamscope
