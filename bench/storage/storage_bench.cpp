// Writer throughput and on-disk size, and the cost of loading a trace into memory.
//
//   build/release/bench/storage_bench --benchmark_filter=Write   (TraceWriter, write_trace)
//   build/release/bench/storage_bench --benchmark_filter=Load --benchmark_min_time=1x
//   build/release/bench/storage_bench --benchmark_filter=GpuOpRows      (SQLite's two ways out)
//   build/release/bench/storage_bench --benchmark_filter='TraceLog|Merge|Copy'  (part logs, copies)
// bench/storage_figures.sh runs both and prints the figures the targets are stated in.
#include <dreamscope/storage/trace_copy.h>
#include <dreamscope/storage/trace_file.h>
#include <dreamscope/storage/trace_log.h>
#include <dreamscope/storage/trace_merge.h>

#include <benchmark/benchmark.h>
#include <sqlite3.h>

#include <filesystem>
#include <random>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace dreamscope {
namespace {

std::filesystem::path scratch_file(const char* name) {
  const char* dir = std::getenv("DREAMSCOPE_BENCH_DIR");
  std::filesystem::path base = dir ? dir : std::filesystem::temp_directory_path();
  return base / (std::string(name) + "-" + std::to_string(::getpid()) + ".db");
}

// The mix a tracer writes for a GPU training step: per kernel launch, one runtime API call
// and one kernel; per few launches, an NVTX range. Timestamps are CLOCK_MONOTONIC-like.
struct EventMix {
  std::mt19937_64 rng{7};
  TimeNs t = 3'600'000'000'000; // an hour of uptime
  std::int64_t correlation = 0;
  std::vector<StringId> kernel_names, api_names, range_names;
  TrackId main_thread{0}, loader_thread{0}, compute_stream{0}, copy_stream{0};

  template <typename Sink>
  void setup(Sink& sink, ProcessId process, DeviceId device, auto&& add_track) {
    main_thread = add_track(TrackInfo{.kind = TrackKind::CpuThread, .process = process, .tid = 100});
    loader_thread = add_track(TrackInfo{.kind = TrackKind::CpuThread, .process = process, .tid = 101});
    compute_stream = add_track(TrackInfo{.kind = TrackKind::GpuStream, .device = device, .stream = 7});
    copy_stream = add_track(TrackInfo{.kind = TrackKind::GpuStream, .device = device, .stream = 20});
    for (int i = 0; i < 200; ++i) kernel_names.push_back(sink.intern("void at::native::kernel_" + std::to_string(i)));
    for (const char* n : {"cudaLaunchKernel", "cudaMemcpyAsync", "cudaStreamSynchronize", "cudaEventRecord"}) {
      api_names.push_back(sink.intern(n));
    }
    for (int i = 0; i < 50; ++i) range_names.push_back(sink.intern("aten::op_" + std::to_string(i)));
  }

  // Emits three events: a range, a launch call and its kernel.
  template <typename Sink>
  void emit3(Sink& sink) {
    t += 2000 + static_cast<TimeNs>(rng() % 3000);
    ++correlation;
    const bool on_main = (rng() % 8) != 0;
    const TrackId thread = on_main ? main_thread : loader_thread;
    sink.add(AnnotationRecord{.track = thread, .start = t - 500, .end = t + 4000,
                              .name = range_names[rng() % range_names.size()], .domain = 1, .category = 2,
                              .payload = kNoValue, .external_id = correlation});
    sink.add(CudaApiRecord{.track = thread, .start = t, .end = t + 3000 + static_cast<TimeNs>(rng() % 2000),
                           .name = api_names[0], .cbid = 211, .kind = ApiKind::Runtime,
                           .correlation = correlation, .external_id = kNoValue, .result = 0, .stream = 7,
                           .event = kNoValue});
    GpuOpRecord k{.track = compute_stream, .kind = GpuOpKind::Kernel, .subkind = 0, .start = t + 6000,
                  .end = t + 6000 + static_cast<TimeNs>(rng() % 50000),
                  .name = kernel_names[rng() % kernel_names.size()], .correlation = correlation};
    k.launch = LaunchConfig{{static_cast<int>(rng() % 4096), 1, 1}, {256, 1, 1}, 32, 0, 0};
    sink.add(k);
  }
};

// `events` events of the mix from one process and its GPU, into any writer or a TraceBuilder.
template <typename Sink>
void record_mix(Sink& w, std::size_t events, std::int64_t pid = 1, std::uint64_t seed = 7) {
  const auto p = w.add_process(ProcessInfo{.pid = pid, .name = "train"});
  const auto d = w.add_device(DeviceInfo{.ordinal = 0, .name = "gpu"});
  EventMix mix;
  mix.rng.seed(seed);
  mix.setup(w, p, d, [&](const TrackInfo& t) { return w.add_track(t); });
  for (std::size_t i = 0; i < events / 3; ++i) mix.emit3(w);
}

// The mix as a Trace.
Trace mix_trace(std::size_t events) {
  TraceBuilder b;
  record_mix(b, events);
  return std::move(b).build();
}

void BM_WriterEventsPerSecond(benchmark::State& state) {
  const auto events = static_cast<std::size_t>(state.range(0));
  double bytes_per_event = 0;
  for (auto _ : state) {
    auto path = scratch_file("writer");
    {
      TraceWriter w(path);
      record_mix(w, events);
      w.close();
    }
    bytes_per_event = static_cast<double>(std::filesystem::file_size(path)) / static_cast<double>(events);
    std::filesystem::remove(path);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * events));
  state.counters["bytes_per_event"] = bytes_per_event;
}
BENCHMARK(BM_WriterEventsPerSecond)->Arg(3'000'000)->Unit(benchmark::kMillisecond)->UseRealTime();

// The same mix through write_trace: what `dreamscope trace` does when it merges the parts
// of a job, and what every importer and the simulator do. A Trace holds each track's
// events in time order, so rows reach SQLite in primary-key order.
void BM_WriteTraceEventsPerSecond(benchmark::State& state) {
  const auto events = static_cast<std::size_t>(state.range(0));
  const Trace trace = mix_trace(events);
  double bytes_per_event = 0;
  for (auto _ : state) {
    auto path = scratch_file("write-trace");
    write_trace(trace, path);
    bytes_per_event = static_cast<double>(std::filesystem::file_size(path)) / static_cast<double>(events);
    std::filesystem::remove(path);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * events));
  state.counters["bytes_per_event"] = bytes_per_event;
}
BENCHMARK(BM_WriteTraceEventsPerSecond)->Arg(3'000'000)->Unit(benchmark::kMillisecond)->UseRealTime();

// The reference the design's target is stated against: a plain prepared INSERT of five
// integer columns into a rowid table, one row per statement, 64 k rows per transaction.
// Run beside the writer so that their ratio holds on a busy machine too. SQLite's own calls,
// not sqlite_file.h's, here and in the GpuOpRows pair below: SQLite itself is what they measure.
void BM_PlainInsertBaseline(benchmark::State& state) {
  const auto rows = static_cast<std::int64_t>(state.range(0));
  double bytes_per_row = 0;
  for (auto _ : state) {
    auto path = scratch_file("baseline");
    sqlite3* db = nullptr;
    sqlite3_open(path.c_str(), &db);
    sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF;"
                     "CREATE TABLE t(a INTEGER, b INTEGER, c INTEGER, d INTEGER, e INTEGER)",
                 nullptr, nullptr, nullptr);
    sqlite3_stmt* st = nullptr;
    sqlite3_prepare_v2(db, "INSERT INTO t VALUES(?,?,?,?,?)", -1, &st, nullptr);
    std::mt19937_64 rng{7};
    TimeNs t = 3'600'000'000'000;
    sqlite3_exec(db, "BEGIN", nullptr, nullptr, nullptr);
    for (std::int64_t i = 0; i < rows; ++i) {
      t += 2000 + static_cast<TimeNs>(rng() % 3000);
      sqlite3_bind_int64(st, 1, static_cast<std::int64_t>(rng() % 4));
      sqlite3_bind_int64(st, 2, t);
      sqlite3_bind_int64(st, 3, static_cast<std::int64_t>(rng() % 50000));
      sqlite3_bind_int64(st, 4, static_cast<std::int64_t>(rng() % 200));
      sqlite3_bind_int64(st, 5, i);
      sqlite3_step(st);
      sqlite3_reset(st);
      if ((i + 1) % 65536 == 0) sqlite3_exec(db, "COMMIT; BEGIN", nullptr, nullptr, nullptr);
    }
    sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr);
    sqlite3_finalize(st);
    sqlite3_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)", nullptr, nullptr, nullptr);
    sqlite3_close(db);
    bytes_per_row = static_cast<double>(std::filesystem::file_size(path)) / static_cast<double>(rows);
    std::filesystem::remove(path);
  }
  state.SetItemsProcessed(state.iterations() * rows);
  state.counters["bytes_per_row"] = bytes_per_row;
}
BENCHMARK(BM_PlainInsertBaseline)->Arg(3'000'000)->Unit(benchmark::kMillisecond)->UseRealTime();

std::size_t peak_rss_bytes() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<std::size_t>(u.ru_maxrss) * 1024;
}

void BM_LoadTrace(benchmark::State& state) {
  const auto events = static_cast<std::size_t>(state.range(0));
  auto path = scratch_file("load");
  // Written by a child process, so that this process's peak RSS is the reader's alone.
  if (pid_t child = ::fork(); child == 0) {
    TraceWriter w(path);
    record_mix(w, events);
    w.close();
    ::_exit(0);
  } else {
    int status = 0;
    ::waitpid(child, &status, 0);
  }
  const std::size_t rss_before = peak_rss_bytes();
  std::size_t model_bytes = 0, loaded = 0;
  for (auto _ : state) {
    Trace t = read_trace(path);
    model_bytes = t.memory_bytes();
    loaded = t.event_count();
    benchmark::DoNotOptimize(t);
  }
  std::filesystem::remove(path);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * loaded));
  state.counters["model_bytes_per_event"] = static_cast<double>(model_bytes) / static_cast<double>(loaded);
  state.counters["peak_rss_growth_bytes_per_event"] =
      static_cast<double>(peak_rss_bytes() - rss_before) / static_cast<double>(loaded);
}
BENCHMARK(BM_LoadTrace)->Arg(10'000'002)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

// The two ways of taking rows out of SQLite that the reader chose between (Reader::scan in
// trace_reader.cpp): every column of every gpu_op row, once as a statement's result rows
// through sqlite3_column_*, once as the arguments of an aggregate function through
// sqlite3_value_*. The file, 3 M events of the tracer's mix, is written once per process.
const std::filesystem::path& gpu_op_file() {
  struct ScratchTrace {
    std::filesystem::path path = scratch_file("rows");
    ScratchTrace() {
      TraceWriter w(path);
      record_mix(w, 3'000'000);
      w.close();
    }
    ~ScratchTrace() { std::filesystem::remove(path); }
  };
  static const ScratchTrace file;
  return file.path;
}

constexpr const char* kGpuOpColumns = "track, start, dur, kind, subkind, name, correlation, launch, bytes, event, id";

void BM_GpuOpRowsAsResultRows(benchmark::State& state) {
  sqlite3* db = nullptr;
  sqlite3_open_v2(gpu_op_file().c_str(), &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr);
  const std::string sql = std::string("SELECT ") + kGpuOpColumns + " FROM gpu_op ORDER BY track, start, id";
  std::int64_t rows = 0;
  for (auto _ : state) {
    sqlite3_stmt* s = nullptr;
    sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr);
    std::int64_t sum = 0;
    while (sqlite3_step(s) == SQLITE_ROW) {
      for (int c = 0; c < 11; ++c) sum += sqlite3_column_type(s, c) == SQLITE_NULL ? 0 : sqlite3_column_int64(s, c);
      ++rows;
    }
    sqlite3_finalize(s);
    benchmark::DoNotOptimize(sum);
  }
  sqlite3_close(db);
  state.SetItemsProcessed(rows);
}
BENCHMARK(BM_GpuOpRowsAsResultRows)->Unit(benchmark::kMillisecond);

void BM_GpuOpRowsAsFunctionArguments(benchmark::State& state) {
  sqlite3* db = nullptr;
  sqlite3_open_v2(gpu_op_file().c_str(), &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr);
  struct Sum {
    std::int64_t sum = 0, rows = 0;
  } total;
  const auto step = [](sqlite3_context* ctx, int argc, sqlite3_value** values) {
    auto* t = static_cast<Sum*>(sqlite3_user_data(ctx));
    for (int c = 0; c < argc; ++c) t->sum += sqlite3_value_type(values[c]) == SQLITE_NULL ? 0 : sqlite3_value_int64(values[c]);
    ++t->rows;
  };
  const auto final = [](sqlite3_context* ctx) { sqlite3_result_null(ctx); };
  sqlite3_create_function_v2(db, "each_row", -1, SQLITE_UTF8, &total, nullptr, +step, +final, nullptr);
  const std::string sql = std::string("SELECT each_row(") + kGpuOpColumns + ") FROM gpu_op NOT INDEXED";
  for (auto _ : state) {
    sqlite3_stmt* s = nullptr;
    sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr);
    while (sqlite3_step(s) == SQLITE_ROW) {
    }
    sqlite3_finalize(s);
  }
  benchmark::DoNotOptimize(total.sum);
  sqlite3_close(db);
  state.SetItemsProcessed(total.rows);
}
BENCHMARK(BM_GpuOpRowsAsFunctionArguments)->Unit(benchmark::kMillisecond);

// The tracer's record path after the hot path: the writer thread encoding each event into its
// part log (TraceLogWriter, varints into a buffer handed to write(2)), the same mix as above.
// Never synced: what a traced job pays is the encoding and the write, not a close.
void BM_TraceLogWriterEventsPerSecond(benchmark::State& state) {
  const auto events = static_cast<std::size_t>(state.range(0));
  double bytes_per_event = 0;
  for (auto _ : state) {
    const auto path = scratch_file("part").replace_extension(".dslog");
    {
      TraceLogWriter w(path);
      record_mix(w, events);
      w.flush();
    }
    bytes_per_event = static_cast<double>(std::filesystem::file_size(path)) / static_cast<double>(events);
    std::filesystem::remove(path);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * events));
  state.counters["bytes_per_event"] = bytes_per_event;
}
BENCHMARK(BM_TraceLogWriterEventsPerSecond)->Arg(3'000'000)->Unit(benchmark::kMillisecond)->UseRealTime();

// A folder of part logs, `parts` processes of `events / parts` events each of the mix, written
// once per process run and removed at its end.
const std::filesystem::path& part_logs(std::size_t events, int parts) {
  struct Parts {
    std::filesystem::path dir;
    Parts(std::size_t events, int parts) : dir(scratch_file("parts")) {
      std::filesystem::create_directories(dir);
      for (int n = 0; n < parts; ++n) {
        TraceLogWriter w(dir / ("part-" + std::to_string(n) + ".dslog"));
        w.set_meta("start", std::to_string(n));
        record_mix(w, events / static_cast<std::size_t>(parts), 100 + n, static_cast<std::uint64_t>(n) + 7);
        w.close();
      }
    }
    ~Parts() { std::filesystem::remove_all(dir); }
  };
  static const Parts files(events, parts);
  return files.dir;
}

// Reading one part log into a Trace: decoding its records, then TraceBuilder::build().
void BM_ReadTraceLog(benchmark::State& state) {
  const auto& dir = part_logs(3'000'000, 2);
  std::size_t loaded = 0;
  for (auto _ : state) {
    Trace t = read_trace_log(dir / "part-0.dslog");
    loaded = t.event_count();
    benchmark::DoNotOptimize(t);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * loaded));
}
BENCHMARK(BM_ReadTraceLog)->Unit(benchmark::kMillisecond)->UseRealTime();

// What `dreamscope trace` does once a job has ended: its part logs read and copied into one
// Trace (trace_merge.cpp), 3 M events in two parts.
void BM_MergePartLogs(benchmark::State& state) {
  const auto& dir = part_logs(3'000'000, 2);
  std::size_t merged = 0;
  for (auto _ : state) {
    MergedJob job = merge_part_logs(dir, JobFacts{.command = "train", .root_pid = 100});
    merged = job.events;
    benchmark::DoNotOptimize(job);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * merged));
}
BENCHMARK(BM_MergePartLogs)->Unit(benchmark::kMillisecond)->UseRealTime();

// Copying a Trace into a TraceBuilder row by row (trace_copy.h) and building it: what the
// merge does per part and the simulator per predicted trace.
void BM_CopyTrace(benchmark::State& state) {
  const auto events = static_cast<std::size_t>(state.range(0));
  const Trace trace = mix_trace(events);
  for (auto _ : state) {
    TraceBuilder out;
    append_trace_rows(out, trace, append_trace_ids(out, trace));
    Trace copy = std::move(out).build();
    benchmark::DoNotOptimize(copy);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * events));
}
BENCHMARK(BM_CopyTrace)->Arg(3'000'000)->Unit(benchmark::kMillisecond)->UseRealTime();

} // namespace
} // namespace dreamscope

BENCHMARK_MAIN();
