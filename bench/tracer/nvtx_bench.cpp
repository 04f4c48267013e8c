// The NVTX hot path: a range push + pop, a registered-name dreamscope step scope, a mark.
// Run it plain for the untraced cost and under the tracer for the traced one:
//   bench/tracer/run_nvtx_bench.sh BUILD_DIR   (does both and checks nothing was dropped)
//
// Each benchmark iteration is a batch of 10 000 calls (20 000 events: a third of one of the
// tracer's 64 k-event chunks), followed, outside the timing, by a pause that lets the
// writer thread drain and recycle chunks. So the figure is the recording path a real job
// sees, not the first-touch page faults of chunks that a burst maps. `ns_per_call` is the result (printed in seconds with an SI prefix: "23.4n" = 23.4 ns).
#include <dreamscope/annotate.h>

#include <nvtx3/nvToolsExt.h>

#include <benchmark/benchmark.h>

#include <chrono>
#include <thread>

namespace {

constexpr int kBatch = 10000;

template <class F>
void batched(benchmark::State& state, F&& call) {
  for (auto _ : state) {
    for (int i = 0; i < kBatch; ++i) call(i);
    state.PauseTiming();
    std::this_thread::sleep_for(std::chrono::milliseconds(40));
    state.ResumeTiming();
  }
  state.counters["ns_per_call"] = benchmark::Counter(static_cast<double>(state.iterations()) * kBatch,
                                                     benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_NvtxRangePushPop(benchmark::State& state) {
  batched(state, [](int) {
    nvtxRangePushA("bench");
    nvtxRangePop();
  });
}
BENCHMARK(BM_NvtxRangePushPop)->Iterations(20)->UseRealTime();

void BM_DreamscopeStepScope(benchmark::State& state) {
  batched(state, [](int i) {
    ds_step_push(i);
    ds_range_pop();
  });
}
BENCHMARK(BM_DreamscopeStepScope)->Iterations(20)->UseRealTime();

void BM_NvtxMark(benchmark::State& state) {
  batched(state, [](int) { nvtxMarkA("bench"); });
}
BENCHMARK(BM_NvtxMark)->Iterations(20)->UseRealTime();

} // namespace

int main(int argc, char** argv) {
  // Traced, the first event makes the tracer create its part file; give it time so the
  // first batches are not measured against a writer that is still busy with that.
  nvtxMarkA("bench start");
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
