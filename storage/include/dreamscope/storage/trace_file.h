// The trace file: one SQLite database per run (schema in docs/trace-format.md).
//
// `TraceWriter` streams events into a new trace.db: prepared statements, batched
// transactions, interned strings, WAL while writing. `complete` is 1 only after close().
// `read_trace()` loads a trace.db into an immutable `Trace`; `write_trace()` writes any
// `Trace` (imported, simulated) to a file. Every failure is a `TraceError` whose message
// names the file and the problem.
#pragma once

#include "dreamscope/storage/trace.h"
#include "dreamscope/storage/trace_sink.h"

#include <filesystem>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

namespace dreamscope {

namespace sqlite {
class Database;
class Statement;
} // namespace sqlite

inline constexpr int kSchemaVersion = 1;

struct TraceWriterOptions {
  // Rows per transaction; a commit also happens on flush() and close().
  std::size_t batch_rows = 64 * 1024;
  // Replace an existing file instead of refusing to overwrite it.
  bool overwrite = true;
};

class TraceWriter : public TraceSink {
 public:
  // Creates the file with the schema; `meta.complete` is 0 until close().
  explicit TraceWriter(std::filesystem::path path, TraceWriterOptions options = {});
  ~TraceWriter() override; // closes if still open; never throws
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // TraceSink's methods (trace_sink.h). Rows are committed in transactions of
  // TraceWriterOptions::batch_rows; args go to the arg table, which only importers fill;
  // close() also records the row counts and checkpoints the WAL into the main file.
  DREAMSCOPE_TRACE_SINK_OVERRIDES

  bool is_open() const { return db_ != nullptr; }

  std::uint64_t rows_written() const { return rows_written_; }

 private:
  void begin_if_needed();
  void drain_pending_rows();
  // A row's columns as its table's definition lists them (tables.h; trace_writer.cpp).
  template <class Record, class Batch>
  std::int64_t add_event(Batch& batch, std::uint64_t& rows, const Record& r);
  template <class Record, class... Own>
  void add_row(sqlite::Statement& st, const Record& r, Own... own);
  template <class Columns, class Record, class... Own>
  void insert(sqlite::Statement& st, const Columns& cols, const Record& r, Own... own);
  std::int64_t launch_id(const LaunchConfig& c); // the launch row, written on first use
  void count_row();
  void exec(const char* sql);
  [[noreturn]] void fail(const std::string& what) const;

  std::filesystem::path path_;
  TraceWriterOptions options_;
  std::unique_ptr<sqlite::Database> db_; // before stmts_, which go first
  bool in_transaction_ = false;
  std::size_t rows_in_transaction_ = 0;
  std::uint64_t rows_written_ = 0;
  std::int64_t next_event_id_ = 1;
  std::int64_t next_memory_event_id_ = 1;
  std::uint64_t cuda_api_rows_ = 0, gpu_op_rows_ = 0, annotation_rows_ = 0;
  StringId next_string_id_ = 1;
  ProcessId next_process_{0};
  DeviceId next_device_{0};
  TrackId next_track_{0};
  std::unique_ptr<struct InternTable> strings_;
  struct Statements;
  std::unique_ptr<Statements> stmts_;
};

// Writes a whole Trace to `path` (replacing it) and closes it cleanly. The file is marked
// complete unless the trace's own meta says `complete` = 0.
void write_trace(const Trace& trace, const std::filesystem::path& path);

struct ReadProgress {
  std::uint64_t rows_read = 0;
  std::uint64_t rows_total = 0;
};

// Loads a trace.db. Throws TraceError for a missing file, a file that is not SQLite or not
// a dreamscope trace, a schema version this build does not read, or a damaged file.
Trace read_trace(const std::filesystem::path& path,
                 const std::function<void(const ReadProgress&)>& progress = {});

// Writes `records` into the calibration table of the trace.db at `path`, replacing the rows
// of the same event kinds (`dreamscope calibrate --apply`). Throws TraceError naming the
// file if it is not a trace.db this build reads, or cannot be written.
void replace_calibration(const std::filesystem::path& path, const std::vector<CalibrationRecord>& records);

// Throws TraceError naming `path` when something other than a regular file is there (a
// device such as /dev/null, a directory, a FIFO, a socket): every writer of a file replaces
// what is at its path, and replacing one of those would destroy it (run as root, /dev/null
// itself). A link is judged by what it points to.
void check_replaceable_output(const std::filesystem::path& path);

// True when the file starts with the SQLite header (used to pick an importer).
bool looks_like_sqlite(const std::filesystem::path& path);

} // namespace dreamscope
