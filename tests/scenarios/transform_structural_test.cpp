// move, insert, add_edge and remove_edge on the hand-written data pipeline
// (scenario_traces.h), with the replayed timelines worked out on paper. As traced: the loader
// (tid 2) fetches batch b in [300b, +100) and preps it in [300b + 100, +200); step b waits for
// prep b, then computes 100 ns. Replayed steps: [0, 400), [400, 700), [700, 1000).
#include "scenario_traces.h"

#include <dreamscope/whatif/transforms.h>
#include <dreamscope/whatif/whatif_engine.h>

#include <gtest/gtest.h>

using namespace dreamscope;
using namespace dreamscope::whatif;
using dreamscope::scenario_test::data_pipeline_trace;

namespace {

using Span = std::pair<TimeNs, TimeNs>;

struct Pipeline {
  Pipeline() = default;
  explicit Pipeline(Trace t) : trace(std::move(t)) {}
  Trace trace = data_pipeline_trace();
  // As in the engine: the selection describes the graph as built, the edits go to a copy.
  const DependencyGraph baseline = build_dependency_graph(trace);
  TaskSelection selection{trace, baseline};
  DependencyGraph graph = baseline;
  AppliedScenario applied;

  // Tasks of the original graph by name, in measured order.
  std::vector<TaskId> named(std::string_view name) const {
    Selector s;
    s.name = "^" + std::string(name) + "$";
    return selection.select(s);
  }
  void run(const std::string& toml, const std::map<std::string, std::string>& p = {}) {
    apply(Scenario::parse(toml, "test.toml").instantiate(p), selection, graph, applied);
  }
  // Where an original task ran in the replay of the edited graph.
  Span span(const SimulationResult& r, TaskId original) const {
    const TaskId t = applied.to_current(original);
    return {r.start[t], r.end[t]};
  }
  std::vector<TimeNs> steps(const SimulationResult& r) const {
    std::vector<TimeNs> out;
    for (const auto& s : step_times(trace, graph, r)) out.push_back(s.predicted());
    return out;
  }
};

const char* kPool = R"(name = "pool"
[parameters]
workers = { default = 2, help = "" }
cores = { default = 0, help = "" }
[[transform]]
op = "move"
select = { category = "fetch|prep" }
pool = "${workers}"
cores = "${cores}"
)";

} // namespace

TEST(Move, ToAPoolOfWorkersRunsItemsInParallel) {
  Pipeline p;
  p.run(kPool);
  const auto r = simulate(p.graph);
  ASSERT_EQ(r.unscheduled, 0u);
  const auto fetch = p.named("fetch");
  const auto prep = p.named("prep");
  ASSERT_EQ(prep.size(), 3u);
  // Batches 0 and 2 (fetch and prep together) go to the first worker, batch 1 to the second.
  const ResourceId w0 = p.graph.resource(p.applied.to_current(prep[0]));
  const ResourceId w1 = p.graph.resource(p.applied.to_current(prep[1]));
  EXPECT_NE(w0, w1);
  EXPECT_EQ(p.graph.resource(p.applied.to_current(fetch[0])), w0);
  EXPECT_EQ(p.graph.resource(p.applied.to_current(fetch[1])), w1);
  EXPECT_EQ(p.graph.resource(p.applied.to_current(prep[2])), w0);
  EXPECT_GE(w0, p.trace.tracks().size());
  EXPECT_GE(w1, p.trace.tracks().size());
  EXPECT_EQ(p.graph.added_resources().size(), 2u);
  EXPECT_EQ(p.span(r, fetch[1]), Span(0, 100));
  EXPECT_EQ(p.span(r, prep[1]), Span(100, 300));
  EXPECT_EQ(p.span(r, prep[2]), Span(400, 600));
  // Step 1 finds batch 1 ready (wait [400, 400)); step 2 starts at 500 and waits until 600.
  const auto compute = p.named("compute");
  EXPECT_EQ(p.span(r, compute[1]), Span(400, 500));
  EXPECT_EQ(p.span(r, compute[2]), Span(600, 700));
  EXPECT_EQ(p.steps(r), (std::vector<TimeNs>{400, 100, 200}));
  EXPECT_FALSE(has_cycle(p.graph));
  // Every resource stays totally ordered: no two tasks of one resource overlap.
  for (ResourceId res = 0; res < p.graph.resource_count(); ++res) {
    for (TaskId t = p.graph.resource_first(res); t + 1 < p.graph.resource_end(res); ++t) {
      EXPECT_LE(r.end[t], r.start[t + 1]);
    }
  }
}

TEST(Move, APoolHandsOutItemsOnlyAsFarAheadAsItsWindow) {
  // Two workers, at most one item handed out ahead: item 1 goes out when step 0 has received
  // item 0 (its wait ends at 300), item 2 when step 1 has received item 1 (600). Fetch and
  // prep of item b then run [300b, 300b + 300) on alternating workers, and every step waits
  // for its batch as in the trace.
  const std::string with_ahead = R"(name = "pool"
[parameters]
ahead = { default = 0, help = "" }
[[transform]]
op = "move"
select = { category = "fetch|prep" }
pool = 2
ahead = "${ahead}"
)";
  Pipeline p;
  p.run(with_ahead, {{"ahead", "1"}});
  const auto r = simulate(p.graph);
  ASSERT_EQ(r.unscheduled, 0u);
  const auto fetch = p.named("fetch");
  const auto prep = p.named("prep");
  const auto compute = p.named("compute");
  EXPECT_EQ(p.span(r, fetch[1]), Span(300, 400));
  EXPECT_EQ(p.span(r, prep[1]), Span(400, 600));
  EXPECT_EQ(p.span(r, fetch[2]), Span(600, 700));
  EXPECT_EQ(p.span(r, prep[2]), Span(700, 900));
  EXPECT_EQ(p.span(r, compute[1]), Span(600, 700));
  EXPECT_EQ(p.span(r, compute[2]), Span(900, 1000));
  EXPECT_FALSE(has_cycle(p.graph));

  // A window of two items is the two workers' own pace here: the unbounded pool's timeline.
  Pipeline q;
  q.run(with_ahead, {{"ahead", "2"}});
  const auto s = simulate(q.graph);
  EXPECT_EQ(q.span(s, q.named("fetch")[1]), Span(0, 100));
  EXPECT_EQ(q.span(s, q.named("prep")[2]), Span(400, 600));
  EXPECT_EQ(q.steps(s), (std::vector<TimeNs>{400, 100, 200}));
}

TEST(Move, AWindowNeedsAPoolAndACount) {
  const std::string bad = std::string(kPool) + "ahead = -1\n";
  EXPECT_THROW(Scenario::parse(bad, "test.toml").instantiate({}), ScenarioError);
  const std::string no_pool = R"(name = "x"
[[transform]]
op = "move"
select = { category = "fetch" }
resource = "elsewhere"
ahead = 2
)";
  EXPECT_THROW(Scenario::parse(no_pool, "test.toml").instantiate({}), ScenarioError);
}

TEST(Move, WorkersShareTheCoresWithEveryThread) {
  // Two workers on one core: fetches wait for storage, not for the core, so both run at 0;
  // preps 0 and 1 then share the core at half speed, [100, 500) each. Compute 0 runs alone,
  // [500, 600), while worker 0 fetches batch 2; prep 2 and compute 1 share the core from 600
  // until compute 1's 100 ns of work are done at 800, and prep 2 ends alone at 900.
  Pipeline p;
  p.run(kPool, {{"cores", "1"}});
  ASSERT_EQ(p.applied.cpu_cores, 1u);
  const auto r = simulate(p.graph, {.cpu_cores = p.applied.cpu_cores});
  const auto prep = p.named("prep");
  const auto fetch = p.named("fetch");
  const auto compute = p.named("compute");
  EXPECT_EQ(p.span(r, fetch[1]), Span(0, 100));
  EXPECT_EQ(p.span(r, prep[0]), Span(100, 500));
  EXPECT_EQ(p.span(r, prep[1]), Span(100, 500));
  EXPECT_EQ(p.span(r, fetch[2]), Span(500, 600));
  EXPECT_EQ(p.span(r, compute[0]), Span(500, 600));
  EXPECT_EQ(p.span(r, compute[1]), Span(600, 800));
  EXPECT_EQ(p.span(r, prep[2]), Span(600, 900));
  EXPECT_EQ(p.steps(r), (std::vector<TimeNs>{600, 200, 200}));
  // Each of those tasks ran 2x its work (preps 0 and 1 by 200 each, compute 1 and prep 2 by
  // 100 each).
  EXPECT_EQ(r.cpu_contention, 600);

  // Three workers on two cores: the three preps share them at 2/3 speed, [100, 400); the
  // computes then run alone.
  Pipeline q;
  q.run(kPool, {{"workers", "3"}, {"cores", "2"}});
  const auto s = simulate(q.graph, {.cpu_cores = q.applied.cpu_cores});
  EXPECT_EQ(q.span(s, q.named("fetch")[2]), Span(0, 100));
  EXPECT_EQ(q.span(s, q.named("prep")[2]), Span(100, 400));
  EXPECT_EQ(q.steps(s), (std::vector<TimeNs>{500, 100, 100}));

  // Without a core count every thread has a core of its own, as in the pool test above.
  EXPECT_EQ(q.steps(simulate(q.graph)), (std::vector<TimeNs>{400, 100, 100}));
}

TEST(Move, MinusOneCoresAreTheTracedMachines) {
  // -1: the cores of the machine the trace was recorded on; one core there gives the
  // timeline of `cores = 1` above.
  Pipeline p(data_pipeline_trace("1"));
  p.run(kPool, {{"cores", "-1"}});
  ASSERT_EQ(p.applied.cpu_cores, 1u);
  EXPECT_EQ(p.steps(simulate(p.graph, {.cpu_cores = p.applied.cpu_cores})), (std::vector<TimeNs>{600, 200, 200}));
  EXPECT_NE(p.applied.effects.back().detail.find("sharing 1 cores (the traced machine's)"), std::string::npos)
      << p.applied.effects.back().detail;

  // A trace that does not say (an imported one): a core per thread, and the report says why.
  Pipeline q;
  q.run(kPool, {{"cores", "-1"}});
  EXPECT_EQ(q.applied.cpu_cores, 0u);
  EXPECT_NE(q.applied.effects.back().detail.find("does not say"), std::string::npos) << q.applied.effects.back().detail;
}

TEST(Move, ToANamedResourceStillFollowsWhatCameBefore) {
  // compute of step 1 moves to a new thread: it still starts after step 1's wait, while the
  // main thread goes on without it, so step 2's wait begins at 600, not 700.
  Pipeline p;
  p.run(R"(name = "m"
[[transform]]
op = "move"
select = { name = "^compute$", window_ns = [600, 601] }
resource = "side"
)");
  const auto r = simulate(p.graph);
  ASSERT_EQ(r.unscheduled, 0u);
  const auto compute = p.named("compute");
  const auto wait = p.named("wait");
  EXPECT_EQ(p.graph.resource(p.applied.to_current(compute[1])), p.trace.tracks().size());
  EXPECT_EQ(p.span(r, compute[1]), Span(600, 700));
  EXPECT_EQ(p.span(r, wait[2]), Span(600, 900));
  EXPECT_EQ(p.span(r, compute[2]), Span(900, 1000));
  ASSERT_EQ(p.applied.effects.size(), 1u);
  EXPECT_EQ(p.applied.effects[0].tasks, 1u);
}

TEST(AddEdge, DelaysTheTargetAndRefusesCycles) {
  // fetch 2 may start only 300 ns after step 0's compute ends (at 400): [700, 800), prep
  // [800, 1000), so step 2 waits until 1000.
  Pipeline p;
  p.run(R"(name = "e"
[[transform]]
op = "add_edge"
from = { name = "^compute$", window_ns = [300, 301] }
to = { category = "fetch", window_ns = [600, 601] }
delay_ns = 300
)");
  const auto r = simulate(p.graph);
  EXPECT_EQ(p.span(r, p.named("fetch")[2]), Span(700, 800));
  EXPECT_EQ(p.span(r, p.named("compute")[2]), Span(1000, 1100));
  EXPECT_EQ(p.steps(r), (std::vector<TimeNs>{400, 300, 400}));

  // compute b → fetch b closes a cycle through prep b → wait b → compute b.
  Pipeline q;
  const std::size_t edges = q.graph.edge_count();
  try {
    q.run(R"(name = "c"
[[transform]]
op = "add_edge"
from = { name = "^compute$" }
to = { category = "fetch" }
)");
    FAIL() << "a cycle was accepted";
  } catch (const TransformError& e) {
    EXPECT_NE(std::string(e.what()).find("test.toml:2:1: add_edge: the edges would close a cycle"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(q.graph.edge_count(), edges);
  EXPECT_FALSE(has_cycle(q.graph));
}

TEST(RemoveEdge, TheStepNoLongerWaitsForItsBatch) {
  // Without prep 1 → wait 1, step 1 computes at once: [400, 500); step 2 then waits from 500
  // to 900.
  Pipeline p;
  p.run(R"(name = "r"
[[transform]]
op = "remove_edge"
from = { category = "prep", window_ns = [400, 401] }
to = { name = "^wait$" }
)");
  ASSERT_EQ(p.applied.effects[0].tasks, 1u);
  const auto r = simulate(p.graph);
  EXPECT_EQ(p.span(r, p.named("compute")[1]), Span(400, 500));
  EXPECT_EQ(p.span(r, p.named("wait")[2]), Span(500, 900));
  EXPECT_EQ(p.steps(r), (std::vector<TimeNs>{400, 100, 500}));
}

TEST(Insert, ASyntheticTaskAfterEachGroupGatesTheNextBeforeTask) {
  // A 50 ns check after each prep, on a new resource, that the next compute waits for:
  // [300, 350) → compute 0 [350, 450); [600, 650) → compute 1 [650, 750); [900, 950) →
  // compute 2 [950, 1050).
  Pipeline p;
  p.run(R"(name = "i"
[[transform]]
op = "insert"
name = "checksum"
resource = "checker"
cost = { model = "constant", duration_ns = 50 }
after = { category = "prep" }
before = { name = "^compute$" }
groups = 3
)");
  const auto r = simulate(p.graph);
  ASSERT_EQ(r.unscheduled, 0u);
  const auto compute = p.named("compute");
  EXPECT_EQ(p.span(r, compute[0]), Span(350, 450));
  EXPECT_EQ(p.span(r, compute[1]), Span(650, 750));
  EXPECT_EQ(p.span(r, compute[2]), Span(950, 1050));
  const ResourceId checker = static_cast<ResourceId>(p.trace.tracks().size());
  ASSERT_EQ(p.graph.resource_end(checker) - p.graph.resource_first(checker), 3u);
  const TaskId first = p.graph.resource_first(checker);
  EXPECT_EQ(p.graph.kind(first), TaskKind::Synthetic);
  EXPECT_EQ(p.graph.synthetic_name(first), "checksum");
  EXPECT_EQ(Span(r.start[first + 2], r.end[first + 2]), Span(900, 950));
  // Inserted tasks have no original id; every original task still has one.
  const auto original = p.applied.original_ids(p.graph.task_count());
  EXPECT_EQ(original[first], kNoTask);
  EXPECT_EQ(std::count(original.begin(), original.end(), kNoTask), 3);
}

TEST(DataScenario, WorkersPrepareBatchesInParallel) {
  // The built-in `data` scenario with workers=2: steps 400, 100, 200 as in the pool test above
  // (median 200, from a replayed 300); with every thread on one core, steps 600, 200, 200 as
  // in the core-sharing test.
  const Trace trace = data_pipeline_trace();
  std::vector<ScenarioRequest> requests;
  requests.push_back({find_scenario("data"), {{"workers", "2"}}});
  auto report = run_whatif(trace, requests);
  ASSERT_EQ(report.predictions.size(), 1u);
  EXPECT_DOUBLE_EQ(report.replayed_step_median, 300);
  EXPECT_DOUBLE_EQ(report.predictions[0].step_median, 200);
  EXPECT_EQ(report.predictions[0].unscheduled, 0u);

  requests = {{find_scenario("data"), {{"workers", "2"}, {"cores", "1"}}}};
  report = run_whatif(trace, requests);
  ASSERT_EQ(report.predictions[0].steps.size(), 3u);
  EXPECT_EQ(report.predictions[0].steps[0].predicted(), 600);
  EXPECT_DOUBLE_EQ(report.predictions[0].step_median, 200);

  // Faster storage first, then the pool: fetches of 50, items of 250, ready at 250, 250 and
  // 500; steps [0, 350), [350, 450), [450, 600).
  requests = {{find_scenario("data"), {{"workers", "2"}, {"storage", "2"}}}};
  report = run_whatif(trace, requests);
  EXPECT_DOUBLE_EQ(report.predictions[0].step_median, 150);
}

TEST(DataScenario, WorkersShareTheCoresWithThreadsThatRecordNothing) {
  // The pipeline on a 2-core machine where a thread that records nothing (an OpenMP thread)
  // kept one core busy all along. workers=2 on the traced machine's cores: preps 0 and 1 share
  // the other core with it, [100, 400) at 2/3 speed; compute 0 runs [400, 500) beside it; prep
  // 2 and compute 1 share from 500 (compute 1 done at 650, prep 2 at 750); compute 2 [750,
  // 850). Steps 500, 150, 200, where a core per thread gives 400, 100, 200.
  const Trace trace = data_pipeline_trace("2", 1000);
  std::vector<ScenarioRequest> requests;
  requests.push_back({find_scenario("data"), {{"workers", "2"}}});
  auto report = run_whatif(trace, requests);
  ASSERT_EQ(report.predictions[0].steps.size(), 3u);
  std::vector<TimeNs> steps;
  for (const auto& s : report.predictions[0].steps) steps.push_back(s.predicted());
  EXPECT_EQ(steps, (std::vector<TimeNs>{500, 150, 200}));

  // Without that thread, the two workers have the cores to themselves.
  report = run_whatif(data_pipeline_trace("2"), requests);
  steps.clear();
  for (const auto& s : report.predictions[0].steps) steps.push_back(s.predicted());
  EXPECT_EQ(steps, (std::vector<TimeNs>{400, 100, 200}));
  // Nor does it count with a core per thread.
  requests = {{find_scenario("data"), {{"workers", "2"}, {"cores", "0"}}}};
  report = run_whatif(trace, requests);
  steps.clear();
  for (const auto& s : report.predictions[0].steps) steps.push_back(s.predicted());
  EXPECT_EQ(steps, (std::vector<TimeNs>{400, 100, 200}));
}

TEST(DataParallel, AllReducePerBucketDelaysTheOptimizer) {
  // gpu_step_trace with its forward kernels standing in for the backward pass, two buckets of
  // 0.5 MB on two GPUs at 1250 GB/s and no latency: 2·(1/2)·500 kB / 1250 GB/s = 400 ns each.
  // Bucket 0 after sgemm_nn: [2250, 2650) on the link; bucket 1 after relu_fw: [3250, 3650).
  // adam_a waits for both: [3650, 4150), adam_b [4150, 4650); the sync returns 50 ns after it
  // and 700 ns of CPU work end the step at 5400 instead of 5000.
  const Trace trace = dreamscope::scenario_test::gpu_step_trace();
  std::vector<ScenarioRequest> requests;
  requests.push_back({find_scenario("data-parallel"),
                      {{"workers", "2"},
                       {"gradient_mb", "1"},
                       {"buckets", "2"},
                       {"bandwidth_gb_per_s", "1250"},
                       {"latency_us", "0"},
                       {"backward", "^forward$"}}});
  WhatIfOptions options;
  options.make_trace = true;
  const auto report = run_whatif(trace, requests, options);
  ASSERT_EQ(report.predictions.size(), 1u);
  EXPECT_EQ(report.predictions[0].unscheduled, 0u);
  EXPECT_DOUBLE_EQ(report.predictions[0].step_median, 5400);
  ASSERT_EQ(report.predictions[0].effects.size(), 1u);
  EXPECT_EQ(report.predictions[0].effects[0].tasks, 2u);
}

TEST(DataScenario, WorkersTakeTheInlineDataLoaderOffTheTrainingThread) {
  // An imported PyTorch trace with a single-process DataLoader: step b (thread 1) loads its
  // batch inline for 200 ns, then computes 100: steps of 300. With workers=2 the loads run on
  // two workers from the start (batches 0 and 1 ready at 200, batch 2 at 400), and each
  // compute waits for its batch: computes [200, 300), [300, 400), [400, 500).
  dreamscope::test::HandTrace w("");
  const TrackId main = w.thread(1);
  for (std::int64_t b = 0; b < 3; ++b) {
    w.annotation(main, "ProfilerStep#" + std::to_string(b), "cpu_op", 300 * b, 300 * b + 300);
    w.annotation(main, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "cpu_op", 300 * b,
                 300 * b + 200);
    w.annotation(main, "train_step", "cpu_op", 300 * b + 200, 300 * b + 300);
  }
  const Trace trace = w.build();
  const DependencyGraph baseline = build_dependency_graph(trace);
  const TaskSelection selection(trace, baseline);
  DependencyGraph graph = baseline;
  AppliedScenario applied;
  apply(find_scenario("data").instantiate({{"workers", "2"}}), selection, graph, applied);
  const auto r = simulate(graph);
  ASSERT_EQ(r.unscheduled, 0u);
  Selector compute;
  compute.name = "^train_step$";
  const auto computes = selection.select(compute);
  ASSERT_EQ(computes.size(), 3u);
  const TimeNs expected[] = {200, 300, 400};
  for (std::size_t b = 0; b < 3; ++b) {
    const TaskId t = applied.to_current(computes[b]);
    EXPECT_EQ(r.start[t], expected[b]) << "batch " << b;
    EXPECT_EQ(r.end[t], expected[b] + 100) << "batch " << b;
  }
  const auto steps = step_times(trace, graph, r);
  std::vector<TimeNs> ends;
  for (const auto& s : steps) ends.push_back(s.predicted_end);
  EXPECT_EQ(ends, (std::vector<TimeNs>{300, 400, 500}));
}

TEST(DataScenario, WorkersOnAJobWithBlockingCopies) {
  // A blocking cudaMemcpy launches its copy and waits for it: an edge from the call's start
  // and one back to its end, which is no cycle. The pool used to refuse such traces.
  test::HandTrace h;
  const TrackId main = h.thread(1), loader = h.thread(2);
  const TrackId s = h.stream(7);
  for (std::int64_t b = 0; b < 3; ++b) {
    const TimeNs t = 300 * b;
    h.annotation(loader, "fetch", "fetch", t, t + 100, b);
    h.annotation(loader, "prep", "prep", t + 100, t + 300, b);
    const TimeNs step = b == 0 ? 0 : 300 * b + 100;
    h.annotation(main, "step", "step", step, 300 * b + 400, b);
    h.annotation(main, "wait", "wait", step, 300 * b + 300, b);
    h.api(main, "cudaMemcpy", 300 * b + 300, 300 * b + 390, 10 + b);
    h.gpu(s, GpuOpKind::Memcpy, "cudaMemcpy", 300 * b + 310, 300 * b + 380, 10 + b);
  }
  const Trace trace = h.build();
  const DependencyGraph graph = build_dependency_graph(trace);
  EXPECT_FALSE(has_cycle(graph));
  std::vector<ScenarioRequest> requests;
  requests.push_back({find_scenario("data"), {{"workers", "2"}}});
  const auto report = run_whatif(trace, requests);
  ASSERT_EQ(report.predictions.size(), 1u);
  EXPECT_EQ(report.predictions[0].unscheduled, 0u);
  EXPECT_LT(report.predictions[0].step_median, report.replayed_step_median);
}
