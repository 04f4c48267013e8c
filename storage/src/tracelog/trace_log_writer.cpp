// The trace log's writer: what the tracer's part files are written with. It is built into
// its own small library (dreamscope_tracelog) so that the code injected into a traced
// process links this and nothing of storage's readers, importers or SQLite.
#include "dreamscope/storage/trace_log.h"
#include "tracelog/trace_log_format.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <type_traits>

namespace dreamscope {

using namespace trace_log_format;

namespace {
// LEB128 at `out`; returns the end of what it wrote.
char* encode_varint(std::uint64_t v, char* out) {
  while (v >= 0x80) {
    *out++ = static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  *out++ = static_cast<char>(v);
  return out;
}

// Writes a record's fields at a cursor held in a local: stores through char* may alias any
// member, so fields written through the members (put_u) reload the buffer and its size for each
// one. Every table's record goes through this (put_fields), the three event records, nearly all
// of a log, above all.
struct FieldCursor {
  char* p;
  void u(std::uint64_t v) { p = encode_varint(v, p); }
  void s(std::int64_t v) { u(zigzag(v)); }
  void f64(double v) {
    std::memcpy(p, &v, sizeof v);
    p += sizeof v;
  }
};

// The most bytes a column's field takes, a string's apart (put_str makes room for its own).
template <class Column>
constexpr std::size_t most_bytes() {
  if constexpr (columns::is<Column, columns::Text>) return 0;
  if constexpr (columns::is<Column, columns::Real> || columns::is<Column, columns::Cost>) return 8;
  if constexpr (columns::is<Column, columns::Launch>) return 1 + 9 * 10;
  return 10; // a varint
}

} // namespace

// The fields of a row, column by column (trace_log_format.h): the encoding of each says
// how it is written (tables.h).
template <class Record>
void TraceLogWriter::put_fields(const Record& r) {
  using namespace columns;
  constexpr std::size_t fixed_bytes = [] {
    std::size_t n = 0;
    for_each<Record>([&](const auto& c) { n += most_bytes<std::remove_cvref_t<decltype(c)>>(); });
    return n;
  }();
  static_assert(fixed_bytes <= kMaxFixedBytes, "begin() makes room for every fixed-size field of a record");
  FieldCursor out{buffer_.get() + size_};
  TimeNs last_start = last_start_;
  for_each_in_record<Record>([&](const auto& c, auto) {
    using C = decltype(c);
    const auto& v = r.*c.member;
    if constexpr (is<C, Track> || is<C, String> || is<C, Unsigned>) {
      out.u(v);
    } else if constexpr (is<C, Enum>) {
      out.u(static_cast<std::uint64_t>(v));
    } else if constexpr (is<C, Int>) {
      out.s(v);
    } else if constexpr (is<C, Optional>) {
      out.u(opt(v));
    } else if constexpr (is<C, Process> || is<C, Device>) {
      out.u(opt_index(v));
    } else if constexpr (is<C, Start>) {
      out.s(v - last_start);
      last_start = v;
    } else if constexpr (is<C, End>) {
      out.s(v - start_of<C>(r));
    } else if constexpr (is<C, Real> || is<C, Cost>) {
      out.f64(v);
    } else if constexpr (is<C, Text>) {
      size_ = static_cast<std::size_t>(out.p - buffer_.get());
      put_str(v);
      out.p = buffer_.get() + size_;
    } else if constexpr (is<C, Launch>) {
      // 0 for none, else 1 and the fields.
      if (v == LaunchConfig{}) {
        out.u(0);
      } else {
        out.u(1);
        for_each_field(v, [&](std::int32_t field, const char*) { out.s(field); });
      }
    } else {
      static_assert(sizeof(C) == 0, "an encoding the part log does not write");
    }
  });
  last_start_ = last_start;
  size_ = static_cast<std::size_t>(out.p - buffer_.get());
}

template <class Record>
void TraceLogWriter::put_record(std::uint8_t type, const Record& r) {
  begin(type);
  put_fields(r);
  end_record();
}

// ---------------------------------------------------------------------------------------
// Writing.

TraceLogWriter::TraceLogWriter(std::filesystem::path path) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw TraceError(path_.string() + ": cannot create the file: " + std::strerror(errno));
  grow(kWriteBytes + kMaxFixedBytes);
  std::memcpy(buffer_.get(), kMagic, sizeof kMagic);
  for (int i = 0; i < 4; ++i) buffer_[sizeof kMagic + i] = static_cast<char>((kTraceLogVersion >> (8 * i)) & 0xff);
  size_ = kHeaderBytes;
  write_out();
}

TraceLogWriter::~TraceLogWriter() {
  if (fd_ < 0) return;
  try {
    write_out();
  } catch (const TraceError&) {
  }
  ::close(fd_);
}

const std::filesystem::path& TraceLogWriter::path() const { return path_; }

void TraceLogWriter::fail(const std::string& what) { throw TraceError(path_.string() + ": " + what); }

// The stream only ever grows by whole prefixes of the buffer, so a write cut short (a full
// disk, a signal) leaves a log whose tail is at worst one torn record.
void TraceLogWriter::write_out() {
  std::size_t done = 0;
  while (done < size_) {
    const ssize_t n = ::write(fd_, buffer_.get() + done, size_ - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      std::memmove(buffer_.get(), buffer_.get() + done, size_ - done);
      size_ -= done;
      bytes_written_ += done;
      fail(std::string("cannot write: ") + std::strerror(err));
    }
    done += static_cast<std::size_t>(n);
  }
  bytes_written_ += done;
  size_ = 0;
  recycle_page_cache();
}

// A traced job's part log grows by up to hundreds of MB/s, and every page of it in the page
// cache is memory the machine had to find: in a VM whose host backs memory lazily, fresh
// pages cost the writer thread ten times what the write itself does (measured: 0.41 s of
// system time for a 190 MB log, against 0.03 s for the same writes into recycled pages), CPU
// taken from the traced job. So each 8 MiB of the log is handed to writeback once written,
// and dropped from the page cache a few windows later, once clean: the next writes reuse
// those pages. Nothing waits: pages still dirty (a slow disk) simply stay until the kernel
// writes them.
void TraceLogWriter::recycle_page_cache() {
  constexpr std::uint64_t kWindow = std::uint64_t{8} << 20;
  constexpr std::uint64_t kKeptWindows = 4;
  while (bytes_written_ - writeback_started_ >= kWindow) {
    ::sync_file_range(fd_, static_cast<off_t>(writeback_started_), kWindow, SYNC_FILE_RANGE_WRITE);
    writeback_started_ += kWindow;
    if (writeback_started_ >= kKeptWindows * kWindow) {
      ::posix_fadvise(fd_, static_cast<off_t>(writeback_started_ - kKeptWindows * kWindow), kWindow,
                      POSIX_FADV_DONTNEED);
    }
  }
}

void TraceLogWriter::grow(std::size_t needed) {
  const std::size_t capacity = std::max(needed, 2 * capacity_);
  auto bigger = std::make_unique_for_overwrite<char[]>(capacity);
  if (size_) std::memcpy(bigger.get(), buffer_.get(), size_);
  buffer_ = std::move(bigger);
  capacity_ = capacity;
}

// A body of 128 bytes or more (a long string) needs a longer length: the body moves up.
void TraceLogWriter::widen_length(std::size_t len) {
  char tmp[10];
  const std::size_t n = static_cast<std::size_t>(encode_varint(len, tmp) - tmp);
  reserve(n - 1);
  char* body = buffer_.get() + record_start_ + 1;
  std::memmove(body + n - 1, body, len);
  std::memcpy(buffer_.get() + record_start_, tmp, n);
  size_ += n - 1;
}

void TraceLogWriter::put_str(std::string_view s) {
  reserve(10 + s.size() + kMaxFixedBytes);
  put_u(s.size());
  std::memcpy(buffer_.get() + size_, s.data(), s.size());
  size_ += s.size();
}

void TraceLogWriter::put_double(double v) {
  std::memcpy(buffer_.get() + size_, &v, sizeof v);
  size_ += sizeof v;
}

StringId TraceLogWriter::intern(std::string_view s) {
  if (s.empty()) return 0;
  if (auto it = strings_.find(s); it != strings_.end()) return it->second;
  begin(kString);
  reserve(s.size());
  std::memcpy(buffer_.get() + size_, s.data(), s.size());
  size_ += s.size();
  end_record();
  const StringId id = next_string_id_++;
  strings_.emplace(std::string(s), id);
  return id;
}

void TraceLogWriter::set_meta(const std::string& key, const std::string& value) {
  begin(kMeta);
  put_str(key);
  put_str(value);
  end_record();
}

ProcessId TraceLogWriter::add_process(const ProcessInfo& p) {
  put_record(kProcess, p);
  return next_process_++;
}

void TraceLogWriter::update_process(ProcessId id, const ProcessInfo& p) {
  begin(kProcessUpdate);
  put_u(id);
  put_fields(p);
  end_record();
}

DeviceId TraceLogWriter::add_device(const DeviceInfo& d) {
  put_record(kDevice, d);
  return next_device_++;
}

TrackId TraceLogWriter::add_track(const TrackInfo& t) {
  put_record(kTrack, t);
  return next_track_++;
}

void TraceLogWriter::rename_track(TrackId id, std::string_view name) {
  begin(kTrackName);
  put_u(id);
  put_str(name);
  end_record();
}

void TraceLogWriter::add_arg(std::int64_t event, const EventArg& arg) {
  begin(kArg);
  put_s(event);
  put_u(arg.key);
  put_u(static_cast<std::uint64_t>(arg.type));
  put_s(arg.int_value);
  put_double(arg.double_value);
  put_u(arg.text);
  end_record();
}

namespace {
// Each table's record in the log.
template <class Record>
constexpr RecordType record_type() {
  if constexpr (std::is_same_v<Record, CudaApiRecord>) return kCudaApi;
  else if constexpr (std::is_same_v<Record, GpuOpRecord>) return kGpuOp;
  else if constexpr (std::is_same_v<Record, AnnotationRecord>) return kAnnotation;
  else if constexpr (std::is_same_v<Record, FlowRecord>) return kFlow;
  else if constexpr (std::is_same_v<Record, CalibrationRecord>) return kCalibration;
  else if constexpr (std::is_same_v<Record, OverheadRecord>) return kOverhead;
  else if constexpr (std::is_same_v<Record, ThreadLoadRecord>) return kThreadLoad;
  else if constexpr (std::is_same_v<Record, MemoryEventRecord>) return kMemoryEvent;
  else static_assert(sizeof(Record) == 0, "a table the log has no record type for (trace_log_format.h)");
}
} // namespace

// A row of any table TraceSink::add takes: its record, and for an event (an add that returns
// the event's id) the next id, which counts the events of all three tables.
template <class Returns, class Record>
Returns TraceLogWriter::add_row(const Record& r) {
  put_record(record_type<Record>(), r);
  if constexpr (!std::is_void_v<Returns>) return next_event_id_++;
}

#define DREAMSCOPE_LOG_ADD(Returns, Record, ...) \
  Returns TraceLogWriter::add(const Record& r) { return add_row<Returns>(r); }
DREAMSCOPE_SINK_TABLES(DREAMSCOPE_LOG_ADD)
#undef DREAMSCOPE_LOG_ADD

void TraceLogWriter::flush() {
  if (fd_ < 0) fail("cannot write: the log is closed");
  write_out();
}

void TraceLogWriter::close(bool complete) {
  if (fd_ < 0) return;
  set_meta("complete", complete ? "1" : "0");
  write_out();
  const int fd = fd_;
  fd_ = -1;
  if (::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    fail(std::string("cannot write: ") + std::strerror(err));
  }
  if (::close(fd) != 0) fail(std::string("cannot write: ") + std::strerror(errno));
}

} // namespace dreamscope
