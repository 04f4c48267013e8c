// Opening any trace by its content, and the import statistics every importer fills.
#include "dreamscope/storage/importers.h"
#include "dreamscope/storage/sqlite_file.h"
#include "dreamscope/storage/trace_file.h"
#include "dreamscope/storage/trace_log.h"

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <vector>

namespace dreamscope {

std::string_view to_string(TraceFormat f) {
  switch (f) {
    case TraceFormat::DreamscopeDb: return "dreamscope trace";
    case TraceFormat::KinetoJson: return "PyTorch profiler JSON";
    case TraceFormat::NsysSqlite: return "Nsight Systems SQLite export";
    case TraceFormat::DreamscopeLog: return "dreamscope trace log (a tracer part file)";
    case TraceFormat::Unknown: return "unknown";
  }
  return "unknown";
}

void ImportStats::note(std::string_view id, std::string example) {
  auto it = issues.find(id);
  if (it == issues.end()) {
    const ImportIssueKind& kind = import_issue_kind(id);
    it = issues.emplace(std::string(id), ImportIssue{.severity = kind.severity, .effect = kind.effect,
                                                     .message = kind.message, .count = 0,
                                                     .example = std::move(example)})
             .first;
  }
  ++it->second.count;
}

std::int64_t ImportStats::warning_count() const {
  std::int64_t n = 0;
  for (const auto& [id, issue] : issues) {
    if (issue.severity == ImportSeverity::Warning) n += issue.count;
  }
  return n;
}

std::int64_t ImportStats::events_dropped() const {
  std::int64_t n = 0;
  for (const auto& [id, issue] : issues) {
    if (issue.effect == ImportEffect::Dropped) n += issue.count;
  }
  return n;
}

std::string ImportStats::summary() const {
  std::string out;
  for (auto severity : {ImportSeverity::Warning, ImportSeverity::Info}) {
    for (const auto& [id, issue] : issues) {
      if (issue.severity != severity) continue;
      if (!out.empty()) out += '\n';
      out += std::string(to_string(severity)) + ": " + std::to_string(issue.count) + " x " + std::string(issue.message) +
             " [" + id + "]";
      if (!issue.example.empty()) out += "; e.g. " + issue.example;
    }
  }
  return out;
}

std::string ImportStats::to_meta() const {
  std::string out;
  for (const auto& [id, issue] : issues) {
    out += id + '\t' + std::to_string(issue.count) + '\t' + std::string(to_string(issue.severity)) + '\t' +
           std::string(to_string(issue.effect)) + '\n';
  }
  return out;
}

namespace {

bool has(const std::vector<std::string>& names, std::string_view name) {
  for (const auto& n : names) {
    if (n == name) return true;
  }
  return false;
}

} // namespace

TraceFormat detect_trace_format(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return TraceFormat::Unknown;
  char head[256] = {};
  in.read(head, sizeof head);
  const auto n = static_cast<std::size_t>(in.gcount());
  if (n >= 16 && std::memcmp(head, "SQLite format 3", 16) == 0) {
    auto tables = sqlite::table_names(path);
    if (has(tables, "meta")) return TraceFormat::DreamscopeDb;
    if (has(tables, "StringIds") || has(tables, "CUPTI_ACTIVITY_KIND_KERNEL") ||
        has(tables, "CUPTI_ACTIVITY_KIND_RUNTIME") || has(tables, "NVTX_EVENTS")) {
      return TraceFormat::NsysSqlite;
    }
    return TraceFormat::Unknown;
  }
  if (n >= 2 && static_cast<unsigned char>(head[0]) == 0x1f && static_cast<unsigned char>(head[1]) == 0x8b) {
    return TraceFormat::KinetoJson;
  }
  if (looks_like_trace_log(path)) return TraceFormat::DreamscopeLog;
  std::size_t i = 0;
  if (n >= 3 && std::memcmp(head, "\xEF\xBB\xBF", 3) == 0) i = 3; // UTF-8 byte order mark
  while (i < n && std::isspace(static_cast<unsigned char>(head[i]))) ++i;
  if (i < n && (head[i] == '{' || head[i] == '[')) return TraceFormat::KinetoJson;
  return TraceFormat::Unknown;
}

void check_trace_file(const std::filesystem::path& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) throw TraceError(path.string() + ": cannot open: " + ec.message());
  if (!std::filesystem::exists(status)) throw TraceError(path.string() + ": no such file");
  if (std::filesystem::is_directory(status)) throw TraceError(path.string() + ": is a directory, not a trace file");
  // Opening a FIFO blocks until a writer comes, and a device never ends: a trace is a file.
  if (!std::filesystem::is_regular_file(status)) {
    const char* what = std::filesystem::is_fifo(status)              ? "a FIFO"
                       : std::filesystem::is_character_file(status) ? "a character device"
                       : std::filesystem::is_block_file(status)     ? "a block device"
                       : std::filesystem::is_socket(status)         ? "a socket"
                                                                    : "not a regular file";
    throw TraceError(path.string() + ": is " + what + ", not a trace file");
  }
  if (std::FILE* f = std::fopen(path.c_str(), "rb")) {
    std::fclose(f);
  } else {
    throw TraceError(path.string() + ": cannot open: " + std::strerror(errno));
  }
  if (std::filesystem::file_size(path, ec) == 0 && !ec) throw TraceError(path.string() + ": empty file, not a trace");
}

Trace load_trace(const std::filesystem::path& path, ImportStats* stats, const ImportProgressFn& progress,
                 ImportDetail detail) {
  check_trace_file(path);
  switch (detect_trace_format(path)) {
    case TraceFormat::DreamscopeDb: return read_trace(path);
    case TraceFormat::KinetoJson: return import_kineto(path, stats, progress, detail);
    case TraceFormat::NsysSqlite: return import_nsys(path, stats, progress);
    case TraceFormat::DreamscopeLog: return read_trace_log(path);
    case TraceFormat::Unknown: break;
  }
  if (looks_like_sqlite(path)) {
    // read_trace says precisely why a SQLite file is not a dreamscope trace.
    return read_trace(path);
  }
  throw TraceError(path.string() +
                   ": not a trace dreamscope reads (expected a dreamscope trace.db, a PyTorch profiler "
                   "trace .json or .json.gz, or an Nsight Systems SQLite export)");
}

} // namespace dreamscope
