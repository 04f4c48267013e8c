#include "dreamscope/limits.h"
#include "dreamscope/trace_file.h"

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

  // Runs `sql`, calling `row` for each result row. The statement is finalized however the
  // loop ends: a row that makes the reader refuse the file must not leak it (and with it the
  // connection, which sqlite3_close_v2 keeps open while a statement lives).
  template <typename F>
  void each(const char* sql, F&& row) {
    const std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)> s(prepare(sql), sqlite3_finalize);
    int rc;
    while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) row(s.get());
    if (rc != SQLITE_DONE) fail_sqlite(rc);
  }

  bool has_table(const char* name) {
    bool found = false;
    each("SELECT name FROM sqlite_schema WHERE type IN ('table','view')", [&](sqlite3_stmt* s) {
      const auto* n = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
      if (n && std::strcmp(n, name) == 0) found = true;
    });
    return found;
  }

  sqlite3* db_ = nullptr;
  std::filesystem::path path_;
};

std::int64_t opt_int(sqlite3_stmt* s, int col) {
  return sqlite3_column_type(s, col) == SQLITE_NULL ? kNoValue : sqlite3_column_int64(s, col);
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

std::string text(sqlite3_stmt* s, int col) {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s, col));
  return p ? std::string(p, static_cast<std::size_t>(sqlite3_column_bytes(s, col))) : std::string();
}

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
  r.each("SELECT key, value FROM meta", [&](sqlite3_stmt* s) {
    std::string k = text(s, 0);
    std::string v = text(s, 1);
    if (k == "schema_version") version = v;
    b.set_meta(k, std::move(v));
  });
  if (version.empty()) r.fail("a SQLite database but not a dreamscope trace (meta has no schema_version)");
  int v = 0;
  try {
    v = std::stoi(version);
  } catch (const std::exception&) {
    r.fail("meta.schema_version is '" + version + "', not a number");
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
         [&](sqlite3_stmt* s) {
           std::string k = text(s, 0);
           auto n = static_cast<std::size_t>(std::strtoull(text(s, 1).c_str(), nullptr, 10));
           (k == "rows.cuda_api" ? n_api : k == "rows.gpu_op" ? n_gpu : n_ann) = std::min(n, max_rows);
         });
  ReadProgress prog;
  prog.rows_total = n_api + n_gpu + n_ann;

  // A table's id column: an integer in [0, limits::kMaxId], or the file is refused.
  auto table_id = [&](sqlite3_stmt* s, int col, const char* table) -> std::int64_t {
    const std::int64_t id = sqlite3_column_int64(s, col);
    if (sqlite3_column_type(s, col) != SQLITE_INTEGER || id < 0 || id > limits::kMaxId) {
      r.fail(std::string("the ") + table + " table has id " + limits::quoted(text(s, col), 24) +
             ", not an integer in [0, 2^32-2]");
    }
    return id;
  };

  // String 0 is the empty string, whether or not the file lists it.
  IdMap string_map;
  string_map.set(0, 0);
  r.each("SELECT id, value FROM string ORDER BY id", [&](sqlite3_stmt* s) {
    string_map.set(table_id(s, 0, "string"), b.intern(text(s, 1)));
  });
  auto str = [&](sqlite3_stmt* s, int col) -> StringId {
    const std::int64_t id = sqlite3_column_int64(s, col);
    const std::uint32_t mapped = id < 0 || id > limits::kMaxId ? kNoIndex : string_map.get(id);
    if (mapped == kNoIndex) r.fail("a row names string " + std::to_string(id) + ", which the string table lacks");
    return mapped;
  };

  IdMap process_map, device_map, track_map;
  // A reference to another table's row: NULL where the column allows it, else a known id.
  auto lookup = [&](const IdMap& map, sqlite3_stmt* s, int col, const char* what, bool nullable) -> std::uint32_t {
    if (nullable && sqlite3_column_type(s, col) == SQLITE_NULL) return kNoIndex;
    const std::int64_t id = sqlite3_column_int64(s, col);
    const std::uint32_t mapped = id < 0 || id > limits::kMaxId ? kNoIndex : map.get(id);
    if (mapped == kNoIndex) r.fail(std::string("a row names unknown ") + what + " " + std::to_string(id));
    return mapped;
  };

  r.each("SELECT id, pid, parent_pid, name, command, start, end, exit_status FROM process ORDER BY id",
         [&](sqlite3_stmt* s) {
           ProcessInfo p;
           p.pid = sqlite3_column_int64(s, 1);
           p.parent_pid = opt_int(s, 2);
           p.name = text(s, 3);
           p.command = text(s, 4);
           p.start = opt_int(s, 5);
           p.end = opt_int(s, 6);
           p.exit_status = opt_int(s, 7);
           const std::int64_t id = table_id(s, 0, "process");
           process_map.set(id, b.add_process(std::move(p)));
         });
  if (r.has_table("process_rank")) {
    r.each("SELECT process, rank, local_rank, world_size, host, clock_offset FROM process_rank ORDER BY process",
           [&](sqlite3_stmt* s) {
             ProcessInfo& p = b.process(lookup(process_map, s, 0, "process", false));
             p.rank = opt_int(s, 1);
             p.local_rank = opt_int(s, 2);
             p.world_size = opt_int(s, 3);
             p.host = text(s, 4);
             p.clock_offset = sqlite3_column_int64(s, 5);
           });
  }
  r.each("SELECT id, process, ordinal, name, sm_count, core_clock_khz, memory_clock_khz, memory_bus_width_bits, "
         "memory_bandwidth_bytes_per_s, global_memory_bytes, compute_capability_major, compute_capability_minor "
         "FROM device ORDER BY id",
         [&](sqlite3_stmt* s) {
           DeviceInfo d;
           d.process = lookup(process_map, s, 1, "process", true);
           d.ordinal = sqlite3_column_int64(s, 2);
           d.name = text(s, 3);
           d.sm_count = sqlite3_column_int64(s, 4);
           d.core_clock_khz = sqlite3_column_int64(s, 5);
           d.memory_clock_khz = sqlite3_column_int64(s, 6);
           d.memory_bus_width_bits = sqlite3_column_int64(s, 7);
           d.memory_bandwidth_bytes_per_s = sqlite3_column_int64(s, 8);
           d.global_memory_bytes = sqlite3_column_int64(s, 9);
           d.compute_capability_major = sqlite3_column_int64(s, 10);
           d.compute_capability_minor = sqlite3_column_int64(s, 11);
           const std::int64_t id = table_id(s, 0, "device");
           device_map.set(id, b.add_device(std::move(d)));
         });
  r.each("SELECT id, kind, process, tid, device, stream, name FROM track ORDER BY id", [&](sqlite3_stmt* s) {
    TrackInfo t;
    t.kind = sqlite3_column_int(s, 1) == 1 ? TrackKind::GpuStream : TrackKind::CpuThread;
    t.process = lookup(process_map, s, 2, "process", true);
    t.tid = opt_int(s, 3);
    t.device = lookup(device_map, s, 4, "device", true);
    t.stream = opt_int(s, 5);
    t.name = text(s, 6);
    const std::int64_t id = table_id(s, 0, "track");
    track_map.set(id, b.add_track(std::move(t)));
  });
  auto track = [&](sqlite3_stmt* s, int col) { return lookup(track_map, s, col, "track", false); };

  b.reserve(n_api, n_gpu, n_ann);

  // Args name their event by id; only when there are any are event ids collected to map them.
  bool has_args = false;
  if (r.has_table("arg")) r.each("SELECT EXISTS(SELECT 1 FROM arg)", [&](sqlite3_stmt* s) { has_args = sqlite3_column_int(s, 0) != 0; });
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
  // Rows arrive in primary-key order, (track, start, id), so build() needs no sort.
  std::atomic<std::size_t> rows_read{0};
  struct TableRows {
    std::vector<EventRow> ids;
    std::size_t counted = 0;
    void count(std::atomic<std::size_t>& total) {
      if ((++counted & 0xfff) == 0) total.fetch_add(0x1000, std::memory_order_relaxed);
    }
  };
  TableRows api_rows, gpu_rows, ann_rows;
  auto remember = [&](TableRows& rows, sqlite3_stmt* s, int col, EventTable table, EventIndex row) {
    if (has_args) rows.ids.push_back({sqlite3_column_int64(s, col), table, row});
    rows.count(rows_read);
  };
  auto read_cuda_api = [&](Reader& c) {
    c.each("SELECT track, start, start + dur, name, cbid, kind, correlation, external_id, result, stream, event, id "
           "FROM cuda_api ORDER BY track, start, id",
           [&](sqlite3_stmt* s) {
             CudaApiRecord a;
             a.track = track(s, 0);
             a.start = sqlite3_column_int64(s, 1);
             a.end = sqlite3_column_int64(s, 2);
             a.name = str(s, 3);
             a.cbid = sqlite3_column_int(s, 4);
             a.kind = sqlite3_column_int(s, 5) == 1 ? ApiKind::Driver : ApiKind::Runtime;
             a.correlation = opt_int(s, 6);
             a.external_id = opt_int(s, 7);
             a.result = sqlite3_column_int(s, 8);
             a.stream = opt_int(s, 9);
             a.event = opt_int(s, 10);
             remember(api_rows, s, 11, EventTable::CudaApi, b.add(a));
           });
  };
  auto read_gpu_ops = [&](Reader& c) {
    std::unordered_map<std::int64_t, LaunchConfig> launches;
    c.each("SELECT id, grid_x, grid_y, grid_z, block_x, block_y, block_z, registers_per_thread, "
           "shared_memory_static, shared_memory_dynamic FROM launch",
           [&](sqlite3_stmt* s) {
             LaunchConfig l;
             for (int i = 0; i < 3; ++i) l.grid[i] = sqlite3_column_int(s, 1 + i);
             for (int i = 0; i < 3; ++i) l.block[i] = sqlite3_column_int(s, 4 + i);
             l.registers_per_thread = sqlite3_column_int(s, 7);
             l.shared_memory_static = sqlite3_column_int(s, 8);
             l.shared_memory_dynamic = sqlite3_column_int(s, 9);
             launches.emplace(sqlite3_column_int64(s, 0), l);
           });
    c.each("SELECT track, start, start + dur, kind, subkind, name, correlation, launch, bytes, event, id "
           "FROM gpu_op ORDER BY track, start, id",
           [&](sqlite3_stmt* s) {
             GpuOpRecord g;
             g.track = track(s, 0);
             g.start = sqlite3_column_int64(s, 1);
             g.end = sqlite3_column_int64(s, 2);
             int kind = sqlite3_column_int(s, 3);
             if (kind < 0 || kind > 3) r.fail("gpu_op row with unknown kind " + std::to_string(kind));
             g.kind = static_cast<GpuOpKind>(kind);
             g.subkind = static_cast<std::uint8_t>(sqlite3_column_int(s, 4));
             g.name = str(s, 5);
             g.correlation = opt_int(s, 6);
             if (std::int64_t launch = opt_int(s, 7); launch != kNoValue) {
               auto it = launches.find(launch);
               if (it == launches.end()) r.fail("a gpu_op row names launch " + std::to_string(launch) + ", which the launch table lacks");
               g.launch = it->second;
             }
             g.bytes = sqlite3_column_int64(s, 8);
             g.event = opt_int(s, 9);
             remember(gpu_rows, s, 10, EventTable::GpuOp, b.add(g));
           });
  };
  auto read_annotations = [&](Reader& c) {
    c.each("SELECT track, start, start + dur, name, domain, category, payload, external_id, id "
           "FROM annotation ORDER BY track, start, id",
           [&](sqlite3_stmt* s) {
             AnnotationRecord a;
             a.track = track(s, 0);
             a.start = sqlite3_column_int64(s, 1);
             a.end = sqlite3_column_int64(s, 2);
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
    r.each("SELECT event, key, type, int_value, real_value, text FROM arg ORDER BY rowid", [&](sqlite3_stmt* s) {
      const std::int64_t event = sqlite3_column_int64(s, 0);
      auto it = std::lower_bound(event_rows.begin(), event_rows.end(), EventRow{event, EventTable::CudaApi, 0});
      if (it == event_rows.end() || it->id != event) r.fail("an arg names event " + std::to_string(event) + ", which no event table holds");
      EventArg arg;
      arg.key = str(s, 1);
      const int type = sqlite3_column_int(s, 2);
      if (type < 0 || type > 3) r.fail("arg row with unknown type " + std::to_string(type));
      arg.type = static_cast<ArgType>(type);
      if (arg.type == ArgType::Int) arg.int_value = sqlite3_column_int64(s, 3);
      if (arg.type == ArgType::Double) arg.double_value = sqlite3_column_double(s, 4);
      if (arg.type == ArgType::String || arg.type == ArgType::Json) arg.text = str(s, 5);
      b.add_arg(it->table, it->row, arg);
    });
  }
  r.each("SELECT kind, from_track, from_time, to_track, to_time, flow_id FROM flow ORDER BY id", [&](sqlite3_stmt* s) {
    FlowRecord f;
    f.kind = str(s, 0);
    f.from_track = track(s, 1);
    f.from_time = sqlite3_column_int64(s, 2);
    f.to_track = track(s, 3);
    f.to_time = sqlite3_column_int64(s, 4);
    f.id = opt_int(s, 5);
    b.add(f);
  });
  r.each("SELECT event_kind, cost_ns, samples, method FROM calibration ORDER BY event_kind", [&](sqlite3_stmt* s) {
    CalibrationRecord c;
    c.event_kind = text(s, 0);
    c.cost_ns = sqlite3_column_double(s, 1);
    c.samples = sqlite3_column_int64(s, 2);
    c.method = text(s, 3);
    b.add(c);
  });
  r.each("SELECT track, start, start + dur, kind FROM overhead ORDER BY id", [&](sqlite3_stmt* s) {
    OverheadRecord o;
    o.track = track(s, 0);
    o.start = sqlite3_column_int64(s, 1);
    o.end = sqlite3_column_int64(s, 2);
    o.kind = str(s, 3);
    b.add(o);
  });
  // Files written before thread loads were recorded have no such table: none were measured.
  if (r.has_table("thread_load")) {
    auto cost = [](sqlite3_stmt* s, int col) {
      return sqlite3_column_type(s, col) == SQLITE_NULL ? -1.0 : sqlite3_column_double(s, col);
    };
    r.each("SELECT track, start, start + dur, cpu_ns, runqueue_ns, events, cost_samples, range_cost_ns, mark_cost_ns "
           "FROM thread_load ORDER BY track, start, rowid",
           [&](sqlite3_stmt* s) {
             ThreadLoadRecord l;
             l.track = track(s, 0);
             l.start = sqlite3_column_int64(s, 1);
             l.end = sqlite3_column_int64(s, 2);
             l.cpu_ns = opt_int(s, 3);
             l.runqueue_ns = opt_int(s, 4);
             l.events = sqlite3_column_int64(s, 5);
             l.cost_samples = sqlite3_column_int64(s, 6);
             l.range_cost_ns = cost(s, 7);
             l.mark_cost_ns = cost(s, 8);
             b.add(l);
           });
  }
  // Files written before memory events were kept have no such table: they hold none.
  if (r.has_table("memory_event")) {
    r.each("SELECT track, time, device_type, device_id, addr, bytes, total_allocated, total_reserved "
           "FROM memory_event ORDER BY time, id",
           [&](sqlite3_stmt* s) {
             MemoryEventRecord m;
             m.track = track(s, 0);
             m.time = sqlite3_column_int64(s, 1);
             m.device_type = opt_int(s, 2);
             m.device_id = opt_int(s, 3);
             m.addr = opt_int(s, 4);
             m.bytes = sqlite3_column_int64(s, 5);
             m.total_allocated = opt_int(s, 6);
             m.total_reserved = opt_int(s, 7);
             b.add(m);
           });
  }
  if (progress) progress(prog);
  return std::move(b).build();
}

} // namespace dreamscope
