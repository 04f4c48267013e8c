// Importers: traces recorded by other tools, read into a `Trace`.
//
// - PyTorch profiler (Kineto) Chrome-trace JSON, plain or gzipped.
// - Nsight Systems SQLite export (`nsys export --type sqlite`).
// `load_trace()` opens any of these or a dreamscope trace.db, picking by content, so every
// command accepts them directly. Malformed input that leaves the rest usable is counted in
// `ImportStats` under a stable id (import_issues.h, as Perfetto's stats table keys them) and
// stored in meta.import_warnings (for people) and meta.import_issues (id, count, effect);
// input that cannot be used throws TraceError naming the file and the problem.
// The mapping from each format to the Trace is documented in docs/importers.md.
#pragma once

#include "dreamscope/storage/import_issues.h"
#include "dreamscope/storage/trace.h"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>

namespace dreamscope {

// DreamscopeLog: a part file the tracer writes for each process (trace_log.h), which
// `dreamscope trace` merges into a trace.db; readable on its own for inspection.
enum class TraceFormat { DreamscopeDb, KinetoJson, NsysSqlite, DreamscopeLog, Unknown };
std::string_view to_string(TraceFormat f);

// A kind of problem (its row of import_issues.h), how often it happened, and one example.
struct ImportIssue {
  ImportSeverity severity = ImportSeverity::Warning;
  ImportEffect effect = ImportEffect::Dropped;
  std::string_view message;
  std::int64_t count = 0;
  std::string example;
};

struct ImportStats {
  std::uint64_t bytes = 0;        // input bytes parsed (uncompressed)
  std::uint64_t events_read = 0;  // events in the input (Kineto: traceEvents elements; nsys: rows)
  std::uint64_t events_kept = 0;  // events that became rows of the Trace (event tables, flows, memory events)
  double seconds = 0;
  std::map<std::string, ImportIssue, std::less<>> issues; // key: the stable id, e.g. "kineto_event_without_dur"

  // Counts one occurrence of the issue `id` (a row of import_issues.h); the first example is kept.
  void note(std::string_view id, std::string example = {});
  std::int64_t warning_count() const;
  // Events of the input that are not in the trace (issues whose effect is Dropped).
  std::int64_t events_dropped() const;
  // One line per issue, warnings first:
  // "info: 12 x event without cat (dropped, as HTA does) [kineto_event_without_cat]; e.g. ...".
  std::string summary() const;
  // One line per issue for meta.import_issues: "id<TAB>count<TAB>severity<TAB>effect".
  std::string to_meta() const;
};

struct ImportProgress {
  std::uint64_t bytes_done = 0;
  std::uint64_t bytes_total = 0;
  // "decompressing" (gzip input inflated whole), then "parsing"; a streamed input (large
  // files) is inflated while parsed, and says "parsing" only.
  std::string_view stage = "parsing";
};
using ImportProgressFn = std::function<void(const ImportProgress&)>;

// By content, not by name: the SQLite header and its tables, the gzip magic, a JSON '{'.
TraceFormat detect_trace_format(const std::filesystem::path& path);

// How much of a trace an import keeps. WithoutOperatorArgs: every event, and every arg but
// those of CPU operators that are not collectives (collectives.h, collective_args_read).
// A PyTorch profiler trace writes them for each operator (input shapes, types, External id)
// and they are most of its text; rank summaries (analyzers' summarize_rank, for `dreamscope
// analyze` of a job's files) and the analyses that report.h's reads_operator_args says so of
// read none of them. WithoutOperators: that, and the CPU operators and Python functions are
// counted and their times kept in the trace's span, not kept as events, but for the steps,
// DataLoader iterations and collectives' ranges among them (kept_without_operators). They
// are most of a trace's events, and rank summaries, the HTA analyses, the data stalls and
// the top kernels read only those (report.h, reads_operators; summarized_event_count in
// trace.h counts the others). Formats other than Kineto's are read whole either way.
enum class ImportDetail : std::uint8_t { Full, WithoutOperatorArgs, WithoutOperators };

// Whether an import WithoutOperators keeps a CPU range of this category and name: anything
// but an operator or a Python function (cpu_op, Operator, python_function, Python), and those
// too where they are a profiler step, a DataLoader iteration or a collective's range
// (collectives.h).
bool kept_without_operators(std::string_view category, std::string_view name);

Trace import_kineto(const std::filesystem::path& path, ImportStats* stats = nullptr,
                    const ImportProgressFn& progress = {}, ImportDetail detail = ImportDetail::Full);
Trace import_nsys(const std::filesystem::path& path, ImportStats* stats = nullptr,
                  const ImportProgressFn& progress = {});

// Throws TraceError naming the file unless `path` is a readable, non-empty regular file: a
// FIFO or a device is refused before it is opened (opening a FIFO blocks), an unreadable
// file is reported as such (permission denied), not as a format dreamscope does not read.
void check_trace_file(const std::filesystem::path& path);

// Any supported format. `stats` is filled for imported formats.
Trace load_trace(const std::filesystem::path& path, ImportStats* stats = nullptr,
                 const ImportProgressFn& progress = {}, ImportDetail detail = ImportDetail::Full);

} // namespace dreamscope
