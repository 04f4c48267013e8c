// What a traced thread pays to record into a chunk the pool has just mapped, against one it
// has recycled; and what mapping a chunk costs the thread that maps it (the writer, in
// ChunkPool::refill). On a machine that builds a process's page mappings only at its first
// access to each page (a guest under shadow paging: the development VM took ~5 us a page,
// 2.5 ms a 2 MiB chunk), a chunk mapped with its pages "present" still charged the first
// thread that wrote into it, mid-burst and unrecorded (docs/tracing.md, "How it works").
//   build/release/bench/tracer_chunk_pool_bench --benchmark_repetitions=5
// `ns_per_event` of BM_RecordIntoFreshChunk against BM_RecordIntoRecycledChunk is the
// first-pass cost a burst sees per event; BM_MapChunk is the mapping thread's time per chunk.
#include "clock.h"
#include "event_buffer.h"

#include <benchmark/benchmark.h>

#include <memory>

namespace dreamscope::tracer {
namespace {

// Fills most of one chunk with push/pop pairs as the NVTX entry points record them.
void record_pairs(ThreadBuffer& buffer, std::size_t pairs, bool tsc) {
  for (std::size_t i = 0; i < pairs; ++i) {
    buffer.push(Event{ticks(tsc), static_cast<std::int64_t>(i), 0, 7, 0, static_cast<std::uint8_t>(EventKind::Push), 0});
    buffer.pop(Event{ticks(tsc), kNoPayload, 0, 0, 0, static_cast<std::uint8_t>(EventKind::Pop), 0});
  }
}

std::size_t pairs_per_chunk() { return (ChunkPool::kDefaultChunkBytes - Chunk::kHeaderBytes) / sizeof(Event) / 2 - 8; }

void counters(benchmark::State& state, std::size_t pairs) {
  state.counters["ns_per_event"] = benchmark::Counter(static_cast<double>(state.iterations() * pairs * 2),
                                                      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_RecordIntoFreshChunk(benchmark::State& state) {
  const bool tsc = tsc_is_invariant();
  const std::size_t pairs = pairs_per_chunk();
  for (auto _ : state) {
    state.PauseTiming();
    // A pool of its own each time: the chunk is mapped as the writer maps one ahead of a burst.
    auto pool = std::make_unique<ChunkPool>(ChunkPool::kDefaultChunkBytes, 4 * ChunkPool::kDefaultChunkBytes, 2, tsc);
    pool->refill(1);
    auto buffer = std::make_unique<ThreadBuffer>(*pool, 1, 0, 0);
    state.ResumeTiming();
    record_pairs(*buffer, pairs, tsc);
    state.PauseTiming();
    buffer.reset();
    pool.reset();
    state.ResumeTiming();
  }
  counters(state, pairs);
}

void BM_RecordIntoRecycledChunk(benchmark::State& state) {
  const bool tsc = tsc_is_invariant();
  const std::size_t pairs = pairs_per_chunk();
  ChunkPool pool(ChunkPool::kDefaultChunkBytes, 4 * ChunkPool::kDefaultChunkBytes, 2, tsc);
  pool.refill(1);
  { // one pass first: the chunk has been written once, as every chunk on the free list has
    ThreadBuffer first(pool, 1, 0, 0);
    record_pairs(first, pairs, tsc);
  }
  for (auto _ : state) {
    state.PauseTiming();
    auto buffer = std::make_unique<ThreadBuffer>(pool, 1, 0, 0); // takes the chunk back from the free list
    state.ResumeTiming();
    record_pairs(*buffer, pairs, tsc);
    state.PauseTiming();
    buffer.reset();
    state.ResumeTiming();
  }
  counters(state, pairs);
}

void BM_MapChunk(benchmark::State& state) {
  const bool tsc = tsc_is_invariant();
  for (auto _ : state) {
    state.PauseTiming();
    auto pool = std::make_unique<ChunkPool>(ChunkPool::kDefaultChunkBytes, 4 * ChunkPool::kDefaultChunkBytes, 2, tsc);
    state.ResumeTiming();
    pool->refill(1);
    state.PauseTiming();
    pool.reset();
    state.ResumeTiming();
  }
}

BENCHMARK(BM_RecordIntoFreshChunk)->Unit(benchmark::kMicrosecond)->Iterations(50)->UseRealTime();
BENCHMARK(BM_RecordIntoRecycledChunk)->Unit(benchmark::kMicrosecond)->Iterations(50)->UseRealTime();
BENCHMARK(BM_MapChunk)->Unit(benchmark::kMicrosecond)->Iterations(50)->UseRealTime();

} // namespace
} // namespace dreamscope::tracer

BENCHMARK_MAIN();
