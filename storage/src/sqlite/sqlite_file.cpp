#include "dreamscope/storage/sqlite_file.h"

namespace dreamscope::sqlite {

std::string describe(sqlite3* db, int rc) {
  const int primary = rc & 0xff;
  if (primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB) {
    return std::string("damaged or truncated file (") + sqlite3_errstr(rc) + ")";
  }
  if (primary == SQLITE_FULL) return "disk full";
  if (primary == SQLITE_IOERR) return std::string("I/O error (") + (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc)) + ")";
  if (primary == SQLITE_READONLY) return "file is read-only";
  if (primary == SQLITE_CANTOPEN) return "cannot open";
  return db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
}

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

Database::Database(const std::filesystem::path& path, Access access, std::string name)
    : name_(name.empty() ? path.string() : std::move(name)) {
  sqlite3* raw = nullptr;
  int flags = SQLITE_OPEN_NOMUTEX;
  switch (access) {
    case Access::ReadOnly: flags |= SQLITE_OPEN_READONLY; break;
    case Access::ReadWrite: flags |= SQLITE_OPEN_READWRITE; break;
    case Access::Create: flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE; break;
  }
  const int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  db_.reset(raw);
  if (rc != SQLITE_OK) {
    const std::string why = describe(raw, rc);
    fail(why == "cannot open" ? why : "cannot open: " + why);
  }
}

void Database::fail(const std::string& what) const { throw TraceError(name_ + ": " + what); }

void Database::fail_sqlite(int rc) const { fail(describe(db_.get(), rc)); }

void Database::exec(const char* sql) {
  char* error = nullptr;
  const int rc = sqlite3_exec(db_.get(), sql, nullptr, nullptr, &error);
  if (rc != SQLITE_OK) {
    const std::string message = error ? error : describe(db_.get(), rc);
    sqlite3_free(error);
    const int primary = rc & 0xff;
    // A damaged file or a full disk says so; SQL errors (a missing table) say SQLite's words.
    fail(primary == SQLITE_ERROR ? message : describe(db_.get(), rc));
  }
}

Statement Database::prepare(std::string_view sql) const {
  sqlite3_stmt* s = nullptr;
  const int rc = sqlite3_prepare_v2(db_.get(), sql.data(), static_cast<int>(sql.size()), &s, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(s);
    fail_sqlite(rc);
  }
  return Statement(*this, s);
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
