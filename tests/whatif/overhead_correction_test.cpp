// Overhead correction on hand-built traces with exact expected results.
#include "../common/hand_trace.h"

#include <dreamscope/graph.h>
#include <dreamscope/whatif.h>

#include <gtest/gtest.h>

namespace dreamscope {
namespace {

using test::HandTrace;

TEST(OverheadCorrection, CostsComeFromTheCalibrationRowWithMostSamples) {
  std::vector<CalibrationRecord> rows = {{"nvtx_range", 40, 10, "startup"},
                                         {"nvtx_range", 31.5, 100000, "calibrate"},
                                         {"cuda_api", 250, 500, "startup"}};
  const OverheadCosts costs = overhead_costs(rows);
  EXPECT_DOUBLE_EQ(costs.range_ns, 31.5);
  EXPECT_DOUBLE_EQ(costs.cuda_api_ns, 250);
  EXPECT_DOUBLE_EQ(costs.marker_ns, 0);
}

// Ten 50 ns ranges 100 ns apart; each range costs 10 ns, the API call 4 ns, and a CUPTI
// buffer flush took 30 ns inside the third range.
Trace traced_loop() {
  HandTrace h;
  const TrackId t = h.thread(1);
  for (int i = 0; i < 10; ++i) h.annotation(t, "op" + std::to_string(i), "operation", i * 100, i * 100 + 50);
  h.api(t, "cudaGetDevice", 10, 20);
  h.overhead(t, 210, 240);
  h.calibration("nvtx_range", 10);
  h.calibration("cuda_api", 4);
  return h.build();
}

TEST(OverheadCorrection, ShrinksEachTaskByTheCostOfWhatWasRecordedInIt) {
  const Trace trace = traced_loop();
  DependencyGraph g = build_dependency_graph(trace);
  EXPECT_EQ(simulate(g).end_time, 950);
  const OverheadCorrection c = correct_overhead(trace, g);
  EXPECT_EQ(c.events_charged, 11);
  EXPECT_EQ(c.overhead_records, 1);
  EXPECT_EQ(c.charged_ns, 10 * 10 + 4 + 30);
  EXPECT_EQ(c.removed_ns, c.charged_ns);
  EXPECT_EQ(c.unabsorbed_ns, 0);
  EXPECT_EQ(simulate(g).end_time, 950 - 134);
}

TEST(OverheadCorrection, ChargesCarryToTheNextTasksButNotPastAWait) {
  HandTrace h;
  const TrackId t = h.thread(1);
  const TrackId s = h.stream(7);
  // A 5 ns range costs 10 ns: 5 ns carry into the launch call that follows it.
  h.annotation(t, "tiny", "operation", 0, 5);
  h.api(t, "launch", 5, 15, 1, 7);
  h.kernel(s, "k", 20, 1020, 1);
  // The overhead of this range happened before the sync, and the sync hid it.
  h.annotation(t, "before sync", "operation", 20, 22);
  h.api(t, "cudaStreamSynchronize", 22, 1025, kNoValue, 7);
  h.api(t, "cudaFree", 1025, 1125);
  h.calibration("nvtx_range", 10);
  const Trace trace = h.build();
  DependencyGraph g = build_dependency_graph(trace);
  const OverheadCorrection c = correct_overhead(trace, g);
  EXPECT_EQ(c.removed_ns, 5 + 5 + 2); // tiny, the launch after it, "before sync"
  EXPECT_EQ(c.unabsorbed_ns, 8);
  const SimulationResult r = simulate(g);
  // The kernel starts 5 ns earlier (its launch does), so the sync and what follows do too.
  EXPECT_EQ(r.end_time, 1125 - 5);
}

TEST(OverheadCorrection, ReplayReportsTheCorrection) {
  const Trace trace = traced_loop();
  ReplayOptions options;
  options.correct_overhead = true;
  options.make_trace = true;
  const ReplayReport report = replay(trace, options);
  ASSERT_TRUE(report.correction.has_value());
  EXPECT_EQ(report.predicted_span(), 816);
  EXPECT_EQ(report.measured_span(), 950);
  EXPECT_TRUE(report.predicted->overheads().empty());
  EXPECT_EQ(report.predicted->meta_value("prediction"), "replay, tracer overhead removed");
}

} // namespace
} // namespace dreamscope
