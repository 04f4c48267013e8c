#include "dreamscope/storage/sqlite_file.h"

namespace dreamscope::sqlite {

namespace {

Failure::Kind kind_of(int rc) {
  switch (rc & 0xff) {
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB: return Failure::Kind::Damaged;
    case SQLITE_FULL: return Failure::Kind::DiskFull;
    case SQLITE_IOERR: return Failure::Kind::Io;
    case SQLITE_READONLY: return Failure::Kind::ReadOnly;
    case SQLITE_CANTOPEN: return Failure::Kind::CantOpen;
    case SQLITE_ERROR: return Failure::Kind::Sql;
    default: return Failure::Kind::Other;
  }
}

Failure failure(sqlite3* db, int rc, Failure::Call call, const char* exec_error) {
  const std::string code = sqlite3_errstr(rc);
  std::string message = call == Failure::Call::Exec ? (exec_error ? exec_error : code) : (db ? sqlite3_errmsg(db) : code);
  return {call, kind_of(rc), code, std::move(message)};
}

// describe()'s words for a failure other than an exec's.
std::string plain(const Failure& f) {
  switch (f.kind) {
    case Failure::Kind::Damaged: return "damaged or truncated file (" + f.code + ")";
    case Failure::Kind::DiskFull: return "disk full";
    case Failure::Kind::Io: return "I/O error (" + f.message + ")";
    case Failure::Kind::ReadOnly: return "file is read-only";
    case Failure::Kind::CantOpen: return "cannot open";
    default: return f.message;
  }
}

// A file's words when it has none of its own.
std::string default_words(const Failure& f) {
  switch (f.call) {
    case Failure::Call::Open: {
      const std::string why = plain(f);
      return why == "cannot open" ? why : "cannot open: " + why;
    }
    // A damaged file or a full disk says so; SQL errors (a missing table) say SQLite's words.
    case Failure::Call::Exec: return f.kind == Failure::Kind::Sql ? f.message : plain(f);
    default: return plain(f);
  }
}

} // namespace

std::string describe(sqlite3* db, int rc) { return plain(failure(db, rc, Failure::Call::Step, nullptr)); }

bool Statement::next() {
  const int rc = sqlite3_step(s_.get());
  if (rc == SQLITE_ROW) return true;
  if (rc != SQLITE_DONE) db_->fail_sqlite(rc);
  return false;
}

void Statement::run() {
  const int rc = sqlite3_step(s_.get());
  if (rc != SQLITE_DONE && rc != SQLITE_ROW) db_->fail_sqlite(rc);
  sqlite3_reset(s_.get());
  sqlite3_clear_bindings(s_.get());
}

void Statement::run_rebinding() {
  const int rc = sqlite3_step(s_.get());
  sqlite3_reset(s_.get());
  if (rc != SQLITE_DONE) db_->fail_sqlite(rc);
}

Database::Database(const std::filesystem::path& path, Access access, std::string name, Words words)
    : name_(name.empty() ? path.string() : std::move(name)), words_(words ? words : default_words) {
  sqlite3* raw = nullptr;
  int flags = SQLITE_OPEN_NOMUTEX;
  switch (access) {
    case Access::ReadOnly: flags |= SQLITE_OPEN_READONLY; break;
    case Access::ReadWrite: flags |= SQLITE_OPEN_READWRITE; break;
    case Access::Create: flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE; break;
  }
  const int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  db_.reset(raw);
  if (rc != SQLITE_OK) fail_sqlite(rc, Failure::Call::Open);
}

void Database::fail(const std::string& what) const { throw TraceError(name_ + ": " + what); }

void Database::fail_sqlite(int rc, Failure::Call call, const char* exec_error) const {
  fail(words_(failure(db_.get(), rc, call, exec_error)));
}

void Database::exec(const char* sql) {
  char* error = nullptr;
  const int rc = sqlite3_exec(db_.get(), sql, nullptr, nullptr, &error);
  if (rc != SQLITE_OK) {
    const std::string message = error ? error : "";
    sqlite3_free(error);
    fail_sqlite(rc, Failure::Call::Exec, error ? message.c_str() : nullptr);
  }
}

namespace {
sqlite3_stmt* prepared(const Database& db, std::string_view sql, unsigned flags) {
  sqlite3_stmt* s = nullptr;
  const int rc = sqlite3_prepare_v3(db.raw(), sql.data(), static_cast<int>(sql.size()), flags, &s, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(s);
    db.fail_sqlite(rc, Failure::Call::Prepare);
  }
  return s;
}
} // namespace

Statement Database::prepare(std::string_view sql) const { return Statement(*this, prepared(*this, sql, 0)); }

Statement Database::prepare_persistent(std::string_view sql) const {
  return Statement(*this, prepared(*this, sql, SQLITE_PREPARE_PERSISTENT));
}

void Database::close() {
  const int rc = sqlite3_close(db_.release());
  if (rc != SQLITE_OK) fail_sqlite(rc, Failure::Call::Close);
}

Database::Registered::Registered(const Database& db, void* sink, void (*step)(sqlite3_context*, int, sqlite3_value**),
                                 void (*final)(sqlite3_context*))
    : db_(db) {
  const int rc = sqlite3_create_function_v2(db.raw(), kScanFunction.data(), -1, SQLITE_UTF8 | SQLITE_DIRECTONLY, sink,
                                            nullptr, step, final, nullptr);
  if (rc != SQLITE_OK) db.fail_sqlite(rc);
}

Database::Registered::~Registered() {
  sqlite3_create_function_v2(db_.raw(), kScanFunction.data(), -1, SQLITE_UTF8, nullptr, nullptr, nullptr, nullptr,
                             nullptr);
}

std::vector<std::string> Database::tables() const {
  std::vector<std::string> names;
  each("SELECT name FROM sqlite_schema WHERE type IN ('table','view')",
       [&](const Statement& s) { names.push_back(s.text(0)); });
  return names;
}

bool Database::has_table(std::string_view name) const {
  Statement s = prepare("SELECT 1 FROM sqlite_schema WHERE type IN ('table','view') AND name = ?");
  s.bind(1, name);
  return s.next();
}

std::vector<std::string> table_names(const std::filesystem::path& path) {
  try {
    return Database(path, Access::ReadOnly).tables();
  } catch (const TraceError&) {
    return {};
  }
}

} // namespace dreamscope::sqlite
