// No command may be worse than n log n in the trace's size (issue 12): `replay` and
// `whatif -s amp` (with its data-stall simulations) on traces of 0.625 M to 5 M events whose
// shape made whatif quadratic: call stacks 24 deep on every operation and ranges that last
// the whole run (an epoch on the training thread, a profiler range on every stream). Time per
// event must stay flat as the trace doubles, and whatif within 2x of replay.
//
//   build/release/bench/whatif_scaling_bench --benchmark_counters_tabular=true
//   bench/whatif_scaling.sh          # the same, then the ratios it is judged by
#include <dreamscope/storage/memory_reuse.h>
#include <dreamscope/whatif/replay.h>
#include <dreamscope/whatif/scenario.h>
#include <dreamscope/whatif/whatif_engine.h>

#include <benchmark/benchmark.h>

#include <map>
#include <memory>

namespace dreamscope::whatif {
namespace {

// One training thread and two streams. Per operation: a 24-deep stack of frames, a launch and
// its kernel; per step, 40 operations inside a step range; everything inside one epoch range.
Trace deep_trace(std::size_t events) {
  constexpr int kDepth = 24;
  constexpr int kOpsPerStep = 40;
  TraceBuilder b;
  b.set_meta("source", "kineto");
  const auto p = b.add_process(ProcessInfo{.pid = 1, .name = "python"});
  const auto d = b.add_device(DeviceInfo{.ordinal = 0, .name = "NVIDIA A100-SXM4-80GB", .sm_count = 108});
  const TrackId main = b.thread_track(p, 1, "main");
  const TrackId streams[2] = {b.stream_track(d, 7), b.stream_track(d, 8)};
  const StringId frame = b.intern("frame"), op = b.intern("aten::linear"), launch = b.intern("cudaLaunchKernel");
  const StringId python = b.intern("python_function");
  const StringId kernels[3] = {b.intern("ampere_sgemm_128x64_tn"), b.intern("vectorized_elementwise_kernel"),
                               b.intern("ncclKernel_AllReduce_RING_LL_Sum_float")};
  const std::size_t per_op = kDepth + 3; // frames, the operator, the launch, the kernel
  const std::size_t ops = events / per_op;
  const TimeNs op_ns = 20'000;
  const TimeNs frame_ns = 200;
  std::int64_t correlation = 1;
  TimeNs t = 0;
  for (std::size_t i = 0; i < ops; ++i) {
    if (i % kOpsPerStep == 0) {
      const TimeNs step_end = t + kOpsPerStep * op_ns;
      b.add(AnnotationRecord{.track = main, .start = t, .end = step_end,
                             .name = b.intern("ProfilerStep#" + std::to_string(i / kOpsPerStep)),
                             .category = python});
    }
    for (int level = 0; level < kDepth; ++level) {
      b.add(AnnotationRecord{.track = main, .start = t + level * frame_ns, .end = t + op_ns - level * frame_ns,
                             .name = frame, .category = python});
    }
    const TimeNs inner = t + kDepth * frame_ns;
    b.add(AnnotationRecord{.track = main, .start = inner, .end = inner + 2'000, .name = op, .category = python});
    b.add(CudaApiRecord{.track = main, .start = inner + 500, .end = inner + 1'500, .name = launch,
                        .correlation = correlation});
    b.add(GpuOpRecord{.track = streams[i % 2], .start = inner + 3'000, .end = inner + 3'000 + 12'000,
                      .name = kernels[i % 3], .correlation = correlation,
                      .launch = LaunchConfig{.grid = {80, 1, 1}, .block = {256, 1, 1}}});
    ++correlation;
    t += op_ns;
  }
  b.add(AnnotationRecord{.track = main, .start = 0, .end = t + op_ns, .name = b.intern("epoch"), .category = python});
  for (TrackId s : streams) {
    b.add(AnnotationRecord{.track = s, .start = 0, .end = t + op_ns, .name = b.intern("profiler range"),
                           .category = b.intern("gpu_user_annotation")});
  }
  return std::move(b).build();
}

const Trace& trace_of(std::int64_t events) {
  static std::map<std::int64_t, std::unique_ptr<Trace>> traces;
  auto& t = traces[events];
  if (!t) {
    traces.clear(); // one size at a time: 5 M events take about 2 GB with their graph
    t = std::make_unique<Trace>(deep_trace(static_cast<std::size_t>(events)));
  }
  return *t;
}

void per_event(benchmark::State& state, const Trace& trace) {
  state.counters["events"] = static_cast<double>(trace.event_count());
  state.counters["ns/event"] = benchmark::Counter(static_cast<double>(trace.event_count()),
                                                  benchmark::Counter::kIsIterationInvariantRate |
                                                      benchmark::Counter::kInvert);
}

void BM_Replay(benchmark::State& state) {
  const Trace& trace = trace_of(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(whatif::replay(trace));
  per_event(state, trace);
}

void BM_WhatIfAmp(benchmark::State& state) {
  const Trace& trace = trace_of(state.range(0));
  const std::vector<ScenarioRequest> amp = {{find_scenario("amp"), {}}};
  for (auto _ : state) benchmark::DoNotOptimize(run_whatif(trace, amp));
  per_event(state, trace);
}

// Replay and whatif on each size in turn, so that both share the trace built for it.
void sizes(benchmark::internal::Benchmark* b) {
  for (std::int64_t n : {625'000, 1'250'000, 2'500'000, 5'000'000}) b->Arg(n);
}
BENCHMARK(BM_Replay)->Apply(sizes)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1)->Repetitions(3);
BENCHMARK(BM_WhatIfAmp)->Apply(sizes)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1)->Repetitions(3);

} // namespace
} // namespace dreamscope::whatif

// As the `dreamscope` command runs them: freed memory is kept for reuse.
int main(int argc, char** argv) {
  dreamscope::keep_freed_memory_for_reuse();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
