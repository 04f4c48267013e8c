#include "dreamscope/storage/trace_file.h"

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
    for (std::int32_t v : {c.grid[0], c.grid[1], c.grid[2], c.block[0], c.block[1], c.block[2], c.registers_per_thread,
                           c.shared_memory_static, c.shared_memory_dynamic}) {
      h = (h ^ static_cast<std::uint32_t>(v)) * 1099511628211ull;
    }
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

  static std::string insert_sql(const char* table, const char* columns, std::size_t rows) {
    std::string one_row = "(";
    for (std::size_t c = 0; c < Columns; ++c) one_row += c ? ",?" : "?";
    one_row += ")";
    std::string sql = std::string("INSERT INTO ") + table + "(" + columns + ") VALUES ";
    for (std::size_t r = 0; r < rows; ++r) sql += (r ? "," : "") + one_row;
    return sql;
  }
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
  RowBatch<12> cuda_api;
  RowBatch<11> gpu_op;
  RowBatch<9> annotation;
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
  exec(schema::kCreateTables);
  exec(schema::kCreateViews);
  exec("COMMIT");

  auto prepare = [&](sqlite3_stmt*& stmt, const char* sql) {
    if (sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt, nullptr) != SQLITE_OK) {
      fail(std::string("cannot prepare statement: ") + sqlite3_errmsg(db_));
    }
  };
  auto& s = *stmts_;
  prepare(s.string, "INSERT INTO string(id, value) VALUES(?,?)");
  prepare(s.meta, "INSERT OR REPLACE INTO meta(key, value) VALUES(?,?)");
  prepare(s.process,
          "INSERT OR REPLACE INTO process(id, pid, parent_pid, name, command, start, end, exit_status) "
          "VALUES(?,?,?,?,?,?,?,?)");
  prepare(s.process_rank,
          "INSERT OR REPLACE INTO process_rank(process, rank, local_rank, world_size, host, clock_offset) "
          "VALUES(?,?,?,?,?,?)");
  prepare(s.process_rank_delete, "DELETE FROM process_rank WHERE process = ?");
  prepare(s.device,
          "INSERT INTO device(id, process, ordinal, name, sm_count, core_clock_khz, memory_clock_khz, "
          "memory_bus_width_bits, memory_bandwidth_bytes_per_s, global_memory_bytes, "
          "compute_capability_major, compute_capability_minor) VALUES(?,?,?,?,?,?,?,?,?,?,?,?)");
  prepare(s.track, "INSERT INTO track(id, kind, process, tid, device, stream, name) VALUES(?,?,?,?,?,?,?)");
  prepare(s.track_name, "UPDATE track SET name = ? WHERE id = ?");
  auto prepare_batch = [&](auto& batch, const char* table, const char* columns) {
    using Batch = std::remove_reference_t<decltype(batch)>;
    prepare(batch.one, Batch::insert_sql(table, columns, 1).c_str());
    prepare(batch.many, Batch::insert_sql(table, columns, Batch::kRowsPerInsert).c_str());
    batch.pending.reserve(Batch::kRowsPerInsert);
  };
  prepare_batch(s.cuda_api, "cuda_api",
                "track, start, id, dur, name, cbid, kind, correlation, external_id, result, stream, event");
  prepare_batch(s.gpu_op, "gpu_op", "track, start, id, dur, kind, subkind, name, correlation, launch, bytes, event");
  prepare_batch(s.annotation, "annotation", "track, start, id, dur, name, domain, category, payload, external_id");
  prepare(s.launch,
          "INSERT INTO launch(id, grid_x, grid_y, grid_z, block_x, block_y, block_z, registers_per_thread, "
          "shared_memory_static, shared_memory_dynamic) VALUES(?,?,?,?,?,?,?,?,?,?)");
  prepare(s.flow,
          "INSERT INTO flow(kind, from_track, from_time, to_track, to_time, flow_id) VALUES(?,?,?,?,?,?)");
  prepare(s.calibration,
          "INSERT OR REPLACE INTO calibration(event_kind, cost_ns, samples, method) VALUES(?,?,?,?)");
  prepare(s.overhead, "INSERT INTO overhead(track, start, dur, kind) VALUES(?,?,?,?)");
  prepare(s.thread_load,
          "INSERT INTO thread_load(track, start, dur, cpu_ns, runqueue_ns, events, cost_samples, range_cost_ns, "
          "mark_cost_ns) VALUES(?,?,?,?,?,?,?,?,?)");
  prepare(s.memory_event,
          "INSERT INTO memory_event(track, time, id, device_type, device_id, addr, bytes, total_allocated, "
          "total_reserved) VALUES(?,?,?,?,?,?,?,?,?)");
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
void bind_process(sqlite3_stmt* st, std::uint32_t id, const ProcessInfo& p) {
  sqlite3_bind_int64(st, 1, id);
  sqlite3_bind_int64(st, 2, p.pid);
  bind_optional(st, 3, p.parent_pid);
  bind_text(st, 4, p.name);
  bind_text(st, 5, p.command);
  bind_optional(st, 6, p.start);
  bind_optional(st, 7, p.end);
  bind_optional(st, 8, p.exit_status);
}


// A process's place in a distributed job, in its own table (added after schema v1 was
// released, so older files and readers simply lack it): a row only for the processes that
// have one.
bool has_rank_row(const ProcessInfo& p) { return p.is_rank() || !p.host.empty() || p.clock_offset != 0; }

void bind_process_rank(sqlite3_stmt* st, std::uint32_t id, const ProcessInfo& p) {
  sqlite3_bind_int64(st, 1, id);
  bind_optional(st, 2, p.rank);
  bind_optional(st, 3, p.local_rank);
  bind_optional(st, 4, p.world_size);
  bind_text(st, 5, p.host);
  sqlite3_bind_int64(st, 6, p.clock_offset);
}
} // namespace

std::uint32_t TraceWriter::add_process(const ProcessInfo& p) {
  begin_if_needed();
  std::uint32_t id = next_process_++;
  bind_process(stmts_->process, id, p);
  DS_STEP(stmts_->process);
  count_row();
  if (has_rank_row(p)) {
    bind_process_rank(stmts_->process_rank, id, p);
    DS_STEP(stmts_->process_rank);
  }
  return id;
}

void TraceWriter::update_process(std::uint32_t id, const ProcessInfo& p) {
  begin_if_needed();
  bind_process(stmts_->process, id, p);
  DS_STEP(stmts_->process);
  count_row();
  if (has_rank_row(p)) {
    bind_process_rank(stmts_->process_rank, id, p);
    DS_STEP(stmts_->process_rank);
  } else {
    sqlite3_bind_int64(stmts_->process_rank_delete, 1, id);
    DS_STEP(stmts_->process_rank_delete);
  }
}

std::uint32_t TraceWriter::add_device(const DeviceInfo& d) {
  begin_if_needed();
  auto* st = stmts_->device;
  std::uint32_t id = next_device_++;
  sqlite3_bind_int64(st, 1, id);
  bind_index(st, 2, d.process);
  sqlite3_bind_int64(st, 3, d.ordinal);
  bind_text(st, 4, d.name);
  sqlite3_bind_int64(st, 5, d.sm_count);
  sqlite3_bind_int64(st, 6, d.core_clock_khz);
  sqlite3_bind_int64(st, 7, d.memory_clock_khz);
  sqlite3_bind_int64(st, 8, d.memory_bus_width_bits);
  sqlite3_bind_int64(st, 9, d.memory_bandwidth_bytes_per_s);
  sqlite3_bind_int64(st, 10, d.global_memory_bytes);
  sqlite3_bind_int64(st, 11, d.compute_capability_major);
  sqlite3_bind_int64(st, 12, d.compute_capability_minor);
  DS_STEP(st);
  count_row();
  return id;
}

TrackId TraceWriter::add_track(const TrackInfo& t) {
  begin_if_needed();
  auto* st = stmts_->track;
  TrackId id = next_track_++;
  sqlite3_bind_int64(st, 1, id);
  sqlite3_bind_int64(st, 2, static_cast<int>(t.kind));
  bind_index(st, 3, t.process);
  bind_optional(st, 4, t.tid);
  bind_index(st, 5, t.device);
  bind_optional(st, 6, t.stream);
  bind_text(st, 7, t.name);
  DS_STEP(st);
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

std::int64_t TraceWriter::add(const CudaApiRecord& r) {
  const std::int64_t id = next_event_id_;
  begin_if_needed();
  ++cuda_api_rows_;
  push_row<12>(db_, stmts_->cuda_api,
               {r.track, r.start, next_event_id_++, r.end - r.start, r.name, r.cbid, static_cast<int>(r.kind),
                r.correlation, r.external_id, r.result, r.stream, r.event},
               DS_FAIL);
  count_row();
  return id;
}

std::int64_t TraceWriter::launch_id(const LaunchConfig& c) {
  if (c == LaunchConfig{}) return kNoValue;
  auto [it, inserted] = strings_->launch_ids.try_emplace(c, 0);
  if (!inserted) return it->second;
  it->second = static_cast<std::int64_t>(strings_->launch_ids.size());
  auto* st = stmts_->launch;
  sqlite3_bind_int64(st, 1, it->second);
  for (int i = 0; i < 3; ++i) sqlite3_bind_int64(st, 2 + i, c.grid[i]);
  for (int i = 0; i < 3; ++i) sqlite3_bind_int64(st, 5 + i, c.block[i]);
  sqlite3_bind_int64(st, 8, c.registers_per_thread);
  sqlite3_bind_int64(st, 9, c.shared_memory_static);
  sqlite3_bind_int64(st, 10, c.shared_memory_dynamic);
  DS_STEP(st);
  count_row();
  return it->second;
}

std::int64_t TraceWriter::add(const GpuOpRecord& r) {
  const std::int64_t id = next_event_id_;
  begin_if_needed();
  ++gpu_op_rows_;
  const std::int64_t launch = launch_id(r.launch);
  push_row<11>(db_, stmts_->gpu_op,
               {r.track, r.start, next_event_id_++, r.end - r.start, static_cast<int>(r.kind), r.subkind, r.name,
                r.correlation, launch, r.bytes, r.event},
               DS_FAIL);
  count_row();
  return id;
}

std::int64_t TraceWriter::add(const AnnotationRecord& r) {
  const std::int64_t id = next_event_id_;
  begin_if_needed();
  ++annotation_rows_;
  push_row<9>(db_, stmts_->annotation,
              {r.track, r.start, next_event_id_++, r.end - r.start, r.name, r.domain, r.category, r.payload,
               r.external_id},
              DS_FAIL);
  count_row();
  return id;
}

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

void TraceWriter::add(const FlowRecord& r) {
  begin_if_needed();
  auto* st = stmts_->flow;
  sqlite3_bind_int64(st, 1, r.kind);
  sqlite3_bind_int64(st, 2, r.from_track);
  sqlite3_bind_int64(st, 3, r.from_time);
  sqlite3_bind_int64(st, 4, r.to_track);
  sqlite3_bind_int64(st, 5, r.to_time);
  bind_optional(st, 6, r.id);
  DS_STEP(st);
  count_row();
}

void TraceWriter::add(const CalibrationRecord& r) {
  begin_if_needed();
  auto* st = stmts_->calibration;
  bind_text(st, 1, r.event_kind);
  sqlite3_bind_double(st, 2, r.cost_ns);
  sqlite3_bind_int64(st, 3, r.samples);
  bind_text(st, 4, r.method);
  DS_STEP(st);
  count_row();
}

void TraceWriter::add(const OverheadRecord& r) {
  begin_if_needed();
  auto* st = stmts_->overhead;
  sqlite3_bind_int64(st, 1, r.track);
  sqlite3_bind_int64(st, 2, r.start);
  sqlite3_bind_int64(st, 3, r.end - r.start);
  sqlite3_bind_int64(st, 4, r.kind);
  DS_STEP(st);
  count_row();
}

void TraceWriter::add(const ThreadLoadRecord& r) {
  begin_if_needed();
  auto* st = stmts_->thread_load;
  // A cost below 0 means none was timed: NULL, as kNoValue is for the times.
  auto bind_cost = [&](int col, double cost) {
    if (cost < 0) {
      sqlite3_bind_null(st, col);
    } else {
      sqlite3_bind_double(st, col, cost);
    }
  };
  sqlite3_bind_int64(st, 1, r.track);
  sqlite3_bind_int64(st, 2, r.start);
  sqlite3_bind_int64(st, 3, r.end - r.start);
  bind_optional(st, 4, r.cpu_ns);
  bind_optional(st, 5, r.runqueue_ns);
  sqlite3_bind_int64(st, 6, r.events);
  sqlite3_bind_int64(st, 7, r.cost_samples);
  bind_cost(8, r.range_cost_ns);
  bind_cost(9, r.mark_cost_ns);
  DS_STEP(st);
  count_row();
}

void TraceWriter::add(const MemoryEventRecord& r) {
  begin_if_needed();
  auto* st = stmts_->memory_event;
  sqlite3_bind_int64(st, 1, r.track);
  sqlite3_bind_int64(st, 2, r.time);
  sqlite3_bind_int64(st, 3, next_memory_event_id_++);
  bind_optional(st, 4, r.device_type);
  bind_optional(st, 5, r.device_id);
  bind_optional(st, 6, r.addr);
  sqlite3_bind_int64(st, 7, r.bytes);
  bind_optional(st, 8, r.total_allocated);
  bind_optional(st, 9, r.total_reserved);
  DS_STEP(st);
  count_row();
}

void TraceWriter::drain_pending_rows() {
  drain<12>(db_, stmts_->cuda_api, DS_FAIL);
  drain<11>(db_, stmts_->gpu_op, DS_FAIL);
  drain<9>(db_, stmts_->annotation, DS_FAIL);
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
  if (sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO calibration(event_kind, cost_ns, samples, method) VALUES(?,?,?,?)",
                         -1, &st, nullptr) != SQLITE_OK) {
    fail("cannot write the calibration table");
  }
  for (const auto& r : records) {
    bind_text(st, 1, r.event_kind);
    sqlite3_bind_double(st, 2, r.cost_ns);
    sqlite3_bind_int64(st, 3, r.samples);
    bind_text(st, 4, r.method);
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
