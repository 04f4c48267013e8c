// Nsight Systems SQLite export (`nsys export --type sqlite`) → Trace.
//
// nsys writes one table per activity kind, times already in ns on one clock, names in
// StringIds, threads as serialized global ids. Tables and columns appear only when the
// report had such activity, and columns came and went across nsys versions, so every
// table and every optional column is looked up before it is read.
#include "dreamscope/storage/importers.h"
#include "dreamscope/storage/sqlite_file.h"
#include "dreamscope/storage/trace_file.h"

#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <unordered_map>

namespace dreamscope {

namespace {

class NsysImporter {
 public:
  NsysImporter(const std::filesystem::path& path, ImportStats& stats, const ImportProgressFn& progress)
      : path_(path), stats_(stats), progress_(progress) {}

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
    db_.emplace(path_, sqlite::Access::ReadOnly);
    for (std::string& t : db_->tables()) tables_.insert(std::move(t));
    if (!has_table("StringIds")) fail("a SQLite database without a StringIds table, so not an Nsight Systems export");
  }

  bool has_table(const std::string& t) const { return tables_.count(t) != 0; }

  std::set<std::string> columns(const std::string& table) {
    std::set<std::string> cols;
    each("PRAGMA table_info(" + table + ")", [&](const sqlite::Statement& s) { cols.insert(s.text(1)); });
    return cols;
  }

  // "col" if the table has it, else "NULL": reads old and new exports with one query.
  static std::string col(const std::set<std::string>& cols, const std::string& name) {
    return cols.count(name) ? name : "NULL";
  }

  template <typename F>
  void each(const std::string& sql, F&& row) {
    db_->each(sql, row);
  }

  void read_strings() {
    each("SELECT id, value FROM StringIds", [&](const sqlite::Statement& s) {
      strings_.emplace(s.integer(0), builder_.intern(s.text(1)));
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

  ProcessId process_index(std::int64_t pid) {
    auto [it, inserted] = processes_.try_emplace(pid, ProcessId{0});
    if (inserted) it->second = builder_.add_process(ProcessInfo{.pid = pid});
    return it->second;
  }

  TrackId thread_track(std::int64_t global_tid) {
    const std::int64_t pid = pid_of(global_tid), tid = tid_of(global_tid);
    auto it = thread_names_.find(global_tid);
    return builder_.thread_track(process_index(pid), tid, it == thread_names_.end() ? "" : it->second);
  }

  DeviceId device_index(std::int64_t id) {
    auto [it, inserted] = devices_.try_emplace(id, DeviceId{0});
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
    each(sql, [&](const sqlite::Statement& s) {
      std::int64_t pid = s.optional_integer(1);
      if (pid == kNoValue && s.optional_integer(0) != kNoValue) pid = pid_of(s.optional_integer(0));
      if (pid == kNoValue) return;
      builder_.process(process_index(pid)).name = s.text(2);
    });
  }

  void read_thread_names() {
    if (!has_table("ThreadNames")) return;
    each("SELECT globalTid, nameId FROM ThreadNames", [&](const sqlite::Statement& s) {
      thread_names_.emplace(s.integer(0), std::string(builder_.str(string_id(s.integer(1)))));
    });
  }

  void read_devices() {
    if (!has_table("TARGET_INFO_GPU")) return;
    auto c = columns("TARGET_INFO_GPU");
    const std::string sql = "SELECT id, " + col(c, "name") + ", " + col(c, "smCount") + ", " + col(c, "clockRate") +
                            ", " + col(c, "memoryBandwidth") + ", " + col(c, "totalMemory") + ", " +
                            col(c, "computeMajor") + ", " + col(c, "computeMinor") + " FROM TARGET_INFO_GPU ORDER BY id";
    each(sql, [&](const sqlite::Statement& s) {
      DeviceInfo& d = builder_.device(device_index(s.integer(0)));
      d.name = s.text(1);
      d.sm_count = s.integer(2);
      d.core_clock_khz = s.integer(3) / 1000; // nsys: Hz
      d.memory_bandwidth_bytes_per_s = s.integer(4);
      d.global_memory_bytes = s.integer(5);
      d.compute_capability_major = s.integer(6);
      d.compute_capability_minor = s.integer(7);
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
    each(sql, [&](const sqlite::Statement& s) {
      const std::int64_t start = s.optional_integer(0), end = s.optional_integer(1);
      if (!check_times(start, end, "CUPTI_ACTIVITY_KIND_RUNTIME")) return;
      const StringId full = string_id(s.integer(4));
      auto [it, inserted] = bare_names.try_emplace(full, 0);
      if (inserted) it->second = builder_.intern(without_version(builder_.str(full)));
      const std::string_view name = builder_.str(it->second);
      CudaApiRecord r{.track = thread_track(s.integer(2)), .start = start, .end = end,
                      .name = it->second};
      // The runtime table holds driver calls too; they are the cu* names.
      r.kind = name.starts_with("cu") && !name.starts_with("cuda") ? ApiKind::Driver : ApiKind::Runtime;
      r.correlation = s.optional_integer(3);
      r.result = static_cast<std::int32_t>(s.integer(5));
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
    each(sql, [&](const sqlite::Statement& s) {
      const std::int64_t start = s.optional_integer(0), end = s.optional_integer(1);
      if (!check_times(start, end, "CUPTI_ACTIVITY_KIND_KERNEL")) return;
      GpuOpRecord g{.track = stream_track(s.integer(2), s.integer(3)), .kind = GpuOpKind::Kernel,
                    .start = start, .end = end, .name = string_id(s.integer(5))};
      g.correlation = s.optional_integer(4);
      for (int i = 0; i < 3; ++i) g.launch.grid[i] = s.int32(6 + i);
      for (int i = 0; i < 3; ++i) g.launch.block[i] = s.int32(9 + i);
      g.launch.registers_per_thread = s.int32(12);
      g.launch.shared_memory_static = s.int32(13);
      g.launch.shared_memory_dynamic = s.int32(14);
      builder_.add(g);
      ++stats_.events_kept;
    });
  }

  void read_memcpy() {
    if (!has_table("CUPTI_ACTIVITY_KIND_MEMCPY")) return;
    auto c = columns("CUPTI_ACTIVITY_KIND_MEMCPY");
    const std::string sql = "SELECT start, end, deviceId, streamId, " + col(c, "correlationId") +
                            ", bytes, copyKind FROM CUPTI_ACTIVITY_KIND_MEMCPY";
    each(sql, [&](const sqlite::Statement& s) {
      const std::int64_t start = s.optional_integer(0), end = s.optional_integer(1);
      if (!check_times(start, end, "CUPTI_ACTIVITY_KIND_MEMCPY")) return;
      std::int64_t kind = s.integer(6);
      if (kind < 0 || kind > static_cast<std::int64_t>(CopyKind::PtoP)) kind = 0;
      const auto copy = static_cast<CopyKind>(kind);
      // Kineto's names, so that name-based analyses (HTA's kernel types) see one vocabulary.
      const std::string name = "Memcpy " + std::string(to_string(copy));
      GpuOpRecord g{.track = stream_track(s.integer(2), s.integer(3)), .kind = GpuOpKind::Memcpy,
                    .subkind = static_cast<std::uint8_t>(copy), .start = start, .end = end, .name = builder_.intern(name)};
      g.correlation = s.optional_integer(4);
      g.bytes = s.integer(5);
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
    each(sql, [&](const sqlite::Statement& s) {
      const std::int64_t start = s.optional_integer(0), end = s.optional_integer(1);
      if (!check_times(start, end, "CUPTI_ACTIVITY_KIND_MEMSET")) return;
      GpuOpRecord g{.track = stream_track(s.integer(2), s.integer(3)), .kind = GpuOpKind::Memset,
                    .start = start, .end = end, .name = name};
      g.correlation = s.optional_integer(4);
      g.bytes = s.integer(5);
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
    each(sql, [&](const sqlite::Statement& s) {
      const std::int64_t start = s.optional_integer(0), end = s.optional_integer(1);
      if (!check_times(start, end, "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION")) return;
      std::int64_t type = s.integer(5);
      if (type < 0 || type > 4) type = 0;
      // CUPTI's "no stream" (a context sync) is 0xFFFFFFFF as unsigned; keep it as Kineto does.
      std::int64_t stream = s.integer(3);
      if (stream < 0) stream &= 0xFFFFFFFF;
      GpuOpRecord g{.track = stream_track(s.integer(2), stream), .kind = GpuOpKind::Sync,
                    .subkind = static_cast<std::uint8_t>(type), .start = start, .end = end,
                    .name = builder_.intern(names[type])};
      g.correlation = s.optional_integer(4);
      const std::int64_t event = s.optional_integer(6);
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
    each(("SELECT " + domain_col + ", text FROM NVTX_EVENTS WHERE eventType = 75").c_str(), [&](const sqlite::Statement& s) {
      domains.emplace(s.integer(0), builder_.intern(s.text(1)));
    });
    const std::string sql = "SELECT start, end, eventType, " + col(c, "text") + ", " + col(c, "textId") + ", globalTid, " +
                            domain_col + ", " + col(c, "category") + ", " + col(c, "int64Value") + ", " +
                            col(c, "uint64Value") + " FROM NVTX_EVENTS";
    each(sql, [&](const sqlite::Statement& s) {
      const std::int64_t type = s.integer(2);
      if (type == kDomainCreate) return;
      ++stats_.events_read;
      if (type == kMark) {
        stats_.note("nsys_nvtx_mark", s.text(3));
        return;
      }
      if (type != kPushPop && type != kStartEnd) {
        stats_.note("nsys_nvtx_other_type", "eventType " + std::to_string(type));
        return;
      }
      const std::int64_t start = s.optional_integer(0), end = s.optional_integer(1);
      if (end == kNoValue) {
        stats_.note("nsys_nvtx_range_never_ended", s.text(3));
        return;
      }
      if (start == kNoValue || end < start) {
        stats_.note("nsys_nvtx_range_ends_before_start", s.text(3));
        return;
      }
      AnnotationRecord a{.track = thread_track(s.integer(5)), .start = start, .end = end};
      a.name = !s.is_null(3) ? builder_.intern(s.text(3))
               : !s.is_null(4) ? string_id(s.integer(4))
                                                         : 0;
      const std::int64_t domain = s.optional_integer(6);
      auto d = domains.find(domain);
      a.domain = d != domains.end() ? d->second : nvtx_domain_default_;
      if (const std::int64_t category = s.optional_integer(7); category != kNoValue && category != 0) {
        a.category = builder_.intern(std::to_string(category));
      }
      a.payload = s.optional_integer(8) != kNoValue ? s.optional_integer(8) : s.optional_integer(9);
      builder_.add(a);
      ++stats_.events_kept;
    });
  }

  const std::filesystem::path& path_;
  ImportStats& stats_;
  const ImportProgressFn& progress_;
  std::optional<sqlite::Database> db_;
  std::set<std::string> tables_;
  TraceBuilder builder_;
  StringId nvtx_domain_default_ = 0;
  std::unordered_map<std::int64_t, StringId> strings_;
  std::unordered_map<std::int64_t, std::string> thread_names_;
  std::unordered_map<std::int64_t, ProcessId> processes_;
  std::map<std::int64_t, DeviceId> devices_;
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
