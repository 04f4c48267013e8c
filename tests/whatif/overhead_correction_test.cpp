// Overhead correction on hand-built traces with exact expected results, and on a recorded
// real run against the untraced runs measured with it.
#include "../common/hand_trace.h"

#include <dreamscope/graph/graph.h>
#include <dreamscope/storage/importers.h>
#include <dreamscope/whatif/cost_probes.h>
#include <dreamscope/whatif/probe_steps.h>
#include <dreamscope/whatif/whatif.h>

#include "importers/common/import_input.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>

namespace dreamscope::whatif {
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

// Three kernel launches 10 µs apart, a copy and a plain call on one thread: with the launch
// calibration each kernel launch is charged cuda_launch (its record and CUPTI's instrumentation
// of the kernel), the copy and the plain call cuda_api; without it every call cuda_api.
Trace launch_loop(bool with_launch_cost) {
  HandTrace h;
  const TrackId t = h.thread(1);
  const TrackId s = h.stream(7);
  for (int i = 0; i < 3; ++i) {
    h.api(t, "cudaLaunchKernel", i * 10'000, i * 10'000 + 6'000, 100 + i);
    h.kernel(s, "k", i * 10'000 + 7'000, i * 10'000 + 8'000, 100 + i);
  }
  h.api(t, "cudaMemcpyAsync", 30'000, 33'000, 200);
  h.gpu(s, GpuOpKind::Memcpy, "HtoD", 33'500, 34'000, 200);
  h.api(t, "cudaGetDevice", 35'000, 36'000);
  h.calibration("cuda_api", 100);
  if (with_launch_cost) h.calibration("cuda_launch", 4'000);
  return h.build();
}

TEST(OverheadCorrection, KernelLaunchesAreChargedWhatTheLaunchCalibrationMeasured) {
  const Trace plain = launch_loop(false);
  DependencyGraph g = build_dependency_graph(plain);
  const OverheadCorrection c = correct_overhead(plain, g);
  EXPECT_EQ(c.events_charged, 5);
  EXPECT_EQ(c.launches_charged, 0);
  EXPECT_EQ(c.charged_ns, 5 * 100);

  const Trace calibrated = launch_loop(true);
  DependencyGraph h = build_dependency_graph(calibrated);
  const TimeNs before = simulate(h).end_time;
  const OverheadCorrection l = correct_overhead(calibrated, h);
  EXPECT_DOUBLE_EQ(l.costs.cuda_launch_ns, 4'000);
  EXPECT_EQ(l.events_charged, 5);
  EXPECT_EQ(l.launches_charged, 3);
  EXPECT_EQ(l.charged_ns, 3 * 4'000 + 2 * 100);
  EXPECT_EQ(l.removed_ns, l.charged_ns);
  // Each launch call and so its kernel comes 4 µs earlier; the chain shortens by all of it.
  EXPECT_EQ(simulate(h).end_time, before - l.removed_ns);
}

// Four 5 µs ranges recorded from Python (the Python layer's domain) and one from C: the
// Python ones cost the program 1 µs each (calibration "python_range", the tracer's recording
// included), the C one the tracer's 10 ns.
TEST(OverheadCorrection, RangesRecordedFromPythonAreChargedTheirWholeCost) {
  HandTrace h;
  const TrackId t = h.thread(1);
  for (int i = 0; i < 4; ++i) {
    h.annotation(t, "forward: layer" + std::to_string(i), "operation", i * 10'000, i * 10'000 + 5'000, kNoValue,
                 "dreamscope.auto");
  }
  h.annotation(t, "forward", "operation", 40'000, 45'000);
  h.calibration("nvtx_range", 10);
  h.calibration("python_range", 1'000);
  const Trace trace = h.build();
  EXPECT_DOUBLE_EQ(overhead_costs(trace.calibration()).python_range_ns, 1'000);
  DependencyGraph g = build_dependency_graph(trace);
  const OverheadCorrection c = correct_overhead(trace, g);
  EXPECT_EQ(c.events_charged, 5);
  EXPECT_EQ(c.charged_ns, 10 + 4 * 1'000);
  EXPECT_EQ(c.removed_ns, c.charged_ns);
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


// A real traced run (tests/data/cpu/record_fine_annotations.sh): cpu_train with a range per
// hidden neuron and sample, which tracing slows by a third, and the median step of untraced
// runs measured beside it on the same machine. The corrected replay of the trace must land
// near the untraced runs, and far from the traced one. The 3 % acceptance bound is checked
// live by bench/graph/overhead_correction.sh; this recorded pair checks the same path with
// the looser bound of a single traced run.
// Ten 1000 ns ranges 2000 ns apart on one thread, in two windows of the thread's load. Start-up
// calibration: a range costs 10 ns, and the in-run timing read 20 ns for it then.
HandTrace ranges_in_two_windows(double first_timed, std::int64_t first_samples, double second_timed) {
  HandTrace h;
  const TrackId t = h.thread(1);
  for (int i = 0; i < 10; ++i) h.annotation(t, "op" + std::to_string(i), "operation", i * 2000, i * 2000 + 1000);
  h.calibration("nvtx_range", 10);
  h.calibration("nvtx_range_timed", 20);
  h.thread_load(ThreadLoadRecord{.track = t, .start = 0, .end = 10000, .events = 10, .cost_samples = first_samples,
                                 .range_cost_ns = first_timed});
  h.thread_load(ThreadLoadRecord{.track = t, .start = 10000, .end = 20000, .events = 10, .cost_samples = 64,
                                 .range_cost_ns = second_timed});
  return h;
}

TEST(OverheadCorrection, InRunTimingScalesTheCalibratedCostWindowByWindow) {
  // The calls ran twice as slow as at start-up in the first window, as fast in the second.
  const Trace trace = ranges_in_two_windows(40, 64, 20).build();
  DependencyGraph g = build_dependency_graph(trace);
  const OverheadCorrection c = correct_overhead(trace, g);
  EXPECT_EQ(c.events_charged, 10);
  EXPECT_EQ(c.events_charged_in_run, 10);
  EXPECT_DOUBLE_EQ(c.in_run_range_ns, 15);
  EXPECT_EQ(c.removed_ns, 5 * 20 + 5 * 10);
  EXPECT_EQ(c.runqueue_removed_ns, 0); // no runqueue times
}

TEST(OverheadCorrection, InRunTimingFasterThanAtStartUpKeepsTheCalibratedCost) {
  const Trace trace = ranges_in_two_windows(10, 64, 20).build();
  DependencyGraph g = build_dependency_graph(trace);
  const OverheadCorrection c = correct_overhead(trace, g);
  EXPECT_EQ(c.events_charged_in_run, 10);
  EXPECT_EQ(c.removed_ns, 10 * 10);
}

TEST(OverheadCorrection, WithTheClocksCalibrationAWindowIsChargedItsTimingLessOneClockPairPerRange) {
  // Two clock reads are 12 ns apart: a range timed 40 ns costs 28 ns; one timed 20 ns would
  // cost 8 ns, under the 10 ns back to back, which stays the floor.
  HandTrace h = ranges_in_two_windows(40, 64, 20);
  h.calibration("clock_read", 12);
  const Trace trace = h.build();
  DependencyGraph g = build_dependency_graph(trace);
  const OverheadCorrection c = correct_overhead(trace, g);
  EXPECT_EQ(c.events_charged_in_run, 10);
  EXPECT_DOUBLE_EQ(c.costs.clock_read_ns, 12);
  EXPECT_EQ(c.removed_ns, 5 * 28 + 5 * 10);
  EXPECT_DOUBLE_EQ(c.in_run_range_ns, (28 + 10) / 2.0);
}

TEST(OverheadCorrection, AWindowTimedUnderTheBackToBackCostIsChargedItsTiming) {
  // Start-up was slower than the run: ranges cost 10 ns back to back then, and the first
  // window timed them at 8 ns, clock read included. They cost the thread at most that.
  HandTrace h = ranges_in_two_windows(8, 64, 20);
  h.calibration("clock_read", 12);
  const Trace trace = h.build();
  DependencyGraph g = build_dependency_graph(trace);
  const OverheadCorrection c = correct_overhead(trace, g);
  EXPECT_EQ(c.events_charged_in_run, 10);
  EXPECT_EQ(c.removed_ns, 5 * 8 + 5 * 10);
  EXPECT_DOUBLE_EQ(charged_cost(8, true, c.costs), 8);
  EXPECT_DOUBLE_EQ(charged_cost(20, true, c.costs), 10); // the floor: 20 - 12 is under it
  EXPECT_DOUBLE_EQ(charged_cost(40, true, c.costs), 28);
}

TEST(OverheadCorrection, WithTheClocksCalibrationAMarkIsChargedItsTimingLessHalfAPair) {
  HandTrace h;
  const TrackId t = h.thread(1);
  for (int i = 0; i < 4; ++i) h.annotation(t, "tick", "marker", 500 + i * 1000, 500 + i * 1000);
  h.annotation(t, "work", "operation", 0, 4000);
  h.calibration("nvtx_mark", 5);
  h.calibration("clock_read", 12);
  h.thread_load(ThreadLoadRecord{.track = t, .start = 0, .end = 5000, .events = 6, .cost_samples = 64,
                                 .mark_cost_ns = 30});
  const Trace trace = h.build();
  DependencyGraph g = build_dependency_graph(trace);
  const OverheadCorrection c = correct_overhead(trace, g);
  EXPECT_EQ(c.removed_ns, 4 * (30 - 6));
}

TEST(OverheadCorrection, AWindowWithFewTimedCallsTakesTheThreadsMean) {
  // 8 timed calls are too few to stand for the first window: the thread's mean over the run,
  // weighted by timed calls, is (8 x 100 + 64 x 20) / 72 ns of timing.
  const Trace trace = ranges_in_two_windows(100, 8, 20).build();
  DependencyGraph g = build_dependency_graph(trace);
  const OverheadCorrection c = correct_overhead(trace, g);
  const double mean_timed = (8 * 100.0 + 64 * 20.0) / 72;
  EXPECT_EQ(c.events_charged_in_run, 10);
  EXPECT_NEAR(static_cast<double>(c.removed_ns), 5 * mean_timed / 2 + 5 * 10, 1.0);
}

TEST(OverheadCorrection, CostsPassedInReplaceTheInRunTiming) {
  const Trace trace = ranges_in_two_windows(40, 64, 20).build();
  DependencyGraph g = build_dependency_graph(trace);
  const OverheadCorrection c = correct_overhead(trace, g, OverheadCosts{.range_ns = 7});
  EXPECT_EQ(c.events_charged_in_run, 0);
  EXPECT_EQ(c.removed_ns, 70);
}

// Two threads that each ran one 1000 ns task at once and waited 500 ns of it for a core; the
// tracer's writer used `writer_ns` of CPU meanwhile.
Trace two_threads_that_waited_for_a_core(TimeNs writer_ns) {
  HandTrace h;
  for (std::int64_t tid : {1, 2}) {
    const TrackId t = h.thread(tid);
    h.annotation(t, "work", "operation", 0, 1000);
    h.thread_load(ThreadLoadRecord{.track = t, .start = 0, .end = 1000, .cpu_ns = 500, .runqueue_ns = 500, .events = 2});
  }
  h.meta("tracer_writer_cpu_ns", std::to_string(writer_ns));
  return h.build();
}

TEST(OverheadCorrection, TheWritersShareOfTheWaitsForACoreIsTakenOut) {
  // The writer ran 500 ns: half of the 1000 ns the threads waited was for it.
  const ReplayReport half = replay(two_threads_that_waited_for_a_core(500), {.correct_overhead = true});
  ASSERT_TRUE(half.correction);
  EXPECT_EQ(half.correction->runqueue_removed_ns, 500);
  EXPECT_EQ(half.predicted_span(), 750);
  // It ran longer than they waited: all of the waiting was for it, and no more.
  const ReplayReport all = replay(two_threads_that_waited_for_a_core(5000), {.correct_overhead = true});
  EXPECT_EQ(all.correction->runqueue_removed_ns, 1000);
  EXPECT_EQ(all.predicted_span(), 500);
  // A trace that does not say what the writer used keeps the waits.
  HandTrace h;
  const TrackId t = h.thread(1);
  h.annotation(t, "work", "operation", 0, 1000);
  h.thread_load(ThreadLoadRecord{.track = t, .start = 0, .end = 1000, .cpu_ns = 500, .runqueue_ns = 500, .events = 2});
  const ReplayReport unknown = replay(h.build(), {.correct_overhead = true});
  EXPECT_EQ(unknown.correction->runqueue_removed_ns, 0);
  EXPECT_EQ(unknown.predicted_span(), 1000);
}

TEST(OverheadCorrection, OverlappingWindowsOfAThreadCountOnce) {
  // The tracer never writes them; a trace that claims them is read for the first only (else
  // every window would be laid over every task: quadratic on a hostile file).
  HandTrace h;
  const TrackId t = h.thread(1);
  h.annotation(t, "work", "operation", 0, 1000);
  for (int i = 0; i < 3; ++i) {
    h.thread_load(ThreadLoadRecord{.track = t, .start = 0, .end = 1000, .cpu_ns = 700, .runqueue_ns = 300, .events = 2});
  }
  h.meta("tracer_writer_cpu_ns", "5000");
  const ReplayReport r = replay(h.build(), {.correct_overhead = true});
  EXPECT_EQ(r.correction->runqueue_removed_ns, 300);
  EXPECT_EQ(r.predicted_span(), 700);
}

// A recorded traced run and the untraced runs measured with it: the median step of the
// untraced runs, and of the traced run as measured and as corrected.
struct RecordedRun {
  double untraced = 0, traced = 0, corrected = 0;
  ReplayReport report;
};

RecordedRun replay_recorded(const std::filesystem::path& log, const std::filesystem::path& facts) {
  RecordedRun out;
  std::ifstream in(facts);
  EXPECT_TRUE(in) << "missing " << facts;
  if (!in) return out;
  out.untraced = nlohmann::json::parse(in).at("untraced_median_of_runs_ns").get<double>();
  out.report = replay(load_trace(log), {.correct_overhead = true});
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  };
  std::vector<double> measured, predicted;
  for (const StepTime& s : out.report.steps) {
    measured.push_back(static_cast<double>(s.measured()));
    predicted.push_back(static_cast<double>(s.predicted()));
  }
  if (!measured.empty()) {
    out.traced = median(measured);
    out.corrected = median(predicted);
  }
  return out;
}


TEST(OverheadCorrection, RecordedFineAnnotationRunPredictsTheUntracedSteps) {
  const std::filesystem::path dir = std::filesystem::path(DREAMSCOPE_TEST_DATA_DIR) / "cpu";
  const RecordedRun run = replay_recorded(dir / "fine_annotations.dslog", dir / "fine_annotations.json");
  const ReplayReport& report = run.report;
  ASSERT_EQ(report.steps.size(), 40u);
  const double untraced = run.untraced, traced = run.traced, corrected = run.corrected;
  ASSERT_TRUE(report.correction.has_value());
  EXPECT_GT(report.correction->events_charged, 300'000);
  EXPECT_GT(report.correction->overhead_records, 0) << "the tracer's chunk mappings are in the trace";
  std::printf("untraced %.1f us, traced %.1f us (+%.1f %%), corrected %.1f us (%+.2f %%)\n", untraced / 1e3,
              traced / 1e3, 100 * (traced - untraced) / untraced, corrected / 1e3,
              100 * (corrected - untraced) / untraced);
  EXPECT_GT((traced - untraced) / untraced, 0.30) << "the fixture no longer shows the tracer's cost";
  EXPECT_LT(std::abs(corrected - untraced) / untraced, 0.10);
}

// Traced runs recorded with their untraced runs in four states of the machine
// (tests/data/cpu/overhead_states/README.md). Each bound is the error the correction gets on
// the recording today with a margin of a few points: the gate is that it gets no worse, and
// that it brings the prediction nearer the untraced run than the traced run was (all but the
// neighbour's workers2 run, below). The
// errors themselves are figures of this correction, reported in docs/simulation.md.
TEST(OverheadCorrection, RecordedStatesPredictTheUntracedSteps) {
  struct State {
    const char* name;
    double bound; // |corrected - untraced| / untraced, at most
  };
  // Recorded 2026-11-27 with the clock's calibration: -2.55 % and -3.73 % (pipeline,
  // workers2: the machine's slow state, machine probe ~60 us), -5.54 % and -25.25 % (with the
  // neighbour, which happened to be the fast state, probe ~40 us). With a neighbour the writer's
  // share of the waits is over-estimated: the correction takes up to the writer's CPU of them,
  // although the neighbour would have had part of that CPU (docs/simulation.md). Since the
  // loader that took its consumer's core is let go by the consumption (2026-11-29,
  // DataPipelinePass.ALoaderThatPreemptsItsConsumerIsStillLetGoByTheConsumption) nothing offsets
  // that in workers2-busy: -26.54 %, as far below the untraced run as tracing put it above
  // (+25.6 %), so there the gate is the bound alone.
  const State states[] = {{"pipeline", 0.05}, {"workers2", 0.06}, {"pipeline-busy", 0.08}, {"workers2-busy", 0.28}};
  const std::filesystem::path dir = std::filesystem::path(DREAMSCOPE_TEST_DATA_DIR) / "cpu" / "overhead_states";
  for (const State& state : states) {
    SCOPED_TRACE(state.name);
    const std::string name = state.name;
    const RecordedRun run = replay_recorded(dir / (name + ".dslog"), dir / (name + ".json"));
    const ReplayReport& report = run.report;
    ASSERT_EQ(report.steps.size(), 40u);
    const double untraced = run.untraced, traced = run.traced, corrected = run.corrected;
    const OverheadCorrection& c = *report.correction;
    std::printf("%-14s untraced %.1f us, traced %.1f us (%+.1f %%), corrected %.1f us (%+.2f %%); range %.1f ns "
                "in the run, %.3f ms of waits for a core removed\n",
                state.name, untraced / 1e3, traced / 1e3, 100 * (traced - untraced) / untraced, corrected / 1e3,
                100 * (corrected - untraced) / untraced, c.in_run_range_ns, static_cast<double>(c.runqueue_removed_ns) / 1e6);
    EXPECT_GT((traced - untraced) / untraced, 0.20) << "the fixture no longer shows the tracer's cost";
    EXPECT_GT(c.events_charged_in_run, c.events_charged / 2) << "costs timed in the run were not used";
    // Where the job's threads and the writer outnumbered the cores, the threads waited for one.
    if (name != "pipeline") {
      EXPECT_GT(c.runqueue_removed_ns, 0) << "the writer's share of the waits was not removed";
    }
    if (name != "workers2-busy") {
      EXPECT_LT(std::abs(corrected - untraced), std::abs(traced - untraced));
    }
    EXPECT_LT(std::abs(corrected - untraced) / untraced, state.bound);
  }
}

// Runs recorded with recording paused in every other block of 10 steps
// (tests/data/cpu/record_paused_blocks.sh): each recorded block's corrected prediction against
// the paused blocks beside it, tens of ms away, in the same process, where the machine was in
// the same state (bench/graph/overhead_correction.sh, METHOD=paired, is this comparison live).
// The bounds are the errors the correction gets on the recordings today with a margin: the
// gate is that it gets no worse.
double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// A traced run of cpu_train --paused-blocks replayed with overhead correction: each recorded
// block's corrected steps against the paused blocks on either side, as the recording's JSON
// (`facts`) has cpu_train's step times. The blocks' second halves are compared: the first
// steps after a pause or resume refill the loaders. Where the recording has cpu_train's state
// probe (a fourth column), a block that ran in another state of the machine than its
// neighbours (their state probes more than 10 % apart; the two states are ~60 % apart, and the
// slow one's probe varies by 5-10 % on its own) is left out, as the bench leaves it out (`moved`): its neighbours measure another
// machine. Prints each block; returns the errors.
std::vector<double> paired_block_errors(const Trace& trace, const nlohmann::json& facts, const std::string& label) {
  const int block = facts.at("block").get<int>();
  std::map<int, double> paused; // step -> ns, as cpu_train timed it
  std::map<int, double> state;  // step -> ns of the state probe before it
  for (const auto& row : facts.at("steps")) {
    if (row[1].get<int>() == 0) paused[row[0].get<int>()] = row[2].get<double>();
    if (row.size() > 3) state[row[0].get<int>()] = row[3].get<double>();
  }
  EXPECT_FALSE(trace.meta_value("recording_paused").empty());
  const ReplayReport report = replay(trace, {.correct_overhead = true});
  std::map<int, std::pair<double, double>> recorded; // step -> measured, predicted
  for (const StepTime& s : report.steps) {
    recorded[static_cast<int>(trace.annotations().payload[s.row])] = {static_cast<double>(s.measured()),
                                                                       static_cast<double>(s.predicted())};
  }
  EXPECT_EQ(recorded.size(), paused.size()) << "every other block recorded";
  auto half = [&](int b, bool of_recorded, bool predicted) {
    std::vector<double> v;
    for (int i = b * block + block / 2; i < (b + 1) * block; ++i) {
      if (of_recorded ? !recorded.count(i) : !paused.count(i)) continue;
      v.push_back(of_recorded ? (predicted ? recorded.at(i).second : recorded.at(i).first) : paused.at(i));
    }
    return v.empty() ? 0.0 : median_of(v);
  };
  auto state_of = [&](int b) {
    std::vector<double> v;
    for (int i = b * block + block / 2; i < (b + 1) * block; ++i) {
      if (state.count(i)) v.push_back(state.at(i));
    }
    return v.empty() ? 0.0 : median_of(v);
  };
  const int blocks = static_cast<int>(recorded.size() + paused.size()) / block;
  std::vector<double> errors;
  for (int b = 2; b + 1 < blocks; b += 2) {
    const double reference = (half(b - 1, false, false) + half(b + 1, false, false)) / 2;
    const double traced = half(b, true, false), predicted = half(b, true, true);
    if (reference <= 0 || traced <= 0) continue;
    if (const double own = state_of(b); own > 0) {
      // With the state probe recorded (the fixtures of issue 35 on), the bench's rules: the paused
      // neighbours agree within 5 %, and the three blocks' states within 10 %.
      const double left = half(b - 1, false, false), right = half(b + 1, false, false);
      if (std::abs(left - right) > 0.05 * std::min(left, right)) {
        std::printf("%-14s block %d: paused neighbours %.1f and %.1f us apart, left out\n", label.c_str(), b, left / 1e3,
                    right / 1e3);
        continue;
      }
      const double lo = std::min({own, state_of(b - 1), state_of(b + 1)}), hi = std::max({own, state_of(b - 1), state_of(b + 1)});
      if (hi > 1.10 * lo) {
        std::printf("%-14s block %d: moved (state probe %.1f us against %.1f and %.1f), left out\n", label.c_str(), b,
                    own / 1e3, state_of(b - 1) / 1e3, state_of(b + 1) / 1e3);
        continue;
      }
    }
    const double error = (predicted - reference) / reference;
    std::printf("%-14s block %d: paused %.1f us, recorded %.1f us (%+.1f %%), corrected %.1f us (%+.2f %%)\n",
                label.c_str(), b, reference / 1e3, traced / 1e3, 100 * (traced - reference) / reference, predicted / 1e3,
                100 * error);
    EXPECT_GT((traced - reference) / reference, 0.20) << "the fixture no longer shows the tracer's cost";
    errors.push_back(error);
  }
  return errors;
}

nlohmann::json read_facts(const std::filesystem::path& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << "missing " << path;
  return in ? nlohmann::json::parse(in) : nlohmann::json::object();
}

TEST(OverheadCorrection, RecordedPausedBlocksPredictTheirPausedNeighbours) {
  struct Config {
    const char* name;
    double median_bound, pair_bound; // |error| of the median pair, and of any pair
  };
  // Recorded 2026-11-27 (AMD EPYC, 2 cores), before cost probes, so corrected from the calls'
  // own timing: pipeline -3.88 to +0.48 % a pair (median -2.58 %), workers2 -2.02 to +0.36 %
  // (median -1.17 %), the tracer slowing the steps by 31-35 % and 47-49 %.
  const Config configs[] = {{"pipeline", 0.04, 0.06}, {"workers2", 0.03, 0.05}};
  const std::filesystem::path dir = std::filesystem::path(DREAMSCOPE_TEST_DATA_DIR) / "cpu" / "paused_blocks";
  for (const Config& config : configs) {
    SCOPED_TRACE(config.name);
    const std::string name = config.name;
    const auto facts = read_facts(dir / (name + ".json"));
    ASSERT_TRUE(facts.at("settled").get<bool>()) << "the recording's paused neighbours disagree";
    const std::vector<double> errors = paired_block_errors(load_trace(dir / (name + ".dslog")), facts, name);
    ASSERT_GE(errors.size(), 4u);
    for (double e : errors) EXPECT_LT(std::abs(e), config.pair_bound);
    EXPECT_LT(std::abs(median_of(errors)), config.median_bound);
  }
}

// Each fixture of `dir` that its bounds.json names: a gzipped part log of a run recorded with
// paused blocks, replayed with overhead correction, every recorded block against its paused
// neighbours within the bounds (the median pair's and any pair's error). `check` sees each trace
// first. Returns the states of the machine the fixtures were recorded in.
std::set<std::string> recorded_logs_within_bounds(const std::filesystem::path& dir,
                                                  const std::function<void(const std::string&, const Trace&)>& check) {
  std::ifstream bounds_in(dir / "bounds.json");
  EXPECT_TRUE(bounds_in) << "missing " << (dir / "bounds.json");
  if (!bounds_in) return {};
  const auto bounds = nlohmann::json::parse(bounds_in);
  std::set<std::string> states;
  for (const auto& [name, bound] : bounds.items()) {
    SCOPED_TRACE(name);
    const auto facts = read_facts(dir / (name + ".json"));
    states.insert(facts.at("state").get<std::string>());
    // Unpacked beside the test's other scratch files: the reader takes a part log from a file.
    const InputBuffer packed = read_input(dir / (name + ".dslog.gz"), {});
    const std::filesystem::path log = std::filesystem::temp_directory_path() / ("dreamscope-probes-" + name + ".dslog");
    {
      std::ofstream out(log, std::ios::binary);
      out.write(packed.data(), static_cast<std::streamsize>(packed.size));
    }
    const Trace trace = load_trace(log);
    std::filesystem::remove(log);
    check(name, trace);
    const std::vector<double> errors = paired_block_errors(trace, facts, name);
    EXPECT_GE(errors.size(), 4u);
    const double median_bound = bound.at("median").get<double>(), pair_bound = bound.at("pair").get<double>();
    for (double e : errors) EXPECT_LT(std::abs(e), pair_bound);
    if (!errors.empty()) {
      EXPECT_LT(std::abs(median_of(errors)), median_bound);
    }
  }
  return states;
}

// The same, on runs recorded in the machine's slow state (tests/data/cpu/cost_probes, gzipped part
// logs), with cost probes: the correction charges the calls' timing, and what the probes'
// counted calls cost; the probes' own measure is printed beside it.
TEST(OverheadCorrection, RecordedCostProbesPredictTheirPausedNeighbours) {
  const auto states = recorded_logs_within_bounds(
      std::filesystem::path(DREAMSCOPE_TEST_DATA_DIR) / "cpu" / "cost_probes", [](const std::string& name, const Trace& trace) {
        const ProbeSummary probes = summarize_probes(trace);
        std::printf("%-14s %lld of %lld probes measured; recording a call %.1f ns (fast windows), %.1f ns (slow)\n",
                    name.c_str(), static_cast<long long>(probes.measured), static_cast<long long>(probes.probes),
                    probes.fast_record_ns, probes.slow_record_ns);
        EXPECT_GE(probes.probes, 3);
      });
  EXPECT_TRUE(states.count("slow")) << "no fixture in the machine's slow state";
}

// Runs recorded with probe steps (tests/data/cpu/probe_steps), in the machine's fast and slow
// states: the correction charges each window's timing less what the probe steps nearest it found
// the timing over-reads.
TEST(OverheadCorrection, RecordedProbeStepsPredictTheirPausedNeighbours) {
  const auto states = recorded_logs_within_bounds(
      std::filesystem::path(DREAMSCOPE_TEST_DATA_DIR) / "cpu" / "probe_steps", [](const std::string& name, const Trace& trace) {
        const ProbeStepSummary steps = summarize_probe_steps(trace);
        std::printf("%-20s %lld of %lld probe steps measured; a range cost %.1f ns where its calls timed %.1f (medians)\n",
                    name.c_str(), static_cast<long long>(steps.measured), static_cast<long long>(steps.probes),
                    steps.cost_ns, steps.timing_ns);
        EXPECT_GE(steps.measured, static_cast<std::int64_t>(ThreadProbeSteps::kMinMeasures));
        DependencyGraph graph = build_dependency_graph(trace);
        EXPECT_GE(correct_overhead(trace, graph).threads_by_probe_steps, 1) << "the probe steps were not used";
      });
  EXPECT_TRUE(states.count("slow")) << "no fixture in the machine's slow state";
  EXPECT_TRUE(states.count("fast")) << "no fixture in the machine's fast state";
}

} // namespace
} // namespace dreamscope::whatif

namespace dreamscope::whatif {
namespace {

// fuzz_trace_db found a trace.db whose range cost, times its ranges, overflowed int64 when
// the totals were reported. Costs that large are refused when a trace loads; costs given to
// correct_overhead directly still only remove what the tasks took, and the totals saturate.
TEST(OverheadCorrection, AbsurdCostsRemoveAtMostTheTasksAndTheTotalsSaturate) {
  test::HandTrace h;
  const TrackId t = h.thread(1);
  for (int i = 0; i < 20000; ++i) h.annotation(t, "op", "operation", i * 100, i * 100 + 50);
  const Trace trace = h.build();
  DependencyGraph graph = build_dependency_graph(trace);
  const OverheadCorrection c = correct_overhead(trace, graph, OverheadCosts{.range_ns = 1e15});
  EXPECT_EQ(c.charged_ns, std::numeric_limits<TimeNs>::max());
  EXPECT_LE(c.removed_ns, 20000 * 100);
  EXPECT_GT(c.removed_ns, 0);
  for (TaskId task = 0; task < graph.task_count(); ++task) EXPECT_GE(graph.duration(task), 0);
}

} // namespace
} // namespace dreamscope::whatif
