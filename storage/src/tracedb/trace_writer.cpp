#include "dreamscope/storage/trace_file.h"

#include "dreamscope/storage/columns.h"
#include "dreamscope/storage/sqlite_file.h"
#include "dreamscope/storage/trace_copy.h"

#include "tracedb/schema.h"

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

namespace {

// How the writer has always put a failure: what it was doing, then the problem.
std::string write_words(const sqlite::Failure& f) {
  using Kind = sqlite::Failure::Kind;
  using Call = sqlite::Failure::Call;
  const auto problem = [&]() -> std::string {
    if (f.kind == Kind::DiskFull) return "disk full";
    if (f.kind == Kind::Io) return "I/O error (" + f.message + ")";
    if (f.kind == Kind::ReadOnly) return "file is read-only";
    return f.message;
  };
  switch (f.call) {
    case Call::Open: return "cannot open: " + problem();
    case Call::Prepare: return "cannot prepare statement: " + f.message;
    case Call::Exec: return "cannot write: " + (f.kind == Kind::DiskFull ? std::string("disk full") : f.message);
    case Call::Close: return "cannot close: " + f.code;
    case Call::Step: break;
  }
  return "cannot write: " + problem();
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
int bind_columns(sqlite::Statement& st, const Columns& cols, const Record& r, int col = 1) {
  using namespace columns;
  each(cols, [&](const auto& c) {
    using C = decltype(c);
    const auto& v = r.*c.member;
    if constexpr (is<C, Int> || is<C, Track> || is<C, String> || is<C, Unsigned> || is<C, Start>) {
      st.bind(col, v);
    } else if constexpr (is<C, Enum>) {
      st.bind(col, static_cast<int>(v));
    } else if constexpr (is<C, Optional>) {
      st.bind_optional(col, v);
    } else if constexpr (is<C, Process> || is<C, Device>) {
      // Small ids stored as NULL when absent (kNoIndex).
      if (v == kNoIndex) {
        st.bind_null(col);
      } else {
        st.bind(col, v);
      }
    } else if constexpr (is<C, End>) {
      st.bind(col, v - start_of<C>(r));
    } else if constexpr (is<C, Text>) {
      st.bind(col, std::string_view(v));
    } else if constexpr (is<C, Real>) {
      st.bind(col, v);
    } else if constexpr (is<C, Cost>) {
      // A cost below 0 means none was timed: NULL, as kNoValue is for the times.
      if (v < 0) {
        st.bind_null(col);
      } else {
        st.bind(col, v);
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

// Event rows are buffered and inserted kRowsPerInsert at a time with one multi-row INSERT:
// SQLite's per-statement cost (step, reset, cursor open and close) then falls on 128 rows
// instead of one: 1.0 M -> 1.6 M events/s on the tracer's mix (bench/storage, loaded machine).
template <class Record>
class RowBatch {
 public:
  static constexpr std::size_t kRowsPerInsert = 128;
  // An event table's columns (tables.h), then its id; kNoValue binds NULL.
  using Row = std::array<std::int64_t, columns::count<Record> + 1>;

  explicit RowBatch(const sqlite::Database& db)
      : one_(db.prepare_persistent(insert_events<Record>(1))),
        many_(db.prepare_persistent(insert_events<Record>(kRowsPerInsert))) {
    pending_.reserve(kRowsPerInsert);
  }

  void push(const Row& row) {
    pending_.push_back(row);
    if (pending_.size() == kRowsPerInsert) {
      insert(many_, pending_.data(), pending_.size());
      pending_.clear();
    }
  }

  // Inserts the rows still buffered, one statement each.
  void drain() {
    for (const Row& row : pending_) insert(one_, &row, 1);
    pending_.clear();
  }

 private:
  static void insert(sqlite::Statement& st, const Row* rows, std::size_t count) {
    int col = 1;
    for (std::size_t i = 0; i < count; ++i) {
      for (std::int64_t v : rows[i]) st.bind_optional(col++, v);
    }
    st.run_rebinding();
  }

  std::vector<Row> pending_;
  sqlite::Statement one_, many_;
};

} // namespace

// Each table's statement names its columns (tables.h), then the ids of SQL's own it fills.
struct TraceWriter::Statements {
  explicit Statements(const sqlite::Database& db)
      : string(db.prepare_persistent("INSERT INTO string(id, value) VALUES(?,?)")),
        meta(db.prepare_persistent("INSERT OR REPLACE INTO meta(key, value) VALUES(?,?)")),
        process(db.prepare_persistent(insert_sql(
            "INSERT OR REPLACE", "process", column_names(columns::Definition<ProcessInfo>::process_columns, "id")))),
        process_rank(db.prepare_persistent(insert_sql(
            "INSERT OR REPLACE", "process_rank",
            column_names(columns::Definition<ProcessInfo>::rank_columns, "process")))),
        process_rank_delete(db.prepare_persistent("DELETE FROM process_rank WHERE process = ?")),
        device(db.prepare_persistent(insert_into<DeviceInfo>("id"))),
        track(db.prepare_persistent(insert_into<TrackInfo>("id"))),
        track_name(db.prepare_persistent("UPDATE track SET name = ? WHERE id = ?")), cuda_api(db), gpu_op(db),
        annotation(db), launch(db.prepare_persistent(insert_sql("INSERT", "launch", "id, " + schema::launch_columns()))),
        flow(db.prepare_persistent(insert_into<FlowRecord>())),
        calibration(db.prepare_persistent(insert_into<CalibrationRecord>({}, "INSERT OR REPLACE"))),
        overhead(db.prepare_persistent(insert_into<OverheadRecord>())),
        thread_load(db.prepare_persistent(insert_into<ThreadLoadRecord>())),
        memory_event(db.prepare_persistent(insert_into<MemoryEventRecord>("id"))),
        arg(db.prepare_persistent("INSERT INTO arg(event, key, type, int_value, real_value, text) VALUES(?,?,?,?,?,?)")) {}

  sqlite::Statement string, meta, process, process_rank, process_rank_delete, device, track, track_name;
  RowBatch<CudaApiRecord> cuda_api;
  RowBatch<GpuOpRecord> gpu_op;
  RowBatch<AnnotationRecord> annotation;
  sqlite::Statement launch, flow, calibration, overhead, thread_load, memory_event, arg;
};

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
    : path_(std::move(path)), options_(options), strings_(std::make_unique<InternTable>()) {
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

  db_ = std::make_unique<sqlite::Database>(path_, sqlite::Access::ReadWrite, path_.string(), write_words);
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
  stmts_ = std::make_unique<Statements>(*db_);

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
  // The statements first: a connection closes only once they are finalized.
  stmts_.reset();
  db_.reset();
}

const std::filesystem::path& TraceWriter::path() const { return path_; }

void TraceWriter::fail(const std::string& what) const {
  throw TraceError(path_.string() + ": " + what);
}

void TraceWriter::exec(const char* sql) { db_->exec(sql); }

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

StringId TraceWriter::intern(std::string_view s) {
  if (s.empty()) return 0;
  auto [it, inserted] = strings_->ids.try_emplace(std::string(s), next_string_id_);
  if (!inserted) return it->second;
  begin_if_needed();
  stmts_->string.bind(1, next_string_id_).bind(2, s).run_rebinding();
  count_row();
  return next_string_id_++;
}

void TraceWriter::set_meta(const std::string& key, const std::string& value) {
  begin_if_needed();
  stmts_->meta.bind(1, std::string_view(key)).bind(2, std::string_view(value)).run_rebinding();
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
void TraceWriter::insert(sqlite::Statement& st, const Columns& cols, const Record& r, Own... own) {
  int col = bind_columns(st, cols, r);
  (st.bind(col++, own), ...);
  st.run_rebinding();
}

ProcessId TraceWriter::add_process(const ProcessInfo& p) {
  begin_if_needed();
  const ProcessId id = next_process_++;
  insert(stmts_->process, columns::Definition<ProcessInfo>::process_columns, p, std::int64_t{id});
  count_row();
  if (has_rank_row(p))
    insert(stmts_->process_rank, columns::Definition<ProcessInfo>::rank_columns, p, std::int64_t{id});
  return id;
}

void TraceWriter::update_process(ProcessId id, const ProcessInfo& p) {
  begin_if_needed();
  insert(stmts_->process, columns::Definition<ProcessInfo>::process_columns, p, std::int64_t{id});
  count_row();
  if (has_rank_row(p)) {
    insert(stmts_->process_rank, columns::Definition<ProcessInfo>::rank_columns, p, std::int64_t{id});
  } else {
    stmts_->process_rank_delete.bind(1, id).run_rebinding();
  }
}

DeviceId TraceWriter::add_device(const DeviceInfo& d) {
  begin_if_needed();
  const DeviceId id = next_device_++;
  insert(stmts_->device, columns::Definition<DeviceInfo>::columns, d, std::int64_t{id});
  count_row();
  return id;
}

TrackId TraceWriter::add_track(const TrackInfo& t) {
  begin_if_needed();
  const TrackId id = next_track_++;
  insert(stmts_->track, columns::Definition<TrackInfo>::columns, t, std::int64_t{id});
  count_row();
  return id;
}

void TraceWriter::rename_track(TrackId id, std::string_view name) {
  begin_if_needed();
  stmts_->track_name.bind(1, name).bind(2, id).run_rebinding();
}

// Buffers a row of an event table for its batch's next INSERT; returns the event's id.
template <class Record, class Batch>
std::int64_t TraceWriter::add_event(Batch& batch, std::uint64_t& rows, const Record& r) {
  const std::int64_t id = next_event_id_++;
  begin_if_needed();
  ++rows;
  batch.push(event_row<Record, std::tuple_size_v<typename Batch::Row>>(
      r, id, [this](const LaunchConfig& c) { return launch_id(c); }));
  count_row();
  return id;
}

std::int64_t TraceWriter::add(const CudaApiRecord& r) { return add_event(stmts_->cuda_api, cuda_api_rows_, r); }

std::int64_t TraceWriter::launch_id(const LaunchConfig& c) {
  if (c == LaunchConfig{}) return kNoValue;
  auto [it, inserted] = strings_->launch_ids.try_emplace(c, 0);
  if (!inserted) return it->second;
  it->second = static_cast<std::int64_t>(strings_->launch_ids.size());
  sqlite::Statement& st = stmts_->launch;
  st.bind(1, it->second);
  int col = 2;
  columns::for_each_field(c, [&](std::int32_t v, const char*) { st.bind(col++, v); });
  st.run_rebinding();
  count_row();
  return it->second;
}

std::int64_t TraceWriter::add(const GpuOpRecord& r) { return add_event(stmts_->gpu_op, gpu_op_rows_, r); }

std::int64_t TraceWriter::add(const AnnotationRecord& r) { return add_event(stmts_->annotation, annotation_rows_, r); }

void TraceWriter::add_arg(std::int64_t event, const EventArg& arg) {
  begin_if_needed();
  sqlite::Statement& st = stmts_->arg;
  st.bind(1, event).bind(2, arg.key).bind(3, static_cast<int>(arg.type));
  st.bind_null(4).bind_null(5).bind_null(6);
  switch (arg.type) {
    case ArgType::Int: st.bind(4, arg.int_value); break;
    case ArgType::Double: st.bind(5, arg.double_value); break;
    case ArgType::String:
    case ArgType::Json: st.bind(6, arg.text); break;
  }
  st.run_rebinding();
  count_row();
}

// Inserts a row of a table that is no event table and counts it; `own` as insert() takes it.
template <class Record, class... Own>
void TraceWriter::add_row(sqlite::Statement& st, const Record& r, Own... own) {
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
  stmts_->cuda_api.drain();
  stmts_->gpu_op.drain();
  stmts_->annotation.drain();
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
  std::unique_ptr<sqlite::Database> db = std::move(db_);
  db->close();
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

namespace {
// How replace_calibration() has always put a failure.
std::string calibration_words(const sqlite::Failure& f) {
  return (f.call == sqlite::Failure::Call::Open ? "cannot open: " : "cannot write the calibration table: ") +
         f.message;
}
} // namespace

void replace_calibration(const std::filesystem::path& path, const std::vector<CalibrationRecord>& records) {
  read_trace(path); // refuses, with a message naming the file, anything that is not a trace.db
  sqlite::Database db(path, sqlite::Access::ReadWrite, path.string(), calibration_words);
  sqlite::Statement st = db.prepare(insert_into<CalibrationRecord>({}, "INSERT OR REPLACE"));
  for (const auto& r : records) {
    bind_columns(st, columns::Definition<CalibrationRecord>::columns, r);
    st.run_rebinding();
  }
}

} // namespace dreamscope
