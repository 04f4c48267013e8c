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

// Writes a record's integer fields at a cursor held in a local: stores through char* may
// alias any member, so fields written through the members (put_u) reload the buffer and its
// size for each one. The three event records, nearly all of a log, go through this.
struct FieldCursor {
  char* p;
  void u(std::uint64_t v) { p = encode_varint(v, p); }
  void s(std::int64_t v) { u(zigzag(v)); }
  // An event's start as a delta from the previous event's, and its duration.
  void span(std::int64_t start, std::int64_t end, std::int64_t& last_start) {
    s(start - last_start);
    last_start = start;
    s(end - start);
  }
};

} // namespace

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

void TraceLogWriter::put_process(const ProcessInfo& p) {
  put_s(p.pid);
  put_u(opt(p.parent_pid));
  put_str(p.name);
  put_str(p.command);
  put_u(opt(p.start));
  put_u(opt(p.end));
  put_u(opt(p.exit_status));
  // Version 4 appends the process's place in a distributed job.
  put_u(opt(p.rank));
  put_u(opt(p.local_rank));
  put_u(opt(p.world_size));
  put_str(p.host);
  put_s(p.clock_offset);
}

std::uint32_t TraceLogWriter::add_process(const ProcessInfo& p) {
  begin(kProcess);
  put_process(p);
  end_record();
  return next_process_++;
}

void TraceLogWriter::update_process(std::uint32_t id, const ProcessInfo& p) {
  begin(kProcessUpdate);
  put_u(id);
  put_process(p);
  end_record();
}

std::uint32_t TraceLogWriter::add_device(const DeviceInfo& d) {
  begin(kDevice);
  put_s(d.ordinal);
  put_u(opt_index(d.process));
  put_str(d.name);
  for (std::int64_t v : {d.sm_count, d.core_clock_khz, d.memory_clock_khz, d.memory_bus_width_bits,
                         d.memory_bandwidth_bytes_per_s, d.global_memory_bytes, d.compute_capability_major,
                         d.compute_capability_minor}) {
    put_s(v);
  }
  end_record();
  return next_device_++;
}

TrackId TraceLogWriter::add_track(const TrackInfo& t) {
  begin(kTrack);
  put_u(static_cast<std::uint64_t>(t.kind));
  put_u(opt_index(t.process));
  put_u(opt(t.tid));
  put_u(opt_index(t.device));
  put_u(opt(t.stream));
  put_str(t.name);
  end_record();
  return next_track_++;
}

void TraceLogWriter::rename_track(TrackId id, std::string_view name) {
  begin(kTrackName);
  put_u(id);
  put_str(name);
  end_record();
}

std::int64_t TraceLogWriter::add(const CudaApiRecord& r) {
  begin(kCudaApi);
  FieldCursor c{buffer_.get() + size_};
  c.u(r.track);
  c.span(r.start, r.end, last_start_);
  c.u(r.name);
  c.s(r.cbid);
  c.u(static_cast<std::uint64_t>(r.kind));
  c.u(opt(r.correlation));
  c.u(opt(r.external_id));
  c.s(r.result);
  c.u(opt(r.stream));
  c.u(opt(r.event));
  return end_event(c.p);
}

std::int64_t TraceLogWriter::add(const GpuOpRecord& r) {
  begin(kGpuOp);
  FieldCursor c{buffer_.get() + size_};
  c.u(r.track);
  c.u(static_cast<std::uint64_t>(r.kind));
  c.u(r.subkind);
  c.span(r.start, r.end, last_start_);
  c.u(r.name);
  c.u(opt(r.correlation));
  c.s(r.bytes);
  c.u(opt(r.event));
  const LaunchConfig& l = r.launch;
  if (l == LaunchConfig{}) {
    c.u(0);
  } else {
    c.u(1);
    for (std::int32_t v : {l.grid[0], l.grid[1], l.grid[2], l.block[0], l.block[1], l.block[2],
                           l.registers_per_thread, l.shared_memory_static, l.shared_memory_dynamic}) {
      c.s(v);
    }
  }
  return end_event(c.p);
}

std::int64_t TraceLogWriter::add(const AnnotationRecord& r) {
  begin(kAnnotation);
  FieldCursor c{buffer_.get() + size_};
  c.u(r.track);
  c.span(r.start, r.end, last_start_);
  c.u(r.name);
  c.u(r.domain);
  c.u(r.category);
  c.u(opt(r.payload));
  c.u(opt(r.external_id));
  return end_event(c.p);
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

void TraceLogWriter::add(const FlowRecord& r) {
  begin(kFlow);
  put_u(r.kind);
  put_u(r.from_track);
  put_s(r.from_time);
  put_u(r.to_track);
  put_s(r.to_time);
  put_u(opt(r.id));
  end_record();
}

void TraceLogWriter::add(const CalibrationRecord& r) {
  begin(kCalibration);
  put_str(r.event_kind);
  put_double(r.cost_ns);
  put_s(r.samples);
  put_str(r.method);
  end_record();
}

void TraceLogWriter::add(const OverheadRecord& r) {
  begin(kOverhead);
  put_u(r.track);
  put_s(r.start - last_start_);
  last_start_ = r.start;
  put_s(r.end - r.start);
  put_u(r.kind);
  end_record();
}

void TraceLogWriter::add(const ThreadLoadRecord& r) {
  begin(kThreadLoad);
  put_u(r.track);
  put_s(r.start - last_start_);
  last_start_ = r.start;
  put_s(r.end - r.start);
  put_u(opt(r.cpu_ns));
  put_u(opt(r.runqueue_ns));
  put_s(r.events);
  put_s(r.cost_samples);
  put_double(r.range_cost_ns);
  put_double(r.mark_cost_ns);
  end_record();
}

void TraceLogWriter::add(const MemoryEventRecord& r) {
  begin(kMemoryEvent);
  put_u(r.track);
  put_s(r.time - last_start_);
  last_start_ = r.time;
  put_u(opt(r.device_type));
  put_u(opt(r.device_id));
  put_u(opt(r.addr));
  put_s(r.bytes);
  put_u(opt(r.total_allocated));
  put_u(opt(r.total_reserved));
  end_record();
}

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
