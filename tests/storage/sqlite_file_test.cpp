// The SQLite plumbing every reader and writer of a SQLite file shares (dreamscope/storage/
// sqlite_file.h): statements that bind and read back, and failures that name the file and say
// what is wrong in words.
#include "dreamscope/storage/sqlite_file.h"

#include <gtest/gtest.h>

#include <fstream>
#include <functional>

#include <unistd.h>

namespace dreamscope::sqlite {
namespace {

std::filesystem::path scratch(const char* name) {
  const auto dir = std::filesystem::temp_directory_path() / ("dreamscope-sqlite-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto path = dir / name;
  std::filesystem::remove(path);
  return path;
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const TraceError& e) {
    return e.what();
  }
  return "";
}

TEST(SqliteFile, RowsWrittenAreReadBackWithNullsAsTheModelsNoValue) {
  const auto path = scratch("rows.db");
  {
    Database db(path, Access::Create);
    db.exec("CREATE TABLE t(i INTEGER, d REAL, s TEXT)");
    Statement insert = db.prepare("INSERT INTO t VALUES (?, ?, ?)");
    insert.bind(1, std::int64_t{7}).bind(2, 2.5).bind(3, std::string_view("seven"));
    insert.run();
    insert.bind_optional(1, kNoValue).bind(2, 0.0).bind_null(3);
    insert.run();
  }
  Database db(path, Access::ReadOnly);
  EXPECT_TRUE(db.has_table("t"));
  EXPECT_FALSE(db.has_table("u"));
  EXPECT_EQ(db.tables(), std::vector<std::string>{"t"});
  std::vector<std::int64_t> ints;
  std::vector<std::string> texts;
  db.each("SELECT i, d, s FROM t ORDER BY rowid", [&](const Statement& s) {
    ints.push_back(s.optional_integer(0));
    texts.push_back(s.text(2));
  });
  EXPECT_EQ(ints, (std::vector<std::int64_t>{7, kNoValue}));
  EXPECT_EQ(texts, (std::vector<std::string>{"seven", ""}));
  EXPECT_EQ(table_names(path), std::vector<std::string>{"t"});
  std::filesystem::remove_all(path.parent_path());
}

TEST(SqliteFile, FailuresNameTheFileAndSayWhatIsWrong) {
  const auto missing = scratch("missing.db");
  EXPECT_EQ(message_of([&] { Database(missing, Access::ReadOnly); }), missing.string() + ": cannot open");
  EXPECT_TRUE(table_names(missing).empty());

  // A file cut short after its header: SQLite opens it lazily, and the first read fails.
  const auto good = scratch("good.db");
  {
    Database db(good, Access::Create);
    db.exec("CREATE TABLE t(x); INSERT INTO t VALUES (1)");
  }
  const auto cut = scratch("cut.db");
  {
    std::ifstream in(good, std::ios::binary);
    std::string head(100, '\0');
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    std::ofstream(cut, std::ios::binary) << head << std::string(50, 'x');
  }
  const std::string damaged = message_of([&] { Database(cut, Access::ReadOnly).tables(); });
  EXPECT_EQ(damaged.rfind(cut.string() + ": damaged or truncated file", 0), 0u) << damaged;

  // An SQL error says SQLite's words; the name given replaces the path.
  Database db(good, Access::ReadOnly, "summary.db");
  EXPECT_EQ(message_of([&] { db.prepare("SELECT * FROM absent"); }), "summary.db: no such table: absent");
  EXPECT_EQ(message_of([&] { db.exec("INSERT INTO t VALUES (2)"); }).rfind("summary.db: ", 0), 0u);
  std::filesystem::remove_all(good.parent_path());
}

// What the trace.db reader and writer take of it: statements kept for the connection's life and
// run with every value bound anew, rows as a function's arguments in the table's order, a
// refused row's exception carried out of SQLite, and a file's own words for its failures.
TEST(SqliteFile, ScansRowsAsValuesAndRethrowsWhatARowThrows) {
  const auto path = scratch("scan.db");
  Database db(path, Access::Create);
  db.exec("CREATE TABLE t(k INTEGER PRIMARY KEY, v INTEGER, s TEXT) WITHOUT ROWID");
  Statement insert = db.prepare_persistent("INSERT INTO t VALUES (?, ?, ?)");
  for (std::int64_t k : {3, 1, 2}) {
    insert.bind(1, k).bind_optional(2, k == 2 ? kNoValue : 10 * k).bind(3, std::string_view("row"));
    insert.run_rebinding();
  }
  std::vector<std::int64_t> keys, values;
  db.scan("t", "k, v, s", [&](const Values& row) {
    keys.push_back(row.integer(0));
    values.push_back(row.optional_integer(1));
    EXPECT_TRUE(row.is_integer(0));
    EXPECT_EQ(row.text(2), "row");
  });
  EXPECT_EQ(keys, (std::vector<std::int64_t>{1, 2, 3}));
  EXPECT_EQ(values, (std::vector<std::int64_t>{10, kNoValue, 30}));
  EXPECT_EQ(message_of([&] { db.scan("t", "k", [&](const Values&) { db.fail("row refused"); }); }),
            path.string() + ": row refused");
  // The scan's function went with it: the connection runs on.
  int rows = 0;
  db.scan("t", "k", [&](const Values&) { ++rows; });
  EXPECT_EQ(rows, 3);
  std::filesystem::remove_all(path.parent_path());
}

TEST(SqliteFile, AFileMayPutItsFailuresInItsOwnWords) {
  const auto missing = scratch("missing.db");
  const Words words = [](const Failure& f) {
    return std::string(f.call == Failure::Call::Open ? "open" : "other") +
           (f.kind == Failure::Kind::CantOpen ? " cantopen" : " ?");
  };
  EXPECT_EQ(message_of([&] { Database(missing, Access::ReadOnly, {}, words); }), missing.string() + ": open cantopen");
  const auto path = scratch("words.db");
  Database db(path, Access::Create, "w.db", [](const Failure& f) {
    return (f.call == Failure::Call::Exec ? "exec: " : "prepare: ") + f.message;
  });
  EXPECT_EQ(message_of([&] { db.exec("SELECT * FROM absent"); }), "w.db: exec: no such table: absent");
  EXPECT_EQ(message_of([&] { db.prepare("SELECT * FROM absent"); }), "w.db: prepare: no such table: absent");
  db.close();
  std::filesystem::remove_all(path.parent_path());
}

} // namespace
} // namespace dreamscope::sqlite
