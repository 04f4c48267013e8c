// What the in-run cost sampling adds to the hot path (issue 16: under 1 ns per event on
// average). Both benchmarks record push/pop pairs into a ThreadBuffer exactly as the NVTX
// entry points do (a clock read per call for the event's time); one also runs
// ThreadBuffer::sample_cost after each call, as the entry points do. The difference of
// `ns_per_event` is the sampling's cost:
//   build/release/bench/tracer_cost_sampling_bench --benchmark_repetitions=5
// Each iteration records 16 k pairs, then drains the buffer outside the timing, so the chunk
// stays mapped and no page fault or chunk map is measured.
#include "clock.h"
#include "event_buffer.h"

#include <benchmark/benchmark.h>

namespace dreamscope::tracer {
namespace {

constexpr int kPairs = 16 * 1024;

template <bool kSampled>
void record_pairs(benchmark::State& state) {
  const bool tsc = tsc_is_invariant();
  ChunkPool pool(ChunkPool::kDefaultChunkBytes, 8 * ChunkPool::kDefaultChunkBytes, 4, tsc);
  ThreadBuffer buffer(pool, 1, 0, 0);
  const std::uint64_t cap = ~std::uint64_t{0};
  for (auto _ : state) {
    for (int i = 0; i < kPairs; ++i) {
      std::uint64_t at = ticks(tsc);
      buffer.push(Event{at, i, 0, 7, 0, static_cast<std::uint8_t>(EventKind::Push), 0});
      if constexpr (kSampled) buffer.sample_cost(EventKind::Push, at, tsc, cap);
      at = ticks(tsc);
      buffer.pop(Event{at, INT64_MIN, 0, 0, 0, static_cast<std::uint8_t>(EventKind::Pop), 0});
      if constexpr (kSampled) buffer.sample_cost(EventKind::Pop, at, tsc, cap);
    }
    state.PauseTiming();
    buffer.drain([](const Event&, std::uint64_t) {});
    state.ResumeTiming();
  }
  state.counters["ns_per_event"] = benchmark::Counter(static_cast<double>(state.iterations()) * kPairs * 2,
                                                      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  if constexpr (kSampled) {
    const auto [calls, ticks_sum] = buffer.cost_tally(EventKind::Push);
    benchmark::DoNotOptimize(calls + ticks_sum);
  }
}

void BM_RecordPairs(benchmark::State& state) { record_pairs<false>(state); }
void BM_RecordPairsSampled(benchmark::State& state) { record_pairs<true>(state); }
BENCHMARK(BM_RecordPairs)->UseRealTime();
BENCHMARK(BM_RecordPairsSampled)->UseRealTime();

} // namespace
} // namespace dreamscope::tracer

BENCHMARK_MAIN();
