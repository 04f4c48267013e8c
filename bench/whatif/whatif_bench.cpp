// Scenarios per second on a 1 M-task trace (issue: what-if engine, "Benchmark"): each
// built-in scenario alone, as `dreamscope whatif TRACE -s NAME` runs it (graph build, the
// baseline replay, then the transformed copy's replay and its report), and all six in one
// run, where the baseline is paid once and each scenario costs a copy of the graph, its
// transforms and one simulation.
//
//   build/release/bench/whatif_bench --benchmark_counters_tabular=true
#include "synthetic_training_trace.h"

#include <dreamscope/whatif/scenario.h>
#include <dreamscope/whatif/whatif_engine.h>

#include <benchmark/benchmark.h>

#include <memory>

namespace dreamscope::whatif {
namespace {

const Trace& million_task_trace() {
  static std::unique_ptr<Trace> trace;
  if (!trace) {
    test::SyntheticTraceOptions o{.launches_per_step = 100, .trainers = 2, .loader_workers = 4, .seed = 11};
    const auto per_step = static_cast<std::int64_t>(
        test::synthetic_task_estimate({.steps = 1, .launches_per_step = 100, .trainers = 2}));
    o.steps = static_cast<int>(1'000'000 / per_step);
    trace = std::make_unique<Trace>(test::make_synthetic_training_trace(o));
  }
  return *trace;
}

struct Case {
  const char* scenario;
  std::map<std::string, std::string> parameters;
};
// The synthetic run's GPU is not in the device table: `gpu` is told it was an A100.
const Case kCases[] = {
    {"amp", {}},
    {"fused-optimizer", {{"optimizer", "backward"}}},
    {"cuda-graphs", {}},
    {"gpu", {{"from", "A100"}, {"device", "H100"}}},
    {"data", {{"workers", "8"}, {"cores", "8"}}},
    {"data-parallel", {{"workers", "8"}}},
};

std::vector<ScenarioRequest> requests(std::size_t first, std::size_t count) {
  std::vector<ScenarioRequest> out;
  for (std::size_t i = first; i < first + count; ++i) out.push_back({find_scenario(kCases[i].scenario), kCases[i].parameters});
  return out;
}

void report(benchmark::State& state, const WhatIfReport& r, std::size_t scenarios) {
  state.counters["tasks"] = static_cast<double>(r.tasks);
  state.counters["scenarios/s"] =
      benchmark::Counter(static_cast<double>(scenarios), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["speedup"] = r.predictions.empty() ? 0 : r.predictions.back().speedup;
}

void BM_OneScenario(benchmark::State& state) {
  const Trace& trace = million_task_trace();
  const auto index = static_cast<std::size_t>(state.range(0));
  state.SetLabel(kCases[index].scenario);
  const auto req = requests(index, 1);
  WhatIfReport r;
  for (auto _ : state) {
    r = run_whatif(trace, req, {.data_stalls = false});
    benchmark::DoNotOptimize(r);
  }
  report(state, r, 1);
}
BENCHMARK(BM_OneScenario)->DenseRange(0, 5)->Unit(benchmark::kMillisecond)->UseRealTime();

// Six scenarios and their combination: seven predictions on one baseline.
void BM_AllScenarios(benchmark::State& state) {
  const Trace& trace = million_task_trace();
  const auto req = requests(0, std::size(kCases));
  WhatIfReport r;
  for (auto _ : state) {
    r = run_whatif(trace, req, {.data_stalls = false});
    benchmark::DoNotOptimize(r);
  }
  report(state, r, r.predictions.size());
}
BENCHMARK(BM_AllScenarios)->Unit(benchmark::kMillisecond)->UseRealTime();

} // namespace
} // namespace dreamscope::whatif

BENCHMARK_MAIN();
