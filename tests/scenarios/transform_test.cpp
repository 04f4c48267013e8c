// Each primitive on hand-written traces (scenario_traces.h), with the replayed timeline
// worked out on paper.
#include "scenario_traces.h"

#include "../common/hand_trace.h"

#include <dreamscope/whatif/transforms.h>
#include <dreamscope/whatif/whatif_engine.h>

#include <gtest/gtest.h>

using namespace dreamscope;
using namespace dreamscope::whatif;
using dreamscope::scenario_test::data_pipeline_trace;
using dreamscope::scenario_test::gpu_step_trace;

namespace {

struct Fixture {
  Trace trace;
  DependencyGraph graph;
  TaskSelection selection;

  explicit Fixture(Trace t) : trace(std::move(t)), graph(build_dependency_graph(trace)), selection(trace, graph) {}

  TaskId kernel(std::string_view name) const {
    for (TaskId t = 0; t < graph.task_count(); ++t) {
      if (graph.kind(t) == TaskKind::Kernel && selection.name(t) == name) return t;
    }
    ADD_FAILURE() << "no kernel " << name;
    return kNoTask;
  }
  TaskId launch_of(std::string_view kernel_name) const { return selection.launcher(kernel(kernel_name)); }
  TaskId api(std::string_view name) const {
    for (TaskId t = 0; t < graph.task_count(); ++t) {
      if (graph.kind(t) == TaskKind::CudaApi && selection.name(t) == name) return t;
    }
    ADD_FAILURE() << "no API call " << name;
    return kNoTask;
  }
  std::vector<std::string> names(const std::vector<TaskId>& tasks) const {
    std::vector<std::string> out;
    for (TaskId t : tasks) out.emplace_back(selection.name(t));
    return out;
  }
};

std::pair<TimeNs, TimeNs> span_of(const SimulationResult& r, TaskId t) { return {r.start[t], r.end[t]}; }

TimeNs step_end(const Fixture& f, const SimulationResult& r) {
  const auto steps = step_times(f.trace, f.graph, r);
  EXPECT_FALSE(steps.empty());
  return steps.empty() ? 0 : steps.back().predicted_end;
}

Selector kernels() {
  Selector s;
  s.kinds = {TaskClass::Kernel};
  return s;
}

std::vector<Transform> scenario(const std::string& toml, const std::map<std::string, std::string>& p = {}) {
  return Scenario::parse(toml, "test.toml").instantiate(p);
}

using Span = std::pair<TimeNs, TimeNs>;

} // namespace

TEST(Primitives, BaselineReplayIsTheMeasuredRun) {
  Fixture f(gpu_step_trace());
  const auto r = simulate(f.graph);
  EXPECT_EQ(span_of(r, f.kernel("sgemm_nn")), Span(250, 2250));
  EXPECT_EQ(span_of(r, f.kernel("adam_b")), Span(3750, 4250));
  EXPECT_EQ(step_end(f, r), 5000);
}

TEST(Select, ByKindNameAnnotationStreamThreadStepAndWindow) {
  Fixture f(gpu_step_trace());
  EXPECT_EQ(f.names(f.selection.select(kernels())),
            (std::vector<std::string>{"sgemm_nn", "relu_fw", "adam_a", "adam_b"}));

  Selector s = kernels();
  s.annotation = "optim";
  EXPECT_EQ(f.names(f.selection.select(s)), (std::vector<std::string>{"adam_a", "adam_b"}));
  s.not_name = "_b$";
  EXPECT_EQ(f.names(f.selection.select(s)), (std::vector<std::string>{"adam_a"}));

  Selector outside = kernels();
  outside.not_annotation = "optim";
  EXPECT_EQ(f.names(f.selection.select(outside)), (std::vector<std::string>{"sgemm_nn", "relu_fw"}));
  outside.not_annotation = "step"; // every kernel is inside the step
  EXPECT_TRUE(f.selection.select(outside).empty());

  Selector launches;
  launches.kinds = {TaskClass::Launch};
  launches.annotation = "forward";
  EXPECT_EQ(f.selection.select(launches).size(), 2u);

  Selector sync;
  sync.kinds = {TaskClass::Sync};
  EXPECT_EQ(f.names(f.selection.select(sync)), (std::vector<std::string>{"cudaDeviceSynchronize"}));

  Selector on_stream = kernels();
  on_stream.stream = 7;
  EXPECT_EQ(f.selection.select(on_stream).size(), 4u);
  on_stream.stream = 8;
  EXPECT_TRUE(f.selection.select(on_stream).empty());

  Selector from_thread = kernels();
  from_thread.thread = 1; // GPU tasks belong to the thread that launched them
  EXPECT_EQ(f.selection.select(from_thread).size(), 4u);
  from_thread.thread = 2;
  EXPECT_TRUE(f.selection.select(from_thread).empty());

  Selector in_step = kernels();
  in_step.steps = std::pair<std::int64_t, std::int64_t>{0, 0};
  EXPECT_EQ(f.selection.select(in_step).size(), 4u);
  in_step.steps = std::pair<std::int64_t, std::int64_t>{1, 3};
  EXPECT_TRUE(f.selection.select(in_step).empty());

  Selector window = kernels();
  window.window = std::pair<TimeNs, TimeNs>{2250, 3750}; // measured starts 2250 and 3250
  EXPECT_EQ(f.names(f.selection.select(window)), (std::vector<std::string>{"relu_fw", "adam_a"}));
}

TEST(Select, ByCategoryOfAnEnclosingAnnotation) {
  Fixture f(data_pipeline_trace());
  Selector fetch;
  fetch.category = "fetch";
  EXPECT_EQ(f.names(f.selection.select(fetch)), (std::vector<std::string>{"fetch", "fetch", "fetch"}));
  Selector loading;
  loading.category = "fetch|prep";
  EXPECT_EQ(f.selection.select(loading).size(), 6u);
  Selector partial;
  partial.category = "fet"; // a category must match whole
  EXPECT_TRUE(f.selection.select(partial).empty());

  Selector loader_threads;
  loader_threads.resource_with = "fetch|prep";
  const auto on_loader = f.selection.select(loader_threads);
  EXPECT_EQ(on_loader.size(), 6u);
  for (TaskId t : on_loader) EXPECT_EQ(f.trace.tracks()[f.graph.resource(t)].tid, 2);
  loader_threads.resource_without = "fetch";
  EXPECT_TRUE(f.selection.select(loader_threads).empty());
  Selector main_thread;
  main_thread.resource_with = "step";
  for (TaskId t : f.selection.select(main_thread)) EXPECT_EQ(f.trace.tracks()[f.graph.resource(t)].tid, 1);
}

TEST(Primitives, ScaleAsInAmp) {
  // sgemm, an FP32 matrix kernel, ×1/3 → 667 ns; relu ×1/2; the optimizer's kernels update the
  // FP32 parameters and keep their time. The stream drains from 250: sgemm [250, 917), relu
  // [917, 1417), adam_a [1417, 1917), adam_b [1917, 2417); the sync entered at 2000 returns
  // 50 ns after that: 2467; the step ends 700 ns later.
  Fixture f(gpu_step_trace());
  AppliedScenario applied;
  apply(find_scenario("amp").instantiate(), f.selection, f.graph, applied);
  ASSERT_EQ(applied.effects.size(), 4u);
  EXPECT_EQ(applied.effects[0].tasks, 0u); // no TF32 kernel
  EXPECT_EQ(applied.effects[1].tasks, 1u);
  EXPECT_EQ(applied.effects[1].time_before, 2000);
  EXPECT_EQ(applied.effects[1].time_after, 667);
  EXPECT_EQ(applied.effects[2].tasks, 0u); // no layout conversion
  EXPECT_EQ(applied.effects[3].tasks, 1u);
  EXPECT_EQ(applied.effects[3].time_after, 500);
  const auto r = simulate(f.graph);
  EXPECT_EQ(span_of(r, f.kernel("sgemm_nn")), Span(250, 917));
  EXPECT_EQ(span_of(r, f.kernel("relu_fw")), Span(917, 1417));
  EXPECT_EQ(span_of(r, f.kernel("adam_a")), Span(1417, 1917));
  EXPECT_EQ(span_of(r, f.kernel("adam_b")), Span(1917, 2417));
  EXPECT_EQ(span_of(r, f.api("cudaDeviceSynchronize")), Span(2000, 2467));
  EXPECT_EQ(step_end(f, r), 3167);
}

// The kernel classes amp tells apart by name, each at its factor: a TF32 convolution ×1/2, an
// FP32 GEMM ×1/3, cuDNN's layout conversion (matched by "cudnn") and an elementwise kernel
// ×1/2 as memory bound, the loss (autocast runs it in FP32) kept.
TEST(Primitives, AmpScalesEachKernelClassByItsOwnFactor) {
  test::HandTrace w("NVIDIA H200");
  const TrackId cpu = w.thread(1);
  const TrackId s = w.stream(7);
  w.annotation(cpu, "step", "step", 0, 100'000, 0);
  const std::vector<std::string> names = {
      "sm90_xmma_fprop_implicit_gemm_f32f32_tf32f32_f32_nhwckrsc_nhwc_cudnn",
      "sm80_xmma_gemm_f32f32_f32f32_f32_nt_n_tilesize32x32x8_ffma_cublas",
      "_ZN5cudnn19engines_precompiled16nchwToNhwcKernelIfffEEvPKT_",
      "vectorized_elementwise_kernel_threshold",
      "nll_loss_forward_reduce_cuda_kernel_2d"};
  for (std::size_t i = 0; i < names.size(); ++i) {
    const TimeNs at = static_cast<TimeNs>(i) * 10'000;
    w.api(cpu, "cudaLaunchKernel", at, at + 100, static_cast<std::int64_t>(i) + 1);
    w.kernel(s, names[i], at + 1'000, at + 7'000, static_cast<std::int64_t>(i) + 1);
  }
  Fixture f(w.build());
  AppliedScenario applied;
  apply(find_scenario("amp").instantiate(), f.selection, f.graph, applied);
  EXPECT_EQ(f.graph.duration(f.kernel(names[0])), 3'000);
  EXPECT_EQ(f.graph.duration(f.kernel(names[1])), 2'000);
  EXPECT_EQ(f.graph.duration(f.kernel(names[2])), 3'000);
  EXPECT_EQ(f.graph.duration(f.kernel(names[3])), 3'000);
  EXPECT_EQ(f.graph.duration(f.kernel(names[4])), 6'000);
}

TEST(Primitives, ScaleComposes) {
  Fixture f(gpu_step_trace());
  const std::vector<TaskId> sgemm = {f.kernel("sgemm_nn")};
  scale(f.graph, sgemm, 0.5, 100); // 2000 → 1100
  scale(f.graph, sgemm, 0.5, 0);   // → 550
  EXPECT_EQ(f.graph.duration(sgemm[0]), 550);
}

TEST(Primitives, ScaleOffCpuKeepsAFetchsMeasuredCpuTime) {
  // A 300 ns fetch whose `cpu` mark says 100 ns were CPU work (reading), and one without a
  // mark (all storage wait): storage twice as fast halves the waits only, 300 → 200 and
  // 300 → 150; the data scenario's storage=2 does the same.
  test::HandTrace h("");
  const TrackId loader = h.thread(2);
  h.annotation(loader, "fetch", "fetch", 0, 300, 0);
  h.annotation(loader, "cpu", "cpu", 300, 300, 100);
  h.annotation(loader, "fetch", "fetch", 400, 700, 1);
  const Trace trace = h.build();
  DependencyGraph graph = build_dependency_graph(trace);
  auto fetch_of_batch = [&](std::int64_t batch) {
    const auto& ann = trace.annotations();
    for (AnnotationIndex row{0}; row < ann.size(); ++row) {
      if (trace.str(ann.name[row]) == "fetch" && ann.payload[row] == batch) return graph.annotation_first(row);
    }
    return kNoTask;
  };
  const TaskId measured = fetch_of_batch(0), unmeasured = fetch_of_batch(1);
  const auto e = scale_off_cpu(graph, {measured, unmeasured}, 0.5);
  EXPECT_EQ(graph.duration(measured), 200);
  EXPECT_EQ(graph.duration(unmeasured), 150);
  EXPECT_EQ(e.time_before, 600);
  EXPECT_EQ(e.time_after, 350);

  std::vector<ScenarioRequest> requests;
  requests.push_back({find_scenario("data"), {{"storage", "2"}}});
  const auto report = run_whatif(trace, requests);
  ASSERT_EQ(report.predictions.size(), 1u);
  ASSERT_FALSE(report.predictions[0].effects.empty());
  EXPECT_EQ(report.predictions[0].effects[0].time_after, 350);
}

TEST(Primitives, SetDurationWithWaveScalingToAnotherGpu) {
  // V100 → A100, memory bound (no counters, no launch config): every kernel × 900/2039:
  // 2000 → 883, 1000 → 441, 500 → 221. sgemm [250, 1133), relu [1133, 1574),
  // adam_a [1574, 1795), adam_b [1795, 2016); the sync returns at 2066, the step ends 2766.
  Fixture f(gpu_step_trace());
  AppliedScenario applied;
  apply(find_scenario("gpu").instantiate({{"device", "A100"}}), f.selection, f.graph, applied);
  EXPECT_EQ(applied.effects.at(0).detail, "wave scaling V100 → A100");
  const auto r = simulate(f.graph);
  EXPECT_EQ(span_of(r, f.kernel("sgemm_nn")), Span(250, 1133));
  EXPECT_EQ(span_of(r, f.kernel("relu_fw")), Span(1133, 1574));
  EXPECT_EQ(span_of(r, f.kernel("adam_a")), Span(1574, 1795));
  EXPECT_EQ(span_of(r, f.kernel("adam_b")), Span(1795, 2016));
  EXPECT_EQ(step_end(f, r), 2766);
}

TEST(Primitives, SetDurationNeedsAKnownTracedGpu) {
  test::HandTrace w("Mystery GPU");
  const TrackId cpu = w.thread(1);
  w.api(cpu, "cudaLaunchKernel", 0, 10, 1);
  w.kernel(w.stream(1), "k", 20, 30, 1);
  Fixture f(w.build());
  AppliedScenario applied;
  try {
    apply(find_scenario("gpu").instantiate(), f.selection, f.graph, applied);
    FAIL();
  } catch (const TransformError& e) {
    EXPECT_NE(std::string(e.what()).find("'Mystery GPU' is not in the device table"), std::string::npos) << e.what();
  }
  // Naming the traced GPU makes it work.
  apply(find_scenario("gpu").instantiate({{"from", "V100"}, {"device", "H100"}}), f.selection, f.graph, applied);
  EXPECT_EQ(f.graph.duration(f.kernel("k")), 3); // 10 × 900/3350 = 2.7
}

TEST(Primitives, RemoveWithItsLaunchCall) {
  // relu and its launch [300, 400) go: the CPU runs 100 ns earlier from there on, adam_a
  // follows sgemm on the stream: [2250, 2750), adam_b [2750, 3250); the sync, entered at 1900,
  // returns at 3300 and the step ends at 4000.
  Fixture f(gpu_step_trace());
  Selector relu = kernels();
  relu.name = "relu";
  const TaskId launch = f.launch_of("relu_fw");
  const auto effect = remove(f.graph, f.selection, f.selection.select(relu), true);
  EXPECT_EQ(effect.tasks, 2u);
  EXPECT_EQ(effect.time_before, 1100);
  EXPECT_TRUE(f.graph.removed(f.kernel("relu_fw")));
  EXPECT_TRUE(f.graph.removed(launch));
  const auto r = simulate(f.graph);
  EXPECT_EQ(r.start[f.launch_of("adam_a")], 1000);
  EXPECT_EQ(span_of(r, f.kernel("adam_a")), Span(2250, 2750));
  EXPECT_EQ(span_of(r, f.kernel("adam_b")), Span(2750, 3250));
  EXPECT_EQ(span_of(r, f.api("cudaDeviceSynchronize")), Span(1900, 3300));
  EXPECT_EQ(step_end(f, r), 4000);
}

TEST(Primitives, RemoveLaunchCallsKeepsTheGpuWork) {
  // cuda-graphs: the four launches go, the kernels stay where they were; the CPU reaches the
  // sync 400 ns earlier, which still returns 50 ns after the last kernel.
  Fixture f(gpu_step_trace());
  AppliedScenario applied;
  apply(find_scenario("cuda-graphs").instantiate(), f.selection, f.graph, applied);
  EXPECT_EQ(applied.effects.at(0).tasks, 4u);
  EXPECT_EQ(applied.effects.at(0).time_before, 400);
  const auto r = simulate(f.graph);
  EXPECT_EQ(span_of(r, f.kernel("sgemm_nn")), Span(250, 2250));
  EXPECT_EQ(span_of(r, f.kernel("adam_b")), Span(3750, 4250));
  EXPECT_EQ(span_of(r, f.api("cudaDeviceSynchronize")), Span(1600, 4300));
  EXPECT_EQ(step_end(f, r), 5000);
}

TEST(Primitives, FuseTheOptimizerKernels) {
  // adam_a and adam_b become one 1000 ns kernel where adam_a was, launched once: adam_b's
  // launch [1300, 1400) goes, and with it the rest of the optimizer's CPU time (the loop over
  // the parameters), so the CPU reaches the sync at 1000; the fused kernel waits for relu.
  Fixture f(gpu_step_trace());
  AppliedScenario applied;
  apply(find_scenario("fused-optimizer").instantiate(), f.selection, f.graph, applied);
  const auto& e = applied.effects.at(0);
  EXPECT_EQ(e.tasks, 2u);
  EXPECT_EQ(e.time_before, 1000 + 200); // the kernels and their launches
  EXPECT_EQ(e.time_after, 1000 + 100);
  EXPECT_TRUE(f.graph.removed(f.kernel("adam_b")));
  EXPECT_TRUE(f.graph.removed(f.launch_of("adam_b")));
  EXPECT_FALSE(f.graph.removed(f.launch_of("adam_a")));
  EXPECT_EQ(applied.effects.at(1).time_after, 0);
  auto r = simulate(f.graph);
  EXPECT_EQ(span_of(r, f.kernel("adam_a")), Span(3250, 4250));
  EXPECT_EQ(span_of(r, f.api("cudaDeviceSynchronize")), Span(1000, 4300));
  EXPECT_EQ(step_end(f, r), 5000);

  // host_ratio = 1: Daydream's model, the CPU loop kept; the CPU reaches the sync at 1900.
  Fixture kept(gpu_step_trace());
  AppliedScenario kept_applied;
  apply(find_scenario("fused-optimizer").instantiate({{"host_ratio", "1"}}), kept.selection, kept.graph, kept_applied);
  r = simulate(kept.graph);
  EXPECT_EQ(span_of(r, kept.kernel("adam_a")), Span(3250, 4250));
  EXPECT_EQ(span_of(r, kept.api("cudaDeviceSynchronize")), Span(1900, 4300));
}

TEST(Primitives, FuseWithACostModel) {
  Fixture f(gpu_step_trace());
  Selector optimizer = kernels();
  optimizer.annotation = "optimizer";
  fuse(f.graph, f.selection, f.selection.select(optimizer), true, false, CostModel{RatioCost{0.5, 0}});
  EXPECT_EQ(f.graph.duration(f.kernel("adam_a")), 500);
  EXPECT_TRUE(f.graph.removed(f.launch_of("adam_a"))); // keep_launch = false
  const auto r = simulate(f.graph);
  EXPECT_EQ(span_of(r, f.kernel("adam_a")), Span(3250, 3750));
  EXPECT_EQ(span_of(r, f.api("cudaDeviceSynchronize")), Span(1800, 3800));
}

TEST(Primitives, SetPolicyChoosesTheTieBreaker) {
  Fixture f(gpu_step_trace());
  AppliedScenario applied;
  apply(scenario("name = \"p\"\n[[transform]]\nop = \"set_policy\"\npolicy = \"gpu_first\"\n"), f.selection, f.graph,
        applied);
  ASSERT_TRUE(applied.policy);
  EXPECT_NE(dynamic_cast<GpuFirstPolicy*>(applied.policy.get()), nullptr);
  SimulationOptions o;
  o.policy = applied.policy.get();
  EXPECT_EQ(simulate(f.graph, o).unscheduled, 0u);
}

TEST(DataStalls, ThreeSimulationsSplitFetchAndPrepStall) {
  // As traced the step waits for prep: 400, 300, 300 → 300. Without fetch, batches are ready
  // at 200, 400, 600: steps 300, 200, 200 → 200. Without loading: 100 each.
  Fixture f(data_pipeline_trace());
  const auto b = data_stall_breakdown(f.graph, f.selection);
  ASSERT_TRUE(b);
  EXPECT_DOUBLE_EQ(b->traced_step, 300);
  EXPECT_DOUBLE_EQ(b->cached_step, 200);
  EXPECT_DOUBLE_EQ(b->synthetic_step, 100);
  EXPECT_DOUBLE_EQ(b->fetch_stall(), 100);
  EXPECT_DOUBLE_EQ(b->prep_stall(), 100);

  Fixture gpu(gpu_step_trace());
  EXPECT_FALSE(data_stall_breakdown(gpu.graph, gpu.selection));
}

TEST(DataScenario, FasterStorageAndSyntheticData) {
  // storage=2: fetches take 50, batches are ready at 250, 500, 750: steps 350, 250, 250.
  const Trace trace = data_pipeline_trace();
  std::vector<ScenarioRequest> requests;
  requests.push_back({find_scenario("data"), {{"storage", "2"}}});
  auto report = run_whatif(trace, requests);
  ASSERT_EQ(report.predictions.size(), 1u);
  EXPECT_DOUBLE_EQ(report.replayed_step_median, 300);
  EXPECT_DOUBLE_EQ(report.predictions[0].step_median, 250);
  EXPECT_DOUBLE_EQ(report.predictions[0].speedup, 300.0 / 250.0);

  requests = {{find_scenario("data"), {{"synthetic", "true"}}}};
  report = run_whatif(trace, requests);
  EXPECT_DOUBLE_EQ(report.predictions[0].step_median, 100);

  requests = {{find_scenario("data"), {{"cache", "1.0"}}}};
  report = run_whatif(trace, requests);
  EXPECT_DOUBLE_EQ(report.predictions[0].step_median, 200);
}

TEST(Engine, CombinesScenariosAndExposesGateValues) {
  const Trace trace = gpu_step_trace();
  std::vector<ScenarioRequest> requests;
  requests.push_back({find_scenario("amp"), {}});
  requests.push_back({find_scenario("cuda-graphs"), {}});
  const auto report = run_whatif(trace, requests);
  ASSERT_EQ(report.predictions.size(), 3u);
  EXPECT_EQ(report.step_count, 1u);
  EXPECT_DOUBLE_EQ(report.measured_step_median, 5000);
  EXPECT_DOUBLE_EQ(report.replayed_step_median, 5000);
  EXPECT_DOUBLE_EQ(report.predictions[0].step_median, 3167);
  EXPECT_DOUBLE_EQ(report.predictions[1].step_median, 5000);
  EXPECT_EQ(report.predictions[2].label, "amp + cuda-graphs");
  // amp with no launch cost: the kernels drain by 2417 (the optimizer's keep their time) and
  // the sync, entered at 1600 now, returns at 2467 as with amp alone; 700 ns of CPU work follow.
  EXPECT_DOUBLE_EQ(report.predictions[2].step_median, 3167);
  EXPECT_EQ(report.predictions[2].parameters.at("amp.memory_bound_ratio"), "0.5");
  // The step's critical path as traced: the CPU piece before the sync ← the sync's residual ←
  // the four kernels back to back ← sgemm's launch (reached at its start, through the launch
  // edge: 150 ns of latency, no task) ← the forward piece before it. Top six of seven:
  const std::vector<std::pair<std::string, TimeNs>> expected = {
      {"kernel sgemm_nn", 2000}, {"kernel relu_fw", 1000}, {"cpu in step", 700},
      {"kernel adam_a", 500},    {"kernel adam_b", 500},   {"cpu in forward", 100}};
  ASSERT_EQ(report.baseline_critical_path.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(report.baseline_critical_path[i].what, expected[i].first);
    EXPECT_EQ(report.baseline_critical_path[i].time, expected[i].second) << expected[i].first;
  }

  const auto gates = gate_values(report);
  EXPECT_DOUBLE_EQ(std::get<double>(gates.at("speedup")), 5000.0 / 3167.0);
  EXPECT_DOUBLE_EQ(std::get<double>(gates.at("amp.speedup")), 5000.0 / 3167.0);
  EXPECT_DOUBLE_EQ(std::get<double>(gates.at("cuda_graphs.speedup")), 1.0);
  EXPECT_EQ(evaluate_expression("speedup < 1.10", gates), ParameterValue(false));
}

// A scenario that removes every task predicts 0 ns, an answer to no question: refused, naming
// the transform (round2's remove_all.toml: `select = {}` on a cpu_train trace gave 0.000x).
TEST(Engine, AScenarioThatLeavesNoTaskIsRefused) {
  const Trace trace = gpu_step_trace();
  std::vector<ScenarioRequest> requests;
  requests.push_back({Scenario::parse("name = \"remove-all\"\n[[transform]]\nop = \"remove\"\nselect = { }\n",
                                      "remove_all.toml"),
                      {}});
  try {
    (void)run_whatif(trace, requests);
    ADD_FAILURE() << "no error";
  } catch (const ScenarioError& e) {
    EXPECT_STREQ(e.what(), "remove_all.toml:2:1: this 'remove' leaves no task of the trace: nothing is left to "
                           "simulate (an empty selector selects every task)");
  }
  // Removing some of the work is a question like any other.
  requests.clear();
  requests.push_back({Scenario::parse("name = \"no-relu\"\n[[transform]]\nop = \"remove\"\n"
                                      "select = { kind = \"kernel\", name = \"relu_fw\" }\n",
                                      "no_relu.toml"),
                      {}});
  EXPECT_EQ(run_whatif(trace, requests).predictions.size(), 1u);
}

namespace {

// PyTorch's backward(): the training thread waits in its `backward` range while the autograd
// engine's thread, with no range of its own, launches the backward kernels. The graph links
// the wait to that burst (a handoff and a join); selectors follow the link, so the kernels
// are inside `backward` and in the step, as data-parallel's `after` needs them to be.
TEST(Selectors, KernelsOfABurstHandedOverAreInsideTheWaitingThreadsRanges) {
  dreamscope::test::HandTrace h;
  const TrackId main = h.thread(1), autograd = h.thread(2);
  const TrackId s = h.stream(7);
  h.annotation(main, "step", "step", 0, 2'000'000, 0);
  h.annotation(main, "forward", "operation", 0, 500'000);
  h.annotation(main, "backward", "operation", 500'000, 1'800'000);
  h.api(main, "cudaLaunchKernel", 100'000, 110'000, 1);
  h.kernel(s, "forward_kernel", 120'000, 200'000, 1);
  h.api(autograd, "cudaLaunchKernel", 600'000, 610'000, 2);
  h.kernel(s, "backward_kernel_1", 620'000, 700'000, 2);
  h.api(autograd, "cudaLaunchKernel", 1'690'000, 1'700'000, 3);
  h.kernel(s, "backward_kernel_2", 1'710'000, 1'750'000, 3);
  Fixture f(h.build());
  Selector backward;
  backward.kinds = {TaskClass::Compute};
  backward.annotation = "^backward$";
  EXPECT_EQ(f.names(f.selection.select(backward)), (std::vector<std::string>{"backward_kernel_1", "backward_kernel_2"}));
  Selector in_step;
  in_step.kinds = {TaskClass::Compute};
  in_step.steps = std::pair<std::int64_t, std::int64_t>{0, 0};
  EXPECT_EQ(f.selection.select(in_step).size(), 3u);
  Selector forward;
  forward.kinds = {TaskClass::Compute};
  forward.annotation = "^forward$";
  EXPECT_EQ(f.names(f.selection.select(forward)), (std::vector<std::string>{"forward_kernel"}));
}

// `compute` and `comm` split kernels by what they do, whatever library wrote the collective:
// amp and data-parallel select compute kernels, so a traced all-reduce is neither sped up by
// mixed precision nor taken for backward work.
TEST(Selectors, ComputeAndCommunicationKernelsAreToldApart) {
  dreamscope::test::HandTrace h;
  const TrackId t = h.thread(1);
  const TrackId s = h.stream(7);
  const char* names[] = {"ampere_sgemm_128x64_tn", "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
                         "multimem_all_reduce_kernel", "rcclKernel_Broadcast", "vectorized_elementwise_kernel"};
  TimeNs at = 0;
  std::int64_t correlation = 1;
  for (const char* name : names) {
    h.api(t, "cudaLaunchKernel", at, at + 10, correlation);
    h.kernel(s, name, at + 20, at + 100, correlation++);
    at += 200;
  }
  Fixture f(h.build());
  Selector compute;
  compute.kinds = {TaskClass::Compute};
  Selector comm;
  comm.kinds = {TaskClass::Communication};
  EXPECT_EQ(f.names(f.selection.select(compute)),
            (std::vector<std::string>{"ampere_sgemm_128x64_tn", "vectorized_elementwise_kernel"}));
  EXPECT_EQ(f.names(f.selection.select(comm)),
            (std::vector<std::string>{"ncclDevKernel_AllReduce_Sum_f32_RING_LL", "multimem_all_reduce_kernel",
                                      "rcclKernel_Broadcast"}));

  // amp halves or thirds the compute kernels and leaves the collectives as they were.
  DependencyGraph g = f.graph;
  AppliedScenario applied;
  apply(find_scenario("amp").instantiate({}), f.selection, g, applied);
  EXPECT_EQ(g.duration(f.kernel("multimem_all_reduce_kernel")), 80);
  EXPECT_EQ(g.duration(f.kernel("vectorized_elementwise_kernel")), 40);
}

} // namespace
