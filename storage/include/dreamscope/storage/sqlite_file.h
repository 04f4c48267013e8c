// A SQLite file as every part of dreamscope opens one (trace.db, Nsight Systems exports, rank
// summaries, the format probe): the connection and its statements owned, so that they are
// closed and finalized however a read ends (a row may make a reader refuse the file), and
// every failure a TraceError that names the file and says what went wrong in words (a damaged
// or truncated file, a full disk, an I/O error) rather than in SQLite's codes.
//
// What a format reads or writes stays with its reader and writer; this is only the plumbing
// they all need the same. Statements bind from 1 and read columns from 0, as SQLite does.
// Outside this header and sqlite_file.cpp no code of storage calls SQLite itself.
#pragma once

#include "dreamscope/storage/trace.h"

#include <sqlite3.h>

#include <concepts>
#include <cstdint>
#include <exception>
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

// A failed SQLite call, as a file's own `Words` put it (Database): the trace.db reader and
// writer keep the words their users have always read ("damaged or truncated trace file",
// "cannot write: disk full"), which differ from describe()'s.
struct Failure {
  enum class Call { Open, Prepare, Step, Exec, Close };
  enum class Kind { Damaged, DiskFull, Io, ReadOnly, CantOpen, Sql, Other };
  Call call;
  Kind kind;
  std::string code;    // what the result code means (SQLite's text for it)
  std::string message; // the connection's last error, or `code` without one; of an exec, its error text
};
using Words = std::string (*)(const Failure&);

class Statement {
 public:
  Statement(const Database& db, sqlite3_stmt* s) : db_(&db), s_(s) {}

  // The next result row (true) or the end (false); a failure throws.
  bool next();
  // Runs a statement that returns no row, then readies it for the next bindings.
  void run();
  // Runs a statement that returns no row and resets it, keeping its bindings: for one run
  // again and again with every parameter bound anew (a bulk insert), where clearing them all
  // each time (run()) is work for nothing.
  void run_rebinding();

  // Any integer, as SQLite's 64-bit one (an unsigned one past INT64_MAX as its bit pattern).
  Statement& bind(int i, std::integral auto v) {
    sqlite3_bind_int64(s_.get(), i, static_cast<sqlite3_int64>(v));
    return *this;
  }
  // A typed id (strong_index.h) as its integer: it is no std::integral, and would bind as a double.
  template <class Tag>
  Statement& bind(int i, StrongIndex<Tag> v) {
    return bind(i, v.value());
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
  bool is_integer(int c) const { return type(c) == SQLITE_INTEGER; }
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
  friend class Database;
  // Steps past every result row; returns the code it stopped with.
  int step_through() {
    int rc;
    while ((rc = sqlite3_step(s_.get())) == SQLITE_ROW) {
    }
    return rc;
  }
  struct Finalize {
    void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
  };
  const Database* db_;
  std::unique_ptr<sqlite3_stmt, Finalize> s_;
};

// A row handed to a function as its arguments (Database::scan): the accessors a Statement's
// result row has, so that code reading a row reads either alike.
class Values {
 public:
  explicit Values(sqlite3_value** v) : v_(v) {}
  int type(int c) const { return sqlite3_value_type(v_[c]); }
  bool is_null(int c) const { return type(c) == SQLITE_NULL; }
  bool is_integer(int c) const { return type(c) == SQLITE_INTEGER; }
  std::int64_t integer(int c) const { return sqlite3_value_int64(v_[c]); }
  int int32(int c) const { return sqlite3_value_int(v_[c]); }
  std::int64_t optional_integer(int c) const { return is_null(c) ? kNoValue : integer(c); }
  double real(int c) const { return sqlite3_value_double(v_[c]); }
  std::string text(int c) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_value_text(v_[c]));
    return p ? std::string(p, static_cast<std::size_t>(sqlite3_value_bytes(v_[c]))) : std::string();
  }

 private:
  sqlite3_value** v_;
};

// Create: read and write, making the file if there is none.
enum class Access { ReadOnly, ReadWrite, Create };

class Database {
 public:
  // Opens a file (an existing one, but with Create). `name`: how errors name it (a file written under a temporary
  // name is named by its target); the path by default. `words`: how its failures read; describe()'s by default.
  Database(const std::filesystem::path& path, Access access, std::string name = {}, Words words = nullptr);

  [[noreturn]] void fail(const std::string& what) const;
  // A failed SQLite call, in words (describe(), or the file's own). `exec_error`: an exec's error text.
  [[noreturn]] void fail_sqlite(int rc, Failure::Call call = Failure::Call::Step,
                                const char* exec_error = nullptr) const;

  void exec(const char* sql);
  Statement prepare(std::string_view sql) const;
  // For a statement kept for the connection's life and run many times (a writer's INSERTs):
  // SQLite then allocates it apart from its short-lived ones.
  Statement prepare_persistent(std::string_view sql) const;
  // Closes the connection, saying so if it fails (the destructor cannot); its statements must
  // have been finalized first.
  void close();
  // Calls `row` with the statement at each result row of `sql`.
  template <typename F>
  void each(std::string_view sql, F&& row) const {
    Statement s = prepare(sql);
    while (s.next()) row(static_cast<const Statement&>(s));
  }
  // Calls `row` with the Values of `columns` (a select list) for each row of `table`, in the
  // order its b-tree holds them (a WITHOUT ROWID table's primary key, a rowid table's rowid).
  // The rows reach `row` as the arguments of an aggregate function over the table rather than
  // as result rows: SQLite hands a function its arguments as values, so a row costs one call
  // per column of sqlite3_value_*, not of sqlite3_column_*, whose per-call checks cost as much
  // as decoding the row itself (195 against 341 ns of CPU for a gpu_op row: storage_bench
  // --benchmark_filter=GpuOpRows). NOT INDEXED keeps the table's own order even if the file
  // carries an index of its own. An exception thrown by `row` (the file refused) stops the
  // scan and is rethrown here: it must not unwind through SQLite's C frames.
  template <typename F>
  void scan(std::string_view table, std::string_view columns, F&& row) const {
    struct Sink {
      std::remove_reference_t<F>* row;
      std::exception_ptr error;
    } sink{&row, nullptr};
    const auto step = [](sqlite3_context* ctx, int, sqlite3_value** values) {
      auto* sink = static_cast<Sink*>(sqlite3_user_data(ctx));
      try {
        (*sink->row)(Values(values));
      } catch (...) {
        sink->error = std::current_exception();
        sqlite3_result_error(ctx, "row refused", -1);
      }
    };
    const auto final = [](sqlite3_context* ctx) { sqlite3_result_null(ctx); };
    const Registered registered(*this, &sink, +step, +final);
    Statement s = prepare("SELECT " + std::string(kScanFunction) + "(" + std::string(columns) + ") FROM " +
                          std::string(table) + " NOT INDEXED");
    const int rc = s.step_through();
    if (sink.error) std::rethrow_exception(sink.error);
    if (rc != SQLITE_DONE) fail_sqlite(rc);
  }

  // The names of its tables and views.
  std::vector<std::string> tables() const;
  bool has_table(std::string_view name) const;

  sqlite3* raw() const { return db_.get(); }
  const std::string& name() const { return name_; }

 private:
  static constexpr std::string_view kScanFunction = "dreamscope_row";
  // scan()'s function, registered for as long as this lives: it points at the scan's frame.
  class Registered {
   public:
    Registered(const Database& db, void* sink, void (*step)(sqlite3_context*, int, sqlite3_value**),
               void (*final)(sqlite3_context*));
    ~Registered();
    Registered(const Registered&) = delete;
    Registered& operator=(const Registered&) = delete;

   private:
    const Database& db_;
  };
  struct Close {
    void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
  };
  std::string name_;
  Words words_;
  std::unique_ptr<sqlite3, Close> db_;
};

// The names of the tables and views of a SQLite file; none when it cannot be opened as one.
std::vector<std::string> table_names(const std::filesystem::path& path);

} // namespace dreamscope::sqlite
