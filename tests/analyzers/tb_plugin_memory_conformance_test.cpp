// The TensorBoard plugin's memory view and memory curve against its own tests (pytorch/kineto
// tb_plugin/test/test_profiler.py: test_memory_view and TestMemoryCurve's two cases), as
// tb_plugin_conformance_test.cpp does for its other views: each upstream trace through the Kineto
// importer, every value upstream asserts asserted, in bytes and ns. "Plugin-derived" marks values
// the plugin computes on the same trace (run through it) that its tests do not assert.
#include "../common/required_data.h"
#include "tb_plugin_fixtures.h"

#include "../common/scratch_dir.h"

#include <dreamscope/analyzers/tensorboard.h>
#include <dreamscope/storage/importers.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace dreamscope::analyzers {

// For gtest's messages (found by argument-dependent lookup, hence outside the unnamed namespace).
static void PrintTo(const MemoryBlock& b, std::ostream* os) {
  auto opt = [&](const std::optional<TimeNs>& t) { return t ? std::to_string(*t) : std::string("-"); };
  *os << "{" << b.op_name << ", " << b.size << " B, allocated " << opt(b.allocated) << ", released "
      << opt(b.released) << ", duration " << opt(b.duration) << "}";
}
static void PrintTo(const MemoryCurvePoint& p, std::ostream* os) {
  *os << "{" << p.time << " ns, allocated " << p.allocated << ", reserved " << p.reserved << "}";
}

namespace {

// A Kineto file written from JSON text (a case of our own), read by the real importer.
class TempTrace {
 public:
  explicit TempTrace(const std::string& json) : path_(dir_.write("trace.json", json)) {}
  Trace trace() const { return load_trace(path_); }

 private:
  test::ScratchDir dir_{"dreamscope-tb-memory"};
  std::filesystem::path path_;
};

const DeviceMemory& device(const MemoryView& v, std::string_view name) {
  auto it = std::find_if(v.devices.begin(), v.devices.end(), [&](const DeviceMemory& d) { return d.device == name; });
  if (it == v.devices.end()) throw std::runtime_error("no device " + std::string(name));
  return *it;
}

// Upstream's order: self increase, self allocation size, self allocation count, increase,
// allocation size, allocation count, calls.
struct MemoryRow {
  std::string_view name;
  std::array<std::int64_t, 7> values;
};

void expect_operator_memory(const DeviceMemory& d, std::initializer_list<MemoryRow> rows) {
  for (const MemoryRow& e : rows) {
    SCOPED_TRACE(d.device + " " + std::string(e.name));
    auto it = std::find_if(d.operators.begin(), d.operators.end(),
                           [&](const OperatorMemory& o) { return o.name == e.name; });
    ASSERT_NE(it, d.operators.end());
    EXPECT_EQ((std::array<std::int64_t, 7>{it->self_size_increase, it->self_allocation_size, it->self_allocations,
                                           it->size_increase, it->allocation_size, it->allocations, it->calls}),
              e.values);
  }
}

std::vector<std::string> operator_names(const DeviceMemory& d) {
  std::vector<std::string> names;
  for (const OperatorMemory& o : d.operators) names.push_back(o.name);
  return names;
}

MemoryBlock block(std::string_view op, std::int64_t size, std::optional<std::int64_t> allocated_us,
                  std::optional<std::int64_t> released_us) {
  MemoryBlock b{.op_name = std::string(op), .size = size};
  if (allocated_us) b.allocated = us(*allocated_us);
  if (released_us) b.released = us(*released_us);
  if (allocated_us && released_us) b.duration = us(*released_us - *allocated_us);
  return b;
}

TEST(TbPluginConformance, MemoryView) {
  const Trace t = fixture("test_memory_view");
  const MemoryView v = memory_view(t);
  ASSERT_TRUE(v.available);
  // Upstream: two devices, GPU0 among them, and these rows.
  ASSERT_EQ(v.devices.size(), 2u);
  expect_operator_memory(device(v, "GPU0"), {{"aten::to", {104, 104, 2, 104, 204, 3, 4}},
                                             {"aten::nll_loss_backward", {0, 10, 1, 0, 10, 1, 1}},
                                             {"aten::copy_", {0, 100, 1, 0, 100, 1, 1}},
                                             {"aten::addmm", {0, 30, 1, 0, 30, 1, 1}},
                                             {"aten::tranas_stride", {0, 50, 1, 0, 50, 1, 1}},
                                             {"aten::transpose", {0, 50, 1, 0, 100, 2, 1}},
                                             {"aten::t", {0, 100, 1, 0, 200, 3, 1}},
                                             {"aten::liner", {20, 130, 3, 20, 360, 7, 1}}});
  expect_operator_memory(device(v, "CPU"), {{"aten::to", {4, 4, 1, 4, 4, 1, 4}},
                                            {"aten::liner", {0, 100, 1, 50, 150, 2, 1}},
                                            {"aten::tranas_stride", {50, 50, 1, 50, 50, 1, 1}},
                                            {"aten::transpose", {0, 0, 0, 50, 50, 1, 1}},
                                            {"aten::t", {0, 0, 0, 50, 50, 1, 1}}});

  // Plugin-derived: those are every row, by name; times count from the first event (aten::to
  // at 10 us); the first GPU is the default device.
  EXPECT_EQ(operator_names(device(v, "CPU")),
            (std::vector<std::string>{"aten::liner", "aten::t", "aten::to", "aten::tranas_stride", "aten::transpose"}));
  EXPECT_EQ(operator_names(device(v, "GPU0")),
            (std::vector<std::string>{"aten::addmm", "aten::copy_", "aten::liner", "aten::nll_loss_backward", "aten::t",
                                      "aten::to", "aten::tranas_stride", "aten::transpose"}));
  EXPECT_EQ(v.profiler_start, us(10));
  EXPECT_EQ(v.default_device, "GPU0");
  // Plugin-derived: its memory events table (get_memory_events). The release at 749 us is on the
  // CPU but pairs with the GPU allocation at address 690 (made in ProfilerStep#2 between two
  // operators, so by no operator); allocations never released come after the pairs.
  EXPECT_EQ(device(v, "GPU0").blocks, (std::vector<MemoryBlock>{block("aten::nll_loss_backward", 10, 340, 350),
                                                                block("aten::copy_", 100, 510, 590),
                                                                block("aten::tranas_stride", 50, 715, 718),
                                                                block("aten::transpose", 50, 705, 725),
                                                                block("aten::t", 100, 698, 732),
                                                                block("<unknown>", 100, 680, 739),
                                                                block("aten::addmm", 30, 750, 770),
                                                                block("aten::to", 100, 505, 786),
                                                                block("aten::liner", 10, 785, 789),
                                                                block("aten::to", 4, 200, {}),
                                                                block("<unknown>", 4, 255, {}),
                                                                block("<unknown>", 4, 290, {}),
                                                                block("aten::liner", 100, 691, {}),
                                                                block("aten::liner", 20, 737, {})}));
  EXPECT_EQ(device(v, "CPU").blocks, (std::vector<MemoryBlock>{block("<unknown>", 4, 80, {}),
                                                               block("<unknown>", 4, 140, {}),
                                                               block("aten::to", 4, 190, {}),
                                                               block("<unknown>", 1000000, 440, {}),
                                                               block("aten::tranas_stride", 50, 719, {}),
                                                               block("aten::liner", 100, 736, {})}));
  // Plugin-derived: no event has the allocator's totals, so there is no curve to draw.
  EXPECT_TRUE(memory_curve(t).devices.empty());
}

// Upstream's TestMemoryCurve: (ts, device type, device id, address, bytes, total allocated,
// total reserved) of each event, on the CPU and on GPU 0.
using CurveEvent = std::array<std::int64_t, 7>;
const std::vector<CurveEvent> kCpuEvents = {
    {1, 0, 0, 1, 4, 4, 0},         {20, 0, 0, 1, -4, 0, 0},       {100, 0, 0, 2, 8000, 8000, 0},
    {200, 0, 0, 2, -8000, 0, 0},   {300, 0, 0, 3, 4, 4, 0},       {400, 0, 0, 4, 16, 20, 0},
    {500, 0, 0, 5, 4000, 4020, 0}, {600, 0, 0, 4, -16, 4004, 0},  {700, 0, 0, 7, 80, 4084, 0},
    {800, 0, 0, 3, -4, 4080, 0},   {900, 0, 0, 7, -80, 4000, 0},  {905, 0, 0, 4, -4000, 0, 0}};
const std::vector<CurveEvent> kGpuEvents = {
    {2, 1, 0, 11, 400, 400, 512},          {22, 1, 0, 11, -400, 0, 512},         {105, 1, 0, 12, 5000, 5000, 10240},
    {106, 1, 0, 13, 3000, 8000, 10240},    {205, 1, 0, 12, -5000, 3000, 10240},  {401, 1, 0, 14, 1024, 4024, 10240},
    {499, 1, 0, 15, 4, 4028, 10240},       {501, 1, 0, 13, -3000, 1028, 10240},  {502, 1, 0, 15, -4, 1024, 10240},
    {906, 1, 0, 14, -1024, 0, 10240}};

const DeviceMemoryCurve& curve_of(const MemoryCurve& c, std::string_view name) {
  auto it = std::find_if(c.devices.begin(), c.devices.end(), [&](const auto& d) { return d.device == name; });
  if (it == c.devices.end()) throw std::runtime_error("no curve of " + std::string(name));
  return *it;
}

TEST(TbPluginConformance, MemoryCurveNoStepPlot) {
  const Trace t = fixture("test_memory_curve_no_step_plot");
  ASSERT_EQ(t.memory_events().size(), kCpuEvents.size() + kGpuEvents.size());
  const MemoryCurve c = memory_curve(t, /*step_plot=*/false);
  EXPECT_EQ(c.profiler_start, us(1)); // upstream
  ASSERT_EQ(c.devices.size(), 2u);
  for (const auto& [name, events] : {std::pair{"CPU", &kCpuEvents}, std::pair{"GPU0", &kGpuEvents}}) {
    SCOPED_TRACE(name);
    const DeviceMemoryCurve& d = curve_of(c, name);
    ASSERT_EQ(d.points.size(), events->size());
    for (std::size_t i = 0; i < events->size(); ++i) {
      const CurveEvent& e = (*events)[i];
      EXPECT_EQ(d.points[i], (MemoryCurvePoint{.time = us(e[0] - 1), .allocated = e[5], .reserved = e[6]})) << i;
    }
  }
  // Plugin-derived: the peaks, the default device, and no device sizes (no deviceProperties).
  EXPECT_EQ(curve_of(c, "CPU").peak_allocated, 8000);
  EXPECT_EQ(curve_of(c, "GPU0").peak_allocated, 8000);
  EXPECT_EQ(c.default_device, "GPU0");
  EXPECT_FALSE(curve_of(c, "GPU0").device_memory);
}

TEST(TbPluginConformance, MemoryCurveStepPlot) {
  const Trace t = fixture("test_memory_curve_step_plot");
  const MemoryCurve c = memory_curve(t);
  EXPECT_EQ(c.profiler_start, us(1)); // upstream
  ASSERT_EQ(c.devices.size(), 2u);
  // Upstream checks every point of the CPU's curve and the first ten of GPU 0's; here every point
  // of both: the events' points, and between two of them one at the later time with the earlier
  // totals.
  for (const auto& [name, events] : {std::pair{"CPU", &kCpuEvents}, std::pair{"GPU0", &kGpuEvents}}) {
    SCOPED_TRACE(name);
    const DeviceMemoryCurve& d = curve_of(c, name);
    ASSERT_EQ(d.points.size(), 2 * events->size() - 1);
    for (std::size_t i = 0; i < d.points.size(); ++i) {
      const CurveEvent& at = (*events)[(i + 1) / 2];
      const CurveEvent& totals = (*events)[i / 2];
      EXPECT_EQ(d.points[i], (MemoryCurvePoint{.time = us(at[0] - 1), .allocated = totals[5], .reserved = totals[6]}))
          << i;
    }
  }
}

// A release whose allocation the profiler did not record (made before it started) and an
// allocation never released: each a row of its own, the release by no known operator even inside
// one (only allocations name theirs), and the statistics count the release as a decrease.
TEST(TbPluginConformance, MemoryViewReleaseWithoutAllocation) {
  TempTrace file(R"([
    {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 100, "dur": 50, "args": {}},
    {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": 110,
     "args": {"Device Type": 1, "Device Id": 0, "Addr": 7, "Bytes": -64, "Total Allocated": 0, "Total Reserved": 512}},
    {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": 120,
     "args": {"Device Type": 1, "Device Id": 0, "Addr": 8, "Bytes": 32, "Total Allocated": 32, "Total Reserved": 512}}
  ])");
  const MemoryView v = memory_view(file.trace());
  ASSERT_TRUE(v.available);
  ASSERT_EQ(v.devices.size(), 1u);
  EXPECT_EQ(v.profiler_start, us(100));
  expect_operator_memory(v.devices[0], {{"aten::add", {-32, 32, 1, -32, 32, 1, 1}}});
  EXPECT_EQ(v.devices[0].blocks, (std::vector<MemoryBlock>{block("aten::add", 32, 20, {}),
                                                           block("<unknown>", 64, {}, 10)}));
  // A window that leaves the allocation out keeps the release alone, and the call.
  const MemoryView early = memory_view(file.trace(), MemoryWindow{.begin = {}, .end = us(115)});
  ASSERT_EQ(early.devices.size(), 1u);
  expect_operator_memory(early.devices[0], {{"aten::add", {-64, 0, 0, -64, 0, 0, 1}}});
  EXPECT_EQ(early.devices[0].blocks, (std::vector<MemoryBlock>{block("<unknown>", 64, {}, 10)}));
}

// Plugin-derived, on a real trace (../shared/data/wild/switchtf-a100: PyTorch 2.3, profile_memory,
// one A100): what the plugin itself computes on that file (run with its numbers in bytes and µs).
// The same comparison, row by row, holds on every trace of ../shared/data with memory events.
TEST(TbPluginConformance, MemoryViewOfARealTraceIsThePlugins) {
  const auto path = std::filesystem::path(DREAMSCOPE_SHARED_DATA_DIR) / "wild" / "switchtf-a100" / "trace.json";
  DREAMSCOPE_REQUIRE_DATA(path);
  const Trace t = load_trace(path);
  const MemoryView v = memory_view(t);
  ASSERT_TRUE(v.available);
  EXPECT_EQ(v.profiler_start, us(1717559238501767));
  EXPECT_EQ(v.default_device, "GPU0");
  const DeviceMemory& gpu = device(v, "GPU0");
  EXPECT_EQ(gpu.operators.size(), 35u);
  expect_operator_memory(gpu, {{"aten::addmm", {10753540096, 10869932032, 223, 10753540096, 10869932032, 223, 111}},
                               {"aten::linear", {0, 0, 0, 10753540096, 10869932032, 223, 111}},
                               {"aten::gelu", {5368709120, 5368709120, 40, 5368709120, 5368709120, 40, 40}},
                               {"aten::empty", {4774494208, 4774494208, 123, 4774494208, 4774494208, 123, 124}}});
  ASSERT_EQ(gpu.blocks.size(), 658u);
  EXPECT_EQ(gpu.blocks.front(), block("aten::addmm", 1048576, 423445, 448938));
  EXPECT_EQ(gpu.blocks.back(), block("aten::addmm", 3277848576, 1028154, {}));
  const DeviceMemory& cpu = device(v, "CPU");
  EXPECT_TRUE(cpu.operators.empty());
  ASSERT_EQ(cpu.blocks.size(), 30u);
  EXPECT_EQ(cpu.blocks.front(), block("<unknown>", 8, 537607, 537702));

  const MemoryCurve c = memory_curve(t, /*step_plot=*/false);
  const DeviceMemoryCurve& g = curve_of(c, "GPU0");
  ASSERT_EQ(g.points.size(), 1030u);
  EXPECT_EQ(g.points.front(), (MemoryCurvePoint{.time = us(1564), .allocated = 2290939904, .reserved = 2304770048}));
  EXPECT_EQ(g.points.back(), (MemoryCurvePoint{.time = us(1028270), .allocated = 23076435968, .reserved = 23616028672}));
  EXPECT_EQ(g.peak_allocated, 23111038976);
  EXPECT_EQ(curve_of(c, "CPU").points.size(), 40u);
  EXPECT_EQ(curve_of(c, "CPU").peak_allocated, 160);
  // The GPU's memory, from deviceProperties (the plugin's "totals").
  EXPECT_EQ(g.device_memory, std::optional<std::int64_t>(84987740160));
}

// A trace without memory events (every other case of the suite): the plugin shows no memory page.
TEST(TbPluginConformance, NoMemoryViewWithoutMemoryEvents) {
  const Trace t = fixture("test_all_categories");
  ASSERT_TRUE(t.memory_events().empty());
  const MemoryView v = memory_view(t);
  EXPECT_FALSE(v.available);
  EXPECT_TRUE(v.devices.empty());
  EXPECT_TRUE(memory_curve(t).devices.empty());
}

} // namespace
} // namespace dreamscope::analyzers
