// `dreamscope analyze` end to end: the built binary on a trace.db and on a real PyTorch
// profiler trace, every format, and the HTML report rendered by headless Chromium.
#include "../common/required_data.h"
#include "analysis_traces.h"
#include "png.h"
#include "../cli/run_command.h"
#include "../common/scratch_dir.h"

#include <dreamscope/storage/trace_file.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

namespace dreamscope {
namespace {

namespace fs = std::filesystem;
using test::TraceMaker;
using test::us;

using test::ScratchDir;
using test::CommandResult;
using test::run_dreamscope;

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A training loop's worth of operations so that every chart has something to draw.
fs::path write_workload(const ScratchDir& dir) {
  TraceMaker m;
  test::add_hta_workload(m);
  m.annotation("ProfilerStep#1", us(80), us(160), "user_annotation");
  m.annotation("ProfilerStep#2", us(160), us(260), "user_annotation");
  m.annotation("forward", us(85), us(128), "operation");
  m.annotation("backward", us(128), us(158), "operation");
  m.annotation("optimizer", us(158), us(240), "operation");
  const fs::path path = dir / "trace.db";
  write_trace(std::move(m).build(), path);
  return path;
}

TEST(AnalyzeCli, TextByDefault) {
  ScratchDir dir;
  const fs::path trace = write_workload(dir);
  const CommandResult a = run_dreamscope("analyze " + trace.string());
  ASSERT_EQ(a.exit_code, 0) << a.out;
  for (const char* s : {"Cross-stack breakdown", "forward", "Temporal breakdown", "Top kernels"}) {
    EXPECT_NE(a.out.find(s), std::string::npos) << s;
  }
}

TEST(AnalyzeCli, JsonToAFileWithTheNumbersOfTheAnalyses) {
  ScratchDir dir;
  const fs::path trace = write_workload(dir);
  const fs::path out = dir / "report.json";
  const CommandResult r = run_dreamscope("analyze " + trace.string() + " --format json -o " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(r.out.empty()) << r.out;
  const auto j = nlohmann::json::parse(slurp(out));
  EXPECT_EQ(j["schema"], "dreamscope-analyze/1");
  EXPECT_EQ(j["trace"]["name"], "trace.db");
  EXPECT_EQ(j["hta"]["temporal"]["kernel_time_us"], 110);
  EXPECT_EQ(j["hta"]["temporal"]["idle_us"], 65);
  // ProfilerStep#2 launched nothing, so as the last step it is dropped (TensorBoard's rule);
  // ProfilerStep#1 runs to the end of the last kernel it launched.
  ASSERT_EQ(j["steps"]["steps"].size(), 1u);
  EXPECT_EQ(j["steps"]["steps"][0]["end_ns"], us(210));
  bool found = false;
  for (const auto& o : j["cross_stack"]["operations"]) found = found || o["name"] == "forward";
  EXPECT_TRUE(found);
}

TEST(AnalyzeCli, OnlyAndMarkdown) {
  ScratchDir dir;
  const fs::path trace = write_workload(dir);
  const CommandResult r = run_dreamscope("analyze " + trace.string() + " --format md --only top-kernels,steps");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("## Top kernels by total time"), std::string::npos);
  EXPECT_NE(r.out.find("## Step time breakdown"), std::string::npos);
  EXPECT_EQ(r.out.find("Cross-stack"), std::string::npos);
  EXPECT_NE(r.out.find("| gemm | 3 |"), std::string::npos);
}

TEST(AnalyzeCli, OnlyCriticalPath) {
  ScratchDir dir;
  const fs::path trace = write_workload(dir);
  const CommandResult text = run_dreamscope("analyze " + trace.string() + " --only critical-path");
  ASSERT_EQ(text.exit_code, 0) << text.out;
  EXPECT_NE(text.out.find("== Critical path (replay simulator) =="), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("-- Per step --"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("Cross-stack"), std::string::npos);
  EXPECT_EQ(text.out.find("Top kernels"), std::string::npos);

  const CommandResult json = run_dreamscope("analyze " + trace.string() + " --format json --only critical-path");
  ASSERT_EQ(json.exit_code, 0) << json.out;
  const auto j = nlohmann::json::parse(json.out);
  ASSERT_EQ(j["sections"], nlohmann::json::array({"critical-path"}));
  EXPECT_FALSE(j.contains("hta"));
  const auto& cp = j["critical_path"];
  EXPECT_TRUE(cp["available"].get<bool>());
  std::int64_t sum = 0;
  for (const auto& [name, ns] : cp["run"]["by_category_ns"].items()) sum += ns.get<std::int64_t>();
  EXPECT_EQ(sum, cp["replayed_span_ns"].get<std::int64_t>());
  EXPECT_EQ(cp["run"]["length_ns"], cp["replayed_span_ns"]);
  EXPECT_EQ(cp["steps"].size(), 2u);
  EXPECT_EQ(cp["steps"][0]["name"], "ProfilerStep#1");
}

// Issue 38: every step in three tables made the JSON report of 100k one-op steps 189 MB, ten
// times its input. By default a per-step table lists the first, the slowest and the median
// steps (at most --top in text and HTML, 1000 in JSON) and says how many it left out;
// --all-steps lists every one.
TEST(AnalyzeCli, AReportOfManyStepsIsBoundedByDefaultAndCompleteOnRequest) {
  ScratchDir dir;
  constexpr int kSteps = 2500, kSlow = 1700;
  TraceMaker m;
  TimeNs at = 0;
  for (int i = 0; i < kSteps; ++i) {
    const TimeNs length = i == kSlow ? us(50) : us(9);
    m.annotation("ProfilerStep#" + std::to_string(i), at, at + length, "user_annotation");
    m.annotation("aten::mm", at + us(1), at + us(6), "cpu_op");
    at += length + us(1);
  }
  const fs::path trace = dir / "steps.db";
  write_trace(std::move(m).build(), trace);
  const std::string analyze = "analyze " + trace.string() + " --only steps,data-stalls,critical-path";
  auto tables = [](const nlohmann::json& j) {
    return std::vector<nlohmann::json>{j["steps"], j["data_stalls"], j["critical_path"]};
  };
  auto name_of = [](const nlohmann::json& row) { return row.contains("name") ? row["name"] : row["step"]; };

  const fs::path bounded = dir / "bounded.json", all = dir / "all.json";
  ASSERT_EQ(run_dreamscope(analyze + " --format json -o " + bounded.string()).exit_code, 0);
  for (const nlohmann::json& t : tables(nlohmann::json::parse(slurp(bounded)))) {
    EXPECT_EQ(t["step_count"], kSteps);
    EXPECT_EQ(t["steps_left_out"], kSteps - 1000);
    ASSERT_EQ(t["steps"].size(), 1000u);
    std::vector<int> index;
    for (const auto& row : t["steps"]) index.push_back(row["index"]);
    EXPECT_TRUE(std::is_sorted(index.begin(), index.end()));
    EXPECT_EQ(index.front(), 0);
    EXPECT_NE(std::find(index.begin(), index.end(), kSlow), index.end()) << "the slowest step is listed";
    for (const auto& row : t["steps"]) {
      EXPECT_EQ(name_of(row), "ProfilerStep#" + std::to_string(row["index"].get<int>()));
    }
  }
  ASSERT_EQ(run_dreamscope(analyze + " --format json --all-steps -o " + all.string()).exit_code, 0);
  for (const nlohmann::json& t : tables(nlohmann::json::parse(slurp(all)))) {
    EXPECT_EQ(t["step_count"], kSteps);
    EXPECT_EQ(t["steps_left_out"], 0);
    ASSERT_EQ(t["steps"].size(), static_cast<std::size_t>(kSteps));
    for (int i = 0; i < kSteps; ++i) ASSERT_EQ(t["steps"][static_cast<std::size_t>(i)]["index"], i);
  }
  EXPECT_LT(fs::file_size(bounded), fs::file_size(all) / 2);

  // Text and HTML: --top steps a table, and a note that says which and how to get the rest.
  const std::string note = "15 of 2500 steps listed: the first 5, the 5 slowest and 5 around the median duration; "
                           "--all-steps lists every step.";
  for (const char* format : {"text", "html"}) {
    const CommandResult r = run_dreamscope(analyze + " --format " + format);
    ASSERT_EQ(r.exit_code, 0) << r.out.substr(0, 2000);
    std::size_t notes = 0;
    for (std::size_t p = r.out.find(note); p != std::string::npos; p = r.out.find(note, p + 1)) ++notes;
    EXPECT_EQ(notes, 3u) << format;
    EXPECT_NE(r.out.find("ProfilerStep#1700"), std::string::npos) << format;
    EXPECT_EQ(r.out.find("ProfilerStep#2000"), std::string::npos) << format;
    EXPECT_LT(r.out.size(), 60000u) << format;
    const CommandResult every = run_dreamscope(analyze + " --format " + format + " --all-steps");
    ASSERT_EQ(every.exit_code, 0);
    EXPECT_EQ(every.out.find("steps listed"), std::string::npos) << format;
    EXPECT_NE(every.out.find("ProfilerStep#2000"), std::string::npos) << format;
  }
}

TEST(AnalyzeCli, ErrorsSayWhatWentWrong) {
  ScratchDir dir;
  const fs::path trace = write_workload(dir);
  const CommandResult bad_only = run_dreamscope("analyze " + trace.string() + " --only bogus");
  EXPECT_EQ(bad_only.exit_code, 2);
  EXPECT_NE(bad_only.out.find("unknown analysis 'bogus'"), std::string::npos) << bad_only.out;
  const CommandResult bad_format = run_dreamscope("analyze " + trace.string() + " --format pdf");
  EXPECT_EQ(bad_format.exit_code, 2);
  const CommandResult missing = run_dreamscope("analyze " + (dir / "missing.db").string());
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.out.find("missing.db"), std::string::npos) << missing.out;
}

TEST(AnalyzeCli, ReadsPyTorchProfilerTracesDirectly) {
  const fs::path trace = fs::path(DREAMSCOPE_SHARED_DATA_DIR) / "kineto-hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz";
  DREAMSCOPE_REQUIRE_DATA(trace);
  const CommandResult r = run_dreamscope("analyze " + trace.string() + " --format json --only hta");
  ASSERT_EQ(r.exit_code, 0) << r.out.substr(0, 2000);
  const auto j = nlohmann::json::parse(r.out.substr(r.out.find('{')));
  std::map<std::string, std::pair<std::int64_t, std::int64_t>> gpu;
  for (const auto& a : j["hta"]["gpu_annotations"]) gpu[a["name"]] = {a["sum_us"], a["count"]};
  EXPECT_EQ(gpu["DistributedDataParallel.forward"], std::make_pair(std::int64_t{123880}, std::int64_t{4}));
}

// docs/analyze.md promises that its examples run as written from the repository root.
TEST(AnalyzeDocs, EveryExampleRuns) {
  const fs::path doc = fs::path(DREAMSCOPE_SOURCE_DIR) / "docs/analyze.md";
  ASSERT_TRUE(fs::exists(doc)) << doc;
  DREAMSCOPE_REQUIRE_DATA(fs::path(DREAMSCOPE_SHARED_DATA_DIR) / "kineto-hta");
  ScratchDir dir;
  std::istringstream lines(slurp(doc));
  const std::string prefix = "$ dreamscope analyze ";
  int examples = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(prefix, 0) != 0) continue;
    std::string args = line.substr(prefix.size());
    // Files the examples write go to the scratch directory, not the real /tmp.
    const std::string scratch = dir.path().string() + "/";
    for (std::size_t p = args.find("/tmp/"); p != std::string::npos; p = args.find("/tmp/", p + scratch.size())) {
      args.replace(p, 5, scratch);
    }
    const CommandResult r = run_dreamscope("analyze " + args);
    EXPECT_EQ(r.exit_code, 0) << line << "\n" << r.out.substr(0, 2000);
    ++examples;
  }
  EXPECT_GE(examples, 3);
}

// Chromium is Debian's `chromium`; without it the rendering cannot be checked here.
std::string find_chromium() {
  for (const char* c : {"chromium", "chromium-browser", "google-chrome"}) {
    const std::string probe = std::string("command -v ") + c + " >/dev/null 2>&1";
    if (std::system(probe.c_str()) == 0) return c;
  }
  return {};
}

TEST(AnalyzeHtml, RendersInHeadlessChromiumWithItsCharts) {
  const std::string chromium = find_chromium();
  if (chromium.empty()) GTEST_SKIP() << "chromium is not installed: the HTML screenshot check needs it";
  ScratchDir dir;
  const fs::path trace = write_workload(dir);
  const fs::path html = dir / "report.html";
  const CommandResult r = run_dreamscope("analyze " + trace.string() + " --format html -o " + html.string());
  ASSERT_EQ(r.exit_code, 0) << r.out;

  const fs::path png = dir / "shot.png";
  const std::string shot = chromium +
                           " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run"
                           " --disable-background-networking --disable-component-update --disable-sync"
                           " --user-data-dir=" + (dir / "profile").string() + " --screenshot=" + png.string() +
                           " --window-size=1280,2000 file://" + html.string() + " >/dev/null 2>&1";
  ASSERT_EQ(std::system(shot.c_str()), 0) << shot;
  if (const char* keep = std::getenv("DREAMSCOPE_KEEP_SCREENSHOT")) fs::copy_file(png, keep, fs::copy_options::overwrite_existing);
  const test::Image img = test::read_png(png);
  ASSERT_EQ(img.width, 1280);
  ASSERT_EQ(img.height, 2000);

  auto close = [](test::Rgb a, test::Rgb b) {
    return std::abs(a.r - b.r) <= 3 && std::abs(a.g - b.g) <= 3 && std::abs(a.b - b.b) <= 3;
  };
  struct Found {
    long count = 0;
    long sum_y = 0;
    double mean_y() const { return count ? static_cast<double>(sum_y) / static_cast<double>(count) : -1; }
  };
  // The last: CPU work on the critical path.
  const std::vector<std::string> colours = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#2f4b7c"};
  std::vector<Found> found(colours.size());
  long non_white = 0;
  for (int y = 0; y < img.height; ++y) {
    for (int x = 0; x < img.width; ++x) {
      const test::Rgb p = img.at(x, y);
      if (!(p.r > 245 && p.g > 245 && p.b > 245)) ++non_white;
      for (std::size_t c = 0; c < colours.size(); ++c) {
        if (close(p, test::parse_colour(colours[c]))) {
          ++found[c].count;
          found[c].sum_y += y;
        }
      }
    }
  }
  EXPECT_GT(non_white, 20000) << "the page looks blank";
  for (std::size_t c = 0; c < colours.size(); ++c) EXPECT_GT(found[c].count, 100) << colours[c] << " not drawn";
  // The cross-stack bars (framework, CUDA API, CPU+GPU) come first on the page, the top
  // kernels chart below the timeline.
  EXPECT_LT(found[0].mean_y(), found[4].mean_y());
  EXPECT_LT(found[3].mean_y(), found[4].mean_y());
  EXPECT_LT(found[3].mean_y(), 600);
  // The critical path's bars come after the top kernels and the steps.
  EXPECT_LT(found[4].mean_y(), found[5].mean_y());
}

} // namespace
} // namespace dreamscope
