#include "dreamscope/storage/trace_file.h"

#include "dreamscope/storage/columns.h"
#include "dreamscope/storage/trace_copy.h"

#include "tracedb/schema.h"

#include <sqlite3.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>
#include <array>
#include <unordered_map>
#include <vector>

namespace dreamscope {

struct LaunchConfigHash {
  std::size_t operator()(const LaunchConfig& c) const {
    std::size_t h = 1469598103934665603ull;
    columns::for_each_field(
        c, [&](std::int32_t v, const char*) { h = (h ^ static_cast<std::uint32_t>(v)) * 1099511628211ull; });
    return h;
  }
};

struct InternTable {
  std::unordered_map<std::string, StringId> ids;
  std::unordered_map<LaunchConfig, std::int64_t, LaunchConfigHash> launch_ids; // -> launch.id
};

// Event rows are buffered and inserted kRowsPerInsert at a time with one multi-row INSERT:
// SQLite's per-statement cost (step, reset, cursor open and close) then falls on 128 rows
// instead of one: 1.0 M -> 1.6 M events/s on the tracer's mix (bench/storage, loaded machine).
template <std::size_t Columns>
struct RowBatch {
  static constexpr std::size_t kRowsPerInsert = 128;
  using Row = std::array<std::int64_t, Columns>; // kNoValue binds NULL
  std::vector<Row> pending;
  sqlite3_stmt* one = nullptr;
  sqlite3_stmt* many = nullptr;

  ~RowBatch() {
    sqlite3_finalize(one);
    sqlite3_finalize(many);
  }
};

struct TraceWriter::Statements {
  sqlite3_stmt* string = nullptr;
  sqlite3_stmt* meta = nullptr;
  sqlite3_stmt* process = nullptr;
  sqlite3_stmt* process_rank = nullptr;
  sqlite3_stmt* process_rank_delete = nullptr;
  sqlite3_stmt* device = nullptr;
  sqlite3_stmt* track = nullptr;
  sqlite3_stmt* track_name = nullptr;
  // An event table's columns (tables.h), then its id.
  RowBatch<columns::count<CudaApiRecord> + 1> cuda_api;
  RowBatch<columns::count<GpuOpRecord> + 1> gpu_op;
  RowBatch<columns::count<AnnotationRecord> + 1> annotation;
  sqlite3_stmt* flow = nullptr;
  sqlite3_stmt* calibration = nullptr;
  sqlite3_stmt* overhead = nullptr;
  sqlite3_stmt* thread_load = nullptr;
  sqlite3_stmt* memory_event = nullptr;
  sqlite3_stmt* launch = nullptr;
  sqlite3_stmt* arg = nullptr;

  ~Statements() {
    for (auto* s :
         {string, meta, process, process_rank, process_rank_delete, device, track, track_name, flow, calibration,
          overhead, thread_load, memory_event, launch, arg}) {
      sqlite3_finalize(s);
    }
  }
};

namespace {

std::string sqlite_problem(sqlite3* db, int rc) {
  if (rc == SQLITE_FULL) return "disk full";
  if (rc == SQLITE_IOERR || (rc & 0xff) == SQLITE_IOERR) return std::string("I/O error (") + sqlite3_errmsg(db) + ")";
  if (rc == SQLITE_READONLY) return "file is read-only";
  return db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
}

void bind_optional(sqlite3_stmt* s, int col, std::int64_t v) {
  if (v == kNoValue) {
    sqlite3_bind_null(s, col);
  } else {
    sqlite3_bind_int64(s, col, v);
  }
}

void bind_text(sqlite3_stmt* s, int col, std::string_view v) {
  sqlite3_bind_text(s, col, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
}

// Small ids stored as NULL when absent (kNoIndex).
void bind_index(sqlite3_stmt* s, int col, std::uint32_t v) {
  if (v == kNoIndex) {
    sqlite3_bind_null(s, col);
  } else {
    sqlite3_bind_int64(s, col, v);
  }
}

// "a, b, c": the trace.db names of a tuple of columns (columns.h), then `own`, the columns of
// SQL's own that the writer fills (a row's id).
template <class Columns>
std::string column_names(const Columns& cols, std::string_view own = {}) {
  std::string names;
  columns::each(cols, [&](const auto& c) { (names += names.empty() ? "" : ", ") += c.sql_name(); });
  if (!own.empty()) (names += ", ") += own;
  return names;
}

// "<verb> INTO table(names) VALUES (?,...),...": `rows` rows of as many values as `names` has.
std::string insert_sql(std::string_view verb, std::string_view table, const std::string& names, std::size_t rows = 1) {
  std::string one_row = "(?";
  for (char c : names) {
    if (c == ',') one_row += ",?";
  }
  one_row += ")";
  std::string sql = std::string(verb) + " INTO " + std::string(table) + "(" + names + ") VALUES ";
  for (std::size_t r = 0; r < rows; ++r) sql += (r ? "," : "") + one_row;
  return sql;
}

// The statement that inserts `rows` rows of a table: its columns, then `own`.
template <class Record>
std::string insert_into(std::string_view own = {}, std::string_view verb = "INSERT", std::size_t rows = 1) {
  using D = columns::Definition<Record>;
  return insert_sql(verb, D::name, column_names(D::columns, own), rows);
}

// Binds a row's columns from parameter `col` on, each as its encoding says (tables.h); returns
// the next parameter. (The event tables batch their rows as event_row() makes them.)
template <class Columns, class Record>
int bind_columns(sqlite3_stmt* st, const Columns& cols, const Record& r, int col = 1) {
  using namespace columns;
  each(cols, [&](const auto& c) {
    using C = decltype(c);
    const auto& v = r.*c.member;
    if constexpr (is<C, Int> || is<C, Track> || is<C, String> || is<C, Unsigned> || is<C, Start>) {
      sqlite3_bind_int64(st, col, v);
    } else if constexpr (is<C, Enum>) {
      sqlite3_bind_int64(st, col, static_cast<int>(v));
    } else if constexpr (is<C, Optional>) {
      bind_optional(st, col, v);
    } else if constexpr (is<C, Process> || is<C, Device>) {
      bind_index(st, col, v);
    } else if constexpr (is<C, End>) {
      sqlite3_bind_int64(st, col, v - start_of<C>(r));
    } else if constexpr (is<C, Text>) {
      bind_text(st, col, v);
    } else if constexpr (is<C, Real>) {
      sqlite3_bind_double(st, col, v);
    } else if constexpr (is<C, Cost>) {
      // A cost below 0 means none was timed: NULL, as kNoValue is for the times.
      if (v < 0) {
        sqlite3_bind_null(st, col);
      } else {
        sqlite3_bind_double(st, col, v);
      }
    } else {
      static_assert(sizeof(C) == 0, "an encoding bound only in event rows");
    }
    ++col;
  });
  return col;
}

// The batched INSERT of an event table: its columns and id in the table's order
// (schema::event_positions), `rows` rows.
template <class Record>
std::string insert_events(std::size_t rows) {
  constexpr auto at = schema::event_positions<Record>();
  std::array<std::string_view, at.size()> names;
  columns::each_indexed(columns::Definition<Record>::columns, [&](const auto& c, auto i) { names[at[i]] = c.sql_name(); });
  names[at.back()] = "id";
  std::string list;
  for (std::string_view name : names) (list += list.empty() ? "" : ", ") += name;
  return insert_sql("INSERT", columns::Definition<Record>::name, list, rows);
}

// An event table's row as the integers its batch binds (kNoValue binds NULL), in the order
// insert_events() lists them: its columns, each as its encoding says, and its id. `launch_id`
// gives a GPU op's launch configuration's row.
template <class Record, std::size_t N, class LaunchId>
std::array<std::int64_t, N> event_row(const Record& r, std::int64_t id, LaunchId&& launch_id) {
  using namespace columns;
  constexpr auto at = schema::event_positions<Record>();
  static_assert(N == at.size());
  std::array<std::int64_t, N> row;
  each_indexed(Definition<Record>::columns, [&](const auto& c, auto i) {
    using C = decltype(c);
    const auto& v = r.*c.member;
    if constexpr (is<C, Int> || is<C, Track> || is<C, String> || is<C, Unsigned> || is<C, Start> || is<C, Optional>) {
      row[at[i]] = v;
    } else if constexpr (is<C, Enum>) {
      row[at[i]] = static_cast<int>(v);
    } else if constexpr (is<C, End>) {
      row[at[i]] = v - start_of<C>(r);
    } else if constexpr (is<C, Launch>) {
      row[at[i]] = launch_id(v);
    } else {
      static_assert(sizeof(C) == 0, "an event row holds integers only");
    }
  });
  row[at.back()] = id;
  return row;
}

} // namespace

void check_replaceable_output(const std::filesystem::path& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status) || std::filesystem::is_regular_file(status)) return;
  const char* what = std::filesystem::is_directory(status)       ? "a directory"
                     : std::filesystem::is_character_file(status) ? "a character device"
                     : std::filesystem::is_block_file(status)     ? "a block device"
                     : std::filesystem::is_fifo(status)           ? "a FIFO"
                     : std::filesystem::is_socket(status)         ? "a socket"
                                                                  : "not a regular file";
  throw TraceError(path.string() + ": is " + std::string(what) +
                   ", not a file that can be written (an output is written by replacing the file at its path)");
}

TraceWriter::TraceWriter(std::filesystem::path path, TraceWriterOptions options)
    : path_(std::move(path)), options_(options), strings_(std::make_unique<InternTable>()),
      stmts_(std::make_unique<Statements>()) {
  std::error_code ec;
  check_replaceable_output(path_);
  if (std::filesystem::exists(path_, ec)) {
    if (!options_.overwrite) fail("file exists");
    std::filesystem::remove(path_, ec);
    if (ec) fail("cannot replace the existing file: " + ec.message());
  }
  for (const char* suffix : {"-wal", "-shm", "-journal"}) {
    std::filesystem::remove(path_.string() + suffix, ec);
  }
  // Create the file ourselves first: SQLite's "unable to open database file" does not say why.
  int fd = ::open(path_.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
  if (fd < 0) fail(std::string("cannot create the file: ") + std::strerror(errno));
  ::close(fd);

  int rc = sqlite3_open_v2(path_.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string why = sqlite_problem(db_, rc);
    sqlite3_close(db_);
    db_ = nullptr;
    fail("cannot open: " + why);
  }
  sqlite3_extended_result_codes(db_, 0);
  // WAL: a commit is one append, and a process killed mid-write keeps every committed
  // batch, since committed pages are in the OS's cache whatever happens to the process.
  // Only close() pays for fsync: a trace need survive a power cut only once it is closed.
  // Before WAL mode: a WAL database keeps the page size it was created with (the 8 KiB
  // asked for after it never took effect). 4 KiB pages pack events tightest: 36.1 bytes
  // per event against 37.6 with 8 KiB, at the same speed.
  exec("PRAGMA page_size=4096");
  exec("PRAGMA synchronous=OFF");
  exec("PRAGMA journal_mode=WAL");
  // The B-tree pages being appended to stay in memory between transactions.
  exec("PRAGMA cache_size=-65536");
  exec("BEGIN");
  exec(schema::create_tables().c_str());
  exec(schema::kCreateViews);
  exec("COMMIT");

  auto prepare = [&](sqlite3_stmt*& stmt, const char* sql) {
    if (sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt, nullptr) != SQLITE_OK) {
      fail(std::string("cannot prepare statement: ") + sqlite3_errmsg(db_));
    }
  };
  auto& s = *stmts_;
  // Each table's statement names its columns (tables.h), then the ids of SQL's own it fills.
  auto prepare_batch = [&]<class Record>(auto& batch, std::type_identity<Record>) {
    using Batch = std::remove_reference_t<decltype(batch)>;
    prepare(batch.one, insert_events<Record>(1).c_str());
    prepare(batch.many, insert_events<Record>(Batch::kRowsPerInsert).c_str());
    batch.pending.reserve(Batch::kRowsPerInsert);
  };
  using columns::Definition;
  prepare(s.string, "INSERT INTO string(id, value) VALUES(?,?)");
  prepare(s.meta, "INSERT OR REPLACE INTO meta(key, value) VALUES(?,?)");
  prepare(
      s.process,
      insert_sql("INSERT OR REPLACE", "process", column_names(Definition<ProcessInfo>::process_columns, "id")).c_str());
  prepare(s.process_rank, insert_sql("INSERT OR REPLACE", "process_rank",
                                     column_names(Definition<ProcessInfo>::rank_columns, "process"))
                              .c_str());
  prepare(s.process_rank_delete, "DELETE FROM process_rank WHERE process = ?");
  prepare(s.device, insert_into<DeviceInfo>("id").c_str());
  prepare(s.track, insert_into<TrackInfo>("id").c_str());
  prepare(s.track_name, "UPDATE track SET name = ? WHERE id = ?");
  prepare_batch(s.cuda_api, std::type_identity<CudaApiRecord>{});
  prepare_batch(s.gpu_op, std::type_identity<GpuOpRecord>{});
  prepare_batch(s.annotation, std::type_identity<AnnotationRecord>{});
  prepare(s.launch, insert_sql("INSERT", "launch", "id, " + schema::launch_columns()).c_str());
  prepare(s.flow, insert_into<FlowRecord>().c_str());
  prepare(s.calibration, insert_into<CalibrationRecord>({}, "INSERT OR REPLACE").c_str());
  prepare(s.overhead, insert_into<OverheadRecord>().c_str());
  prepare(s.thread_load, insert_into<ThreadLoadRecord>().c_str());
  prepare(s.memory_event, insert_into<MemoryEventRecord>("id").c_str());
  prepare(s.arg, "INSERT INTO arg(event, key, type, int_value, real_value, text) VALUES(?,?,?,?,?,?)");

  set_meta("schema_version", std::to_string(kSchemaVersion));
  set_meta("dreamscope_version", DREAMSCOPE_VERSION);
  set_meta("complete", "0");
  set_meta("dropped_events", "0");
  flush();
}

TraceWriter::~TraceWriter() {
  if (!db_) return;
  try {
    // Not closed: keep what was added, but leave `complete` at 0.
    if (in_transaction_) {
      drain_pending_rows();
      exec("COMMIT");
    }
  } catch (const TraceError&) {
  }
  stmts_.reset();
  sqlite3_close_v2(db_);
  db_ = nullptr;
}

void TraceWriter::fail(const std::string& what) const {
  throw TraceError(path_.string() + ": " + what);
}

void TraceWriter::exec(const char* sql) {
  char* err = nullptr;
  int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string msg = rc == SQLITE_FULL ? "disk full" : (err ? err : sqlite3_errstr(rc));
    sqlite3_free(err);
    fail("cannot write: " + msg);
  }
}

void TraceWriter::begin_if_needed() {
  if (!db_) fail("trace writer already closed");
  if (!in_transaction_) {
    exec("BEGIN");
    in_transaction_ = true;
    rows_in_transaction_ = 0;
  }
}

void TraceWriter::count_row() {
  ++rows_written_;
  if (++rows_in_transaction_ >= options_.batch_rows) flush();
}

namespace {
void step(sqlite3* db, sqlite3_stmt* s, const std::function<void(const std::string&)>& fail) {
  int rc = sqlite3_step(s);
  sqlite3_reset(s);
  if (rc != SQLITE_DONE) fail("cannot write: " + sqlite_problem(db, rc));
}
} // namespace

#define DS_STEP(stmt) step(db_, stmt, [this](const std::string& m) { fail(m); })

namespace {
template <std::size_t N>
void insert_rows(sqlite3* db, sqlite3_stmt* st, const typename RowBatch<N>::Row* rows, std::size_t count,
                 const std::function<void(const std::string&)>& fail) {
  int col = 1;
  for (std::size_t i = 0; i < count; ++i) {
    for (std::size_t c = 0; c < N; ++c) bind_optional(st, col++, rows[i][c]);
  }
  step(db, st, fail);
}

template <std::size_t N>
void push_row(sqlite3* db, RowBatch<N>& batch, const typename RowBatch<N>::Row& row,
              const std::function<void(const std::string&)>& fail) {
  batch.pending.push_back(row);
  if (batch.pending.size() == RowBatch<N>::kRowsPerInsert) {
    insert_rows<N>(db, batch.many, batch.pending.data(), batch.pending.size(), fail);
    batch.pending.clear();
  }
}

template <std::size_t N>
void drain(sqlite3* db, RowBatch<N>& batch, const std::function<void(const std::string&)>& fail) {
  for (const auto& row : batch.pending) insert_rows<N>(db, batch.one, &row, 1, fail);
  batch.pending.clear();
}
} // namespace

#define DS_FAIL [this](const std::string& m) { fail(m); }

StringId TraceWriter::intern(std::string_view s) {
  if (s.empty()) return 0;
  auto [it, inserted] = strings_->ids.try_emplace(std::string(s), next_string_id_);
  if (!inserted) return it->second;
  begin_if_needed();
  auto* st = stmts_->string;
  sqlite3_bind_int64(st, 1, next_string_id_);
  sqlite3_bind_text(st, 2, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
  DS_STEP(st);
  count_row();
  return next_string_id_++;
}

void TraceWriter::set_meta(const std::string& key, const std::string& value) {
  begin_if_needed();
  auto* st = stmts_->meta;
  bind_text(st, 1, key);
  bind_text(st, 2, value);
  DS_STEP(st);
  count_row();
}

namespace {
// A process's place in a distributed job, in its own table (added after schema v1 was
// released, so older files and readers simply lack it): a row only for the processes that
// have one, any of its columns other than a process's default.
bool has_rank_row(const ProcessInfo& p) {
  const ProcessInfo none;
  bool any = false;
  columns::each(columns::Definition<ProcessInfo>::rank_columns,
                [&](const auto& c) { any = any || p.*c.member != none.*c.member; });
  return any;
}
} // namespace

// Inserts a row of a table that is no event table: its columns (tables.h), then `own`.
template <class Columns, class Record, class... Own>
void TraceWriter::insert(sqlite3_stmt* st, const Columns& cols, const Record& r, Own... own) {
  int col = bind_columns(st, cols, r);
  (sqlite3_bind_int64(st, col++, own), ...);
  DS_STEP(st);
}

std::uint32_t TraceWriter::add_process(const ProcessInfo& p) {
  begin_if_needed();
  std::uint32_t id = next_process_++;
  insert(stmts_->process, columns::Definition<ProcessInfo>::process_columns, p, std::int64_t{id});
  count_row();
  if (has_rank_row(p))
    insert(stmts_->process_rank, columns::Definition<ProcessInfo>::rank_columns, p, std::int64_t{id});
  return id;
}

void TraceWriter::update_process(std::uint32_t id, const ProcessInfo& p) {
  begin_if_needed();
  insert(stmts_->process, columns::Definition<ProcessInfo>::process_columns, p, std::int64_t{id});
  count_row();
  if (has_rank_row(p)) {
    insert(stmts_->process_rank, columns::Definition<ProcessInfo>::rank_columns, p, std::int64_t{id});
  } else {
    sqlite3_bind_int64(stmts_->process_rank_delete, 1, id);
    DS_STEP(stmts_->process_rank_delete);
  }
}

std::uint32_t TraceWriter::add_device(const DeviceInfo& d) {
  begin_if_needed();
  std::uint32_t id = next_device_++;
  insert(stmts_->device, columns::Definition<DeviceInfo>::columns, d, std::int64_t{id});
  count_row();
  return id;
}

TrackId TraceWriter::add_track(const TrackInfo& t) {
  begin_if_needed();
  TrackId id = next_track_++;
  insert(stmts_->track, columns::Definition<TrackInfo>::columns, t, std::int64_t{id});
  count_row();
  return id;
}

void TraceWriter::rename_track(TrackId id, std::string_view name) {
  begin_if_needed();
  auto* st = stmts_->track_name;
  bind_text(st, 1, name);
  sqlite3_bind_int64(st, 2, id);
  DS_STEP(st);
}

// Buffers a row of an event table for its batch's next INSERT; returns the event's id.
template <class Record, class Batch>
std::int64_t TraceWriter::add_event(Batch& batch, std::uint64_t& rows, const Record& r) {
  const std::int64_t id = next_event_id_++;
  begin_if_needed();
  ++rows;
  constexpr std::size_t n = std::tuple_size_v<typename Batch::Row>;
  push_row<n>(db_, batch, event_row<Record, n>(r, id, [this](const LaunchConfig& c) { return launch_id(c); }), DS_FAIL);
  count_row();
  return id;
}

std::int64_t TraceWriter::add(const CudaApiRecord& r) { return add_event(stmts_->cuda_api, cuda_api_rows_, r); }

std::int64_t TraceWriter::launch_id(const LaunchConfig& c) {
  if (c == LaunchConfig{}) return kNoValue;
  auto [it, inserted] = strings_->launch_ids.try_emplace(c, 0);
  if (!inserted) return it->second;
  it->second = static_cast<std::int64_t>(strings_->launch_ids.size());
  auto* st = stmts_->launch;
  sqlite3_bind_int64(st, 1, it->second);
  int col = 2;
  columns::for_each_field(c, [&](std::int32_t v, const char*) { sqlite3_bind_int64(st, col++, v); });
  DS_STEP(st);
  count_row();
  return it->second;
}

std::int64_t TraceWriter::add(const GpuOpRecord& r) { return add_event(stmts_->gpu_op, gpu_op_rows_, r); }

std::int64_t TraceWriter::add(const AnnotationRecord& r) { return add_event(stmts_->annotation, annotation_rows_, r); }

void TraceWriter::add_arg(std::int64_t event, const EventArg& arg) {
  begin_if_needed();
  auto* st = stmts_->arg;
  sqlite3_bind_int64(st, 1, event);
  sqlite3_bind_int64(st, 2, arg.key);
  sqlite3_bind_int64(st, 3, static_cast<int>(arg.type));
  sqlite3_bind_null(st, 4);
  sqlite3_bind_null(st, 5);
  sqlite3_bind_null(st, 6);
  switch (arg.type) {
    case ArgType::Int: sqlite3_bind_int64(st, 4, arg.int_value); break;
    case ArgType::Double: sqlite3_bind_double(st, 5, arg.double_value); break;
    case ArgType::String:
    case ArgType::Json: sqlite3_bind_int64(st, 6, arg.text); break;
  }
  DS_STEP(st);
  count_row();
}

// Inserts a row of a table that is no event table and counts it; `own` as insert() takes it.
template <class Record, class... Own>
void TraceWriter::add_row(sqlite3_stmt* st, const Record& r, Own... own) {
  begin_if_needed();
  insert(st, columns::Definition<Record>::columns, r, own...);
  count_row();
}

void TraceWriter::add(const FlowRecord& r) { add_row(stmts_->flow, r); }

void TraceWriter::add(const CalibrationRecord& r) { add_row(stmts_->calibration, r); }

void TraceWriter::add(const OverheadRecord& r) { add_row(stmts_->overhead, r); }

void TraceWriter::add(const ThreadLoadRecord& r) { add_row(stmts_->thread_load, r); }

void TraceWriter::add(const MemoryEventRecord& r) { add_row(stmts_->memory_event, r, next_memory_event_id_++); }

void TraceWriter::drain_pending_rows() {
  auto& s = *stmts_;
  drain<std::tuple_size_v<decltype(s.cuda_api)::Row>>(db_, s.cuda_api, DS_FAIL);
  drain<std::tuple_size_v<decltype(s.gpu_op)::Row>>(db_, s.gpu_op, DS_FAIL);
  drain<std::tuple_size_v<decltype(s.annotation)::Row>>(db_, s.annotation, DS_FAIL);
}

void TraceWriter::flush() {
  if (!db_) fail("trace writer already closed");
  drain_pending_rows();
  if (in_transaction_) {
    in_transaction_ = false;
    exec("COMMIT");
  }
}

void TraceWriter::close(bool complete) {
  if (!db_) return;
  // Row counts let the reader size its arrays without counting the tables.
  set_meta("rows.cuda_api", std::to_string(cuda_api_rows_));
  set_meta("rows.gpu_op", std::to_string(gpu_op_rows_));
  set_meta("rows.annotation", std::to_string(annotation_rows_));
  set_meta("complete", complete ? "1" : "0");
  flush();
  exec("PRAGMA synchronous=FULL");
  // Fold the WAL back into the one file, so that the trace is a single self-contained file.
  exec("PRAGMA wal_checkpoint(TRUNCATE)");
  exec("PRAGMA journal_mode=DELETE");
  stmts_.reset();
  int rc = sqlite3_close(db_);
  db_ = nullptr;
  if (rc != SQLITE_OK) fail("cannot close: " + std::string(sqlite3_errstr(rc)));
}

void write_trace(const Trace& trace, const std::filesystem::path& path) {
  TraceWriter w(path);
  for (const auto& [k, v] : trace.meta()) {
    if (k == "schema_version" || k == "dreamscope_version" || k == "complete" || k.starts_with("rows.")) continue;
    w.set_meta(k, v);
  }
  // Strings, processes, devices and tracks keep their ids: the writer numbers them as the
  // Trace did.
  const TraceIdMap ids = append_trace_ids(w, trace);
  append_trace_rows(w, trace, ids);
  for (const auto& c : trace.calibration()) w.add(c);
  w.close(trace.meta_value("complete", "1") != "0");
}

void replace_calibration(const std::filesystem::path& path, const std::vector<CalibrationRecord>& records) {
  read_trace(path); // refuses, with a message naming the file, anything that is not a trace.db
  sqlite3* db = nullptr;
  const auto fail = [&](const std::string& what) {
    const std::string why = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    throw TraceError(path.string() + ": " + what + ": " + why);
  };
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) fail("cannot open");
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db, insert_into<CalibrationRecord>({}, "INSERT OR REPLACE").c_str(), -1, &st, nullptr) !=
      SQLITE_OK) {
    fail("cannot write the calibration table");
  }
  for (const auto& r : records) {
    bind_columns(st, columns::Definition<CalibrationRecord>::columns, r);
    const int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) {
      sqlite3_finalize(st);
      fail("cannot write the calibration table");
    }
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
}

} // namespace dreamscope
