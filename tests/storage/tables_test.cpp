// The tables' definitions (tables.h) drive every place that handles their columns: a trace with
// every column of every table set to a value other than its default survives the builder, the
// trace.db writer and reader, the copy and the part log; a file written before a column existed
// reads it as its default; a table's CREATE TABLE text is what older files carry while its
// columns are; and docs/trace-format.md names every column. The tests iterate the definitions,
// so a column added to tables.h is covered with no edit here.
#include "test_traces.h"

#include <dreamscope/storage/columns.h>
#include <dreamscope/storage/trace_copy.h>
#include <dreamscope/storage/trace_file.h>
#include <dreamscope/storage/trace_log.h>

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <fstream>
#include <map>
#include <regex>
#include <sstream>

namespace dreamscope {
namespace {

using test::ScratchDir;

// A row of `Record` whose every column holds a value other than its default, distinct per
// `seed` and column: on tracks 1 and 2, of processes and devices 1, with names interned in `b`.
template <class Record>
Record filled(TraceBuilder& b, int seed) {
  Record r;
  const Record none;
  std::int64_t n = 100 * seed;
  columns::for_each<Record>([&](const auto& c) {
    using C = std::remove_cvref_t<decltype(c)>;
    using T = typename C::value_type;
    auto& v = r.*c.member;
    ++n;
    const std::string text = std::string(c.name) + " " + std::to_string(n);
    if constexpr (columns::is<C, columns::Track>) {
      v = static_cast<T>(1 + n % 2);
    } else if constexpr (columns::is<C, columns::String>) {
      v = b.intern(text);
    } else if constexpr (columns::is<C, columns::Start>) {
      v = 1000 * seed + n;
    } else if constexpr (columns::is<C, columns::End>) {
      v = columns::start_of<C>(r) + 500 + n;
    } else if constexpr (columns::is<C, columns::Int> || columns::is<C, columns::Unsigned>) {
      v = static_cast<T>(n % 250 + 1);
    } else if constexpr (columns::is<C, columns::Optional>) {
      v = 1000 * n + 3;
    } else if constexpr (columns::is<C, columns::Enum>) {
      v = static_cast<T>(1); // each enumeration's second value
    } else if constexpr (columns::is<C, columns::Process> || columns::is<C, columns::Device>) {
      v = T{1};
    } else if constexpr (columns::is<C, columns::Text>) {
      v = text;
    } else if constexpr (columns::is<C, columns::Real> || columns::is<C, columns::Cost>) {
      v = static_cast<double>(n) + 0.25;
    } else if constexpr (columns::is<C, columns::Launch>) {
      v = LaunchConfig{{static_cast<std::int32_t>(n), 2, 3}, {4, 5, 6}, 7, 8, 9};
    } else {
      static_assert(sizeof(C) == 0, "an encoding this test does not fill");
    }
    EXPECT_NE(v, none.*c.member) << "column " << c.name << " is left at its default";
  });
  return r;
}

// Two rows of every table (three tracks, so that tracks 1 and 2 exist), every column set.
Trace every_column_set() {
  TraceBuilder b;
  b.set_source(TraceSource::Tracer);
  b.set_meta("complete", "1");
  for (int i = 0; i < 2; ++i) b.add_process(filled<ProcessInfo>(b, i));
  for (int i = 0; i < 2; ++i) b.add_device(filled<DeviceInfo>(b, i));
  for (int i = 0; i < 3; ++i) b.add_track(filled<TrackInfo>(b, i));
  for (int i = 0; i < 2; ++i) {
    b.add(filled<CudaApiRecord>(b, i));
    b.add(filled<GpuOpRecord>(b, i));
    b.add(filled<AnnotationRecord>(b, i));
    b.add(filled<FlowRecord>(b, i));
    b.add(filled<CalibrationRecord>(b, i));
    b.add(filled<OverheadRecord>(b, i));
    b.add(filled<ThreadLoadRecord>(b, i));
    b.add(filled<MemoryEventRecord>(b, i));
  }
  return std::move(b).build();
}

// `in` copied into a sink or a builder, as write_trace and the merge copy it.
template <class Out>
void copy_into(Out& out, const Trace& in, const TraceCopyEdits& edits = {}) {
  for (const auto& [k, v] : in.meta()) out.set_meta(k, v);
  append_trace_rows(out, in, append_trace_ids(out, in, edits), edits);
  for (const auto& c : in.calibration()) out.add(c);
}

TEST(Tables, EveryColumnOfEveryTableSurvivesEveryPath) {
  ScratchDir dir;
  const Trace original = every_column_set();
  ASSERT_EQ(original.processes().size(), 2u);
  ASSERT_EQ(original.gpu_ops().size(), 2u);
  ASSERT_EQ(original.memory_events().size(), 2u);

  write_trace(original, dir / "all.db");
  const Trace from_db = read_trace(dir / "all.db");
  test::expect_same_events(original, from_db);

  TraceBuilder copied;
  copy_into(copied, from_db);
  const Trace copy = std::move(copied).build();
  test::expect_same_events(original, copy);

  {
    TraceLogWriter log(dir / "all.dslog");
    copy_into(log, copy);
    log.close();
  }
  test::expect_same_events(original, read_trace_log(dir / "all.dslog"));

  {
    TraceWriter streamed(dir / "streamed.db");
    copy_into(streamed, read_trace_log(dir / "all.dslog"));
    streamed.close();
  }
  test::expect_same_events(original, read_trace(dir / "streamed.db"));
}

void exec(const std::filesystem::path& path, const char* sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* error = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, &error), SQLITE_OK) << (error ? error : "");
  sqlite3_free(error);
  sqlite3_close(db);
}

// A trace.db written before a column was added to its table lacks it: the column reads as its
// default, and every other column as it was.
TEST(Tables, AColumnAnOlderFileLacksReadsAsItsDefault) {
  ScratchDir dir;
  const Trace original = every_column_set();
  write_trace(original, dir / "older.db");
  exec(dir / "older.db",
       "ALTER TABLE process DROP COLUMN exit_status; ALTER TABLE process_rank DROP COLUMN host;"
       "ALTER TABLE gpu_op DROP COLUMN event; ALTER TABLE annotation DROP COLUMN external_id;"
       "ALTER TABLE thread_load DROP COLUMN mark_cost_ns; ALTER TABLE memory_event DROP COLUMN addr");
  TraceCopyEdits defaults;
  defaults.process = [](ProcessInfo& p) {
    p.exit_status = ProcessInfo{}.exit_status;
    p.host = ProcessInfo{}.host;
  };
  defaults.gpu_op = [](GpuOpIndex, GpuOpRecord& r) {
    r.event = GpuOpRecord{}.event;
    return true;
  };
  defaults.annotation = [](AnnotationIndex, AnnotationRecord& r) {
    r.external_id = AnnotationRecord{}.external_id;
    return true;
  };
  defaults.thread_load = [](ThreadLoadRecord& r) {
    r.mark_cost_ns = ThreadLoadRecord{}.mark_cost_ns;
    return true;
  };
  defaults.memory_event = [](MemoryEventRecord& r) {
    r.addr = MemoryEventRecord{}.addr;
    return true;
  };
  TraceBuilder expected;
  copy_into(expected, original, defaults);
  test::expect_same_events(std::move(expected).build(), read_trace(dir / "older.db"));
}

// A part log written before a column was appended to a table ends that table's records without
// it (version 4 so appended a process's rank, local rank, world size, host and clock offset):
// the record reads with the column at its default.
TEST(Tables, APartLogRecordThatEndsBeforeAnAppendedColumnReadsItAsItsDefault) {
  ScratchDir dir;
  const auto path = dir / "older.dslog";
  {
    TraceLogWriter w(path);
    w.add_process(ProcessInfo{.pid = 42, .name = "older", .start = 10}); // rank, ..., clock offset: defaults
    w.close();
  }
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  // The process record is the first, just past the 12-byte header: its type, its length (one
  // byte), its body. Its five appended fields at their defaults take a byte each; cut them.
  ASSERT_EQ(bytes[12], 3);
  const std::size_t length = static_cast<unsigned char>(bytes[13]);
  bytes.erase(14 + length - 5, 5);
  bytes[13] = static_cast<char>(length - 5);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  const Trace t = read_trace_log(path);
  ASSERT_EQ(t.processes().size(), 1u);
  EXPECT_EQ(t.processes()[0], (ProcessInfo{.pid = 42, .name = "older", .start = 10}));
  EXPECT_TRUE(t.complete());
}

// Each table's CREATE TABLE text and columns, as SQLite keeps them in a trace.db.
struct StoredTable {
  std::string sql;
  std::vector<std::string> columns;
};
std::map<std::string, StoredTable> stored_tables(const std::filesystem::path& path) {
  std::map<std::string, StoredTable> tables;
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK) << path;
  sqlite3_stmt* s = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db,
                               "SELECT m.name, m.sql, p.name FROM sqlite_schema m, pragma_table_info(m.name) p "
                               "WHERE m.type = 'table' ORDER BY m.rowid, p.cid",
                               -1, &s, nullptr),
            SQLITE_OK);
  auto text = [&](int col) { return std::string(reinterpret_cast<const char*>(sqlite3_column_text(s, col))); };
  while (sqlite3_step(s) == SQLITE_ROW) {
    StoredTable& t = tables[text(0)];
    t.sql = text(1);
    t.columns.push_back(text(2));
  }
  sqlite3_finalize(s);
  sqlite3_close(db);
  return tables;
}

// SQLite keeps each CREATE TABLE statement's text in the file. Made from the definitions, the
// statement of every table whose columns are those of a file written before (a traced GPU run
// under tests/data, all sixteen tables of schema v1) is that file's, to the character.
TEST(Tables, ATableWhoseColumnsAreUnchangedIsCreatedAsBefore) {
  ScratchDir dir;
  write_trace(test::make_full_trace(), dir / "schema.db");
  const auto now = stored_tables(dir / "schema.db");
  const auto before = stored_tables(std::string(DREAMSCOPE_SOURCE_DIR) + "/tests/data/gpu/pytorch_train.db");
  ASSERT_EQ(before.size(), 16u);
  for (const auto& [table, old] : before) {
    ASSERT_TRUE(now.contains(table)) << table;
    if (now.at(table).columns == old.columns) {
      EXPECT_EQ(now.at(table).sql, old.sql) << table;
    }
  }
}

// docs/trace-format.md gives each table a heading `name(column, column, ...)` in the order the
// table holds them: a column added to tables.h is documented there too.
TEST(Tables, TheFormatDocumentNamesEveryColumnOfEveryTable) {
  std::ifstream doc(std::string(DREAMSCOPE_SOURCE_DIR) + "/docs/trace-format.md");
  ASSERT_TRUE(doc) << "docs/trace-format.md not found";
  std::map<std::string, std::vector<std::string>> documented;
  const std::regex heading(R"(^### `(\w+)\((.*)\)`$)");
  for (std::string line; std::getline(doc, line);) {
    std::smatch m;
    if (!std::regex_match(line, m, heading)) continue;
    std::stringstream items(m[2].str());
    for (std::string item; std::getline(items, item, ',');) {
      std::stringstream words(item);
      std::string name;
      words >> name;
      documented[m[1].str()].push_back(name);
    }
  }
  ScratchDir dir;
  write_trace(test::make_full_trace(), dir / "doc.db");
  const auto stored = stored_tables(dir / "doc.db");
  EXPECT_EQ(stored.size(), 16u);
  for (const auto& [table, t] : stored) EXPECT_EQ(documented[table], t.columns) << "table " << table;
}

} // namespace
} // namespace dreamscope
