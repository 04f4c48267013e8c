// Sharing the traced machine's cores in a prediction (whatif/cpu_sharing.h): the waits for a
// core are taken out of the measured tasks so that replaying them on the machine's cores gives
// the run back, and taking work away lets the other threads go faster.
#include <dreamscope/whatif/cpu_sharing.h>
#include <dreamscope/graph/graph.h>
#include <dreamscope/whatif/replay.h>
#include <dreamscope/whatif/simulator.h>
#include <dreamscope/storage/steps.h>
#include <dreamscope/storage/trace_file.h>
#include <dreamscope/whatif/whatif.h>
#include <dreamscope/whatif/whatif_engine.h>

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>

namespace dreamscope::whatif {
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
  options.cpu_background = pools.background;
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

// Two threads computing from 0 to 800 ns on a machine of two cores, beside two threads that
// recorded nothing (an OpenMP pool) and each ran on a core from 0 to 400 (thread_load rows of
// 400 ns of CPU in [0, 400)). A thread that recorded events is no background, whatever its
// rows say.
Trace with_silent_threads(const std::vector<ThreadLoadRecord>& silent_rows = {}) {
  TraceBuilder b;
  b.set_meta("cpu_cores", "2");
  const StringId ds = b.intern("dreamscope"), op = b.intern(annotation_category::kOperation);
  const auto p = b.add_process({.pid = 1, .name = "train"});
  for (int i = 0; i < 2; ++i) {
    const TrackId t = b.thread_track(p, 10 + i, "main");
    b.add(AnnotationRecord{.track = t, .start = 0, .end = 800, .name = b.intern(i == 0 ? "forward" : "prep"),
                           .domain = ds, .category = op});
    b.add(ThreadLoadRecord{.track = t, .start = 0, .end = 800, .cpu_ns = 800, .runqueue_ns = 0, .events = 2});
  }
  const TrackId omp1 = b.thread_track(p, 20, "omp1"), omp2 = b.thread_track(p, 21, "omp2");
  for (const TrackId t : {omp1, omp2}) b.add(ThreadLoadRecord{.track = t, .start = 0, .end = 400, .cpu_ns = 400, .runqueue_ns = 0});
  for (ThreadLoadRecord r : silent_rows) {
    r.track = omp1;
    b.add(r);
  }
  return std::move(b).build();
}

TEST(CpuSharing, ThreadsThatRecordedNothingLoadTheCoresWhileTheyRan) {
  const Trace t = with_silent_threads();
  DependencyGraph g = build_dependency_graph(t);
  const whatif::CpuPools pools = whatif::machine_pools(t, g, 2);
  // Two threads' worth from 0 to 400, none after.
  ASSERT_EQ(pools.background.size(), 1u);
  EXPECT_EQ(pools.background[0], (std::vector<CpuLoadStep>{{0, 2.0}, {400, 0.0}}));
  // Measured: four running threads on two cores until 400 (half speed: 200 ns of work each),
  // then the two alone (400 more): 600 ns of work each.
  const whatif::ContentionRemoved removed = whatif::remove_measured_contention(g, pools);
  EXPECT_EQ(removed.tasks, 2u);
  EXPECT_EQ(removed.time_before, 1600);
  EXPECT_EQ(removed.time_after, 1200);
  // Shared again with the background, they end as measured.
  const SimulationResult r = simulate_shared(g, pools);
  for (TaskId k = 0; k < g.task_count(); ++k) EXPECT_EQ(r.end[k], 800) << k;
  EXPECT_EQ(r.cpu_contention, 2 * 200);
  // Without it, the two cores are theirs: done at 600.
  SimulationOptions alone;
  alone.cpu_cores = 2;
  const SimulationResult without = simulate(g, alone);
  for (TaskId k = 0; k < g.task_count(); ++k) EXPECT_EQ(without.end[k], 600) << k;
  // Four cores: nobody waits, with or without it.
  const whatif::CpuPools four = whatif::machine_pools(t, g, 4);
  const SimulationResult wide = simulate_shared(g, four);
  for (TaskId k = 0; k < g.task_count(); ++k) EXPECT_EQ(wide.end[k], 600) << k;
}

TEST(CpuSharing, AThreadThatRanHalfAWindowIsHalfAThreadOverIt) {
  // One core; a thread computes 300 ns from 0; a thread that recorded nothing ran all of
  // [0, 200) and half of [200, 1000) (400 ns of CPU in it).
  TraceBuilder b;
  const auto p = b.add_process({.pid = 1, .name = "train"});
  const TrackId main = b.thread_track(p, 10, "main"), omp = b.thread_track(p, 20, "omp");
  b.add(AnnotationRecord{.track = main, .start = 0, .end = 300, .name = b.intern("forward"),
                         .domain = b.intern("dreamscope"), .category = b.intern(annotation_category::kOperation)});
  b.add(ThreadLoadRecord{.track = omp, .start = 0, .end = 200, .cpu_ns = 200, .runqueue_ns = 0});
  b.add(ThreadLoadRecord{.track = omp, .start = 200, .end = 1000, .cpu_ns = 400, .runqueue_ns = 0});
  const Trace t = std::move(b).build();
  const DependencyGraph g = build_dependency_graph(t);
  const whatif::CpuPools pools = whatif::machine_pools(t, g, 1);
  EXPECT_EQ(pools.background[0], (std::vector<CpuLoadStep>{{0, 1.0}, {200, 0.5}, {1000, 0.0}}));
  // Half a core until 200 (100 ns of work done), then 1 / 1.5 of it for the other 200: 300 ns
  // more, done at 500.
  const SimulationResult r = simulate_shared(g, pools);
  ASSERT_EQ(g.task_count(), 1u);
  EXPECT_EQ(r.end[0], 500);
  EXPECT_EQ(r.cpu_contention, 200);
}

// One thread per range, each range a task of `end - start` ns of CPU work (nothing measured
// says they waited for a core), on one machine.
Trace ranges_on_threads(const std::vector<std::pair<TimeNs, TimeNs>>& spans) {
  TraceBuilder b;
  const StringId ds = b.intern("dreamscope"), op = b.intern(annotation_category::kOperation), name = b.intern("x");
  const auto p = b.add_process({.pid = 1, .name = "job"});
  for (std::size_t i = 0; i < spans.size(); ++i) {
    const TrackId t = b.thread_track(p, 10 + static_cast<int>(i), "t");
    b.add(AnnotationRecord{.track = t, .start = spans[i].first, .end = spans[i].second, .name = name, .domain = ds,
                           .category = op});
  }
  return std::move(b).build();
}

// The ends of the tasks of ranges_on_threads(spans) shared on `cores` cores, by range.
std::vector<TimeNs> shared_ends(const std::vector<std::pair<TimeNs, TimeNs>>& spans, std::size_t cores,
                                TimeNs* contention = nullptr) {
  const Trace t = ranges_on_threads(spans);
  const DependencyGraph g = build_dependency_graph(t);
  EXPECT_EQ(g.task_count(), spans.size());
  SimulationOptions options;
  options.cpu_cores = cores;
  const SimulationResult r = simulate(g, options);
  std::vector<TimeNs> ends;
  for (TaskId k = 0; k < g.task_count(); ++k) {
    EXPECT_EQ(r.start[k], spans[k].first) << k;
    ends.push_back(r.end[k]);
  }
  if (contention) *contention = r.cpu_contention;
  return ends;
}

TEST(CpuSharing, ThreeTasksOnTwoCoresEndWhenTheirSharedWorkIsDone) {
  // A: 400 ns of work from 0, B: 200 from 100, C: 300 from 200, on two cores. Until 200 each
  // has a core: A has 200 left, B 100. Then three share two, at 2/3 speed: B's 100 take 150,
  // to 350, while A and C do 100 each. Then A's last 100 and C's last 200 at full speed.
  TimeNs contention = 0;
  EXPECT_EQ(shared_ends({{0, 400}, {100, 300}, {200, 500}}, 2, &contention), (std::vector<TimeNs>{450, 350, 550}));
  EXPECT_EQ(contention, 3 * 50);
  // On three cores nobody waits; on one, each shares from its start.
  EXPECT_EQ(shared_ends({{0, 400}, {100, 300}, {200, 500}}, 3), (std::vector<TimeNs>{400, 300, 500}));
}

TEST(CpuSharing, ATaskThatJoinsLaterCanEndFirst) {
  // One core. A: 400 from 0; B: 50 from 100; C: 100 from 200. A alone to 100 (300 left),
  // with B at half speed to 200 (B done, A 250 left), then with C at half speed: C's 100 take
  // 200, to 400, A does 100 of its 250; its last 150 alone, to 550.
  EXPECT_EQ(shared_ends({{0, 400}, {100, 150}, {200, 300}}, 1), (std::vector<TimeNs>{550, 200, 400}));
  // 100 and 101 ns of work from 0 on one core: the first done at 200, the other's last 1 ns
  // alone, to 201.
  EXPECT_EQ(shared_ends({{0, 100}, {0, 101}}, 1), (std::vector<TimeNs>{200, 201}));
}

TEST(CpuSharing, AnEndBetweenNanosecondsIsAtTheNextOneAndTakesAlongTheTasksDoneByThen) {
  // Three tasks of 1 ns of work on two cores: each done after 1.5 ns, so the first ends at
  // 2, and by then the other two are done as well: they end at 2 too, not a ns later each.
  EXPECT_EQ(shared_ends({{0, 1}, {0, 1}, {0, 1}}, 2), (std::vector<TimeNs>{2, 2, 2}));
  // 3 ns of work from 0 and 1 ns from 1 on one core: at half speed from 1 the second is done
  // at 3, the first has 1 ns left then (1 alone, 1 at half speed), to 4.
  EXPECT_EQ(shared_ends({{0, 3}, {1, 2}}, 1), (std::vector<TimeNs>{4, 3}));
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
} // namespace dreamscope::whatif
