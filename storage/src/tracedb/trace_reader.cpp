#include "dreamscope/storage/columns.h"
#include "dreamscope/storage/limits.h"
#include "dreamscope/storage/trace_file.h"

#include "tracedb/schema.h"

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
  void scan(std::string_view table, const std::string& columns, F&& row) {
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
    const std::string sql = "SELECT dreamscope_row(" + columns + ") FROM " + std::string(table) + " NOT INDEXED";
    const std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)> s(prepare(sql.c_str()), sqlite3_finalize);
    while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) {
    }
    if (sink.error) std::rethrow_exception(sink.error);
    if (rc != SQLITE_DONE) fail_sqlite(rc);
  }

  // The names of the columns `table` has in this file: a file written before a column was added to
  // its table (tables.h) lacks it.
  std::vector<std::string> columns_of(std::string_view table) {
    std::vector<std::string> names;
    const std::string sql = "SELECT name FROM pragma_table_info('" + std::string(table) + "')";
    each(sql.c_str(), [&](const StatementRow& s) { names.push_back(s.text(0)); });
    return names;
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

// The file's ids of strings, processes, devices and tracks, as the builder's; a reference to an
// id the file does not hold refuses the file.
struct Ids {
  const Reader& r;
  IdMap strings, processes, devices, tracks;

  template <typename Row>
  StringId str(const Row& s, int col) const {
    const std::int64_t id = s.int64(col);
    const std::uint32_t mapped = id < 0 || id > limits::kMaxId ? kNoIndex : strings.get(id);
    if (mapped == kNoIndex) r.fail("a row names string " + std::to_string(id) + ", which the string table lacks");
    return mapped;
  }
  // A reference to another table's row: NULL where the column allows it, else a known id.
  template <typename Row>
  std::uint32_t lookup(const IdMap& map, const Row& s, int col, const char* what, bool nullable) const {
    if (nullable && s.is_null(col)) return kNoIndex;
    const std::int64_t id = s.int64(col);
    const std::uint32_t mapped = id < 0 || id > limits::kMaxId ? kNoIndex : map.get(id);
    if (mapped == kNoIndex) r.fail(std::string("a row names unknown ") + what + " " + std::to_string(id));
    return mapped;
  }
};

// The enumerations, as the reader has always taken them.
void decode_enum(ApiKind& v, int x, const Reader&) { v = x == 1 ? ApiKind::Driver : ApiKind::Runtime; }
void decode_enum(TrackKind& v, int x, const Reader&) { v = x == 1 ? TrackKind::GpuStream : TrackKind::CpuThread; }
void decode_enum(GpuOpKind& v, int x, const Reader& r) {
  if (x < 0 || x > 3) r.fail("gpu_op row with unknown kind " + std::to_string(x));
  v = static_cast<GpuOpKind>(x);
}

// A GPU op's launch configuration: the file's `launch` ids, and the builder's index of the row's.
struct LaunchIds {
  const IdMap* map = nullptr;
  std::uint32_t index = 0;
};

// What to select of a table's columns (tables.h): each by name, or NULL where the file's table
// lacks it, which `missing` then marks (a bit per column).
template <class Columns>
std::string select_list(Reader& r, std::string_view table, const Columns& cols, std::uint64_t& missing) {
  static_assert(std::tuple_size_v<std::remove_cvref_t<Columns>> <= 64);
  const std::vector<std::string> present = r.columns_of(table);
  std::string list;
  missing = 0;
  columns::each_indexed(cols, [&](const auto& c, auto i) {
    const bool has = std::find(present.begin(), present.end(), c.sql_name()) != present.end();
    if (!has) missing |= std::uint64_t{1} << i;
    (list += i == 0 ? "" : ", ") += has ? c.sql_name() : "NULL";
  });
  return list;
}

// A row's columns, selected as select_list() lists them, into `r`: each as its encoding says
// (tables.h), a column the file lacks left at its default.
template <class Columns, class Row, class Record>
void decode(const Columns& cols, const Row& s, const Ids& ids, std::uint64_t missing, Record& r,
            LaunchIds* launch = nullptr) {
  using namespace columns;
  if (launch) launch->index = 0;
  each_indexed(cols, [&](const auto& c, auto i) {
    using C = decltype(c);
    constexpr int col = static_cast<int>(decltype(i)::value);
    if (missing >> col & 1) return;
    auto& v = r.*c.member;
    using T = std::remove_cvref_t<decltype(v)>;
    if constexpr (is<C, Track>) {
      v = ids.lookup(ids.tracks, s, col, "track", false);
    } else if constexpr (is<C, String>) {
      v = ids.str(s, col);
    } else if constexpr (is<C, Int> || is<C, Unsigned>) {
      v = static_cast<T>(s.int64(col));
    } else if constexpr (is<C, Enum>) {
      decode_enum(v, s.int32(col), ids.r);
    } else if constexpr (is<C, Optional>) {
      v = opt_int(s, col);
    } else if constexpr (is<C, Process>) {
      v = ids.lookup(ids.processes, s, col, "process", true);
    } else if constexpr (is<C, Device>) {
      v = ids.lookup(ids.devices, s, col, "device", true);
    } else if constexpr (is<C, Start>) {
      v = s.int64(col);
    } else if constexpr (is<C, End>) {
      v = end_of(start_of<C>(r), s.int64(col));
    } else if constexpr (is<C, Text>) {
      v = s.text(col);
    } else if constexpr (is<C, Real>) {
      v = s.real(col);
    } else if constexpr (is<C, Cost>) {
      v = s.is_null(col) ? -1.0 : s.real(col);
    } else if constexpr (is<C, Launch>) {
      // Not the configuration but the builder's index of it, which TraceBuilder::add takes.
      if (!s.is_null(col)) {
        const std::int64_t id = s.int64(col);
        launch->index = id < 0 || id > limits::kMaxId ? kNoIndex : launch->map->get(id);
        if (launch->index == kNoIndex) {
          ids.r.fail("a gpu_op row names launch " + std::to_string(id) + ", which the launch table lacks");
        }
      }
    } else {
      static_assert(sizeof(C) == 0, "an encoding the reader does not read");
    }
  });
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
  Ids ids{r};
  ids.strings.set(0, 0);
  r.each("SELECT id, value FROM string ORDER BY id",
         [&](const auto& s) { ids.strings.set(table_id(s, 0, "string"), b.intern(s.text(1))); });

  // Each row of a table that is no event table, in the order `order` says, as a record of its
  // columns (tables.h); `own` selects SQL's own columns after them, at `row`'s second argument on.
  auto each_row = [&]<class Columns>(std::string_view table, const Columns& cols, const char* own, const char* order,
                                     auto&& row) {
    using Record = typename std::tuple_element_t<0, Columns>::record;
    std::uint64_t missing = 0;
    const std::string sql =
        "SELECT " + select_list(r, table, cols, missing) + own + " FROM " + std::string(table) + " ORDER BY " + order;
    r.each(sql.c_str(), [&](const auto& s) {
      Record record;
      decode(cols, s, ids, missing, record);
      row(s, static_cast<int>(std::tuple_size_v<Columns>), std::move(record));
    });
  };
  using columns::Definition;
  each_row("process", Definition<ProcessInfo>::process_columns, ", id", "id",
           [&](const auto& s, int id, ProcessInfo p) {
             ids.processes.set(table_id(s, id, "process"), b.add_process(std::move(p)));
           });
  if (r.has_table("process_rank")) {
    std::uint64_t missing = 0;
    const auto& cols = Definition<ProcessInfo>::rank_columns;
    const std::string sql =
        "SELECT " + select_list(r, "process_rank", cols, missing) + ", process FROM process_rank ORDER BY process";
    r.each(sql.c_str(), [&](const auto& s) {
      ProcessInfo& p = b.process(
          ids.lookup(ids.processes, s, std::tuple_size_v<std::remove_cvref_t<decltype(cols)>>, "process", false));
      decode(cols, s, ids, missing, p);
    });
  }
  each_row("device", Definition<DeviceInfo>::columns, ", id", "id", [&](const auto& s, int id, DeviceInfo d) {
    ids.devices.set(table_id(s, id, "device"), b.add_device(std::move(d)));
  });
  each_row("track", Definition<TrackInfo>::columns, ", id", "id", [&](const auto& s, int id, TrackInfo t) {
    ids.tracks.set(table_id(s, id, "track"), b.add_track(std::move(t)));
  });

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
  // An event table's rows, as its columns (tables.h) and, only for the args, its id: a column
  // costs as much as any other to decode.
  auto read_events = [&]<class Record>(std::type_identity<Record>, Reader& c, TableRows& rows,
                                       LaunchIds* launch = nullptr) {
    using D = columns::Definition<Record>;
    std::uint64_t missing = 0;
    const std::string list = select_list(c, D::name, D::columns, missing) + (has_args ? ", id" : "");
    constexpr int id = static_cast<int>(columns::count<Record>);
    c.scan(D::name, list, [&](const auto& s) {
      Record e;
      decode(D::columns, s, ids, missing, e, launch);
      EventIndex row;
      if constexpr (std::is_same_v<Record, GpuOpRecord>) {
        row = b.add(e, launch->index);
      } else {
        row = b.add(e);
      }
      if (has_args) rows.ids.push_back({s.int64(id), D::table, row});
      rows.count(rows_read);
    });
  };
  auto read_cuda_api = [&](Reader& c) { read_events(std::type_identity<CudaApiRecord>{}, c, api_rows); };
  auto read_gpu_ops = [&](Reader& c) {
    // Each configuration is interned once, by its row: kernels name it by that row's id.
    IdMap launch_map;
    c.each(("SELECT id, " + schema::launch_columns() + " FROM launch ORDER BY id").c_str(), [&](const auto& s) {
      LaunchConfig l;
      int col = 1;
      columns::for_each_field(l, [&](std::int32_t& field, const char*) { field = s.int32(col++); });
      launch_map.set(table_id(s, 0, "launch"), b.intern_launch(l));
    });
    LaunchIds launch{&launch_map};
    read_events(std::type_identity<GpuOpRecord>{}, c, gpu_rows, &launch);
  };
  auto read_annotations = [&](Reader& c) { read_events(std::type_identity<AnnotationRecord>{}, c, ann_rows); };
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
      arg.key = ids.str(s, 1);
      const int type = s.int32(2);
      if (type < 0 || type > 3) r.fail("arg row with unknown type " + std::to_string(type));
      arg.type = static_cast<ArgType>(type);
      if (arg.type == ArgType::Int) arg.int_value = s.int64(3);
      if (arg.type == ArgType::Double) arg.double_value = s.real(4);
      if (arg.type == ArgType::String || arg.type == ArgType::Json) arg.text = ids.str(s, 5);
      b.add_arg(it->table, it->row, arg);
    });
  }
  // The rows of one of the tables a Trace holds as records, in the order `order` says.
  auto add_rows = [&]<class Record>(std::type_identity<Record>, const char* order) {
    using D = Definition<Record>;
    each_row(D::name, D::columns, "", order, [&](const auto&, int, const Record& row) { b.add(row); });
  };
  add_rows(std::type_identity<FlowRecord>{}, "id");
  add_rows(std::type_identity<CalibrationRecord>{}, "event_kind");
  add_rows(std::type_identity<OverheadRecord>{}, "id");
  // Files written before thread loads were recorded have no such table: none were measured.
  if (r.has_table("thread_load")) add_rows(std::type_identity<ThreadLoadRecord>{}, "track, start, rowid");
  // Files written before memory events were kept have no such table: they hold none.
  if (r.has_table("memory_event")) add_rows(std::type_identity<MemoryEventRecord>{}, "time, id");
  if (progress) progress(prog);
  return std::move(b).build();
}

} // namespace dreamscope
