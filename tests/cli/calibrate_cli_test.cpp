// `dreamscope calibrate` end to end: its two children (untraced, and under the real
// LD_PRELOAD tracer), the costs it prints, and --apply into a copy of a real GPU trace, which
// `replay --correct-overhead` then charges. Where a GPU is, kernel launches are timed too
// (cuda_launch); where none is, the command says why and writes no such row.
#include "../common/scratch_dir.h"
#include "run_command.h"

#include <dreamscope/storage/trace_file.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <optional>
#include <string>

namespace dreamscope {
namespace {

namespace fs = std::filesystem;

const fs::path kGpuTrace = fs::path(DREAMSCOPE_SOURCE_DIR) / "tests/data/gpu/h200_visit/cuda_train_no_loading.db";

std::optional<double> calibration_row(const fs::path& trace, std::string_view kind) {
  const Trace loaded = read_trace(trace);
  for (const auto& c : loaded.calibration()) {
    if (c.event_kind == kind) return c.cost_ns;
  }
  return std::nullopt;
}

// The costs of the JSON array the command printed, by kind (stderr's lines come first).
std::map<std::string, double> printed_costs(const std::string& out) {
  std::map<std::string, double> costs;
  const auto at = out.find('[');
  if (at == std::string::npos) return costs;
  for (const auto& row : nlohmann::json::parse(out.substr(at))) costs[row.at("event_kind")] = row.at("cost_ns");
  return costs;
}

TEST(Calibrate, MeasuresEachKindUntracedAndTracedAndWritesTheCostsIntoATrace) {
  test::ScratchDir dir("calibrate_cli");
  const fs::path trace = dir.path() / "run.db";
  fs::copy_file(kGpuTrace, trace);
  const auto r = test::run_dreamscope("calibrate --rounds 3 --batch 2000 --json --apply " + trace.string());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto costs = printed_costs(r.out);
  for (const char* kind : {"nvtx_range", "nvtx_range_registered", "nvtx_mark"}) {
    ASSERT_TRUE(costs.count(kind)) << kind << "\n" << r.out;
    EXPECT_GE(costs.at(kind), 0) << kind;
    EXPECT_DOUBLE_EQ(calibration_row(trace, kind).value_or(-1), costs.at(kind)) << kind;
  }
  if (costs.count("cuda_launch")) {
    // A GPU: launching an empty kernel costs more recorded than not.
    EXPECT_GT(costs.at("cuda_launch"), 0) << r.out;
    EXPECT_DOUBLE_EQ(calibration_row(trace, "cuda_launch").value_or(-1), costs.at("cuda_launch"));
  } else {
    // None: said, with why, and nothing written for it.
    EXPECT_NE(r.out.find("dreamscope calibrate: cuda_launch not measured: no CUDA"), std::string::npos) << r.out;
    EXPECT_FALSE(calibration_row(trace, "cuda_launch")) << r.out;
  }
}

TEST(Calibrate, LaunchesAloneAddOnlyTheirCostOrSayWhyNot) {
  test::ScratchDir dir("calibrate_cuda_only");
  const fs::path a = dir.path() / "a.db", b = dir.path() / "b.db";
  fs::copy_file(kGpuTrace, a);
  fs::copy_file(kGpuTrace, b);
  const auto before = read_trace(a).calibration();
  const auto r = test::run_dreamscope("calibrate --cuda-only --rounds 3 --apply " + a.string() + " --apply " + b.string());
  const auto after = read_trace(a).calibration();
  if (r.exit_code == 0) {
    EXPECT_GT(calibration_row(a, "cuda_launch").value_or(0), 0) << r.out;
    EXPECT_EQ(calibration_row(a, "cuda_launch"), calibration_row(b, "cuda_launch"));
    EXPECT_EQ(after.size(), before.size() + 1) << "only cuda_launch is added";
    return;
  }
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("cuda_launch not measured: no CUDA"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("nothing measured, nothing written"), std::string::npos) << r.out;
  EXPECT_EQ(after.size(), before.size());
  EXPECT_FALSE(calibration_row(b, "cuda_launch"));
}

// A recorded H200 trace of cuda_train's launches and kernels, with the cost of a launch given:
// replay charges every kernel launch call it, says how many, and predicts a shorter run than
// without it.
TEST(Calibrate, ReplayChargesAGpuTracesKernelLaunchesTheirCost) {
  const auto plain = test::run_dreamscope("replay --correct-overhead --format json " + kGpuTrace.string());
  ASSERT_EQ(plain.exit_code, 0) << plain.out;
  const auto charged =
      test::run_dreamscope("replay --format json --cost cuda_api=50 --cost cuda_launch=2000 " + kGpuTrace.string());
  ASSERT_EQ(charged.exit_code, 0) << charged.out;
  const auto p = nlohmann::json::parse(plain.out), c = nlohmann::json::parse(charged.out);
  EXPECT_EQ(p.at("overhead").at("launches_charged"), 0);
  const Trace loaded = read_trace(kGpuTrace);
  const auto kernels = loaded.gpu_ops().size();
  const std::int64_t launches = c.at("overhead").at("launches_charged");
  EXPECT_GT(launches, 0);
  EXPECT_LE(static_cast<std::size_t>(launches), kernels);
  EXPECT_DOUBLE_EQ(c.at("overhead").at("cuda_launch_ns"), 2000);
  EXPECT_LT(c.at("predicted_ns").get<double>(), p.at("predicted_ns").get<double>());

  const auto text = test::run_dreamscope("replay --correct-overhead " + kGpuTrace.string());
  EXPECT_NE(text.out.find("the trace has no cuda_launch cost"), std::string::npos) << text.out;
}

} // namespace
} // namespace dreamscope
