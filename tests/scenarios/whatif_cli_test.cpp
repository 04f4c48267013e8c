// `dreamscope whatif` end to end: the built binary on a trace file written from a
// hand-written trace, checking reports and the exit codes CI relies on.
#include "scenario_traces.h"

#include <dreamscope/storage/storage.h>

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sys/wait.h>

namespace {

struct CommandRun {
  int exit_code = -1;
  std::string out; // stdout and stderr
};

CommandRun run_dreamscope(const std::string& args) {
  CommandRun r;
  const std::string command = std::string(DREAMSCOPE_BIN_DIR) + "/dreamscope " + args + " 2>&1";
  std::FILE* p = ::popen(command.c_str(), "r");
  if (p == nullptr) return r;
  std::array<char, 4096> buf{};
  std::size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = ::pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

class WhatIfCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("dreamscope-whatif-cli-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    // Steps of 400, 300, 300 ns; storage=2 predicts 350, 250, 250: speedup 300/250 = 1.2.
    dreamscope::write_trace(dreamscope::scenario_test::data_pipeline_trace(), trace());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string trace() const { return (dir_ / "pipeline.db").string(); }
  std::filesystem::path dir_;
};

} // namespace

TEST_F(WhatIfCli, ListsTheBuiltins) {
  const CommandRun r = run_dreamscope("whatif --list");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  for (const char* name : {"amp", "fused-optimizer", "cuda-graphs", "gpu", "data", "data-parallel", "straggler",
                           "interconnect"}) {
    EXPECT_NE(r.out.find(std::string("\n  ") + name + "\n"), std::string::npos) << name << "\n" << r.out;
  }
  EXPECT_NE(r.out.find("-p workers=0"), std::string::npos) << r.out;
}

TEST_F(WhatIfCli, TextReportHasPredictionAndDataStalls) {
  CommandRun r = run_dreamscope("whatif " + trace() + " -s data -p storage=2");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("measured 300 ns, replayed 300 ns"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("250 ns"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1.200×"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("fetch stall"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("NOTE: no task"), std::string::npos) << r.out;

  // A CPU-only trace has no kernels for amp to scale.
  r = run_dreamscope("whatif " + trace() + " -s amp");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("NOTE: no task of this trace matched the scenario's selectors"), std::string::npos) << r.out;
}

TEST_F(WhatIfCli, GatesEndWithExitCodeThree) {
  CommandRun r = run_dreamscope("whatif " + trace() + " -s data -p storage=2 --fail-if 'speedup < 1.10'");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  r = run_dreamscope("whatif " + trace() + " -s data -p storage=2 --fail-if 'speedup < 1.25'");
  EXPECT_EQ(r.exit_code, 3) << r.out;
  EXPECT_NE(r.out.find("gate failed: speedup < 1.25"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1.200×"), std::string::npos) << "the report is still written\n" << r.out;
  r = run_dreamscope("whatif " + trace() + " -s data -p storage=2 --fail-if 'data.predicted_step_ms > 0.0002'");
  EXPECT_EQ(r.exit_code, 3) << r.out;
}

TEST_F(WhatIfCli, BadInputIsExitOneWithTheReason) {
  CommandRun r = run_dreamscope("whatif " + trace() + " -s data --fail-if 'sppedup < 1.1'");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("unknown name 'sppedup'"), std::string::npos) << r.out;

  r = run_dreamscope("whatif " + trace() + " -s data -p wokers=2");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("no chosen scenario has a parameter 'wokers'"), std::string::npos) << r.out;

  const auto bad = dir_ / "bad.toml";
  std::ofstream(bad) << "name = \"bad\"\n[[transform]]\nop = \"scale\"\nselect = { kind = \"kernel\" }\nratio = -1\n";
  r = run_dreamscope("whatif " + trace() + " -s " + bad.string());
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find(bad.string() + ":5:9: 'ratio' must be a finite number >= 0, got -1"), std::string::npos) << r.out;

  r = run_dreamscope("whatif " + (dir_ / "missing.db").string() + " -s amp");
  EXPECT_EQ(r.exit_code, 1) << r.out;
}

TEST_F(WhatIfCli, ParametersBindToTheScenarioBeforeThem) {
  // storage=2 → 250 ns, synthetic → 100 ns, both together → 100 ns.
  CommandRun r =
      run_dreamscope("whatif " + trace() + " -s data -p storage=2 -s data -p synthetic=true --format json --no-data-stalls");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  const auto first = r.out.find("\"predicted_step_ns\": 250.0");
  const auto second = r.out.find("\"predicted_step_ns\": 100.0");
  EXPECT_NE(first, std::string::npos) << r.out;
  EXPECT_NE(second, std::string::npos) << r.out;
  EXPECT_LT(first, second) << r.out;
  // Before any -s: every scenario declaring it.
  r = run_dreamscope("whatif " + trace() + " -p storage=2 -s data -s data --format json --no-data-stalls");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.find("\"predicted_step_ns\": 300.0"), std::string::npos) << r.out;
}

TEST_F(WhatIfCli, UsageErrorsAreExitTwo) {
  EXPECT_EQ(run_dreamscope("whatif " + trace()).exit_code, 2);
  EXPECT_EQ(run_dreamscope("whatif " + trace() + " -s amp --format html").exit_code, 2);
}

TEST_F(WhatIfCli, MarkdownAndJsonForCi) {
  CommandRun r = run_dreamscope("whatif " + trace() + " -s data -p storage=2 -s data -p data.cache=1 --format md");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("| scenario | predicted step | speedup |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| data + data |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("<details>"), std::string::npos) << r.out;

  r = run_dreamscope("whatif " + trace() + " -s data -p synthetic=true --format json");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("\"predicted_step_ns\": 100.0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"fetch_stall_ns\": 100.0"), std::string::npos) << r.out;
}

TEST_F(WhatIfCli, WritesThePredictedTrace) {
  const auto predicted = dir_ / "predicted.db";
  const CommandRun r = run_dreamscope("whatif " + trace() + " -s data -p storage=2 -o " + predicted.string());
  EXPECT_EQ(r.exit_code, 0) << r.out;
  const dreamscope::Trace t = dreamscope::read_trace(predicted);
  EXPECT_EQ(t.source(), dreamscope::TraceSource::Simulator);
  // The last step ends at 850 ns in the prediction (1000 as measured).
  EXPECT_EQ(t.end_time() - t.begin_time(), 850);
}
