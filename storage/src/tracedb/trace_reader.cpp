#include "dreamscope/storage/columns.h"
#include "dreamscope/storage/limits.h"
#include "dreamscope/storage/sqlite_file.h"
#include "dreamscope/storage/trace_file.h"

#include "tracedb/schema.h"


#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <exception>
#include <fstream>
#include <future>
#include <memory>
#include <optional>
#include <unordered_map>

namespace dreamscope {

namespace {

// How the reader has always put a failure: "trace file" where describe() says "file".
std::string read_words(const sqlite::Failure& f) {
  using Kind = sqlite::Failure::Kind;
  if (f.kind == Kind::Damaged) return "damaged or truncated trace file (" + f.code + ")";
  if (f.kind == Kind::Io) return "I/O error while reading (" + f.message + ")";
  return "cannot read: " + f.message;
}

// A trace.db open for reading. Rows come as a sqlite::Statement's result rows or as
// sqlite::Values (scan()): the same accessors, so that a table's row reads alike either way.
class Reader {
 public:
  explicit Reader(const std::filesystem::path& path) : path_(path) {}

  [[noreturn]] void fail(const std::string& what) const { throw TraceError(path_.string() + ": " + what); }

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
    db_.emplace(path_, sqlite::Access::ReadOnly, std::string(), read_words);
  }

  // Runs `sql`, calling `row` with the statement at each result row.
  template <typename F>
  void each(const std::string& sql, F&& row) {
    db_->each(sql, row);
  }

  // Calls `row` with the Values of `columns` for each row of `table`, in its b-tree's order
  // (sqlite::Database::scan, which says why rows come so).
  template <typename F>
  void scan(std::string_view table, const std::string& columns, F&& row) {
    db_->scan(table, columns, row);
  }

  // The names of the columns `table` has in this file: a file written before a column was added to
  // its table (tables.h) lacks it.
  std::vector<std::string> columns_of(std::string_view table) {
    std::vector<std::string> names;
    each("SELECT name FROM pragma_table_info('" + std::string(table) + "')",
         [&](const sqlite::Statement& s) { names.push_back(s.text(0)); });
    return names;
  }

  bool has_table(const char* name) { return db_->has_table(name); }

 private:
  std::filesystem::path path_;
  std::optional<sqlite::Database> db_;
};

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

// The file's ids of strings, processes, devices and tracks, as the builder's (plain numbers: a
// map serves every kind, which decode() makes the column's); a reference to an id the file does
// not hold refuses the file.
struct Ids {
  const Reader& r;
  IdMap strings, processes, devices, tracks;

  template <typename Row>
  StringId str(const Row& s, int col) const {
    const std::int64_t id = s.integer(col);
    const std::uint32_t mapped = id < 0 || id > limits::kMaxId ? kNoIndex : strings.get(id);
    if (mapped == kNoIndex) r.fail("a row names string " + std::to_string(id) + ", which the string table lacks");
    return mapped;
  }
  // A reference to another table's row: NULL where the column allows it, else a known id.
  template <typename Row>
  std::uint32_t lookup(const IdMap& map, const Row& s, int col, const char* what, bool nullable) const {
    if (nullable && s.is_null(col)) return kNoIndex;
    const std::int64_t id = s.integer(col);
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
      v = T{ids.lookup(ids.tracks, s, col, "track", false)};
    } else if constexpr (is<C, String>) {
      v = ids.str(s, col);
    } else if constexpr (is<C, Int> || is<C, Unsigned>) {
      v = static_cast<T>(s.integer(col));
    } else if constexpr (is<C, Enum>) {
      decode_enum(v, s.int32(col), ids.r);
    } else if constexpr (is<C, Optional>) {
      v = s.optional_integer(col);
    } else if constexpr (is<C, Process>) {
      v = T{ids.lookup(ids.processes, s, col, "process", true)};
    } else if constexpr (is<C, Device>) {
      v = T{ids.lookup(ids.devices, s, col, "device", true)};
    } else if constexpr (is<C, Start>) {
      v = s.integer(col);
    } else if constexpr (is<C, End>) {
      v = end_of(start_of<C>(r), s.integer(col));
    } else if constexpr (is<C, Text>) {
      v = s.text(col);
    } else if constexpr (is<C, Real>) {
      v = s.real(col);
    } else if constexpr (is<C, Cost>) {
      v = s.is_null(col) ? -1.0 : s.real(col);
    } else if constexpr (is<C, Launch>) {
      // Not the configuration but the builder's index of it, which TraceBuilder::add takes.
      if (!s.is_null(col)) {
        const std::int64_t id = s.integer(col);
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
    const std::int64_t id = s.integer(col);
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
    r.each(sql, [&](const auto& s) {
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
    r.each(sql, [&](const auto& s) {
      ProcessInfo& p = b.process(ProcessId{
          ids.lookup(ids.processes, s, std::tuple_size_v<std::remove_cvref_t<decltype(cols)>>, "process", false)});
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
  if (r.has_table("arg")) r.each("SELECT count(*) FROM arg", [&](const auto& s) { n_args = s.integer(0); });
  const bool has_args = n_args > 0;
  b.reserve(n_api, n_gpu, n_ann, has_args ? std::min(static_cast<std::size_t>(n_args), max_rows) : 0);
  struct EventId {
    std::int64_t id;
    EventRow row;
    bool operator<(const EventId& o) const { return id < o.id; }
  };

  // The three event tables are most of a file, and SQLite decodes one row at a time on one
  // thread: each table is read on a thread of its own, with its own connection. They fill
  // disjoint columns of the builder (TraceBuilder::add of different event tables may run at
  // once; the reservations above are made first), and each keeps its rows' ids for the args.
  // Rows arrive in the b-tree's order, the primary key (track, start, id), so build() needs no sort.
  std::atomic<std::size_t> rows_read{0};
  // A cache line each: every thread counts its rows as it reads them.
  struct alignas(64) TableRows {
    std::vector<EventId> ids;
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
      typename D::Index row;
      if constexpr (std::is_same_v<Record, GpuOpRecord>) {
        row = b.add(e, launch->index);
      } else {
        row = b.add(e);
      }
      if (has_args) rows.ids.push_back({s.integer(id), row});
      rows.count(rows_read);
    });
  };
  auto read_cuda_api = [&](Reader& c) { read_events(std::type_identity<CudaApiRecord>{}, c, api_rows); };
  auto read_gpu_ops = [&](Reader& c) {
    // Each configuration is interned once, by its row: kernels name it by that row's id.
    IdMap launch_map;
    c.each("SELECT id, " + schema::launch_columns() + " FROM launch ORDER BY id", [&](const auto& s) {
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
  std::vector<EventId> event_rows = std::move(api_rows.ids);
  for (TableRows* t : {&gpu_rows, &ann_rows}) event_rows.insert(event_rows.end(), t->ids.begin(), t->ids.end());
  if (has_args) {
    std::sort(event_rows.begin(), event_rows.end());
    r.scan("arg", "event, key, type, int_value, real_value, text", [&](const auto& s) {
      const std::int64_t event = s.integer(0);
      auto it =
          std::lower_bound(event_rows.begin(), event_rows.end(), EventId{event, EventRow{EventTable::CudaApi, 0}});
      if (it == event_rows.end() || it->id != event) r.fail("an arg names event " + std::to_string(event) + ", which no event table holds");
      EventArg arg;
      arg.key = ids.str(s, 1);
      const int type = s.int32(2);
      if (type < 0 || type > 3) r.fail("arg row with unknown type " + std::to_string(type));
      arg.type = static_cast<ArgType>(type);
      if (arg.type == ArgType::Int) arg.int_value = s.integer(3);
      if (arg.type == ArgType::Double) arg.double_value = s.real(4);
      if (arg.type == ArgType::String || arg.type == ArgType::Json) arg.text = ids.str(s, 5);
      b.add_arg(it->row, arg);
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
