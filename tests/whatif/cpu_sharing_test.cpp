// Sharing the traced machine's cores in a prediction (whatif/cpu_sharing.h): the waits for a
// core are taken out of the measured tasks so that replaying them on the machine's cores gives
// the run back, and taking work away lets the other threads go faster.
#include <dreamscope/cpu_sharing.h>
#include <dreamscope/graph.h>
#include <dreamscope/replay.h>
#include <dreamscope/simulator.h>
#include <dreamscope/steps.h>
#include <dreamscope/trace_file.h>
#include <dreamscope/whatif.h>
#include <dreamscope/whatif_engine.h>

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>

namespace dreamscope {
namespace {

// `threads` threads (one process each, on `hosts` machines in turn) of one `work` ns range
// each, all from 0 to `measured`, on machines of `cores` cores.
Trace busy_threads(int threads, int hosts, TimeNs measured, int cores) {
  TraceBuilder b;
  b.set_meta("cpu_cores", std::to_string(cores));
  const StringId ds = b.intern("dreamscope"), op = b.intern(annotation_category::kOperation),
                 name = b.intern("compute");
  for (int i = 0; i < threads; ++i) {
    const auto p = b.add_process({.pid = 100 + i, .name = "job", .host = "node" + std::to_string(i % hosts)});
    const TrackId t = b.thread_track(p, 100 + i, "main");
    b.add(AnnotationRecord{.track = t, .start = 0, .end = measured, .name = name, .domain = ds, .category = op});
  }
  return std::move(b).build();
}

SimulationResult simulate_shared(const DependencyGraph& g, const whatif::CpuPools& pools) {
  SimulationOptions options;
  options.cpu_cores = pools.cores;
  options.cpu_pool = pools.of_resource;
  return simulate(g, options);
}

TEST(CpuSharing, FourThreadsOnTwoCoresEachDidHalfTheirMeasuredTime) {
  const Trace t = busy_threads(4, 1, 2000, 2);
  DependencyGraph g = build_dependency_graph(t);
  const whatif::CpuPools pools = whatif::machine_pools(t, g, 2);
  EXPECT_EQ(pools.pools, 1u);
  const whatif::ContentionRemoved removed = whatif::remove_measured_contention(g, pools);
  EXPECT_EQ(removed.tasks, 4u);
  EXPECT_EQ(removed.time_before, 8000);
  EXPECT_EQ(removed.time_after, 4000);
  // On the same two cores, the works take the measured time again.
  const SimulationResult r = simulate_shared(g, pools);
  for (TaskId k = 0; k < g.task_count(); ++k) EXPECT_EQ(r.end[k], 2000) << k;
}

TEST(CpuSharing, TakingAThreadsWorkAwayLetsTheOthersGoFaster) {
  const Trace t = busy_threads(4, 1, 2000, 2);
  DependencyGraph g = build_dependency_graph(t);
  const whatif::CpuPools pools = whatif::machine_pools(t, g, 2);
  whatif::remove_measured_contention(g, pools);
  g.set_removed(0, true);
  // Three works of 1000 ns on two cores: each at 2/3 of full speed, done at 1500.
  const SimulationResult r = simulate_shared(g, pools);
  for (TaskId k = 1; k < g.task_count(); ++k) EXPECT_EQ(r.end[k], 1500) << k;
}

TEST(CpuSharing, EachMachineSharesOnlyItsOwnCores) {
  // Four threads on two machines of two cores each: nobody waited for a core.
  const Trace t = busy_threads(4, 2, 2000, 2);
  DependencyGraph g = build_dependency_graph(t);
  const whatif::CpuPools pools = whatif::machine_pools(t, g, 2);
  EXPECT_EQ(pools.pools, 2u);
  EXPECT_EQ(whatif::remove_measured_contention(g, pools).tasks, 0u);
  const SimulationResult r = simulate_shared(g, pools);
  for (TaskId k = 0; k < g.task_count(); ++k) EXPECT_EQ(r.end[k], 2000) << k;
  // The same threads on one machine of two cores would have taken twice as long.
  SimulationOptions one_pool;
  one_pool.cpu_cores = 2;
  const SimulationResult together = simulate(g, one_pool);
  for (TaskId k = 0; k < g.task_count(); ++k) EXPECT_EQ(together.end[k], 4000) << k;
}

TEST(CpuSharing, ThreadsThatOverlapPartlyLoseOnlyTheirSharedTime) {
  // Three threads on one core: [0, 3000), [1000, 2000) and [1000, 2000). From 1000 to 2000
  // three ran at a third of a core each.
  TraceBuilder b;
  b.set_meta("cpu_cores", "1");
  const StringId ds = b.intern("dreamscope"), op = b.intern(annotation_category::kOperation), name = b.intern("x");
  const auto p = b.add_process({.pid = 1, .name = "job"});
  const TimeNs spans[3][2] = {{0, 3000}, {1000, 2000}, {1000, 2000}};
  for (int i = 0; i < 3; ++i) {
    const TrackId t = b.thread_track(p, 10 + i, "t");
    b.add(AnnotationRecord{.track = t, .start = spans[i][0], .end = spans[i][1], .name = name, .domain = ds,
                           .category = op});
  }
  const Trace t = std::move(b).build();
  DependencyGraph g = build_dependency_graph(t);
  const whatif::CpuPools pools = whatif::machine_pools(t, g, 1);
  whatif::remove_measured_contention(g, pools);
  std::vector<TimeNs> durations;
  for (TaskId k = 0; k < g.task_count(); ++k) durations.push_back(g.duration(k));
  std::sort(durations.begin(), durations.end());
  ASSERT_EQ(durations.size(), 3u);
  EXPECT_EQ(durations[0], 333);
  EXPECT_EQ(durations[1], 333);
  EXPECT_EQ(durations[2], 2333); // 1000 alone, a third of 1000, 1000 alone
}

// The recorded 8-rank job on this project's 2-core machine (tests/data/cpu/multirank): with
// every rank's waits for a core taken out and the two cores shared again, each step replays
// close to as measured; this is what lets the straggler what-if trust the other ranks' work.
TEST(CpuSharing, TheRecordedJobReplaysAsMeasuredOnItsTwoCores) {
  const auto dir = std::filesystem::path(DREAMSCOPE_TEST_DATA_DIR) / "cpu" / "multirank";
  for (const char* file : {"baseline.db", "slow-rank5.db"}) {
    const Trace t = read_trace(dir / file);
    DependencyGraph g = build_dependency_graph(t);
    const whatif::CpuPools pools = whatif::machine_pools(t, g, 2);
    const whatif::ContentionRemoved removed = whatif::remove_measured_contention(g, pools);
    EXPECT_GT(removed.tasks, 1000u) << file;
    EXPECT_LT(removed.time_after, removed.time_before * 3 / 4) << file;
    const SimulationResult r = simulate_shared(g, pools);
    const std::vector<StepTime> steps = step_times(t, g, r);
    ASSERT_EQ(steps.size(), 30u) << file;
    const double measured = whatif::median_step(steps, 0, false), predicted = whatif::median_step(steps, 0, true);
    EXPECT_LE(std::abs(predicted - measured) / measured, 0.01) << file << ": " << predicted << " against " << measured;
  }
}

} // namespace
} // namespace dreamscope
