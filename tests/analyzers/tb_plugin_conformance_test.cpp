// The TensorBoard profiler plugin's own test suite (pytorch/kineto tb_plugin/test/test_profiler.py)
// as our peer suite: each upstream case's trace (tests/data/importers/kineto/tb_plugin, README
// there) goes through the Kineto importer, and every number the upstream test asserts is
// asserted here, in our units (ns where the plugin has µs; fractions where it has percent, as
// noted). Where a comment says "plugin-derived", the value is one the plugin computes on the same
// trace but its test does not assert. The memory view's and memory curve's cases are in
// tb_plugin_memory_conformance_test.cpp.
#include "tb_plugin_fixtures.h"

#include <dreamscope/analyzers/tensorboard.h>
#include <dreamscope/storage/importers.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <cmath>
#include <string>
#include <tuple>
#include <vector>

namespace dreamscope::analyzers {

// For gtest's messages (found by argument-dependent lookup, hence outside the unnamed namespace).
static void PrintTo(const ModuleTree& m, std::ostream* os) {
  *os << "{\"" << m.name << "\", " << m.module_id << ", {";
  for (std::size_t i = 0; i < m.children.size(); ++i) {
    if (i > 0) *os << ", ";
    PrintTo(m.children[i], os);
  }
  *os << "}}";
}

namespace {


TimeNs cost(const StepTime& s, StepCategory c) { return s.time[static_cast<std::size_t>(c)]; }

// The plugin's cost vector of a step: Kernel, Memcpy, Memset, Communication, Runtime,
// DataLoader, CpuOp, Other, Total, in µs.
void expect_costs(const StepTime& s, std::array<std::int64_t, 9> expected) {
  for (std::size_t c = 0; c < kStepCategories; ++c) {
    EXPECT_EQ(s.time[c], us(expected[c])) << to_string(static_cast<StepCategory>(c)) << " of " << s.name;
  }
  EXPECT_EQ(s.duration(), us(expected[8])) << "Total of " << s.name;
}

const OperatorStats& op(const std::vector<OperatorStats>& rows, std::string_view name) {
  auto it = std::find_if(rows.begin(), rows.end(), [&](const OperatorStats& r) { return r.name == name; });
  if (it == rows.end()) throw std::runtime_error("no operator row " + std::string(name));
  return *it;
}

const KernelOpStats& kernel(const std::vector<KernelOpStats>& rows, std::string_view name, std::string_view op_name) {
  auto it = std::find_if(rows.begin(), rows.end(),
                         [&](const KernelOpStats& r) { return r.name == name && r.op_name == op_name; });
  if (it == rows.end()) throw std::runtime_error("no kernel row " + std::string(name) + " / " + std::string(op_name));
  return *it;
}

const KernelNameTotals& kernel_totals(const std::vector<KernelNameTotals>& rows, std::string_view name) {
  auto it = std::find_if(rows.begin(), rows.end(), [&](const KernelNameTotals& r) { return r.name == name; });
  if (it == rows.end()) throw std::runtime_error("no kernel_stat row " + std::string(name));
  return *it;
}

struct OpRow {
  std::string_view name, input_shape;
  std::int64_t calls;
  std::int64_t host, device, self_host, self_device; // µs
};

// Upstream checks each row in both operator lists.
void expect_operator_rows(const OperatorKernelViews& v, std::initializer_list<OpRow> rows) {
  for (const auto* list : {&v.by_name, &v.by_name_and_shape}) {
    for (const OpRow& expected : rows) {
      SCOPED_TRACE(std::string(expected.name) + (list == &v.by_name ? " by name" : " by name and shape"));
      const OperatorStats& r = op(*list, expected.name);
      EXPECT_EQ(r.input_shape, expected.input_shape);
      EXPECT_EQ(r.calls, expected.calls);
      EXPECT_EQ(r.host, us(expected.host));
      EXPECT_EQ(r.device, us(expected.device));
      EXPECT_EQ(r.self_host, us(expected.self_host));
      EXPECT_EQ(r.self_device, us(expected.self_device));
    }
  }
}

void expect_kernel_totals(const KernelNameTotals& k, std::int64_t count, std::int64_t sum, std::int64_t min,
                          std::int64_t max) {
  EXPECT_EQ(k.count, count);
  EXPECT_EQ(k.sum, us(sum));
  EXPECT_DOUBLE_EQ(k.mean, static_cast<double>(us(sum)) / static_cast<double>(count));
  EXPECT_EQ(k.min, us(min));
  EXPECT_EQ(k.max, us(max));
}

const char* const kNllKernel = "void cunn_ClassNLLCriterion_updateGradInput_kernel<float>";
const char* const kGemmKernel = "void gemmSN_TN_kernel_64addr";
const char* const kToShape = "[[2, 8, 5], [], [], [], [], [], [], []]";
const char* const kNllShape = "[[], [32, 1000], [32], [], [], [], []]";

TEST(TbPluginConformance, AllCategories) {
  const Trace t = fixture("test_all_categories");
  const StepBreakdown b = step_breakdown(t);
  EXPECT_TRUE(b.has_runtime);
  EXPECT_TRUE(b.has_kernel);
  EXPECT_TRUE(b.has_memcpy_or_memset);
  ASSERT_EQ(b.steps.size(), 1u);
  const StepTime& s = b.steps[0];
  EXPECT_EQ(cost(s, StepCategory::Kernel), us(15));
  EXPECT_EQ(cost(s, StepCategory::Memcpy), us(10));
  EXPECT_EQ(cost(s, StepCategory::Memset), us(5));
  EXPECT_EQ(cost(s, StepCategory::Runtime), us(30));
  EXPECT_EQ(cost(s, StepCategory::DataLoader), us(180));
  EXPECT_EQ(cost(s, StepCategory::CpuExec), us(35));
  EXPECT_EQ(cost(s, StepCategory::Other), us(125));
  expect_costs(s, {15, 10, 5, 0, 30, 180, 35, 125, 400}); // plugin-derived: Communication 0, Total 400

  const OperatorKernelViews v = operator_kernel_views(t);
  EXPECT_EQ(v.by_name.size(), 2u);
  EXPECT_EQ(v.by_name_and_shape.size(), 2u);
  expect_operator_rows(
      v, {{"aten::to", kToShape, 1, 60, 0, 60, 0}, {"aten::nll_loss_backward", kNllShape, 1, 70, 30, 35, 30}});
  ASSERT_EQ(v.kernels.size(), 1u);
  ASSERT_EQ(v.kernel_totals.size(), 1u);
  EXPECT_EQ(v.kernels[0].name, kNllKernel);
  EXPECT_EQ(v.kernels[0].op_name, "aten::nll_loss_backward");
  EXPECT_EQ(v.kernels[0].calls, 1);
  EXPECT_EQ(v.kernels[0].total, us(15));
  EXPECT_EQ(v.kernels[0].min, us(15));
  EXPECT_EQ(v.kernels[0].max, us(15));
  expect_kernel_totals(v.kernel_totals[0], 1, 15, 15, 15);
}

TEST(TbPluginConformance, ExternalId) {
  const OperatorKernelViews v = operator_kernel_views(fixture("test_external_id"));
  EXPECT_EQ(op(v.by_name, "aten::mat_mul").device, us(26));
  EXPECT_EQ(op(v.by_name, "aten::mat_mul").self_device, us(14));
  EXPECT_EQ(op(v.by_name, "aten::mm").device, us(12));
  EXPECT_EQ(op(v.by_name, "aten::mm").self_device, us(12));
  // Plugin-derived: each op's kernels form one row.
  EXPECT_EQ(kernel(v.kernels, kNllKernel, "aten::mm").total, us(12));
  EXPECT_EQ(kernel(v.kernels, kNllKernel, "aten::mat_mul").total, us(14));
}

TEST(TbPluginConformance, OperatorRelation) {
  for (const char* name : {"test_operator_relation_same_start", "test_operator_relation_same_end"}) {
    SCOPED_TRACE(name);
    const OperatorKernelViews v = operator_kernel_views(fixture(name));
    EXPECT_EQ(op(v.by_name, "aten::mat_mul").self_host, us(30));
    EXPECT_EQ(op(v.by_name, "aten::mm").self_host, us(70));
  }
}

TEST(TbPluginConformance, RemoveDupNodes) {
  const Trace t = fixture("test_remove_dup_nodes");
  const OperatorKernelViews v = operator_kernel_views(t);
  ASSERT_EQ(v.by_name.size(), 1u);
  EXPECT_EQ(v.by_name[0].self_device, us(8));
  // Plugin-derived: the outermost aten::mm is the one call left, with the innermost's launch.
  EXPECT_EQ(v.by_name[0].calls, 1);
  EXPECT_EQ(v.by_name[0].self_host, us(80));
  const StepBreakdown b = step_breakdown(t);
  ASSERT_EQ(b.steps.size(), 1u);
  expect_costs(b.steps[0], {8, 0, 0, 0, 20, 0, 80, 20, 128}); // plugin-derived
}

TEST(TbPluginConformance, TopLevelRuntime) {
  const Trace t = fixture("test_top_level_runtime");
  const OperatorKernelViews v = operator_kernel_views(t);
  ASSERT_FALSE(v.by_name.empty());
  EXPECT_EQ(v.by_name[0].name, "aten::mm");
  EXPECT_EQ(v.by_name[0].device, 0);
  EXPECT_EQ(v.by_name[0].self_device, 0);
  ASSERT_FALSE(v.kernel_totals.empty());
  EXPECT_EQ(v.kernel_totals[0].count, 1);
  EXPECT_TRUE(v.kernels.empty()); // plugin-derived: the call belongs to no operator
  // Plugin-derived: the call still extends the synthetic step to its kernel.
  const StepBreakdown b = step_breakdown(t);
  ASSERT_EQ(b.steps.size(), 1u);
  expect_costs(b.steps[0], {8, 0, 0, 0, 20, 0, 80, 20, 128});
}

TEST(TbPluginConformance, RuntimeCalledByProfilerStep) {
  const Trace t = fixture("test_runtime_called_by_profilerstep");
  const StepBreakdown b = step_breakdown(t);
  ASSERT_EQ(b.steps.size(), 1u);
  EXPECT_EQ(cost(b.steps[0], StepCategory::Kernel), us(8));
  EXPECT_EQ(cost(b.steps[0], StepCategory::Runtime), us(20));
  EXPECT_EQ(cost(b.steps[0], StepCategory::CpuExec), 0);
  EXPECT_EQ(cost(b.steps[0], StepCategory::Other), us(272));
  const OperatorKernelViews v = operator_kernel_views(t);
  EXPECT_TRUE(v.by_name.empty());
  EXPECT_TRUE(v.by_name_and_shape.empty());
  ASSERT_EQ(v.kernel_totals.size(), 1u);
  EXPECT_EQ(v.kernel_totals[0].count, 1);
  ASSERT_EQ(v.kernels.size(), 1u);
  EXPECT_EQ(v.kernels[0].op_name, "ProfilerStep#1"); // plugin-derived
}

TEST(TbPluginConformance, RuntimeLaunchMultipleKernels) {
  const Trace t = fixture("test_runtime_launch_multipe_kernels");
  const OperatorKernelViews v = operator_kernel_views(t);
  ASSERT_FALSE(v.by_name.empty());
  EXPECT_EQ(v.by_name[0].device, us(253118));
  ASSERT_FALSE(v.kernel_totals.empty());
  EXPECT_EQ(v.kernel_totals[0].count, 2);
  ASSERT_EQ(v.kernels.size(), 1u);
  EXPECT_EQ(v.kernels[0].calls, 2); // plugin-derived
  EXPECT_DOUBLE_EQ(v.kernels[0].mean, static_cast<double>(us(126559)));
  const StepBreakdown b = step_breakdown(t);
  ASSERT_EQ(b.steps.size(), 1u);
  expect_costs(b.steps[0], {132810, 0, 0, 0, 20, 0, 40, 0, 132870}); // plugin-derived
}

TEST(TbPluginConformance, NoProfilerStep) {
  const Trace t = fixture("test_no_profilerstep");
  const StepBreakdown b = step_breakdown(t);
  EXPECT_TRUE(b.has_runtime);
  EXPECT_TRUE(b.has_kernel);
  EXPECT_FALSE(b.has_memcpy_or_memset);
  ASSERT_EQ(b.steps.size(), 1u);
  expect_costs(b.steps[0], {100, 0, 0, 0, 10, 0, 70, 140, 320}); // Communication plugin-derived
  EXPECT_EQ(b.steps[0].start, us(100));                          // plugin-derived: CPU span, extended
  EXPECT_EQ(b.steps[0].end, us(420));

  const OperatorKernelViews v = operator_kernel_views(t);
  EXPECT_EQ(v.by_name.size(), 2u);
  EXPECT_EQ(v.by_name_and_shape.size(), 2u);
  ASSERT_EQ(v.kernel_totals.size(), 1u);
  ASSERT_EQ(v.kernels.size(), 1u);
  expect_operator_rows(
      v, {{"aten::to", kToShape, 1, 60, 0, 60, 0}, {"aten::nll_loss_backward", kNllShape, 1, 70, 100, 50, 100}});
  EXPECT_EQ(v.kernels[0].name, kNllKernel);
  EXPECT_EQ(v.kernels[0].op_name, "aten::nll_loss_backward");
  EXPECT_EQ(v.kernels[0].calls, 1);
  EXPECT_EQ(v.kernels[0].total, us(100));
  EXPECT_EQ(v.kernels[0].min, us(100));
  EXPECT_EQ(v.kernels[0].max, us(100));
  expect_kernel_totals(v.kernel_totals[0], 1, 100, 100, 100);
}

TEST(TbPluginConformance, MultipleProfilerStepsNoOverlap) {
  const Trace t = fixture("test_multiple_profilersteps_no_overlap");
  const StepBreakdown b = step_breakdown(t);
  EXPECT_TRUE(b.has_runtime);
  EXPECT_TRUE(b.has_kernel);
  EXPECT_TRUE(b.has_memcpy_or_memset);
  ASSERT_EQ(b.steps.size(), 2u);
  expect_costs(b.steps[0], {0, 40, 0, 0, 5, 0, 55, 120, 220});
  expect_costs(b.steps[1], {200, 0, 0, 0, 5, 0, 45, 10, 260});
  EXPECT_EQ(b.average_duration, us(240));
  EXPECT_EQ(b.steps[0].start, us(100)); // plugin-derived: [(100,320),(350,610)]
  EXPECT_EQ(b.steps[0].end, us(320));
  EXPECT_EQ(b.steps[1].start, us(350));
  EXPECT_EQ(b.steps[1].end, us(610));

  const OperatorKernelViews v = operator_kernel_views(t);
  EXPECT_EQ(v.by_name.size(), 2u);
  EXPECT_EQ(v.by_name_and_shape.size(), 2u);
  expect_operator_rows(v, {{"aten::to", kToShape, 1, 60, 40, 55, 40}, {"aten::mm", "[]", 1, 50, 200, 45, 200}});
  ASSERT_EQ(v.kernels.size(), 1u);
  ASSERT_EQ(v.kernel_totals.size(), 1u);
  EXPECT_EQ(v.kernels[0].name, kNllKernel);
  EXPECT_EQ(v.kernels[0].op_name, "aten::mm");
  EXPECT_EQ(v.kernels[0].calls, 1);
  EXPECT_EQ(v.kernels[0].total, us(200));
  EXPECT_EQ(v.kernels[0].min, us(200));
  EXPECT_EQ(v.kernels[0].max, us(200));
  expect_kernel_totals(v.kernel_totals[0], 1, 200, 200, 200);
}

TEST(TbPluginConformance, SelfTime) {
  const OperatorKernelViews v = operator_kernel_views(fixture("test_self_time"));
  const OperatorStats& mat_mul = op(v.by_name, "aten::mat_mul");
  EXPECT_EQ(mat_mul.host, us(100));
  EXPECT_EQ(mat_mul.device, us(36));
  EXPECT_EQ(mat_mul.self_host, us(35));
  EXPECT_EQ(mat_mul.self_device, us(16));
  const OperatorStats& mm = op(v.by_name, "aten::mm");
  EXPECT_EQ(mm.host, us(40));
  EXPECT_EQ(mm.device, us(20));
  EXPECT_EQ(mm.self_host, us(30));
  EXPECT_EQ(mm.self_device, us(20));
}

TEST(TbPluginConformance, MultipleProfilerStepsWithOverlap) {
  const Trace t = fixture("test_multiple_profilersteps_with_overlap");
  const StepBreakdown b = step_breakdown(t);
  EXPECT_TRUE(b.has_runtime);
  EXPECT_TRUE(b.has_kernel);
  EXPECT_TRUE(b.has_memcpy_or_memset);
  ASSERT_EQ(b.steps.size(), 2u);
  expect_costs(b.steps[0], {0, 100, 0, 0, 5, 0, 15, 20, 140});
  expect_costs(b.steps[1], {200, 0, 0, 0, 5, 0, 25, 0, 230});
  // Plugin-derived: step 1 starts where the kernel launched before it ends, step 2 where
  // step 1's memcpy ends.
  EXPECT_EQ(b.steps[0].start, us(240));
  EXPECT_EQ(b.steps[0].end, us(380));
  EXPECT_EQ(b.steps[1].start, us(380));
  EXPECT_EQ(b.steps[1].end, us(610));
  // Plugin-derived: the kernel nothing launched hangs on the main thread's root.
  const OperatorKernelViews v = operator_kernel_views(t);
  EXPECT_EQ(kernel(v.kernels, kNllKernel, "CallTreeRoot").total, us(90));
  EXPECT_EQ(kernel_totals(v.kernel_totals, kNllKernel).count, 2);
}

TEST(TbPluginConformance, LastStepsNoKernel) {
  const StepBreakdown b = step_breakdown(fixture("test_last_steps_no_kernel"));
  ASSERT_EQ(b.steps.size(), 1u);
  EXPECT_EQ(b.steps[0].duration(), us(220));
  expect_costs(b.steps[0], {180, 0, 0, 0, 5, 0, 5, 30, 220}); // plugin-derived
  EXPECT_EQ(b.steps[0].start, us(110));
}

TEST(TbPluginConformance, PureCpu) {
  const StepBreakdown b = step_breakdown(fixture("test_pure_cpu"));
  ASSERT_EQ(b.steps.size(), 2u);
  expect_costs(b.steps[0], {0, 0, 0, 0, 0, 0, 10, 190, 200}); // Communication plugin-derived
  expect_costs(b.steps[1], {0, 0, 0, 0, 0, 0, 40, 60, 100});
  EXPECT_FALSE(b.has_kernel);
  EXPECT_TRUE(operator_kernel_views(fixture("test_pure_cpu")).kernel_totals.empty()); // kernel_stat is None
}

TEST(TbPluginConformance, GpuUtilization) {
  const Trace t = fixture("test_gpu_utilization");
  const std::vector<DeviceEfficiency> gpus = gpu_efficiency(t);
  ASSERT_EQ(gpus.size(), 1u);
  const DeviceEfficiency& g = gpus[0];
  EXPECT_EQ(g.device, 1);
  EXPECT_NEAR(g.gpu_utilization, 0.5, 1e-7);
  ASSERT_TRUE(g.sm_efficiency.has_value());
  EXPECT_NEAR(*g.sm_efficiency, 41.0 / 120, 1e-7);
  // The plugin's 0.55 is in its percent unit; we report the fraction.
  ASSERT_TRUE(g.achieved_occupancy.has_value());
  EXPECT_NEAR(*g.achieved_occupancy * 100, 0.55, 1e-7);

  const std::vector<std::pair<std::int64_t, double>> buckets{{100, 0},   {110, 0},   {120, 0}, {130, 1.0}, {140, 1.0},
                                                             {150, 1.0}, {160, 1.0}, {170, 0}, {180, 0},   {190, 0},
                                                             {200, 1.0}, {210, 1.0}, {220, 0}};
  ASSERT_EQ(g.utilization_timeline.size(), buckets.size());
  for (std::size_t i = 0; i < buckets.size(); ++i) {
    EXPECT_EQ(g.utilization_timeline[i].start, us(buckets[i].first)) << i;
    EXPECT_NEAR(g.utilization_timeline[i].utilization, buckets[i].second, 1e-7) << i;
  }
  struct Range {
    std::int64_t start, end;
    double value;
  };
  // (170, 200) is there only because the running sum leaves 2.2e-16 after its kernels end, as
  // in the plugin's float arithmetic.
  const std::vector<Range> ranges{{130, 135, 0.5}, {135, 140, 1.0}, {140, 145, 0.6}, {145, 150, 0.9},
                                  {150, 170, 0.3}, {170, 200, 0.0}, {200, 220, 1.0}};
  ASSERT_EQ(g.sm_efficiency_ranges.size(), ranges.size());
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    EXPECT_EQ(g.sm_efficiency_ranges[i].start, us(ranges[i].start)) << i;
    EXPECT_EQ(g.sm_efficiency_ranges[i].end, us(ranges[i].end)) << i;
    EXPECT_NEAR(g.sm_efficiency_ranges[i].efficiency, ranges[i].value, 1e-7) << i;
  }
  EXPECT_EQ(g.kernels_with_blocks_per_sm, 5); // plugin-derived
  EXPECT_EQ(g.kernels_with_occupancy, 5);

  const OperatorKernelViews v = operator_kernel_views(t);
  ASSERT_EQ(v.kernels.size(), 3u);
  const KernelOpStats& gemm = kernel(v.kernels, kGemmKernel, "aten::mat_mul");
  EXPECT_NEAR(gemm.blocks_per_sm, 0.6, 1e-7);
  EXPECT_NEAR(gemm.occupancy_pct, 0.1, 1e-7);
  const KernelOpStats& nll_mm = kernel(v.kernels, kNllKernel, "aten::mm");
  EXPECT_NEAR(nll_mm.blocks_per_sm, (0.5 * 10 + 0.3 * 25) / 35, 1e-7);
  EXPECT_NEAR(nll_mm.occupancy_pct, (0.6 * 10 + 1.0 * 25) / 35, 1e-7);
  const KernelOpStats& nll_mat_mul = kernel(v.kernels, kNllKernel, "aten::mat_mul");
  EXPECT_NEAR(nll_mat_mul.blocks_per_sm, 10.5, 1e-7);
  EXPECT_NEAR(nll_mat_mul.occupancy_pct, 0.3, 1e-7);

  ASSERT_EQ(v.kernel_totals.size(), 2u);
  EXPECT_NEAR(kernel_totals(v.kernel_totals, kGemmKernel).blocks_per_sm, 0.6, 1e-7);
  EXPECT_NEAR(kernel_totals(v.kernel_totals, kGemmKernel).occupancy_pct, 0.1, 1e-7);
  EXPECT_NEAR(kernel_totals(v.kernel_totals, kNllKernel).blocks_per_sm, (0.5 * 10 + 0.3 * 25 + 10.5 * 20) / 55, 1e-7);
  EXPECT_NEAR(kernel_totals(v.kernel_totals, kNllKernel).occupancy_pct, (0.6 * 10 + 1.0 * 25 + 0.3 * 20) / 55, 1e-7);
}

TEST(TbPluginConformance, GpuUtilizationKernelOutOfStep) {
  const Trace t = fixture("test_gpu_utilization_kernel_out_of_step");
  const std::vector<DeviceEfficiency> gpus = gpu_efficiency(t);
  ASSERT_EQ(gpus.size(), 1u);
  const DeviceEfficiency& g = gpus[0];
  EXPECT_NEAR(g.gpu_utilization, 0.0, 1e-7);
  EXPECT_FALSE(g.sm_efficiency.has_value());
  EXPECT_FALSE(g.achieved_occupancy.has_value());
  EXPECT_GT(g.kernels_with_blocks_per_sm, 0);
  EXPECT_GT(g.kernels_with_occupancy, 0);

  const OperatorKernelViews v = operator_kernel_views(t);
  ASSERT_EQ(v.kernels.size(), 2u);
  EXPECT_NEAR(kernel(v.kernels, kNllKernel, "aten::mat_mul").blocks_per_sm, 0.5, 1e-7);
  EXPECT_NEAR(kernel(v.kernels, kNllKernel, "aten::mat_mul").occupancy_pct, 0.6, 1e-7);
  EXPECT_NEAR(kernel(v.kernels, kNllKernel, "aten::mm").blocks_per_sm, 10.5, 1e-7);
  EXPECT_NEAR(kernel(v.kernels, kNllKernel, "aten::mm").occupancy_pct, 0.3, 1e-7);
  ASSERT_EQ(v.kernel_totals.size(), 1u);
  EXPECT_NEAR(v.kernel_totals[0].blocks_per_sm, (20 * 0.5 + 25 * 10.5) / 45, 1e-7);
  EXPECT_NEAR(v.kernel_totals[0].occupancy_pct, (20 * 0.6 + 25 * 0.3) / 45, 1e-7);

  // Plugin-derived: neither launch lies inside the step, so it is not extended.
  const StepBreakdown b = step_breakdown(t);
  ASSERT_EQ(b.steps.size(), 1u);
  expect_costs(b.steps[0], {0, 0, 0, 0, 0, 0, 70, 30, 100});
}

TEST(TbPluginConformance, GroupByKernelColumns) {
  const OperatorKernelViews v = operator_kernel_views(fixture("test_group_by_kernel_columns"));
  struct Row {
    std::string_view op_name;
    std::array<std::int64_t, 3> grid, block;
    std::int64_t calls, total;
    double mean;
    std::int64_t min, max;
  };
  const Row rows[] = {{"op1", {16, 1, 1}, {16, 16, 16}, 2, 25, 12.5, 10, 15},
                      {"op1", {16, 1, 1}, {16, 16, 64}, 1, 13, 13, 13, 13},
                      {"op2", {16, 1, 1}, {16, 16, 64}, 1, 17, 17, 17, 17}};
  ASSERT_EQ(v.kernels.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    SCOPED_TRACE(i);
    const KernelOpStats& k = v.kernels[i];
    EXPECT_EQ(k.name, "kernel1");
    EXPECT_EQ(k.op_name, rows[i].op_name);
    EXPECT_EQ(k.grid, rows[i].grid);
    EXPECT_EQ(k.block, rows[i].block);
    EXPECT_EQ(k.registers_per_thread, 18);
    EXPECT_EQ(k.shared_memory, 0);
    EXPECT_EQ(k.calls, rows[i].calls);
    EXPECT_EQ(k.total, us(rows[i].total));
    EXPECT_NEAR(k.mean, rows[i].mean * 1000, 1e-4);
    EXPECT_EQ(k.min, us(rows[i].min));
    EXPECT_EQ(k.max, us(rows[i].max));
  }
}

TEST(TbPluginConformance, GroupByKernelColumnsInvalidInput) {
  const OperatorKernelViews v = operator_kernel_views(fixture("test_group_by_kernel_columns_invalid_input"));
  using Dim3 = std::optional<std::array<std::int64_t, 3>>;
  const Dim3 grid = std::array<std::int64_t, 3>{16, 1, 1}, block = std::array<std::int64_t, 3>{16, 16, 16};
  struct Row {
    Dim3 grid, block;
    std::optional<std::int64_t> registers, shared_memory;
    std::int64_t duration;
  };
  // Row 3's event has no "shared memory": None, as upstream expects (LaunchConfig::kNotRecorded).
  const Row rows[] = {{std::nullopt, block, 18, 0, 1},
                      {grid, std::nullopt, 18, 0, 2},
                      {grid, block, std::nullopt, 0, 3},
                      {grid, block, 18, std::nullopt, 4},
                      {std::nullopt, std::nullopt, std::nullopt, std::nullopt, 5}};
  ASSERT_EQ(v.kernels.size(), 5u);
  for (std::size_t i = 0; i < 5; ++i) {
    SCOPED_TRACE(i);
    const KernelOpStats& k = v.kernels[i];
    EXPECT_EQ(k.name, "kernel1");
    EXPECT_EQ(k.op_name, "op1");
    EXPECT_EQ(k.grid, rows[i].grid);
    EXPECT_EQ(k.block, rows[i].block);
    EXPECT_EQ(k.registers_per_thread, rows[i].registers);
    EXPECT_EQ(k.shared_memory, rows[i].shared_memory);
    EXPECT_EQ(k.calls, 1);
    EXPECT_EQ(k.total, us(rows[i].duration));
    EXPECT_DOUBLE_EQ(k.mean, static_cast<double>(us(rows[i].duration)));
    EXPECT_EQ(k.min, us(rows[i].duration));
    EXPECT_EQ(k.max, us(rows[i].duration));
  }
}

TEST(TbPluginConformance, TensorCore) {
  const OperatorKernelViews v = operator_kernel_views(fixture("test_tensor_core"));
  ASSERT_EQ(v.by_name.size(), 3u);
  const OperatorStats& conv = op(v.by_name, "aten::conv2d");
  EXPECT_TRUE(conv.tc_eligible);
  EXPECT_NEAR(conv.tc_self_ratio, 0, 1e-7);
  EXPECT_NEAR(conv.tc_total_ratio, 15.0 / 25, 1e-7);
  const OperatorStats& no_tc = op(v.by_name, "op_no_tc");
  EXPECT_FALSE(no_tc.tc_eligible);
  EXPECT_NEAR(no_tc.tc_self_ratio, 0, 1e-7);
  EXPECT_NEAR(no_tc.tc_total_ratio, 0, 1e-7);
  const OperatorStats& cudnn = op(v.by_name, "aten::cudnn_convolution");
  EXPECT_TRUE(cudnn.tc_eligible);
  EXPECT_NEAR(cudnn.tc_self_ratio, 1.0, 1e-7);
  EXPECT_NEAR(cudnn.tc_total_ratio, 1.0, 1e-7);

  ASSERT_EQ(v.kernels.size(), 2u);
  const KernelOpStats& plain = kernel(v.kernels, "kernel_no_tc", "op_no_tc");
  EXPECT_FALSE(plain.tc_used);
  EXPECT_FALSE(plain.op_tc_eligible);
  const KernelOpStats& tc =
      kernel(v.kernels, "volta_fp16_s884cudnn_fp16_128x128_ldg8_splitK_relu_f2f_exp_small_nhwc_tn_v1",
             "aten::cudnn_convolution");
  EXPECT_TRUE(tc.tc_used);
  EXPECT_TRUE(tc.op_tc_eligible);

  ASSERT_EQ(v.tensor_cores.size(), 1u);
  EXPECT_EQ(v.tensor_cores[0].device, 0);
  EXPECT_NEAR(v.tensor_cores[0].ratio, 0.6, 1e-7);
  EXPECT_NEAR(v.tc_eligible_ops_kernel_ratio, 0.6, 1e-7);
  EXPECT_NEAR(v.tc_used_ratio, 0.6, 1e-7); // plugin-derived
}

// A kernel's op_tc_eligible is its operator's before nested operators made it eligible.
TEST(TbPluginConformance, KernelSeesItsOperatorsEligibilityBeforePropagation) {
  const OperatorKernelViews v = operator_kernel_views(fixture("test_gpu_utilization"));
  EXPECT_TRUE(op(v.by_name, "aten::mat_mul").tc_eligible); // through its child aten::mm
  EXPECT_FALSE(kernel(v.kernels, kGemmKernel, "aten::mat_mul").op_tc_eligible);
  EXPECT_TRUE(kernel(v.kernels, kNllKernel, "aten::mm").op_tc_eligible);
}

// ---- The distributed and datapipe cases ----

TEST(TbPluginConformance, DistributedNcclStepCosts) {
  const StepBreakdown w0 = step_breakdown(fixture("test_distributed_nccl_worker0"));
  EXPECT_TRUE(w0.has_communication);
  ASSERT_EQ(w0.steps.size(), 1u);
  expect_costs(w0.steps[0], {105, 0, 0, 75, 0, 0, 20, 35, 235});
  const StepBreakdown w1 = step_breakdown(fixture("test_distributed_nccl_worker1"));
  EXPECT_TRUE(w1.has_communication);
  ASSERT_EQ(w1.steps.size(), 1u);
  EXPECT_EQ(cost(w1.steps[0], StepCategory::Communication), us(74));
  // The plugin counts CpuOp 20 and Other 215 here too, 470 µs in a 235 µs step (docs/analyze.md);
  // each instant counts once here.
  expect_costs(w1.steps[0], {161, 0, 0, 74, 0, 0, 0, 0, 235});
}

TEST(TbPluginConformance, DistributedGlooGpuStepCosts) {
  const StepBreakdown w0 = step_breakdown(fixture("test_distributed_gloo_gpu_worker0"));
  EXPECT_TRUE(w0.has_communication);
  ASSERT_EQ(w0.steps.size(), 1u);
  expect_costs(w0.steps[0], {101, 0, 0, 39, 0, 0, 16, 0, 156});
  const StepBreakdown w1 = step_breakdown(fixture("test_distributed_gloo_gpu_worker1"));
  EXPECT_TRUE(w1.has_communication);
  ASSERT_EQ(w1.steps.size(), 1u);
  expect_costs(w1.steps[0], {70, 0, 0, 44, 0, 0, 20, 12, 146});
}

TEST(TbPluginConformance, DistributedGlooCpuStepCosts) {
  const StepBreakdown w0 = step_breakdown(fixture("test_distributed_gloo_cpu_worker0"));
  EXPECT_TRUE(w0.has_communication);
  ASSERT_EQ(w0.steps.size(), 1u);
  expect_costs(w0.steps[0], {0, 0, 0, 109, 0, 0, 47, 0, 156});
  const StepBreakdown w1 = step_breakdown(fixture("test_distributed_gloo_cpu_worker1"));
  EXPECT_TRUE(w1.has_communication);
  ASSERT_EQ(w1.steps.size(), 1u);
  expect_costs(w1.steps[0], {0, 0, 0, 98, 0, 0, 36, 12, 146});
}

struct Expected {
  std::array<std::int64_t, 4> overlap; // computation only, overlapping, communication only, other
  std::array<std::int64_t, 2> wait;    // data transfer, synchronizing
  // name, calls, bytes, avg bytes, latency, avg latency, transfer, avg transfer (µs)
  std::vector<std::tuple<std::string, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                         std::int64_t, std::int64_t>>
      ops;
};

// The plugin's steps_to_overlap, steps_to_wait and comm_ops for a one-step job of two workers.
void expect_distributed_view(const std::string& test, std::size_t collectives, const Expected& worker0,
                             const Expected& worker1) {
  const Trace t0 = fixture(test + "_worker0"), t1 = fixture(test + "_worker1");
  const DistributedView v = distributed_view({{"worker0", &t0}, {"worker1", &t1}});
  ASSERT_TRUE(v.available);
  ASSERT_EQ(v.workers.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    const DistributedWorker& w = v.workers[i];
    const Expected& e = i == 0 ? worker0 : worker1;
    SCOPED_TRACE(w.name);
    EXPECT_EQ(w.name, i == 0 ? "worker0" : "worker1");
    EXPECT_EQ(w.collectives, collectives);
    // One step, so "all" (the mean over steps) is the same.
    ASSERT_EQ(w.overlap.size(), 2u);
    for (const StepOverlap& o : w.overlap) {
      EXPECT_EQ(o.computation_only, us(e.overlap[0])) << o.step;
      EXPECT_EQ(o.overlap, us(e.overlap[1])) << o.step;
      EXPECT_EQ(o.communication_only, us(e.overlap[2])) << o.step;
      EXPECT_EQ(o.other, us(e.overlap[3])) << o.step;
    }
    ASSERT_EQ(w.wait.size(), 2u);
    for (const StepWait& o : w.wait) {
      EXPECT_EQ(o.transfer, us(e.wait[0])) << o.step;
      EXPECT_EQ(o.synchronizing, us(e.wait[1])) << o.step;
    }
    ASSERT_EQ(w.collective_ops.size(), e.ops.size());
    for (std::size_t k = 0; k < e.ops.size(); ++k) {
      const CollectiveStats& c = w.collective_ops[k];
      const auto& [name, calls, bytes, avg_bytes, latency, avg_latency, transfer, avg_transfer] = e.ops[k];
      EXPECT_EQ(c.name, name);
      EXPECT_EQ(c.calls, calls);
      EXPECT_EQ(c.bytes, bytes);
      // The plugin rounds the averages to whole bytes and µs (half to even); none is a tie here.
      EXPECT_EQ(c.bytes / c.calls, avg_bytes);
      EXPECT_EQ(c.latency, us(latency));
      EXPECT_EQ(std::llround(static_cast<double>(c.latency) / 1000.0 / static_cast<double>(c.calls)), avg_latency);
      EXPECT_EQ(c.transfer, us(transfer));
      EXPECT_EQ(std::llround(static_cast<double>(c.transfer) / 1000.0 / static_cast<double>(c.calls)), avg_transfer);
    }
  }
}

TEST(TbPluginConformance, DistributedNccl) {
  EXPECT_EQ(step_breakdown(fixture("test_distributed_nccl_worker0")).has_communication, true);
  expect_distributed_view("test_distributed_nccl", 2,
                          {{30, 75, 75, 55},
                           {1169, 464},
                           {{"nccl:broadcast", 1, 212480, 212480, 75, 75, 36, 36},
                            {"nccl:all_reduce", 1, 8196000, 8196000, 1558, 1558, 1133, 1133}}},
                          {{121, 40, 74, 0},
                           {1169, 3},
                           {{"nccl:broadcast", 1, 212480, 212480, 39, 39, 36, 36},
                            {"nccl:all_reduce", 1, 8196000, 8196000, 1133, 1133, 1133, 1133}}});
}

TEST(TbPluginConformance, DistributedGlooGpu) {
  expect_distributed_view("test_distributed_gloo_gpu", 5,
                          {{31, 70, 39, 16},
                           {75, 34},
                           {{"gloo:broadcast", 3, 637440, 212480, 63, 21, 41, 14},
                            {"gloo:all_reduce", 2, 16392000, 8196000, 46, 23, 34, 17}}},
                          {{16, 54, 44, 32},
                           {78, 20},
                           {{"gloo:broadcast", 3, 637440, 212480, 44, 15, 44, 15},
                            {"gloo:all_reduce", 2, 16392000, 8196000, 54, 27, 34, 17}}});
}

TEST(TbPluginConformance, DistributedGlooCpu) {
  expect_distributed_view("test_distributed_gloo_cpu", 5,
                          {{47, 74, 35, 0},
                           {75, 34},
                           {{"gloo:broadcast", 3, 637440, 212480, 63, 21, 41, 14},
                            {"gloo:all_reduce", 2, 16392000, 8196000, 46, 23, 34, 17}}},
                          {{36, 64, 34, 12},
                           {78, 20},
                           {{"gloo:broadcast", 3, 637440, 212480, 44, 15, 44, 15},
                            {"gloo:all_reduce", 2, 16392000, 8196000, 54, 27, 34, 17}}});
}

TEST(TbPluginConformance, DistributedNcclUserAnnotationHasCommunication) {
  EXPECT_TRUE(step_breakdown(fixture("test_distributed_nccl_user_annotation_has_communication")).has_communication);
}

TEST(TbPluginConformance, Datapipe) {
  const Trace t = fixture("test_datapipe");
  const StepBreakdown b = step_breakdown(t);
  ASSERT_EQ(b.steps.size(), 1u);
  // Upstream: the DataLoader role holds (100, 123). (The plugin's Other is 23 as well; see
  // DistributedNcclStepCosts.)
  expect_costs(b.steps[0], {0, 0, 0, 0, 0, 23, 0, 0, 23});
  const OperatorKernelViews v = operator_kernel_views(t);
  for (const OperatorStats& o : v.by_name) EXPECT_FALSE(o.name.starts_with("enumerate(DataPipe)")) << o.name;
}

// ---- The module view ----

struct ModuleRow {
  std::string_view name;
  std::int64_t id, occurrences, operators;
  std::int64_t host, self_host, device, self_device; // µs
  double average;                                    // µs
};

void expect_module(const ModuleStats& s, const ModuleRow& e) {
  SCOPED_TRACE(std::string(e.name) + " " + std::to_string(e.id));
  EXPECT_EQ(s.name, e.name);
  EXPECT_EQ(s.module_id, e.id);
  EXPECT_EQ(s.occurrences, e.occurrences);
  EXPECT_EQ(s.operators, e.operators);
  EXPECT_EQ(s.host, us(e.host));
  EXPECT_EQ(s.self_host, us(e.self_host));
  EXPECT_EQ(s.device, us(e.device));
  EXPECT_EQ(s.self_device, us(e.self_device));
  EXPECT_DOUBLE_EQ(s.average, e.average * 1000.0);
}

TEST(TbPluginConformance, BuildModuleHierarchy) {
  const Trace t = fixture("test_build_module_hierarchy");
  const std::vector<ModuleStats> stats = module_view(t);
  ASSERT_EQ(stats.size(), 2u);
  EXPECT_EQ(stats[0].name, "Conv2");
  EXPECT_EQ(stats[1].name, "MyModule");
  ASSERT_EQ(stats[1].children.size(), 1u);
  EXPECT_EQ(stats[1].children[0].name, "Linear");

  const std::vector<ModuleTree> roots = module_hierarchy(t);
  ASSERT_EQ(roots.size(), 2u);
  EXPECT_EQ(roots[0].name, "nn.Module: Conv2");
  EXPECT_EQ(roots[1].name, "nn.Module: MyModule");
  ASSERT_EQ(roots[1].children.size(), 1u);
  EXPECT_EQ(roots[1].children[0].name, "nn.Module: Linear");

  // Plugin-derived: the three MyModule trees are one; Linear's self host is 62 - 31, 62 - 32
  // and 62 - 33 (its aten::addmm calls); no kernels, so the average is host / occurrences.
  EXPECT_EQ(roots[0], (ModuleTree{"nn.Module: Conv2", 100, {}}));
  EXPECT_EQ(roots[1], (ModuleTree{"nn.Module: MyModule", 0, {{"nn.Module: Linear", 1, {}}}}));
  expect_module(stats[0], {"Conv2", 100, 1, 0, 211, 211, 0, 0, 211.0});
  EXPECT_TRUE(stats[0].children.empty());
  expect_module(stats[1], {"MyModule", 0, 3, 0, 633, 447, 0, 0, 211.0});
  expect_module(stats[1].children[0], {"Linear", 1, 3, 3, 186, 90, 0, 0, 62.0});
  EXPECT_TRUE(stats[1].children[0].children.empty());

  // Plugin-derived: the python_function events are not CPU events; the one step spans the
  // aten::addmm calls.
  const StepBreakdown b = step_breakdown(t);
  ASSERT_EQ(b.steps.size(), 1u);
  EXPECT_EQ(b.steps[0].host_start, us(10));
  EXPECT_EQ(b.steps[0].host_end, us(2035));
}

TEST(TbPluginConformance, NoModuleViewWithoutModules) {
  const Trace t = fixture("test_all_categories");
  EXPECT_TRUE(module_hierarchy(t).empty());
  EXPECT_TRUE(module_view(t).empty());
}

} // namespace
} // namespace dreamscope::analyzers
