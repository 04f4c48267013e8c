// Import throughput on the largest trace in shared/data: the MTIA training trace (87 MB of
// JSON, ~456k traceEvents). Bytes are uncompressed JSON; the .gz case includes gunzip,
// the plain case reads the same JSON already decompressed. Target: >= 100 MB/s of JSON
// (HTA takes 8.7 s to load this trace on these machines).
//
// The importer may parse on a second thread (kineto_json_reader.cpp): each benchmark runs
// with DREAMSCOPE_IMPORT_THREADS=1 (in turn) and =2 (alongside). Rates are per wall-clock
// second, and the CPU column is the whole process's, both threads'. BM_ScanKinetoEvents times
// one pass of the import alone: the scanner that cuts the events into runs (json_split.h),
// over the same JSON in memory.
#include "importers/common/json_split.h"

#include <dreamscope/storage/importers.h>

#include <benchmark/benchmark.h>
#include <zlib.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <filesystem>
#include <fstream>
#include <iterator>
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
  ::setenv("DREAMSCOPE_IMPORT_THREADS", std::to_string(state.range(0)).c_str(), 1);
  state.SetLabel(state.range(0) == 1 ? "in turn" : "alongside");
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
  ::unsetenv("DREAMSCOPE_IMPORT_THREADS");
}

// A synthetic Kineto trace of `launches` kernel launches: per launch an operator, a runtime
// call, a kernel and an ac2g flow pair, with ns-precision float timestamps and NCCL-like
// args on every tenth kernel. Sized at 1x and 10x the MTIA trace's events, so that
// anything worse than linear (pairing, interning, sorting) shows as a higher cost per event.
std::filesystem::path synthetic_trace(std::int64_t launches) {
  auto p = std::filesystem::temp_directory_path() /
           ("dreamscope-bench-synthetic-" + std::to_string(::getpid()) + "-" + std::to_string(launches) + ".json");
  if (std::filesystem::exists(p)) return p;
  std::ofstream out(p, std::ios::binary);
  out << "{\"schemaVersion\": 1, \"displayTimeUnit\": \"ns\", \"traceEvents\": [\n";
  char buf[1024];
  for (std::int64_t i = 0; i < launches; ++i) {
    const std::int64_t ts = 1000000000 + i * 5000; // ns
    const auto us = [](std::int64_t ns) { return std::to_string(ns / 1000) + "." + std::to_string(1000 + ns % 1000).substr(1); };
    const std::int64_t tid = 100 + i % 4;
    int n = std::snprintf(buf, sizeof buf,
        "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::op_%lld\", \"pid\": 7, \"tid\": %lld, "
        "\"ts\": %s, \"dur\": 3.250, \"args\": {\"External id\": %lld, \"Sequence number\": %lld}},\n"
        "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 7, \"tid\": %lld, "
        "\"ts\": %s, \"dur\": 2.125, \"args\": {\"External id\": %lld, \"cbid\": 211, \"correlation\": %lld}},\n"
        "{\"ph\": \"s\", \"id\": %lld, \"pid\": 7, \"tid\": %lld, \"ts\": %s, \"cat\": \"ac2g\", \"name\": \"ac2g\"},\n",
        static_cast<long long>(i % 500), static_cast<long long>(tid), us(ts).c_str(), static_cast<long long>(i),
        static_cast<long long>(i), static_cast<long long>(tid), us(ts + 500).c_str(), static_cast<long long>(i),
        static_cast<long long>(i), static_cast<long long>(i), static_cast<long long>(tid), us(ts + 500).c_str());
    out.write(buf, n);
    n = std::snprintf(buf, sizeof buf,
        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"void kernel_%lld<float>(float*)\", \"pid\": 0, "
        "\"tid\": 7, \"ts\": %s, \"dur\": 4.000, \"args\": {\"device\": 0, \"stream\": 7, \"correlation\": %lld, "
        "\"grid\": [%lld, 1, 1], \"block\": [256, 1, 1], \"registers per thread\": 32, \"shared memory\": 0%s}},\n"
        "{\"ph\": \"f\", \"id\": %lld, \"pid\": 0, \"tid\": 7, \"ts\": %s, \"cat\": \"ac2g\", \"name\": \"ac2g\", "
        "\"bp\": \"e\"}%s\n",
        static_cast<long long>(i % 300), us(ts + 3000).c_str(), static_cast<long long>(i),
        static_cast<long long>(1 + i % 1024),
        i % 10 == 0 ? ", \"Collective name\": \"allreduce\", \"In msg nelems\": 2049000, \"dtype\": \"Float\"" : "",
        static_cast<long long>(i), us(ts + 3000).c_str(), i + 1 < launches ? "," : "");
    out.write(buf, n);
  }
  out << "]}\n";
  return p;
}

void BM_ImportSynthetic(benchmark::State& state) {
  const auto path = synthetic_trace(state.range(1));
  import(state, path);
  state.counters["ns_per_json_event"] =
      benchmark::Counter(static_cast<double>(state.range(1) * 5), benchmark::Counter::kIsIterationInvariantRate |
                                                                      benchmark::Counter::kInvert);
  std::error_code ec;
  std::filesystem::remove(path, ec);
}

// The scan of the MTIA trace's events into runs of 256 kB, as an import makes it: every
// separator between two events is found, with the positions a reader needs.
void BM_ScanKinetoEvents(benchmark::State& state) {
  std::ifstream in(plain_mtia(), std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::size_t size = text.size();
  text.append(128, ' '); // the padding a parser of the last run reads
  const char* events = std::strstr(text.c_str(), "\"traceEvents\": [");
  if (!events) {
    state.SkipWithError("no traceEvents array in the MTIA trace");
    return;
  }
  const char* open = std::strchr(events, '[');
  std::size_t separators = 0;
  for (auto _ : state) {
    dreamscope::json_split::ArrayRuns runs(open, text.data() + size, std::size_t{256} << 10);
    const char* first = nullptr;
    const char* last = nullptr;
    separators = 0;
    while (runs.next(first, last)) separators += runs.separators().size() + 1;
    benchmark::DoNotOptimize(separators);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(size) * state.iterations());
  state.counters["elements"] = static_cast<double>(separators);
}

void BM_ImportKinetoGzip(benchmark::State& state) { import(state, kMtia); }
void BM_ImportKinetoPlainJson(benchmark::State& state) { import(state, plain_mtia()); }

BENCHMARK(BM_ScanKinetoEvents)->Unit(benchmark::kMillisecond)->MinTime(2);
BENCHMARK(BM_ImportKinetoGzip)->ArgName("threads")->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->MinTime(3)
    ->MeasureProcessCPUTime()->UseRealTime();
BENCHMARK(BM_ImportKinetoPlainJson)->ArgName("threads")->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->MinTime(3)
    ->MeasureProcessCPUTime()->UseRealTime();
// 91k and 910k launches: 456k and 4.56M JSON events, 1x and 10x the MTIA trace.
BENCHMARK(BM_ImportSynthetic)->ArgNames({"threads", "launches"})->ArgsProduct({{1, 2}, {91'000, 910'000}})
    ->Unit(benchmark::kMillisecond)->Iterations(2)->MeasureProcessCPUTime()->UseRealTime();

} // namespace

BENCHMARK_MAIN();
