// Nsight Systems SQLite export (`nsys export --type sqlite`) → Trace.
//
// nsys writes one table per activity kind, times already in ns on one clock, names in
// StringIds, threads as serialized global ids. Tables and columns appear only when the
// report had such activity, and columns came and went across nsys versions, so every
// table and every optional column is looked up before it is read.
#include "dreamscope/storage/importers.h"
#include "dreamscope/storage/trace_file.h"

#include <sqlite3.h>

#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>

namespace dreamscope {

namespace {

class NsysImporter {
 public:
  NsysImporter(const std::filesystem::path& path, ImportStats& stats, const ImportProgressFn& progress)
      : path_(path), stats_(stats), progress_(progress) {}
  ~NsysImporter() {
    if (db_) sqlite3_close_v2(db_);
  }

  Trace run() {
    open();
    builder_.set_source(TraceSource::Nsys);
    builder_.set_origin(path_.string());
    builder_.set_meta("nsys.file", path_.string());
    std::error_code ec;
    stats_.bytes = std::filesystem::file_size(path_, ec);
    nvtx_domain_default_ = builder_.intern("nvtx");

    read_strings();
    read_processes();
    read_thread_names();
    read_devices();
    read_runtime();
    read_kernels();
    read_memcpy();
    read_memset();
    read_sync();
    read_nvtx();
    if (!has_table("CUPTI_ACTIVITY_KIND_KERNEL") && !has_table("CUPTI_ACTIVITY_KIND_RUNTIME") &&
        !has_table("NVTX_EVENTS")) {
      fail("an Nsight Systems export without CUDA or NVTX tables: the report traced neither");
    }
    if (progress_) progress_(ImportProgress{stats_.bytes, stats_.bytes});
    if (!stats_.issues.empty()) {
      builder_.set_meta("import_warnings", stats_.summary());
      builder_.set_meta("import_issues", stats_.to_meta());
    }
    builder_.set_meta("import_events_read", std::to_string(stats_.events_read));
    builder_.set_meta("complete", "1");
    return std::move(builder_).build();
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw TraceError(path_.string() + ": " + what); }

  void open() {
    std::error_code ec;
    if (!std::filesystem::exists(path_, ec)) fail("no such file");
    if (!looks_like_sqlite(path_)) fail("not a SQLite database, so not an Nsight Systems export");
    if (sqlite3_open_v2(path_.c_str(), &db_, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK) {
      fail(std::string("cannot open: ") + sqlite3_errmsg(db_));
    }
    each("SELECT name FROM sqlite_schema WHERE type IN ('table','view')", [&](sqlite3_stmt* s) {
      tables_.insert(text(s, 0));
    });
    if (!has_table("StringIds")) fail("a SQLite database without a StringIds table, so not an Nsight Systems export");
  }

  bool has_table(const std::string& t) const { return tables_.count(t) != 0; }

  std::set<std::string> columns(const std::string& table) {
    std::set<std::string> cols;
    each(("PRAGMA table_info(" + table + ")").c_str(), [&](sqlite3_stmt* s) { cols.insert(text(s, 1)); });
    return cols;
  }

  // "col" if the table has it, else "NULL": reads old and new exports with one query.
  static std::string col(const std::set<std::string>& cols, const std::string& name) {
    return cols.count(name) ? name : "NULL";
  }

  template <typename F>
  void each(const char* sql, F&& row) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_, sql, -1, &s, nullptr) != SQLITE_OK) {
      std::string why = sqlite3_errmsg(db_);
      sqlite3_finalize(s);
      fail("cannot read (" + why + ")");
    }
    // Finalized however the loop ends: a row may make the importer refuse the file.
    const std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)> statement(s, sqlite3_finalize);
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) row(s);
    if (rc != SQLITE_DONE) fail(std::string("cannot read: ") + sqlite3_errstr(rc));
  }

  static std::string text(sqlite3_stmt* s, int c) {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s, c));
    return p ? std::string(p, static_cast<std::size_t>(sqlite3_column_bytes(s, c))) : std::string();
  }
  static std::int64_t opt(sqlite3_stmt* s, int c) {
    return sqlite3_column_type(s, c) == SQLITE_NULL ? kNoValue : sqlite3_column_int64(s, c);
  }

  void read_strings() {
    each("SELECT id, value FROM StringIds", [&](sqlite3_stmt* s) {
      strings_.emplace(sqlite3_column_int64(s, 0), builder_.intern(text(s, 1)));
    });
  }

  StringId string_id(std::int64_t id) {
    auto it = strings_.find(id);
    if (it != strings_.end()) return it->second;
    stats_.note("nsys_missing_string_id", "string id " + std::to_string(id));
    return 0;
  }

  // nsys serializes ids as (hardware id << 56) | (vm id << 48) | (pid << 24) | tid.
  static std::int64_t pid_of(std::int64_t global) { return (global >> 24) & 0xFFFFFF; }
  static std::int64_t tid_of(std::int64_t global) { return global & 0xFFFFFF; }

  std::uint32_t process_index(std::int64_t pid) {
    auto [it, inserted] = processes_.try_emplace(pid, 0);
    if (inserted) it->second = builder_.add_process(ProcessInfo{.pid = pid});
    return it->second;
  }

  TrackId thread_track(std::int64_t global_tid) {
    const std::int64_t pid = pid_of(global_tid), tid = tid_of(global_tid);
    auto it = thread_names_.find(global_tid);
    return builder_.thread_track(process_index(pid), tid, it == thread_names_.end() ? "" : it->second);
  }

  std::uint32_t device_index(std::int64_t id) {
    auto [it, inserted] = devices_.try_emplace(id, 0);
    if (inserted) it->second = builder_.add_device(DeviceInfo{.ordinal = id});
    return it->second;
  }

  TrackId stream_track(std::int64_t device, std::int64_t stream) {
    // A context synchronize waits for every stream; nsys files it under stream 2^32 - 1.
    return builder_.stream_track(device_index(device), stream,
                                 stream == kContextWideStream ? std::string("context-wide sync (all streams)")
                                                              : "stream " + std::to_string(stream));
  }

  void read_processes() {
    if (!has_table("PROCESSES")) return;
    auto c = columns("PROCESSES");
    const std::string sql = "SELECT " + col(c, "globalPid") + ", " + col(c, "pid") + ", " + col(c, "name") +
                            " FROM PROCESSES";
    each(sql.c_str(), [&](sqlite3_stmt* s) {
      std::int64_t pid = opt(s, 1);
      if (pid == kNoValue && opt(s, 0) != kNoValue) pid = pid_of(opt(s, 0));
      if (pid == kNoValue) return;
      builder_.process(process_index(pid)).name = text(s, 2);
    });
  }

  void read_thread_names() {
    if (!has_table("ThreadNames")) return;
    each("SELECT globalTid, nameId FROM ThreadNames", [&](sqlite3_stmt* s) {
      thread_names_.emplace(sqlite3_column_int64(s, 0), std::string(builder_.str(string_id(sqlite3_column_int64(s, 1)))));
    });
  }

  void read_devices() {
    if (!has_table("TARGET_INFO_GPU")) return;
    auto c = columns("TARGET_INFO_GPU");
    const std::string sql = "SELECT id, " + col(c, "name") + ", " + col(c, "smCount") + ", " + col(c, "clockRate") +
                            ", " + col(c, "memoryBandwidth") + ", " + col(c, "totalMemory") + ", " +
                            col(c, "computeMajor") + ", " + col(c, "computeMinor") + " FROM TARGET_INFO_GPU ORDER BY id";
    each(sql.c_str(), [&](sqlite3_stmt* s) {
      DeviceInfo& d = builder_.device(device_index(sqlite3_column_int64(s, 0)));
      d.name = text(s, 1);
      d.sm_count = sqlite3_column_int64(s, 2);
      d.core_clock_khz = sqlite3_column_int64(s, 3) / 1000; // nsys: Hz
      d.memory_bandwidth_bytes_per_s = sqlite3_column_int64(s, 4);
      d.global_memory_bytes = sqlite3_column_int64(s, 5);
      d.compute_capability_major = sqlite3_column_int64(s, 6);
      d.compute_capability_minor = sqlite3_column_int64(s, 7);
    });
  }

  bool check_times(std::int64_t start, std::int64_t end, const char* table) {
    ++stats_.events_read;
    if (start == kNoValue || end == kNoValue) {
      stats_.note("nsys_row_without_time", std::string(table) + " row, start " + std::to_string(start));
      return false;
    }
    if (end < start) {
      stats_.note("nsys_row_ends_before_start",
                  std::string(table) + " row, start " + std::to_string(start) + ", end " + std::to_string(end));
      return false;
    }
    return true;
  }

  // nsys names API calls with their version, "cudaLaunchKernel_v7000"; the peer tools and
  // our analyses know them by the bare name.
  static std::string_view without_version(std::string_view name) {
    auto pos = name.rfind("_v");
    if (pos == std::string_view::npos || pos + 2 == name.size()) return name;
    for (std::size_t i = pos + 2; i < name.size(); ++i) {
      if (name[i] < '0' || name[i] > '9') return name;
    }
    return name.substr(0, pos);
  }

  void read_runtime() {
    if (!has_table("CUPTI_ACTIVITY_KIND_RUNTIME")) return;
    auto c = columns("CUPTI_ACTIVITY_KIND_RUNTIME");
    const std::string sql = "SELECT start, end, globalTid, " + col(c, "correlationId") + ", nameId, " +
                            col(c, "returnValue") + " FROM CUPTI_ACTIVITY_KIND_RUNTIME";
    std::unordered_map<StringId, StringId> bare_names;
    each(sql.c_str(), [&](sqlite3_stmt* s) {
      const std::int64_t start = opt(s, 0), end = opt(s, 1);
      if (!check_times(start, end, "CUPTI_ACTIVITY_KIND_RUNTIME")) return;
      const StringId full = string_id(sqlite3_column_int64(s, 4));
      auto [it, inserted] = bare_names.try_emplace(full, 0);
      if (inserted) it->second = builder_.intern(without_version(builder_.str(full)));
      const std::string_view name = builder_.str(it->second);
      CudaApiRecord r{.track = thread_track(sqlite3_column_int64(s, 2)), .start = start, .end = end,
                      .name = it->second};
      // The runtime table holds driver calls too; they are the cu* names.
      r.kind = name.starts_with("cu") && !name.starts_with("cuda") ? ApiKind::Driver : ApiKind::Runtime;
      r.correlation = opt(s, 3);
      r.result = static_cast<std::int32_t>(sqlite3_column_int64(s, 5));
      builder_.add(r);
      ++stats_.events_kept;
    });
  }

  void read_kernels() {
    if (!has_table("CUPTI_ACTIVITY_KIND_KERNEL")) return;
    auto c = columns("CUPTI_ACTIVITY_KIND_KERNEL");
    const std::string name_col = c.count("demangledName") ? "demangledName" : "shortName";
    const std::string sql = "SELECT start, end, deviceId, streamId, " + col(c, "correlationId") + ", " + name_col +
                            ", gridX, gridY, gridZ, blockX, blockY, blockZ, registersPerThread, "
                            "staticSharedMemory, dynamicSharedMemory FROM CUPTI_ACTIVITY_KIND_KERNEL";
    each(sql.c_str(), [&](sqlite3_stmt* s) {
      const std::int64_t start = opt(s, 0), end = opt(s, 1);
      if (!check_times(start, end, "CUPTI_ACTIVITY_KIND_KERNEL")) return;
      GpuOpRecord g{.track = stream_track(sqlite3_column_int64(s, 2), sqlite3_column_int64(s, 3)), .kind = GpuOpKind::Kernel,
                    .start = start, .end = end, .name = string_id(sqlite3_column_int64(s, 5))};
      g.correlation = opt(s, 4);
      for (int i = 0; i < 3; ++i) g.launch.grid[i] = sqlite3_column_int(s, 6 + i);
      for (int i = 0; i < 3; ++i) g.launch.block[i] = sqlite3_column_int(s, 9 + i);
      g.launch.registers_per_thread = sqlite3_column_int(s, 12);
      g.launch.shared_memory_static = sqlite3_column_int(s, 13);
      g.launch.shared_memory_dynamic = sqlite3_column_int(s, 14);
      builder_.add(g);
      ++stats_.events_kept;
    });
  }

  void read_memcpy() {
    if (!has_table("CUPTI_ACTIVITY_KIND_MEMCPY")) return;
    auto c = columns("CUPTI_ACTIVITY_KIND_MEMCPY");
    const std::string sql = "SELECT start, end, deviceId, streamId, " + col(c, "correlationId") +
                            ", bytes, copyKind FROM CUPTI_ACTIVITY_KIND_MEMCPY";
    each(sql.c_str(), [&](sqlite3_stmt* s) {
      const std::int64_t start = opt(s, 0), end = opt(s, 1);
      if (!check_times(start, end, "CUPTI_ACTIVITY_KIND_MEMCPY")) return;
      std::int64_t kind = sqlite3_column_int64(s, 6);
      if (kind < 0 || kind > static_cast<std::int64_t>(CopyKind::PtoP)) kind = 0;
      const auto copy = static_cast<CopyKind>(kind);
      // Kineto's names, so that name-based analyses (HTA's kernel types) see one vocabulary.
      const std::string name = "Memcpy " + std::string(to_string(copy));
      GpuOpRecord g{.track = stream_track(sqlite3_column_int64(s, 2), sqlite3_column_int64(s, 3)), .kind = GpuOpKind::Memcpy,
                    .subkind = static_cast<std::uint8_t>(copy), .start = start, .end = end, .name = builder_.intern(name)};
      g.correlation = opt(s, 4);
      g.bytes = sqlite3_column_int64(s, 5);
      builder_.add(g);
      ++stats_.events_kept;
    });
  }

  void read_memset() {
    if (!has_table("CUPTI_ACTIVITY_KIND_MEMSET")) return;
    auto c = columns("CUPTI_ACTIVITY_KIND_MEMSET");
    const std::string sql = "SELECT start, end, deviceId, streamId, " + col(c, "correlationId") +
                            ", bytes FROM CUPTI_ACTIVITY_KIND_MEMSET";
    const StringId name = builder_.intern("Memset (Device)");
    each(sql.c_str(), [&](sqlite3_stmt* s) {
      const std::int64_t start = opt(s, 0), end = opt(s, 1);
      if (!check_times(start, end, "CUPTI_ACTIVITY_KIND_MEMSET")) return;
      GpuOpRecord g{.track = stream_track(sqlite3_column_int64(s, 2), sqlite3_column_int64(s, 3)), .kind = GpuOpKind::Memset,
                    .start = start, .end = end, .name = name};
      g.correlation = opt(s, 4);
      g.bytes = sqlite3_column_int64(s, 5);
      builder_.add(g);
      ++stats_.events_kept;
    });
  }

  void read_sync() {
    if (!has_table("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION")) return;
    auto c = columns("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION");
    const std::string sql = "SELECT start, end, deviceId, streamId, " + col(c, "correlationId") + ", syncType, " +
                            col(c, "eventId") + " FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION";
    // Kineto's cuda_sync names for CUPTI's synchronization types.
    static const char* names[] = {"Unknown Sync", "Event Sync", "Stream Wait Event", "Stream Sync", "Context Sync"};
    each(sql.c_str(), [&](sqlite3_stmt* s) {
      const std::int64_t start = opt(s, 0), end = opt(s, 1);
      if (!check_times(start, end, "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION")) return;
      std::int64_t type = sqlite3_column_int64(s, 5);
      if (type < 0 || type > 4) type = 0;
      // CUPTI's "no stream" (a context sync) is 0xFFFFFFFF as unsigned; keep it as Kineto does.
      std::int64_t stream = sqlite3_column_int64(s, 3);
      if (stream < 0) stream &= 0xFFFFFFFF;
      GpuOpRecord g{.track = stream_track(sqlite3_column_int64(s, 2), stream), .kind = GpuOpKind::Sync,
                    .subkind = static_cast<std::uint8_t>(type), .start = start, .end = end,
                    .name = builder_.intern(names[type])};
      g.correlation = opt(s, 4);
      const std::int64_t event = opt(s, 6);
      if (event != kNoValue && event >= 0 && event != 0xFFFFFFFF) g.event = event;
      builder_.add(g);
      ++stats_.events_kept;
    });
  }

  void read_nvtx() {
    if (!has_table("NVTX_EVENTS")) return;
    auto c = columns("NVTX_EVENTS");
    // NVTX event types in the export: 34 mark, 59 push/pop range, 60 start/end range,
    // 75 domain create (its text is the domain's name).
    constexpr std::int64_t kMark = 34, kPushPop = 59, kStartEnd = 60, kDomainCreate = 75;
    std::unordered_map<std::int64_t, StringId> domains;
    const std::string domain_col = col(c, "domainId");
    each(("SELECT " + domain_col + ", text FROM NVTX_EVENTS WHERE eventType = 75").c_str(), [&](sqlite3_stmt* s) {
      domains.emplace(sqlite3_column_int64(s, 0), builder_.intern(text(s, 1)));
    });
    const std::string sql = "SELECT start, end, eventType, " + col(c, "text") + ", " + col(c, "textId") + ", globalTid, " +
                            domain_col + ", " + col(c, "category") + ", " + col(c, "int64Value") + ", " +
                            col(c, "uint64Value") + " FROM NVTX_EVENTS";
    each(sql.c_str(), [&](sqlite3_stmt* s) {
      const std::int64_t type = sqlite3_column_int64(s, 2);
      if (type == kDomainCreate) return;
      ++stats_.events_read;
      if (type == kMark) {
        stats_.note("nsys_nvtx_mark", text(s, 3));
        return;
      }
      if (type != kPushPop && type != kStartEnd) {
        stats_.note("nsys_nvtx_other_type", "eventType " + std::to_string(type));
        return;
      }
      const std::int64_t start = opt(s, 0), end = opt(s, 1);
      if (end == kNoValue) {
        stats_.note("nsys_nvtx_range_never_ended", text(s, 3));
        return;
      }
      if (start == kNoValue || end < start) {
        stats_.note("nsys_nvtx_range_ends_before_start", text(s, 3));
        return;
      }
      AnnotationRecord a{.track = thread_track(sqlite3_column_int64(s, 5)), .start = start, .end = end};
      a.name = sqlite3_column_type(s, 3) != SQLITE_NULL ? builder_.intern(text(s, 3))
               : sqlite3_column_type(s, 4) != SQLITE_NULL ? string_id(sqlite3_column_int64(s, 4))
                                                         : 0;
      const std::int64_t domain = opt(s, 6);
      auto d = domains.find(domain);
      a.domain = d != domains.end() ? d->second : nvtx_domain_default_;
      if (const std::int64_t category = opt(s, 7); category != kNoValue && category != 0) {
        a.category = builder_.intern(std::to_string(category));
      }
      a.payload = opt(s, 8) != kNoValue ? opt(s, 8) : opt(s, 9);
      builder_.add(a);
      ++stats_.events_kept;
    });
  }

  const std::filesystem::path& path_;
  ImportStats& stats_;
  const ImportProgressFn& progress_;
  sqlite3* db_ = nullptr;
  std::set<std::string> tables_;
  TraceBuilder builder_;
  StringId nvtx_domain_default_ = 0;
  std::unordered_map<std::int64_t, StringId> strings_;
  std::unordered_map<std::int64_t, std::string> thread_names_;
  std::unordered_map<std::int64_t, std::uint32_t> processes_;
  std::map<std::int64_t, std::uint32_t> devices_;
};

} // namespace

Trace import_nsys(const std::filesystem::path& path, ImportStats* stats, const ImportProgressFn& progress) {
  ImportStats local;
  ImportStats& s = stats ? *stats : local;
  s = ImportStats{};
  const auto t0 = std::chrono::steady_clock::now();
  Trace trace = NsysImporter(path, s, progress).run();
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return trace;
}

} // namespace dreamscope
