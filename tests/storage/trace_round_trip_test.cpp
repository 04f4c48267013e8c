#include "test_traces.h"

#include <dreamscope/storage/trace_file.h>

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <fstream>
#include <map>
#include <random>

namespace dreamscope {
namespace {

using test::ScratchDir;

TEST(TraceRoundTrip, EveryTableAndField) {
  ScratchDir dir;
  Trace original = test::make_full_trace();
  write_trace(original, dir / "full.db");
  Trace back = read_trace(dir / "full.db");

  test::expect_same_events(original, back);
  EXPECT_TRUE(back.complete());
  EXPECT_EQ(back.source(), TraceSource::Tracer);
  EXPECT_EQ(back.dropped_events(), 3);
  EXPECT_EQ(back.meta_value("command"), "python train.py --epochs 1");
  EXPECT_EQ(back.meta_value("host"), "node-7");
  EXPECT_EQ(back.meta_value("warnings"), "CUPTI: counters unavailable");
  EXPECT_EQ(back.meta_value("schema_version"), std::to_string(kSchemaVersion));
  EXPECT_EQ(back.begin_time(), 2500);
  EXPECT_EQ(back.end_time(), 20000);
  // Written, the file is one self-contained database: the WAL was folded back in.
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "full.db-wal"));
}

// `dreamscope calibrate --apply`: a trace.db's calibration rows replaced by kind, the rest of
// the table and every event kept; a file that is not a trace.db is refused by name.
TEST(TraceRoundTrip, CalibrationRowsAreReplacedByKind) {
  ScratchDir dir;
  Trace original = test::make_full_trace();
  write_trace(original, dir / "full.db");
  const std::size_t before = original.calibration().size();
  replace_calibration(dir / "full.db", {CalibrationRecord{"nvtx_range", 33.5, 9000, "calibrate"},
                                        CalibrationRecord{"cuda_api", 120.0, 4500, "calibrate"}});
  Trace back = read_trace(dir / "full.db");
  EXPECT_EQ(back.annotations().size(), original.annotations().size());
  EXPECT_EQ(back.cuda_api().size(), original.cuda_api().size());
  EXPECT_EQ(back.gpu_ops().size(), original.gpu_ops().size());
  std::map<std::string, double> costs;
  for (const auto& c : back.calibration()) costs[c.event_kind] = c.cost_ns;
  EXPECT_EQ(costs["nvtx_range"], 33.5);
  EXPECT_EQ(costs["cuda_api"], 120.0);
  EXPECT_EQ(costs["nvtx_mark"], 14.25) << "a kind not given is kept";
  EXPECT_EQ(back.calibration().size(), before + 1);
  std::ofstream(dir / "text.db") << "not a trace";
  EXPECT_THROW(replace_calibration(dir / "text.db", {}), TraceError);
}

TEST(TraceRoundTrip, ViewsResolveNamesForSqlUsers) {
  ScratchDir dir;
  write_trace(test::make_full_trace(), dir / "views.db");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2((dir / "views.db").c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  auto one = [&](const char* sql) {
    sqlite3_stmt* s = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql, -1, &s, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
    std::string out;
    if (sqlite3_step(s) == SQLITE_ROW) out = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
    sqlite3_finalize(s);
    return out;
  };
  EXPECT_EQ(one("SELECT name || ':' || dur || ':' || grid_x FROM kernel"), "ampere_sgemm_128x64_tn:2500:120");
  EXPECT_EQ(one("SELECT group_concat(name, ',') FROM (SELECT name FROM cuda_api_named ORDER BY start)"),
            "cuLaunchKernel,cudaLaunchKernel,cudaMemcpyAsync");
  EXPECT_EQ(one("SELECT name || '/' || category || '/' || payload FROM annotation_named WHERE name = 'prep'"),
            "prep/prep/12");
  EXPECT_EQ(one("SELECT count(*) FROM thread"), "3");
  EXPECT_EQ(one("SELECT group_concat(stream) FROM stream"), "7,20");
  EXPECT_EQ(one("SELECT kind FROM gpu_op_named WHERE name LIKE 'Memcpy%'"), "memcpy");
  sqlite3_close(db);
}

// What a thread load does not know is NULL in SQL, as any absent value: an unknown CPU or
// run-queue time, and a cost of which no call was timed.
TEST(TraceRoundTrip, ThreadLoadUnknownsAreNull) {
  ScratchDir dir;
  write_trace(test::make_full_trace(), dir / "loads.db");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2((dir / "loads.db").c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  auto count = [&](const char* where) {
    const std::string q = std::string("SELECT count(*) FROM thread_load WHERE ") + where;
    sqlite3_stmt* s = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, q.c_str(), -1, &s, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
    int n = -1;
    if (sqlite3_step(s) == SQLITE_ROW) n = sqlite3_column_int(s, 0);
    sqlite3_finalize(s);
    return n;
  };
  EXPECT_EQ(count("1"), 3);
  EXPECT_EQ(count("cpu_ns IS NULL AND runqueue_ns IS NULL"), 1);
  EXPECT_EQ(count("range_cost_ns IS NULL"), 1);
  EXPECT_EQ(count("mark_cost_ns IS NULL"), 2);
  EXPECT_EQ(count("start = 4000 AND dur = 10000 AND cpu_ns = 8800 AND runqueue_ns = 0 AND events = 3 AND "
                  "cost_samples = 2 AND range_cost_ns = 31.5"),
            1);
  sqlite3_close(db);
}

// Memory events in SQL: what the input did not say is NULL, and (time, id) is the profiler's
// order, which the reader restores.
TEST(TraceRoundTrip, MemoryEventUnknownsAreNullAndIdsKeepTheOrder) {
  ScratchDir dir;
  write_trace(test::make_full_trace(), dir / "memory.db");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2((dir / "memory.db").c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  auto one = [&](const char* sql) {
    sqlite3_stmt* s = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql, -1, &s, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
    std::string out;
    if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0)) {
      out = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
    }
    sqlite3_finalize(s);
    return out;
  };
  EXPECT_EQ(one("SELECT count(*) FROM memory_event"), "5");
  EXPECT_EQ(one("SELECT count(*) FROM memory_event WHERE addr IS NULL AND total_allocated IS NULL AND "
                "total_reserved IS NULL AND bytes = 64 AND device_type = 0 AND device_id = -1"),
            "1");
  EXPECT_EQ(one("SELECT group_concat(bytes) FROM (SELECT bytes FROM memory_event WHERE time = 5200 ORDER BY id)"),
            "4096,-4096");
  sqlite3_close(db);
}

TEST(TraceRoundTrip, OneMillionEventsExactly) {
  ScratchDir dir;
  const std::size_t n = 1'000'000;
  std::mt19937_64 rng(42);
  TraceBuilder b;
  auto proc = b.add_process(ProcessInfo{.pid = 1, .name = "bench"});
  auto dev = b.add_device(DeviceInfo{.ordinal = 0, .name = "gpu"});
  std::vector<TrackId> threads, streams;
  for (int i = 0; i < 4; ++i) threads.push_back(b.thread_track(proc, 10 + i));
  for (int i = 0; i < 3; ++i) streams.push_back(b.stream_track(dev, i));
  std::vector<StringId> names;
  for (int i = 0; i < 300; ++i) names.push_back(b.intern("name_" + std::to_string(i)));
  b.reserve(n / 3, n / 3, n / 3 + 1);
  TimeNs t = 1'700'000'000'000'000'000;
  for (std::size_t i = 0; i < n; ++i) {
    t += static_cast<TimeNs>(rng() % 5000);
    TimeNs dur = static_cast<TimeNs>(rng() % 20000);
    StringId name = names[rng() % names.size()];
    switch (i % 3) {
      case 0:
        b.add(CudaApiRecord{.track = threads[rng() % 4], .start = t, .end = t + dur, .name = name,
                            .cbid = static_cast<std::int32_t>(rng() % 400), .kind = ApiKind::Runtime,
                            .correlation = static_cast<std::int64_t>(i), .external_id = kNoValue, .result = 0,
                            .stream = static_cast<std::int64_t>(rng() % 3), .event = kNoValue});
        break;
      case 1: {
        GpuOpRecord g{.track = streams[rng() % 3], .kind = static_cast<GpuOpKind>(rng() % 4), .subkind = 1,
                      .start = t, .end = t + dur, .name = name, .correlation = static_cast<std::int64_t>(i - 1)};
        if (g.kind == GpuOpKind::Kernel) g.launch = LaunchConfig{{static_cast<int>(rng() % 1000), 1, 1}, {128, 1, 1}, 32, 0, 0};
        g.bytes = g.kind == GpuOpKind::Memcpy ? static_cast<std::int64_t>(rng() % 100000) : 0;
        b.add(g);
        break;
      }
      default:
        b.add(AnnotationRecord{.track = threads[rng() % 4], .start = t, .end = t + dur, .name = name,
                               .domain = names[0], .category = names[1],
                               .payload = (rng() % 2) ? static_cast<std::int64_t>(rng() % 1000) : kNoValue,
                               .external_id = kNoValue});
    }
  }
  Trace original = std::move(b).build();
  ASSERT_EQ(original.event_count(), n);
  write_trace(original, dir / "million.db");
  Trace back = read_trace(dir / "million.db");
  ASSERT_EQ(back.event_count(), n);
  test::expect_same_events(original, back);
}

TEST(TraceRoundTrip, StreamingWriterMatchesReader) {
  ScratchDir dir;
  {
    TraceWriter w(dir / "stream.db", TraceWriterOptions{.batch_rows = 7});
    auto p = w.add_process(ProcessInfo{.pid = 9, .name = "a.out"});
    TrackId t = w.add_track(TrackInfo{.kind = TrackKind::CpuThread, .process = p, .tid = 9, .name = "main"});
    StringId step = w.intern("step");
    EXPECT_EQ(w.intern("step"), step);
    for (int i = 0; i < 100; ++i) {
      // Inner ranges arrive before the outer one, as a tracer records them at their end.
      w.add(AnnotationRecord{.track = t, .start = i * 100 + 10, .end = i * 100 + 50, .name = w.intern("inner"),
                             .domain = 0, .category = 0, .payload = i, .external_id = kNoValue});
      w.add(AnnotationRecord{.track = t, .start = i * 100, .end = i * 100 + 90, .name = step, .domain = 0,
                             .category = 0, .payload = i, .external_id = kNoValue});
    }
    w.close();
  }
  Trace tr = read_trace(dir / "stream.db");
  ASSERT_EQ(tr.annotations().size(), 200u);
  const auto& a = tr.annotations();
  for (std::size_t i = 0; i < 200; i += 2) {
    EXPECT_EQ(tr.str(a.name[i]), "step");
    EXPECT_EQ(a.depth[i], 0);
    EXPECT_EQ(tr.str(a.name[i + 1]), "inner");
    EXPECT_EQ(a.parent[i + 1], i);
    EXPECT_EQ(a.depth[i + 1], 1);
    EXPECT_EQ(a.payload[i + 1], static_cast<std::int64_t>(i / 2));
  }
}

} // namespace
} // namespace dreamscope

namespace dreamscope {
namespace {

// The example queries in docs/trace-format.md run on a real trace file.
TEST(TraceFormatDoc, ExampleQueriesRun) {
  std::ifstream doc(std::string(DREAMSCOPE_SOURCE_DIR) + "/docs/trace-format.md");
  ASSERT_TRUE(doc) << "docs/trace-format.md not found";
  std::string line, sql;
  bool in_sql = false;
  int blocks = 0;
  while (std::getline(doc, line)) {
    if (line == "```sql") {
      in_sql = true;
      ++blocks;
    } else if (in_sql && line == "```") {
      in_sql = false;
    } else if (in_sql) {
      sql += line + "\n";
    }
  }
  ASSERT_GE(blocks, 1);
  test::ScratchDir dir;
  write_trace(test::make_full_trace(), dir / "doc.db");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2((dir / "doc.db").c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  int statements = 0, rows = 0;
  const char* tail = sql.c_str();
  while (*tail) {
    sqlite3_stmt* s = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db, tail, -1, &s, &tail), SQLITE_OK) << sqlite3_errmsg(db);
    if (!s) break;
    ++statements;
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) ++rows;
    EXPECT_EQ(rc, SQLITE_DONE) << sqlite3_errmsg(db);
    sqlite3_finalize(s);
  }
  sqlite3_close(db);
  EXPECT_EQ(statements, 6);
  EXPECT_GT(rows, 3); // each query finds something in the full trace
}

} // namespace
} // namespace dreamscope
