// Import throughput on the largest trace in shared/data: the MTIA training trace (87 MB of
// JSON, ~456k traceEvents). Bytes are uncompressed JSON; the .gz case includes gunzip,
// the plain case reads the same JSON already decompressed. Target: >= 100 MB/s of JSON
// (HTA takes 8.7 s to load this trace on these machines).
#include <dreamscope/importers.h>

#include <benchmark/benchmark.h>
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace {

const std::filesystem::path kMtia =
    std::filesystem::path(DREAMSCOPE_SHARED_DATA_DIR) / "kineto-hta/mtia_trace_single_rank/mtia_rank_0.json.gz";

// The MTIA trace gunzipped into a temporary file, once.
const std::filesystem::path& plain_mtia() {
  static const std::filesystem::path path = [] {
    auto p = std::filesystem::temp_directory_path() / ("dreamscope-bench-mtia-" + std::to_string(::getpid()) + ".json");
    gzFile in = gzopen(kMtia.c_str(), "rb");
    std::ofstream out(p, std::ios::binary);
    char buf[1 << 16];
    int n;
    while (in && (n = gzread(in, buf, sizeof buf)) > 0) out.write(buf, n);
    if (in) gzclose(in);
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove(std::filesystem::temp_directory_path() /
                                  ("dreamscope-bench-mtia-" + std::to_string(::getpid()) + ".json"),
                              ec);
    });
    return p;
  }();
  return path;
}

void import(benchmark::State& state, const std::filesystem::path& path) {
  dreamscope::ImportStats stats;
  std::size_t events = 0;
  for (auto _ : state) {
    dreamscope::Trace t = dreamscope::import_kineto(path, &stats);
    events = t.event_count();
    benchmark::DoNotOptimize(events);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(stats.bytes) * state.iterations());
  state.counters["json_events/s"] =
      benchmark::Counter(static_cast<double>(stats.events_read) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
  state.counters["rows"] = static_cast<double>(events);
}

void BM_ImportKinetoGzip(benchmark::State& state) { import(state, kMtia); }
void BM_ImportKinetoPlainJson(benchmark::State& state) { import(state, plain_mtia()); }

BENCHMARK(BM_ImportKinetoGzip)->Unit(benchmark::kMillisecond)->MinTime(3);
BENCHMARK(BM_ImportKinetoPlainJson)->Unit(benchmark::kMillisecond)->MinTime(3);

} // namespace

BENCHMARK_MAIN();
