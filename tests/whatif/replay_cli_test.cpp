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

namespace dreamscope::whatif {
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

// `n` steps 1 µs apart, 900 to 960 ns each, but step `slow`: 5 µs.
void write_many_steps(const std::filesystem::path& path, int n, int slow) {
  TraceBuilder b;
  const auto proc = b.add_process(ProcessInfo{.pid = 7, .name = "train"});
  const TrackId t = b.thread_track(proc, 7, "main");
  const StringId step = b.intern("step");
  TimeNs at = 0;
  for (int i = 0; i < n; ++i) {
    const TimeNs length = i == slow ? 5000 : 900 + 10 * (i % 7);
    b.add(AnnotationRecord{.track = t, .start = at, .end = at + length, .name = step, .category = step, .payload = i});
    at += length + 100;
  }
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

  // Two of the five steps, as analyze picks them: the first and the slowest (#105, 95.699 ms).
  const Ran text = run("replay " + trace + " --max-steps 2");
  ASSERT_EQ(text.exit_code, 0) << text.out;
  EXPECT_NE(text.out.find("ProfilerStep#101"), std::string::npos) << text.out;
  for (const char* left_out : {"ProfilerStep#102", "ProfilerStep#103", "ProfilerStep#104"}) {
    EXPECT_EQ(text.out.find(left_out), std::string::npos) << text.out;
  }
  EXPECT_NE(text.out.find("ProfilerStep#105"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("2 of 5 steps listed: the first 1 and the 1 slowest; --all-steps lists every step."),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("+0.000 %"), std::string::npos) << text.out;
  const Ran all = run("replay " + trace + " --max-steps 2 --all-steps");
  ASSERT_EQ(all.exit_code, 0) << all.out;
  EXPECT_NE(all.out.find("ProfilerStep#103"), std::string::npos) << all.out;
  EXPECT_EQ(all.out.find("steps listed"), std::string::npos) << all.out;
}

// As analyze's per-step tables: the JSON lists at most 1000 steps (or --max-steps, if more),
// the first, the slowest and those around the median, and says how many it left out;
// --all-steps lists every one. The text lists --max-steps of them.
TEST_F(ReplayCli, ListsABoundedChoiceOfManyStepsUnlessAskedForAll) {
  const auto path = dir_ / "steps.db";
  write_many_steps(path, 1500, 1234);
  const Ran r = run("replay " + path.string() + " --format json");
  ASSERT_EQ(r.exit_code, 0) << r.out.substr(0, 2000);
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["step_count"], 1500);
  EXPECT_EQ(j["steps_left_out"], 500);
  ASSERT_EQ(j["steps"].size(), 1000u);
  bool slow_listed = false;
  for (std::size_t k = 0; k < j["steps"].size(); ++k) {
    const auto& s = j["steps"][k];
    const std::size_t index = s["index"];
    if (k > 0) {
      EXPECT_LT(j["steps"][k - 1]["index"].get<std::size_t>(), index);
    }
    EXPECT_EQ(s["name"], "step " + std::to_string(index));
    slow_listed |= index == 1234;
  }
  EXPECT_EQ(j["steps"][0]["index"], 0);
  EXPECT_EQ(j["steps"][333]["index"], 333); // the first third: 334 steps
  EXPECT_TRUE(slow_listed);

  const Ran all = run("replay " + path.string() + " --format json --all-steps");
  ASSERT_EQ(all.exit_code, 0);
  const auto ja = nlohmann::json::parse(all.out);
  EXPECT_EQ(ja["steps"].size(), 1500u);
  EXPECT_EQ(ja["steps_left_out"], 0);
  EXPECT_EQ(ja["steps"][1499]["index"], 1499);
  EXPECT_EQ(ja["predicted_ns"], j["predicted_ns"]);
  const Ran more = run("replay " + path.string() + " --format json --max-steps 1200");
  ASSERT_EQ(more.exit_code, 0);
  EXPECT_EQ(nlohmann::json::parse(more.out)["steps"].size(), 1200u);

  const Ran text = run("replay " + path.string());
  ASSERT_EQ(text.exit_code, 0) << text.out;
  EXPECT_NE(text.out.find("50 of 1500 steps listed: the first 17, the 17 slowest and 16 around the median "
                          "duration; --all-steps lists every step."),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("step 1234 "), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("step 1499 "), std::string::npos) << text.out;
  // The mean and the worst error are over every step.
  EXPECT_NE(text.out.find("mean step"), std::string::npos) << text.out;
  const Ran help = run("replay --help");
  EXPECT_NE(help.out.find("--all-steps"), std::string::npos) << help.out;
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
} // namespace dreamscope::whatif
