// Graph build + replay throughput and memory per task (design.md target: ≥ 5 M tasks/s,
// a 1 M-task what-if in under 1 s), on synthetic training runs of 1 M and 10 M tasks: two
// trainer threads each with a compute and a copy stream, four loader workers, a launch per
// kernel, event records and stream waits every step, stream / event syncs and blocking
// copies at step ends.
//
//   build/graph/bench/graph_bench --benchmark_counters_tabular=true
#include "synthetic_training_trace.h"

#include <dreamscope/graph/graph.h>
#include <dreamscope/whatif/whatif.h>

#include <benchmark/benchmark.h>

#include <map>
#include <memory>

namespace dreamscope {
namespace {

const Trace& synthetic_trace(std::int64_t tasks) {
  static std::map<std::int64_t, std::unique_ptr<Trace>> cache;
  auto& slot = cache[tasks];
  if (!slot) {
    test::SyntheticTraceOptions o{.launches_per_step = 100, .trainers = 2, .loader_workers = 4, .seed = 11};
    const std::int64_t per_step = static_cast<std::int64_t>(test::synthetic_task_estimate({.steps = 1, .launches_per_step = 100, .trainers = 2}));
    o.steps = static_cast<int>(tasks / per_step);
    slot = std::make_unique<Trace>(test::make_synthetic_training_trace(o));
  }
  return *slot;
}

std::size_t simulation_bytes(const whatif::SimulationResult& r) {
  return r.start.capacity() * sizeof(TimeNs) + r.end.capacity() * sizeof(TimeNs) +
         r.binding.capacity() * sizeof(whatif::TaskBinding);
}

void BM_BuildGraph(benchmark::State& state) {
  const Trace& trace = synthetic_trace(state.range(0));
  std::size_t tasks = 0, bytes = 0;
  for (auto _ : state) {
    DependencyGraph g = build_dependency_graph(trace);
    tasks = g.task_count();
    bytes = g.memory_bytes();
    benchmark::DoNotOptimize(g);
  }
  state.counters["tasks"] = static_cast<double>(tasks);
  state.counters["tasks/s"] = benchmark::Counter(static_cast<double>(tasks), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["graph_B/task"] = static_cast<double>(bytes) / static_cast<double>(tasks);
}

void BM_Simulate(benchmark::State& state) {
  const Trace& trace = synthetic_trace(state.range(0));
  const DependencyGraph g = build_dependency_graph(trace);
  std::size_t bytes = 0;
  for (auto _ : state) {
    whatif::SimulationResult r = whatif::simulate(g);
    bytes = simulation_bytes(r);
    benchmark::DoNotOptimize(r);
  }
  const auto tasks = static_cast<double>(g.task_count());
  state.counters["tasks"] = tasks;
  state.counters["tasks/s"] = benchmark::Counter(tasks, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["result_B/task"] = static_cast<double>(bytes) / tasks;
}

// What `dreamscope replay` and every what-if pay: build, simulate, compare steps.
void BM_BuildAndReplay(benchmark::State& state) {
  const Trace& trace = synthetic_trace(state.range(0));
  double error = 0;
  std::size_t tasks = 0;
  for (auto _ : state) {
    const whatif::ReplayReport r = whatif::replay(trace);
    tasks = r.tasks;
    error = r.error();
    benchmark::DoNotOptimize(error);
  }
  state.counters["tasks"] = static_cast<double>(tasks);
  state.counters["tasks/s"] = benchmark::Counter(static_cast<double>(tasks), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["trace_B/task"] = static_cast<double>(trace.memory_bytes()) / static_cast<double>(tasks);
  state.counters["error_%"] = 100 * error;
}

BENCHMARK(BM_BuildGraph)->Arg(1'000'000)->Arg(10'000'000)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Simulate)->Arg(1'000'000)->Arg(10'000'000)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_BuildAndReplay)->Arg(1'000'000)->Arg(10'000'000)->Unit(benchmark::kMillisecond)->UseRealTime();

} // namespace
} // namespace dreamscope

BENCHMARK_MAIN();
