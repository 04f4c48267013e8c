// The NVTX hot path: one range push + pop, a registered-name dreamscope scope, a mark.
// Run it plain for the untraced cost and under the tracer for the traced one:
//   bench/tracer/run_nvtx_bench.sh BUILD_DIR   (does both and checks nothing was dropped)
#include <dreamscope/annotate.h>

#include <nvtx3/nvToolsExt.h>

#include <benchmark/benchmark.h>

namespace {

void BM_NvtxRangePushPop(benchmark::State& state) {
  for (auto _ : state) {
    nvtxRangePushA("bench");
    nvtxRangePop();
  }
}
BENCHMARK(BM_NvtxRangePushPop)->Iterations(1'000'000);

void BM_DreamscopeStepScope(benchmark::State& state) {
  std::int64_t i = 0;
  for (auto _ : state) {
    ds_step_push(i++);
    ds_range_pop();
  }
}
BENCHMARK(BM_DreamscopeStepScope)->Iterations(1'000'000);

void BM_NvtxMark(benchmark::State& state) {
  for (auto _ : state) nvtxMarkA("bench");
}
BENCHMARK(BM_NvtxMark)->Iterations(1'000'000);

} // namespace

BENCHMARK_MAIN();
