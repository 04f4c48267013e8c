// The trace log: an append-only binary file of length-framed records, what the tracer
// writes each process's part file as (docs/design-notes.md, "Part files are raw logs").
//
// `TraceLogWriter` encodes each call into a user-space buffer and hands the buffer to the
// kernel with one write(2) per flush() (or when it passes a size bound): no SQLite, no
// index, no fsync until close(). What reached write(2) survives the process being killed,
// because it is in the page cache. `read_trace_log()` turns a log into a `Trace`; a log cut
// short at any byte reads back with every whole record and `complete` = 0.
#pragma once

#include "dreamscope/storage/trace_sink.h"

#include <filesystem>
#include <memory>
#include <string>
#include <unordered_map>

namespace dreamscope {

// Bumped when a record changes meaning or a new kind of record appears; a reader refuses
// logs newer than it knows, and reads every older one. 2: track renames. 3: thread loads.
// 4: a process's rank, local rank, world size, host and clock offset. 5: memory events.
inline constexpr std::uint32_t kTraceLogVersion = 5;

class TraceLogWriter final : public TraceSink {
 public:
  // Creates (or replaces) the file and writes the header. Throws TraceError naming the file.
  explicit TraceLogWriter(std::filesystem::path path);
  ~TraceLogWriter() override; // writes what is buffered, leaves the log incomplete; never throws
  TraceLogWriter(const TraceLogWriter&) = delete;
  TraceLogWriter& operator=(const TraceLogWriter&) = delete;

  // TraceSink's methods (trace_sink.h). flush() writes everything buffered with one write(2):
  // afterwards only a power cut can lose it; close() then fsyncs.
  DREAMSCOPE_TRACE_SINK_OVERRIDES

  bool is_open() const { return fd_ >= 0; }

  std::uint64_t bytes_written() const { return bytes_written_; }

 private:
  // Past this the buffer is written out even between flushes, which bounds the writer's
  // memory when a burst arrives between two flushes.
  static constexpr std::size_t kWriteBytes = std::size_t{1} << 20;
  // Room begin() makes for a record's fixed fields: the largest (a kernel with its launch
  // configuration, a device) is under 200 bytes of varints.
  static constexpr std::size_t kMaxFixedBytes = 256;

  // begin() and end_record() frame every record, a few million a second from the tracer's
  // writer thread: their common path is inline, the rare one (a closed log, a body of 128
  // bytes or more, a full buffer) out of line.
  void begin(std::uint8_t type) {
    if (fd_ < 0) [[unlikely]]
      fail("cannot write: the log is closed");
    reserve(kMaxFixedBytes);
    buffer_[size_] = static_cast<char>(type);
    record_start_ = size_ + 1; // the body's length, one byte for almost every record
    size_ += 2;
  }
  void end_record() {
    const std::size_t len = size_ - record_start_ - 1;
    if (len < 0x80) [[likely]] {
      buffer_[record_start_] = static_cast<char>(len);
    } else {
      widen_length(len);
    }
    if (size_ >= kWriteBytes) [[unlikely]]
      write_out();
  }
  void widen_length(std::size_t len);
  void reserve(std::size_t n) {
    if (size_ + n > capacity_) grow(size_ + n);
  }
  void grow(std::size_t needed);
  // The hot part of the writer thread's work: no capacity check, begin() reserved room for
  // every fixed-size field of a record (put_str reserves for its bytes).
  void put_u(std::uint64_t v) {
    char* p = buffer_.get() + size_;
    while (v >= 0x80) {
      *p++ = static_cast<char>((v & 0x7f) | 0x80);
      v >>= 7;
    }
    *p++ = static_cast<char>(v);
    size_ = static_cast<std::size_t>(p - buffer_.get());
  }
  void put_s(std::int64_t v) {
    put_u((static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63));
  }
  void put_str(std::string_view s);
  void put_double(double v);
  // A table's row as its record's fields (trace_log_format.h); as a whole
  // record of type `type`.
  template <class Record>
  void put_fields(const Record& r);
  template <class Record>
  void put_record(std::uint8_t type, const Record& r);
  template <class Returns, class Record>
  Returns add_row(const Record& r);
  void write_out();
  void recycle_page_cache();
  [[noreturn]] void fail(const std::string& what);

  std::filesystem::path path_;
  int fd_ = -1;
  std::unique_ptr<char[]> buffer_;
  std::size_t size_ = 0, capacity_ = 0;
  std::size_t record_start_ = 0;
  std::uint64_t bytes_written_ = 0;
  std::uint64_t writeback_started_ = 0; // the log's bytes before this were handed to writeback
  std::int64_t next_event_id_ = 1;
  TimeNs last_start_ = 0; // events store their start as a delta from the previous one
  StringId next_string_id_ = 1;
  ProcessId next_process_{0};
  DeviceId next_device_{0};
  TrackId next_track_{0};
  struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, StringId, StringHash, std::equal_to<>> strings_;
};

// Loads a trace log. A log cut short (a killed process, a full disk) keeps every whole
// record and reads as incomplete. Throws TraceError, naming the file, for a missing file,
// a file that is not a trace log, a log version newer than this build reads, or a record
// whose content is damaged.
Trace read_trace_log(const std::filesystem::path& path);

// True when the file starts with the trace log's magic.
bool looks_like_trace_log(const std::filesystem::path& path);

} // namespace dreamscope
