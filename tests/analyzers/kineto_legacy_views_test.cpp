// The TensorBoard plugin's operator view and step breakdown on traces of PyTorch without Kineto
// (tests/data/importers/kineto/autograd-legacy, recorded with Debian's python3-torch 1.13.1):
// the importer tells operators from record_function ranges by their names, and these views
// read only the operators. The numbers are the files' own, with Python's json: the calls and
// summed dur of each name, and for aten::linear the dur less that of the events directly
// nested in it (aten::t and aten::addmm).
#include <dreamscope/analyzers/tensorboard.h>
#include <dreamscope/storage/importers.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>

namespace dreamscope::analyzers {
namespace {

Trace legacy_trace(const std::string& name) {
  return load_trace(std::filesystem::path(DREAMSCOPE_TEST_DATA_DIR) / "importers" / "kineto" / "autograd-legacy" /
                    name);
}

const OperatorStats* row(const std::vector<OperatorStats>& rows, std::string_view name) {
  auto it = std::find_if(rows.begin(), rows.end(), [&](const OperatorStats& r) { return r.name == name; });
  return it == rows.end() ? nullptr : &*it;
}

TEST(KinetoLegacyViews, OperatorViewListsTheOperatorsAndNotTheRanges) {
  const OperatorKernelViews v = operator_kernel_views(legacy_trace("autograd-profile-train.json"));
  const OperatorStats* linear = row(v.by_name, "aten::linear");
  ASSERT_NE(linear, nullptr);
  EXPECT_EQ(linear->calls, 4);
  EXPECT_EQ(linear->host, 290'000);
  EXPECT_EQ(linear->self_host, 33'000);
  // The file has 4 aten::addmm summing 188 µs, but the last ({"ts": 2083, "dur": 8}) ends 1 µs
  // after its aten::linear ({"ts": 2078, "dur": 12}): the exporter writes whole µs, rounded
  // apart. The plugin drops a node that straddles its parent's end, and so does its port.
  const OperatorStats* addmm = row(v.by_name, "aten::addmm");
  ASSERT_NE(addmm, nullptr);
  EXPECT_EQ(addmm->calls, 3);
  EXPECT_EQ(addmm->host, 180'000);
  ASSERT_NE(row(v.by_name, "AddmmBackward0"), nullptr);
  for (const char* range : {"forward", "backward", "Optimizer.step#SGD.step", "Optimizer.zero_grad#SGD.zero_grad"}) {
    EXPECT_EQ(row(v.by_name, range), nullptr) << range;
  }
  EXPECT_TRUE(v.kernels.empty());
}

TEST(KinetoLegacyViews, ProfilerStepsAreTheStepsOfTheBreakdown) {
  const StepBreakdown b = step_breakdown(legacy_trace("profiler-schedule-steps.json"));
  // {"name": "ProfilerStep#1", "ts": 313, "dur": 1046}, {"name": "ProfilerStep#2", "ts": 1400, "dur": 756}
  ASSERT_EQ(b.steps.size(), 2u);
  EXPECT_EQ(b.steps[0].name, "ProfilerStep#1");
  EXPECT_EQ(b.steps[0].duration(), 1'046'000);
  EXPECT_EQ(b.steps[1].name, "ProfilerStep#2");
  EXPECT_EQ(b.steps[1].duration(), 756'000);
  // No GPU, no runtime: the operators' time is CPU Exec, the rest of the step Other.
  for (const StepTime& s : b.steps) {
    EXPECT_GT(s.time[static_cast<std::size_t>(StepCategory::CpuExec)], 0);
    EXPECT_EQ(s.time[static_cast<std::size_t>(StepCategory::Kernel)], 0);
    EXPECT_EQ(s.time[static_cast<std::size_t>(StepCategory::CpuExec)] +
                  s.time[static_cast<std::size_t>(StepCategory::Other)],
              s.duration());
  }
}

} // namespace
} // namespace dreamscope::analyzers
