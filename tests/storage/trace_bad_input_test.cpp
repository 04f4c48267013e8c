#include "test_traces.h"

#include <dreamscope/storage/trace_file.h>

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <fstream>

namespace dreamscope {
namespace {

using test::ScratchDir;

std::string read_error(const std::filesystem::path& p) {
  try {
    read_trace(p);
  } catch (const TraceError& e) {
    return e.what();
  }
  return "no error";
}

void write_file(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary) << bytes;
}

void sql(const std::filesystem::path& p, const char* statement) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(p.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, statement, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_close(db);
}

TEST(TraceBadInput, MissingFile) {
  ScratchDir dir;
  EXPECT_EQ(read_error(dir / "nope.db"), (dir / "nope.db").string() + ": no such file");
}

TEST(TraceBadInput, EmptyFile) {
  ScratchDir dir;
  write_file(dir / "empty.db", "");
  EXPECT_EQ(read_error(dir / "empty.db"), (dir / "empty.db").string() + ": empty file, not a trace");
}

TEST(TraceBadInput, NotSqlite) {
  ScratchDir dir;
  write_file(dir / "trace.json", "{\"traceEvents\": []}\n");
  EXPECT_EQ(read_error(dir / "trace.json"),
            (dir / "trace.json").string() + ": not a SQLite database, so not a dreamscope trace");
}

TEST(TraceBadInput, Directory) {
  ScratchDir dir;
  EXPECT_EQ(read_error(dir.path()), dir.path().string() + ": is a directory, not a trace file");
}

TEST(TraceBadInput, SqliteButNotATrace) {
  ScratchDir dir;
  sql(dir / "other.db", "CREATE TABLE customers(id INTEGER, name TEXT)");
  EXPECT_EQ(read_error(dir / "other.db"),
            (dir / "other.db").string() + ": a SQLite database but not a dreamscope trace (it has no meta table)");
  sql(dir / "meta_only.db", "CREATE TABLE meta(key TEXT, value TEXT)");
  EXPECT_EQ(read_error(dir / "meta_only.db"), (dir / "meta_only.db").string() +
                                                  ": a SQLite database but not a dreamscope trace (meta has no "
                                                  "schema_version)");
}

TEST(TraceBadInput, NewerSchemaVersion) {
  ScratchDir dir;
  write_trace(test::make_full_trace(), dir / "future.db");
  sql(dir / "future.db", "UPDATE meta SET value = '7' WHERE key = 'schema_version'");
  EXPECT_EQ(read_error(dir / "future.db"),
            (dir / "future.db").string() +
                ": trace schema version 7 is not one this dreamscope reads (it reads version 1); a newer "
                "dreamscope wrote it");
}

// A trace.db written before thread loads were recorded has no thread_load table: it loads,
// with none.
TEST(TraceBadInput, AnOlderTraceWithoutTheThreadLoadTableLoads) {
  ScratchDir dir;
  const Trace full = test::make_full_trace();
  ASSERT_FALSE(full.thread_loads().empty());
  write_trace(full, dir / "old.db");
  sql(dir / "old.db", "DROP TABLE thread_load");
  const Trace t = read_trace(dir / "old.db");
  EXPECT_TRUE(t.thread_loads().empty());
  EXPECT_EQ(t.event_count(), full.event_count());
  EXPECT_EQ(t.overheads().size(), full.overheads().size());
}

// The thread_load table is read with the care of every other: a row on a track the file
// lacks, or with a value no measurement has, refuses the file by name.
TEST(TraceBadInput, AThreadLoadOnAnUnknownTrackOrOutOfBoundsIsRefused) {
  ScratchDir dir;
  write_trace(test::make_full_trace(), dir / "track.db");
  sql(dir / "track.db", "UPDATE thread_load SET track = 99 WHERE rowid = 1");
  EXPECT_EQ(read_error(dir / "track.db"), (dir / "track.db").string() + ": a row names unknown track 99");

  write_trace(test::make_full_trace(), dir / "cpu.db");
  sql(dir / "cpu.db", "UPDATE thread_load SET cpu_ns = -7 WHERE cpu_ns IS NOT NULL");
  EXPECT_EQ(read_error(dir / "cpu.db").rfind((dir / "cpu.db").string() +
                                                 ": 2 thread_load rows with a CPU or run-queue time outside [0, 2^62] "
                                                 "ns; first: row 0, cpu_ns -7",
                                             0),
            0u)
      << read_error(dir / "cpu.db");

  write_trace(test::make_full_trace(), dir / "cost.db");
  sql(dir / "cost.db", "UPDATE thread_load SET range_cost_ns = 1e300");
  EXPECT_NE(read_error(dir / "cost.db").find("thread_load rows with a recording cost"), std::string::npos);
}

// A trace.db written before memory events were kept has no memory_event table: it loads,
// with none.
TEST(TraceBadInput, AnOlderTraceWithoutTheMemoryEventTableLoads) {
  ScratchDir dir;
  const Trace full = test::make_full_trace();
  ASSERT_FALSE(full.memory_events().empty());
  write_trace(full, dir / "old.db");
  sql(dir / "old.db", "DROP TABLE memory_event");
  const Trace t = read_trace(dir / "old.db");
  EXPECT_TRUE(t.memory_events().empty());
  EXPECT_EQ(t.event_count(), full.event_count());
  EXPECT_EQ(t.thread_loads().size(), full.thread_loads().size());
}

// The memory_event table is read with the care of every other: a row on a track the file
// lacks, or with bytes past the bound, refuses the file by name.
TEST(TraceBadInput, AMemoryEventOnAnUnknownTrackOrOutOfBoundsIsRefused) {
  ScratchDir dir;
  write_trace(test::make_full_trace(), dir / "track.db");
  sql(dir / "track.db", "UPDATE memory_event SET track = 99 WHERE time = 2600");
  EXPECT_EQ(read_error(dir / "track.db"), (dir / "track.db").string() + ": a row names unknown track 99");

  write_trace(test::make_full_trace(), dir / "bytes.db");
  sql(dir / "bytes.db", "UPDATE memory_event SET bytes = 9000000000000000000 WHERE time = 8000");
  EXPECT_EQ(read_error(dir / "bytes.db").rfind((dir / "bytes.db").string() +
                                                   ": 1 memory_event row with a byte count or total beyond +-2^62; "
                                                   "first: row 4, bytes 9000000000000000000",
                                               0),
            0u)
      << read_error(dir / "bytes.db");
}

TEST(TraceBadInput, TruncatedFile) {
  ScratchDir dir;
  TraceBuilder b;
  auto p = b.add_process(ProcessInfo{.pid = 1, .name = "x"});
  TrackId t = b.thread_track(p, 1);
  StringId n = b.intern("range");
  for (int i = 0; i < 50000; ++i) {
    b.add(AnnotationRecord{.track = t, .start = i * 10, .end = i * 10 + 5, .name = n, .domain = 0, .category = 0,
                           .payload = i, .external_id = kNoValue});
  }
  write_trace(std::move(b).build(), dir / "whole.db");
  auto size = std::filesystem::file_size(dir / "whole.db");
  ASSERT_GT(size, 100000u);
  std::filesystem::copy_file(dir / "whole.db", dir / "cut.db");
  std::filesystem::resize_file(dir / "cut.db", size / 2);
  std::string err = read_error(dir / "cut.db");
  EXPECT_EQ(err.rfind((dir / "cut.db").string() + ": damaged or truncated trace file", 0), 0u) << err;
}

TEST(TraceBadInput, GarbageAfterSqliteHeader) {
  ScratchDir dir;
  std::string bytes("SQLite format 3\0", 16);
  bytes += std::string(4000, '\x5a');
  write_file(dir / "garbage.db", bytes);
  std::string err = read_error(dir / "garbage.db");
  EXPECT_EQ(err.rfind((dir / "garbage.db").string() + ": damaged or truncated trace file", 0), 0u) << err;
}

TEST(TraceBadInput, UnwritableOutputPath) {
  ScratchDir dir;
  const auto target = dir / "missing-dir" / "out.db";
  try {
    TraceWriter w(target);
    FAIL() << "writer opened " << target;
  } catch (const TraceError& e) {
    EXPECT_EQ(std::string(e.what()), target.string() + ": cannot create the file: No such file or directory");
  }
}

TEST(TraceBadInput, ReadOnlyDirectory) {
  if (::geteuid() == 0) GTEST_SKIP() << "running as root: directory permissions do not stop root";
  ScratchDir dir;
  std::filesystem::create_directory(dir / "ro");
  std::filesystem::permissions(dir / "ro", std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
  try {
    TraceWriter w(dir / "ro" / "out.db");
    FAIL();
  } catch (const TraceError& e) {
    EXPECT_EQ(std::string(e.what()), (dir / "ro" / "out.db").string() + ": cannot create the file: Permission denied");
  }
}

// A full disk, made with a file-size limit in a child process: the writer reports the file
// and the problem instead of crashing, and what it committed before stays readable.
TEST(TraceBadInput, DiskFullWhileWriting) {
  ScratchDir dir;
  const auto path = dir / "full.db";
  const std::string msg = test::write_until_disk_full(
      [&] { return std::make_unique<TraceWriter>(path, TraceWriterOptions{.batch_rows = 1000}); }, 512 * 1024, 0);
  EXPECT_EQ(msg.rfind(path.string() + ": cannot write: ", 0), 0u) << msg;
  // Every batch committed before the disk filled is still there.
  Trace t = read_trace(path);
  EXPECT_FALSE(t.complete());
  EXPECT_GT(t.annotations().size(), 1000u);
}

} // namespace
} // namespace dreamscope
