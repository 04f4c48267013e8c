// `dreamscope replay` end to end: a PyTorch-profiler trace in, the report and a predicted
// trace.db out; bad input gives one line naming the file.
#include "../common/required_data.h"
#include "synthetic_training_trace.h"

#include <dreamscope/storage/storage.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace dreamscope {
namespace {

struct Ran {
  int exit_code = -1;
  std::string out;
};

Ran run(const std::string& args) {
  Ran r;
  const std::string command = std::string(DREAMSCOPE_BIN_DIR) + "/dreamscope " + args + " 2>&1";
  std::FILE* p = ::popen(command.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  std::size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = ::pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  return r;
}

// Four 900 ns steps 1 µs apart, each a range the trace's calibration says cost 100 ns.
void write_traced_steps(const std::filesystem::path& path) {
  TraceBuilder b;
  const auto proc = b.add_process(ProcessInfo{.pid = 7, .name = "train"});
  const TrackId t = b.thread_track(proc, 7, "main");
  for (int i = 0; i < 4; ++i) {
    AnnotationRecord a;
    a.track = t;
    a.name = b.intern("step");
    a.category = b.intern("step");
    a.payload = i;
    a.start = i * 1000;
    a.end = i * 1000 + 900;
    b.add(a);
  }
  b.add(CalibrationRecord{.event_kind = "nvtx_range", .cost_ns = 100, .samples = 10, .method = "test"});
  write_trace(std::move(b).build(), path);
}

class ReplayCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(std::string(DREAMSCOPE_BIN_DIR) + "/dreamscope")) GTEST_SKIP() << "dreamscope not built";
    dir_ = std::filesystem::temp_directory_path() / ("dreamscope-replay-cli-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(ReplayCli, ReportsStepsAndWritesThePrediction) {
  const std::string trace = std::string(DREAMSCOPE_SHARED_DATA_DIR) +
                            "/kineto-hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz";
  DREAMSCOPE_REQUIRE_DATA(trace);
  const auto predicted = dir_ / "predicted.db";
  const Ran r = run("replay " + trace + " --format json -o " + predicted.string());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["source"], "kineto");
  ASSERT_EQ(j["steps"].size(), 5u);
  EXPECT_EQ(j["steps"][0]["name"], "ProfilerStep#101");
  EXPECT_EQ(j["steps"][0]["measured_ns"], j["steps"][0]["predicted_ns"]);
  EXPECT_EQ(j["measured_ns"], j["predicted_ns"]);
  const Trace p = read_trace(predicted);
  EXPECT_EQ(p.source(), TraceSource::Simulator);
  EXPECT_EQ(p.meta_value("predicted_from"), "kineto");

  const Ran text = run("replay " + trace + " --max-steps 2");
  ASSERT_EQ(text.exit_code, 0) << text.out;
  EXPECT_NE(text.out.find("ProfilerStep#102"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("ProfilerStep#103"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("3 more steps"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("+0.000 %"), std::string::npos) << text.out;
}

TEST_F(ReplayCli, CorrectsOverheadFromCalibrationRows) {
  write_traced_steps(dir_ / "traced.db");
  const Ran r = run("replay " + (dir_ / "traced.db").string() + " --correct-overhead --format json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["overhead_corrected"], true);
  EXPECT_EQ(j["overhead"]["removed_ns"], 400);
  EXPECT_EQ(j["steps"][3]["name"], "step 3");
  EXPECT_EQ(j["steps"][3]["predicted_ns"], 800);
  EXPECT_EQ(j["predicted_ns"], 3900 - 400);

  // A cost measured elsewhere replaces the trace's own.
  const Ran overridden = run("replay " + (dir_ / "traced.db").string() + " --cost nvtx_range=50 --format json");
  ASSERT_EQ(overridden.exit_code, 0) << overridden.out;
  EXPECT_EQ(nlohmann::json::parse(overridden.out)["overhead"]["removed_ns"], 200);
  const Ran bad = run("replay " + (dir_ / "traced.db").string() + " --cost nvtx_range=fast");
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
  EXPECT_NE(bad.out.find("KIND=NANOSECONDS"), std::string::npos) << bad.out;
}

// `whatif --correct-overhead`: the scenarios start from the untraced run that replay predicts.
TEST_F(ReplayCli, WhatIfPredictsFromTheCorrectedBaseline) {
  write_traced_steps(dir_ / "traced.db");
  const std::string trace = (dir_ / "traced.db").string();
  const Ran traced = run("whatif " + trace + " -s data -p synthetic=true --format json");
  ASSERT_EQ(traced.exit_code, 0) << traced.out;
  const auto jt = nlohmann::json::parse(traced.out);
  EXPECT_FALSE(jt.contains("overhead_correction"));
  EXPECT_EQ(jt["replayed_step_ns"], 900);
  const Ran corrected = run("whatif " + trace + " -s data -p synthetic=true --correct-overhead --format json");
  ASSERT_EQ(corrected.exit_code, 0) << corrected.out;
  const auto jc = nlohmann::json::parse(corrected.out);
  EXPECT_EQ(jc["overhead_correction"]["removed_ns"], 400);
  EXPECT_EQ(jc["measured_step_ns"], 900);
  EXPECT_EQ(jc["replayed_step_ns"], 800);
  EXPECT_EQ(jc["predictions"][0]["predicted_step_ns"], 800);
  const Ran text = run("whatif " + trace + " -s data --correct-overhead");
  ASSERT_EQ(text.exit_code, 0) << text.out;
  EXPECT_NE(text.out.find("untraced (predicted) 800 ns"), std::string::npos) << text.out;
}

TEST_F(ReplayCli, UnreadableTraceIsOneLineNamingTheFile) {
  const auto bad = dir_ / "not-a-trace.db";
  std::FILE* f = std::fopen(bad.c_str(), "w");
  std::fputs("hello", f);
  std::fclose(f);
  const Ran r = run("replay " + bad.string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find(bad.string()), std::string::npos) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  EXPECT_EQ(run("replay").exit_code, 2);
}

} // namespace
} // namespace dreamscope
