// A SQLite file as every part of dreamscope opens one (trace.db, Nsight Systems exports, rank
// summaries, the format probe): the connection and its statements owned, so that they are
// closed and finalized however a read ends (a row may make a reader refuse the file), and
// every failure a TraceError that names the file and says what went wrong in words (a damaged
// or truncated file, a full disk, an I/O error) rather than in SQLite's codes.
//
// What a format reads or writes stays with its reader and writer; this is only the plumbing
// they all need the same. Statements bind from 1 and read columns from 0, as SQLite does.
#pragma once

#include "dreamscope/storage/trace.h"

#include <sqlite3.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace dreamscope::sqlite {

class Database;

// What a SQLite result code means for the file, in words ("damaged or truncated file (...)",
// "disk full", "I/O error (...)"); `db` may be null.
std::string describe(sqlite3* db, int rc);

class Statement {
 public:
  Statement(const Database& db, sqlite3_stmt* s) : db_(&db), s_(s) {}

  // The next result row (true) or the end (false); a failure throws.
  bool next();
  // Runs a statement that returns no row, then readies it for the next bindings.
  void run();

  Statement& bind(int i, std::int64_t v) {
    sqlite3_bind_int64(s_.get(), i, v);
    return *this;
  }
  Statement& bind(int i, double v) {
    sqlite3_bind_double(s_.get(), i, v);
    return *this;
  }
  Statement& bind(int i, std::string_view v) {
    sqlite3_bind_text(s_.get(), i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Statement& bind_null(int i) {
    sqlite3_bind_null(s_.get(), i);
    return *this;
  }
  // kNoValue as NULL.
  Statement& bind_optional(int i, std::int64_t v) { return v == kNoValue ? bind_null(i) : bind(i, v); }

  int type(int c) const { return sqlite3_column_type(s_.get(), c); }
  bool is_null(int c) const { return type(c) == SQLITE_NULL; }
  std::int64_t integer(int c) const { return sqlite3_column_int64(s_.get(), c); }
  int int32(int c) const { return sqlite3_column_int(s_.get(), c); }
  // NULL as kNoValue.
  std::int64_t optional_integer(int c) const { return is_null(c) ? kNoValue : integer(c); }
  double real(int c) const { return sqlite3_column_double(s_.get(), c); }
  // NULL as "".
  std::string text(int c) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s_.get(), c));
    return p ? std::string(p, static_cast<std::size_t>(sqlite3_column_bytes(s_.get(), c))) : std::string();
  }
  const char* column_name(int c) const { return sqlite3_column_name(s_.get(), c); }

  sqlite3_stmt* raw() const { return s_.get(); }

 private:
  struct Finalize {
    void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
  };
  const Database* db_;
  std::unique_ptr<sqlite3_stmt, Finalize> s_;
};

// Create: read and write, making the file if there is none.
enum class Access { ReadOnly, ReadWrite, Create };

class Database {
 public:
  // Opens a file (an existing one, but with Create). `name`: how errors name it (a file written under a temporary
  // name is named by its target); the path by default.
  Database(const std::filesystem::path& path, Access access, std::string name = {});

  [[noreturn]] void fail(const std::string& what) const;
  // A failed SQLite call, in words (describe()).
  [[noreturn]] void fail_sqlite(int rc) const;

  void exec(const char* sql);
  Statement prepare(std::string_view sql) const;
  // Calls `row` with the statement at each result row of `sql`.
  template <typename F>
  void each(std::string_view sql, F&& row) const {
    Statement s = prepare(sql);
    while (s.next()) row(static_cast<const Statement&>(s));
  }
  // The names of its tables and views.
  std::vector<std::string> tables() const;
  bool has_table(std::string_view name) const;

  sqlite3* raw() const { return db_.get(); }
  const std::string& name() const { return name_; }

 private:
  struct Close {
    void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
  };
  std::string name_;
  std::unique_ptr<sqlite3, Close> db_;
};

// The names of the tables and views of a SQLite file; none when it cannot be opened as one.
std::vector<std::string> table_names(const std::filesystem::path& path);

} // namespace dreamscope::sqlite
