#include "dreamscope/storage/limits.h"
#include "dreamscope/storage/trace_file.h"

#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <exception>
#include <fstream>
#include <future>
#include <memory>
#include <unordered_map>

namespace dreamscope {

namespace {

// A row as a result row of a statement, or as the arguments of an application function
// (Reader::scan): the same accessors, so that a table's row reads alike either way.
struct StatementRow {
  sqlite3_stmt* s;
  std::int64_t int64(int col) const { return sqlite3_column_int64(s, col); }
  int int32(int col) const { return sqlite3_column_int(s, col); }
  double real(int col) const { return sqlite3_column_double(s, col); }
  bool is_null(int col) const { return sqlite3_column_type(s, col) == SQLITE_NULL; }
  bool is_integer(int col) const { return sqlite3_column_type(s, col) == SQLITE_INTEGER; }
  std::string text(int col) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s, col));
    return p ? std::string(p, static_cast<std::size_t>(sqlite3_column_bytes(s, col))) : std::string();
  }
};

struct ValueRow {
  sqlite3_value** v;
  std::int64_t int64(int col) const { return sqlite3_value_int64(v[col]); }
  int int32(int col) const { return sqlite3_value_int(v[col]); }
  double real(int col) const { return sqlite3_value_double(v[col]); }
  bool is_null(int col) const { return sqlite3_value_type(v[col]) == SQLITE_NULL; }
  bool is_integer(int col) const { return sqlite3_value_type(v[col]) == SQLITE_INTEGER; }
  std::string text(int col) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_value_text(v[col]));
    return p ? std::string(p, static_cast<std::size_t>(sqlite3_value_bytes(v[col]))) : std::string();
  }
};

class Reader {
 public:
  explicit Reader(const std::filesystem::path& path) : path_(path) {}
  ~Reader() {
    if (db_) sqlite3_close_v2(db_);
  }

  [[noreturn]] void fail(const std::string& what) const { throw TraceError(path_.string() + ": " + what); }

  [[noreturn]] void fail_sqlite(int rc) const {
    int primary = rc & 0xff;
    if (primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB) {
      fail(std::string("damaged or truncated trace file (") + sqlite3_errstr(rc) + ")");
    }
    if (primary == SQLITE_IOERR) fail(std::string("I/O error while reading (") + sqlite3_errmsg(db_) + ")");
    fail(std::string("cannot read: ") + (db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc)));
  }

  void open() {
    std::error_code ec;
    if (!std::filesystem::exists(path_, ec)) fail("no such file");
    if (std::filesystem::is_directory(path_, ec)) fail("is a directory, not a trace file");
    {
      std::ifstream in(path_, std::ios::binary);
      if (!in) fail(std::string("cannot open: ") + std::strerror(errno));
      char header[16] = {};
      in.read(header, sizeof header);
      if (in.gcount() == 0) fail("empty file, not a trace");
      if (in.gcount() < 16 || std::memcmp(header, "SQLite format 3", 16) != 0) {
        fail("not a SQLite database, so not a dreamscope trace");
      }
    }
    int rc = sqlite3_open_v2(path_.c_str(), &db_, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr);
    if (rc != SQLITE_OK) fail_sqlite(rc);
  }

  sqlite3_stmt* prepare(const char* sql) {
    sqlite3_stmt* s = nullptr;
    int rc = sqlite3_prepare_v2(db_, sql, -1, &s, nullptr);
    if (rc != SQLITE_OK) {
      sqlite3_finalize(s);
      fail_sqlite(rc);
    }
    return s;
  }

  // Runs `sql`, calling `row` with a StatementRow for each result row. The statement is
  // finalized however the loop ends: a row that makes the reader refuse the file must not leak
  // it (and with it the connection, which sqlite3_close_v2 keeps open while a statement lives).
  template <typename F>
  void each(const char* sql, F&& row) {
    const std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)> s(prepare(sql), sqlite3_finalize);
    int rc;
    while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) row(StatementRow{s.get()});
    if (rc != SQLITE_DONE) fail_sqlite(rc);
  }

  // Calls `row` with a ValueRow of `columns` for each row of `table`, in the order its b-tree
  // holds them (a WITHOUT ROWID table's primary key, a rowid table's rowid). The rows reach
  // `row` as the arguments of an aggregate function over the table rather than as result rows:
  // SQLite hands a function its arguments as values, so a row costs one call per column of
  // sqlite3_value_*, not of sqlite3_column_*, whose per-call checks cost as much as decoding
  // the row itself (195 against 341 ns of CPU for a gpu_op row: storage_bench
  // --benchmark_filter=GpuOpRows). NOT INDEXED keeps the table's own order even if the file
  // carries an index of its own. An exception thrown by `row` (the file refused) stops the
  // scan and is rethrown here: it must not unwind through SQLite's C frames.
  template <typename F>
  void scan(const char* table, const std::string& columns, F&& row) {
    struct Sink {
      F* row;
      std::exception_ptr error;
    } sink{&row, nullptr};
    const auto step = [](sqlite3_context* ctx, int, sqlite3_value** values) {
      auto* sink = static_cast<Sink*>(sqlite3_user_data(ctx));
      try {
        (*sink->row)(ValueRow{values});
      } catch (...) {
        sink->error = std::current_exception();
        sqlite3_result_error(ctx, "row refused", -1);
      }
    };
    const auto final = [](sqlite3_context* ctx) { sqlite3_result_null(ctx); };
    int rc = sqlite3_create_function_v2(db_, "dreamscope_row", -1, SQLITE_UTF8 | SQLITE_DIRECTONLY, &sink, nullptr,
                                        +step, +final, nullptr);
    if (rc != SQLITE_OK) fail_sqlite(rc);
    // The function points at this frame's sink: it goes with the frame, however the scan ends.
    const auto unregister = [](sqlite3* db) {
      sqlite3_create_function_v2(db, "dreamscope_row", -1, SQLITE_UTF8, nullptr, nullptr, nullptr, nullptr, nullptr);
    };
    const std::unique_ptr<sqlite3, decltype(unregister)> registered(db_, unregister);
    const std::string sql = "SELECT dreamscope_row(" + columns + ") FROM " + table + " NOT INDEXED";
    const std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)> s(prepare(sql.c_str()), sqlite3_finalize);
    while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) {
    }
    if (sink.error) std::rethrow_exception(sink.error);
    if (rc != SQLITE_DONE) fail_sqlite(rc);
  }

  bool has_table(const char* name) {
    bool found = false;
    each("SELECT name FROM sqlite_schema WHERE type IN ('table','view')", [&](const StatementRow& s) {
      if (s.text(0) == name) found = true;
    });
    return found;
  }

  sqlite3* db_ = nullptr;
  std::filesystem::path path_;
};

template <typename Row>
std::int64_t opt_int(const Row& s, int col) {
  return s.is_null(col) ? kNoValue : s.int64(col);
}

// An event's end from its start and stored duration. A sum past int64 saturates, as SQLite's
// own `start + dur` turned into a real would have; build() then refuses the row as out of range.
TimeNs end_of(TimeNs start, std::int64_t dur) {
  TimeNs end = 0;
  if (__builtin_add_overflow(start, dur, &end)) return dur > 0 ? INT64_MAX : INT64_MIN;
  return end;
}

// A table's own ids (string, process, device, track) to the builder's indices. Writers make
// them dense, so a vector serves; a file may hold any ids, so sparse ones go to a hash map
// rather than sizing a vector by the largest id a file claims.
class IdMap {
 public:
  void set(std::int64_t id, std::uint32_t value) {
    const auto i = static_cast<std::uint64_t>(id);
    if (i < dense_.size()) {
      dense_[i] = value;
    } else if (i == dense_.size() && sparse_.empty()) {
      dense_.push_back(value);
    } else if (i < 2 * dense_.size() + 4096 && sparse_.empty()) {
      dense_.resize(i + 1, kNoIndex);
      dense_[i] = value;
    } else {
      sparse_[id] = value;
    }
  }
  std::uint32_t get(std::int64_t id) const {
    const auto i = static_cast<std::uint64_t>(id);
    if (i < dense_.size()) return dense_[i];
    const auto it = sparse_.find(id);
    return it == sparse_.end() ? kNoIndex : it->second;
  }

 private:
  std::vector<std::uint32_t> dense_;
  std::unordered_map<std::int64_t, std::uint32_t> sparse_;
};

} // namespace

bool looks_like_sqlite(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  char header[16] = {};
  in.read(header, sizeof header);
  return in.gcount() == 16 && std::memcmp(header, "SQLite format 3", 16) == 0;
}

Trace read_trace(const std::filesystem::path& path, const std::function<void(const ReadProgress&)>& progress) {
  Reader r(path);
  r.open();
  if (!r.has_table("meta")) r.fail("a SQLite database but not a dreamscope trace (it has no meta table)");

  TraceBuilder b;
  b.set_origin(path.string());
  std::string version;
  r.each("SELECT key, value FROM meta", [&](const auto& s) {
    std::string k = s.text(0);
    std::string v = s.text(1);
    if (k == "schema_version") version = v;
    b.set_meta(k, std::move(v));
  });
  if (version.empty()) r.fail("a SQLite database but not a dreamscope trace (meta has no schema_version)");
  int v = 0;
  try {
    v = std::stoi(version);
  } catch (const std::exception&) {
    r.fail("meta.schema_version is " + limits::quoted(version) + ", not a number");
  }
  if (v != kSchemaVersion) {
    r.fail("trace schema version " + version + " is not one this dreamscope reads (it reads version " +
           std::to_string(kSchemaVersion) + (v > kSchemaVersion ? "); a newer dreamscope wrote it" : ")"));
  }

  // A cleanly closed trace says how many rows it holds; counting a table would be a full scan.
  // The counts only size reservations, and a damaged meta may claim anything: no table holds
  // more rows than the file has bytes.
  std::error_code size_error;
  const auto file_bytes = static_cast<std::size_t>(std::filesystem::file_size(path, size_error));
  const std::size_t max_rows = size_error ? 0 : file_bytes / 8;
  std::size_t n_api = 0, n_gpu = 0, n_ann = 0;
  r.each("SELECT key, value FROM meta WHERE key IN ('rows.cuda_api', 'rows.gpu_op', 'rows.annotation')",
         [&](const auto& s) {
           std::string k = s.text(0);
           auto n = static_cast<std::size_t>(std::strtoull(s.text(1).c_str(), nullptr, 10));
           (k == "rows.cuda_api" ? n_api : k == "rows.gpu_op" ? n_gpu : n_ann) = std::min(n, max_rows);
         });
  ReadProgress prog;
  prog.rows_total = n_api + n_gpu + n_ann;

  // A table's id column: an integer in [0, limits::kMaxId], or the file is refused.
  auto table_id = [&](const auto& s, int col, const char* table) -> std::int64_t {
    const std::int64_t id = s.int64(col);
    if (!s.is_integer(col) || id < 0 || id > limits::kMaxId) {
      r.fail(std::string("the ") + table + " table has id " + limits::quoted(s.text(col), 24) +
             ", not an integer in [0, 2^32-2]");
    }
    return id;
  };

  // String 0 is the empty string, whether or not the file lists it.
  IdMap string_map;
  string_map.set(0, 0);
  r.each("SELECT id, value FROM string ORDER BY id", [&](const auto& s) {
    string_map.set(table_id(s, 0, "string"), b.intern(s.text(1)));
  });
  auto str = [&](const auto& s, int col) -> StringId {
    const std::int64_t id = s.int64(col);
    const std::uint32_t mapped = id < 0 || id > limits::kMaxId ? kNoIndex : string_map.get(id);
    if (mapped == kNoIndex) r.fail("a row names string " + std::to_string(id) + ", which the string table lacks");
    return mapped;
  };

  IdMap process_map, device_map, track_map;
  // A reference to another table's row: NULL where the column allows it, else a known id.
  auto lookup = [&](const IdMap& map, const auto& s, int col, const char* what, bool nullable) -> std::uint32_t {
    if (nullable && s.is_null(col)) return kNoIndex;
    const std::int64_t id = s.int64(col);
    const std::uint32_t mapped = id < 0 || id > limits::kMaxId ? kNoIndex : map.get(id);
    if (mapped == kNoIndex) r.fail(std::string("a row names unknown ") + what + " " + std::to_string(id));
    return mapped;
  };

  r.each("SELECT id, pid, parent_pid, name, command, start, end, exit_status FROM process ORDER BY id",
         [&](const auto& s) {
           ProcessInfo p;
           p.pid = s.int64(1);
           p.parent_pid = opt_int(s, 2);
           p.name = s.text(3);
           p.command = s.text(4);
           p.start = opt_int(s, 5);
           p.end = opt_int(s, 6);
           p.exit_status = opt_int(s, 7);
           const std::int64_t id = table_id(s, 0, "process");
           process_map.set(id, b.add_process(std::move(p)));
         });
  if (r.has_table("process_rank")) {
    r.each("SELECT process, rank, local_rank, world_size, host, clock_offset FROM process_rank ORDER BY process",
           [&](const auto& s) {
             ProcessInfo& p = b.process(lookup(process_map, s, 0, "process", false));
             p.rank = opt_int(s, 1);
             p.local_rank = opt_int(s, 2);
             p.world_size = opt_int(s, 3);
             p.host = s.text(4);
             p.clock_offset = s.int64(5);
           });
  }
  r.each("SELECT id, process, ordinal, name, sm_count, core_clock_khz, memory_clock_khz, memory_bus_width_bits, "
         "memory_bandwidth_bytes_per_s, global_memory_bytes, compute_capability_major, compute_capability_minor "
         "FROM device ORDER BY id",
         [&](const auto& s) {
           DeviceInfo d;
           d.process = lookup(process_map, s, 1, "process", true);
           d.ordinal = s.int64(2);
           d.name = s.text(3);
           d.sm_count = s.int64(4);
           d.core_clock_khz = s.int64(5);
           d.memory_clock_khz = s.int64(6);
           d.memory_bus_width_bits = s.int64(7);
           d.memory_bandwidth_bytes_per_s = s.int64(8);
           d.global_memory_bytes = s.int64(9);
           d.compute_capability_major = s.int64(10);
           d.compute_capability_minor = s.int64(11);
           const std::int64_t id = table_id(s, 0, "device");
           device_map.set(id, b.add_device(std::move(d)));
         });
  r.each("SELECT id, kind, process, tid, device, stream, name FROM track ORDER BY id", [&](const auto& s) {
    TrackInfo t;
    t.kind = s.int32(1) == 1 ? TrackKind::GpuStream : TrackKind::CpuThread;
    t.process = lookup(process_map, s, 2, "process", true);
    t.tid = opt_int(s, 3);
    t.device = lookup(device_map, s, 4, "device", true);
    t.stream = opt_int(s, 5);
    t.name = s.text(6);
    const std::int64_t id = table_id(s, 0, "track");
    track_map.set(id, b.add_track(std::move(t)));
  });
  auto track = [&](const auto& s, int col) { return lookup(track_map, s, col, "track", false); };

  // Args name their event by id; only when there are any are event ids collected to map them.
  // Which table each arg's event is in is known only once it is read, so every table gets room
  // for all of them: room that is never written is address space, not memory, and an imported
  // trace has hundreds of thousands of args (625 k for the MTIA trace), whose columns grew by
  // doubling, copied and faulted in page by page, in half of reading the file.
  std::int64_t n_args = 0;
  if (r.has_table("arg")) r.each("SELECT count(*) FROM arg", [&](const auto& s) { n_args = s.int64(0); });
  const bool has_args = n_args > 0;
  b.reserve(n_api, n_gpu, n_ann, has_args ? std::min(static_cast<std::size_t>(n_args), max_rows) : 0);
  struct EventRow {
    std::int64_t id;
    EventTable table;
    EventIndex row;
    bool operator<(const EventRow& o) const { return id < o.id; }
  };

  // The three event tables are most of a file, and SQLite decodes one row at a time on one
  // thread: each table is read on a thread of its own, with its own connection. They fill
  // disjoint columns of the builder (TraceBuilder::add of different event tables may run at
  // once; the reservations above are made first), and each keeps its rows' ids for the args.
  // Rows arrive in the b-tree's order, the primary key (track, start, id), so build() needs no sort.
  std::atomic<std::size_t> rows_read{0};
  // A cache line each: every thread counts its rows as it reads them.
  struct alignas(64) TableRows {
    std::vector<EventRow> ids;
    std::size_t counted = 0;
    void count(std::atomic<std::size_t>& total) {
      if ((++counted & 0xfff) == 0) total.fetch_add(0x1000, std::memory_order_relaxed);
    }
  };
  TableRows api_rows, gpu_rows, ann_rows;
  // A row's id is read only for the args: a column costs as much as any other to decode.
  auto columns = [&](const char* event_columns) { return std::string(event_columns) + (has_args ? ", id" : ""); };
  auto remember = [&](TableRows& rows, const auto& s, int col, EventTable table, EventIndex row) {
    if (has_args) rows.ids.push_back({s.int64(col), table, row});
    rows.count(rows_read);
  };
  auto read_cuda_api = [&](Reader& c) {
    c.scan("cuda_api", columns("track, start, dur, name, cbid, kind, correlation, external_id, result, stream, event"),
           [&](const auto& s) {
             CudaApiRecord a;
             a.track = track(s, 0);
             a.start = s.int64(1);
             a.end = end_of(a.start, s.int64(2));
             a.name = str(s, 3);
             a.cbid = s.int32(4);
             a.kind = s.int32(5) == 1 ? ApiKind::Driver : ApiKind::Runtime;
             a.correlation = opt_int(s, 6);
             a.external_id = opt_int(s, 7);
             a.result = s.int32(8);
             a.stream = opt_int(s, 9);
             a.event = opt_int(s, 10);
             remember(api_rows, s, 11, EventTable::CudaApi, b.add(a));
           });
  };
  auto read_gpu_ops = [&](Reader& c) {
    // Each configuration is interned once, by its row: kernels name it by that row's id.
    IdMap launch_map;
    c.each("SELECT id, grid_x, grid_y, grid_z, block_x, block_y, block_z, registers_per_thread, "
           "shared_memory_static, shared_memory_dynamic FROM launch ORDER BY id",
           [&](const auto& s) {
             LaunchConfig l;
             for (int i = 0; i < 3; ++i) l.grid[i] = s.int32(1 + i);
             for (int i = 0; i < 3; ++i) l.block[i] = s.int32(4 + i);
             l.registers_per_thread = s.int32(7);
             l.shared_memory_static = s.int32(8);
             l.shared_memory_dynamic = s.int32(9);
             launch_map.set(table_id(s, 0, "launch"), b.intern_launch(l));
           });
    c.scan("gpu_op", columns("track, start, dur, kind, subkind, name, correlation, launch, bytes, event"),
           [&](const auto& s) {
             GpuOpRecord g;
             g.track = track(s, 0);
             g.start = s.int64(1);
             g.end = end_of(g.start, s.int64(2));
             int kind = s.int32(3);
             if (kind < 0 || kind > 3) r.fail("gpu_op row with unknown kind " + std::to_string(kind));
             g.kind = static_cast<GpuOpKind>(kind);
             g.subkind = static_cast<std::uint8_t>(s.int32(4));
             g.name = str(s, 5);
             g.correlation = opt_int(s, 6);
             std::uint32_t launch = 0;
             if (!s.is_null(7)) {
               const std::int64_t id = s.int64(7);
               launch = id < 0 || id > limits::kMaxId ? kNoIndex : launch_map.get(id);
               if (launch == kNoIndex) r.fail("a gpu_op row names launch " + std::to_string(id) + ", which the launch table lacks");
             }
             g.bytes = s.int64(8);
             g.event = opt_int(s, 9);
             remember(gpu_rows, s, 10, EventTable::GpuOp, b.add(g, launch));
           });
  };
  auto read_annotations = [&](Reader& c) {
    c.scan("annotation", columns("track, start, dur, name, domain, category, payload, external_id"),
           [&](const auto& s) {
             AnnotationRecord a;
             a.track = track(s, 0);
             a.start = s.int64(1);
             a.end = end_of(a.start, s.int64(2));
             a.name = str(s, 3);
             a.domain = str(s, 4);
             a.category = str(s, 5);
             a.payload = opt_int(s, 6);
             a.external_id = opt_int(s, 7);
             remember(ann_rows, s, 8, EventTable::Annotation, b.add(a));
           });
  };
  {
    // The calling thread reports progress while the three read; every thread is waited for
    // before an error goes on, since they write into the builder.
    auto on_own_connection = [&](auto read) {
      return std::async(std::launch::async, [&path, read]() {
        Reader c(path);
        c.open();
        read(c);
      });
    };
    std::future<void> reads[] = {on_own_connection(read_cuda_api), on_own_connection(read_gpu_ops),
                                 on_own_connection(read_annotations)};
    std::exception_ptr error;
    for (std::future<void>& f : reads) {
      while (progress && f.wait_for(std::chrono::milliseconds(50)) != std::future_status::ready) {
        prog.rows_read = rows_read.load(std::memory_order_relaxed);
        progress(prog);
      }
      try {
        f.get();
      } catch (...) {
        if (!error) error = std::current_exception();
      }
    }
    if (error) std::rethrow_exception(error);
  }
  prog.rows_read = api_rows.counted + gpu_rows.counted + ann_rows.counted;
  std::vector<EventRow> event_rows = std::move(api_rows.ids);
  for (TableRows* t : {&gpu_rows, &ann_rows}) event_rows.insert(event_rows.end(), t->ids.begin(), t->ids.end());
  if (has_args) {
    std::sort(event_rows.begin(), event_rows.end());
    r.scan("arg", "event, key, type, int_value, real_value, text", [&](const auto& s) {
      const std::int64_t event = s.int64(0);
      auto it = std::lower_bound(event_rows.begin(), event_rows.end(), EventRow{event, EventTable::CudaApi, 0});
      if (it == event_rows.end() || it->id != event) r.fail("an arg names event " + std::to_string(event) + ", which no event table holds");
      EventArg arg;
      arg.key = str(s, 1);
      const int type = s.int32(2);
      if (type < 0 || type > 3) r.fail("arg row with unknown type " + std::to_string(type));
      arg.type = static_cast<ArgType>(type);
      if (arg.type == ArgType::Int) arg.int_value = s.int64(3);
      if (arg.type == ArgType::Double) arg.double_value = s.real(4);
      if (arg.type == ArgType::String || arg.type == ArgType::Json) arg.text = str(s, 5);
      b.add_arg(it->table, it->row, arg);
    });
  }
  r.each("SELECT kind, from_track, from_time, to_track, to_time, flow_id FROM flow ORDER BY id", [&](const auto& s) {
    FlowRecord f;
    f.kind = str(s, 0);
    f.from_track = track(s, 1);
    f.from_time = s.int64(2);
    f.to_track = track(s, 3);
    f.to_time = s.int64(4);
    f.id = opt_int(s, 5);
    b.add(f);
  });
  r.each("SELECT event_kind, cost_ns, samples, method FROM calibration ORDER BY event_kind", [&](const auto& s) {
    CalibrationRecord c;
    c.event_kind = s.text(0);
    c.cost_ns = s.real(1);
    c.samples = s.int64(2);
    c.method = s.text(3);
    b.add(c);
  });
  r.each("SELECT track, start, start + dur, kind FROM overhead ORDER BY id", [&](const auto& s) {
    OverheadRecord o;
    o.track = track(s, 0);
    o.start = s.int64(1);
    o.end = s.int64(2);
    o.kind = str(s, 3);
    b.add(o);
  });
  // Files written before thread loads were recorded have no such table: none were measured.
  if (r.has_table("thread_load")) {
    auto cost = [](const auto& s, int col) {
      return s.is_null(col) ? -1.0 : s.real(col);
    };
    r.each("SELECT track, start, start + dur, cpu_ns, runqueue_ns, events, cost_samples, range_cost_ns, mark_cost_ns "
           "FROM thread_load ORDER BY track, start, rowid",
           [&](const auto& s) {
             ThreadLoadRecord l;
             l.track = track(s, 0);
             l.start = s.int64(1);
             l.end = s.int64(2);
             l.cpu_ns = opt_int(s, 3);
             l.runqueue_ns = opt_int(s, 4);
             l.events = s.int64(5);
             l.cost_samples = s.int64(6);
             l.range_cost_ns = cost(s, 7);
             l.mark_cost_ns = cost(s, 8);
             b.add(l);
           });
  }
  // Files written before memory events were kept have no such table: they hold none.
  if (r.has_table("memory_event")) {
    r.each("SELECT track, time, device_type, device_id, addr, bytes, total_allocated, total_reserved "
           "FROM memory_event ORDER BY time, id",
           [&](const auto& s) {
             MemoryEventRecord m;
             m.track = track(s, 0);
             m.time = s.int64(1);
             m.device_type = opt_int(s, 2);
             m.device_id = opt_int(s, 3);
             m.addr = opt_int(s, 4);
             m.bytes = s.int64(5);
             m.total_allocated = opt_int(s, 6);
             m.total_reserved = opt_int(s, 7);
             b.add(m);
           });
  }
  if (progress) progress(prog);
  return std::move(b).build();
}

} // namespace dreamscope
