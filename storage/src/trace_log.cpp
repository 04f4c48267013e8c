#include "dreamscope/trace_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <vector>

namespace dreamscope {

namespace {

// "\x89DSLOG\r\n": a byte no text starts with, the name, and a CR LF that a text-mode copy
// would mangle; then the version as 4 bytes, little-endian.
constexpr char kMagic[8] = {'\x89', 'D', 'S', 'L', 'O', 'G', '\r', '\n'};
constexpr std::size_t kHeaderBytes = sizeof kMagic + 4;

// Each record: its type (one byte), the length of its body (LEB128), the body. Integers in
// bodies are LEB128, signed ones zigzagged; "optional" integers (kNoValue when absent) are
// 0 for absent, else zigzag + 1. Event starts are deltas from the previous event's start,
// ends are durations: both take two or three bytes where absolute nanoseconds take eight.
enum RecordType : std::uint8_t {
  kString = 1,
  kMeta = 2,
  kProcess = 3,
  kProcessUpdate = 4,
  kDevice = 5,
  kTrack = 6,
  kTrackName = 7,
  kCudaApi = 10,
  kGpuOp = 11,
  kAnnotation = 12,
  kFlow = 13,
  kCalibration = 14,
  kOverhead = 15,
  kArg = 16,
  kThreadLoad = 17, // version 3
  kMemoryEvent = 18, // version 5
};

std::uint64_t zigzag(std::int64_t v) {
  return (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
}
std::int64_t unzigzag(std::uint64_t u) { return static_cast<std::int64_t>(u >> 1) ^ -static_cast<std::int64_t>(u & 1); }
std::uint64_t opt(std::int64_t v) { return v == kNoValue ? 0 : zigzag(v) + 1; }
std::int64_t unopt(std::uint64_t u) { return u == 0 ? kNoValue : unzigzag(u - 1); }
std::uint64_t opt_index(std::uint32_t v) { return v == kNoIndex ? 0 : std::uint64_t{v} + 1; }

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

// ---------------------------------------------------------------------------------------
// Reading.

namespace {

struct Damaged {
  std::string what;
};

// A record's body; reading past its end means the record is damaged, not cut short (a cut
// record never gets this far: its frame is incomplete).
struct Body {
  const unsigned char* p;
  const unsigned char* end;

  std::uint64_t u() {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p == end) throw Damaged{"a field runs past its record"};
      const unsigned char b = *p++;
      v |= std::uint64_t{b & 0x7fu} << shift;
      if ((b & 0x80) == 0) return v;
    }
    throw Damaged{"an integer longer than 10 bytes"};
  }
  std::int64_t s() { return unzigzag(u()); }
  std::int64_t o() { return unopt(u()); }
  std::uint32_t u32() {
    const std::uint64_t v = u();
    if (v > 0xffffffffu) throw Damaged{"an id out of range"};
    return static_cast<std::uint32_t>(v);
  }
  std::int32_t s32() { return static_cast<std::int32_t>(s()); }
  std::uint32_t index() {
    const std::uint64_t v = u();
    if (v > 0xffffffffu) throw Damaged{"an index out of range"};
    return v == 0 ? kNoIndex : static_cast<std::uint32_t>(v - 1);
  }
  std::string str() {
    const std::uint64_t n = u();
    if (n > static_cast<std::uint64_t>(end - p)) throw Damaged{"a string runs past its record"};
    std::string s(reinterpret_cast<const char*>(p), static_cast<std::size_t>(n));
    p += n;
    return s;
  }
  double f64() {
    if (end - p < 8) throw Damaged{"a number runs past its record"};
    double v;
    std::memcpy(&v, p, sizeof v);
    p += sizeof v;
    return v;
  }
};

// A time from a delta: a hostile log's deltas can add up past what an int64 holds (undefined
// behaviour, not just a wrong time), so the sum is checked; the invariants bound the rest.
TimeNs plus(TimeNs a, std::int64_t delta) {
  TimeNs sum;
  if (__builtin_add_overflow(a, delta, &sum)) throw Damaged{"a time past what 64 bits hold"};
  return sum;
}

// Turns the log's own ids into the builder's, refusing ids the log never defined.
struct Decoder {
  TraceBuilder b;
  std::vector<StringId> strings{0};
  std::vector<std::uint32_t> processes, devices;
  std::vector<TrackId> tracks;
  std::vector<std::uint64_t> events; // event id - 1 -> table << 32 | row
  TimeNs last_start = 0;

  StringId str(std::uint32_t id) const {
    if (id >= strings.size()) throw Damaged{"a string id the log never defined"};
    return strings[id];
  }
  TrackId track(std::uint32_t id) const {
    if (id >= tracks.size()) throw Damaged{"a track id the log never defined"};
    return tracks[id];
  }
  std::uint32_t process(std::uint32_t id) const {
    if (id == kNoIndex) return kNoIndex;
    if (id >= processes.size()) throw Damaged{"a process id the log never defined"};
    return processes[id];
  }
  std::uint32_t device(std::uint32_t id) const {
    if (id == kNoIndex) return kNoIndex;
    if (id >= devices.size()) throw Damaged{"a device id the log never defined"};
    return devices[id];
  }
  TimeNs start(Body& in) { return last_start = plus(last_start, in.s()); }
  void event(EventTable table, EventIndex row) { events.push_back(std::uint64_t{static_cast<std::uint8_t>(table)} << 32 | row); }

  static ProcessInfo process_info(Body& in) {
    ProcessInfo p;
    p.pid = in.s();
    p.parent_pid = in.o();
    p.name = in.str();
    p.command = in.str();
    p.start = in.o();
    p.end = in.o();
    p.exit_status = in.o();
    if (in.p != in.end) { // version 4 on
      p.rank = in.o();
      p.local_rank = in.o();
      p.world_size = in.o();
      p.host = in.str();
      p.clock_offset = in.s();
    }
    return p;
  }

  void record(std::uint8_t type, Body in) {
    switch (type) {
      case kString:
        strings.push_back(b.intern(std::string_view(reinterpret_cast<const char*>(in.p), static_cast<std::size_t>(in.end - in.p))));
        in.p = in.end;
        break;
      case kMeta: {
        std::string key = in.str();
        b.set_meta(key, in.str());
        break;
      }
      case kProcess:
        processes.push_back(b.add_process(process_info(in)));
        break;
      case kProcessUpdate: {
        const std::uint32_t id = in.u32();
        ProcessInfo p = process_info(in);
        b.process(process(id)) = std::move(p);
        break;
      }
      case kDevice: {
        DeviceInfo d;
        d.ordinal = in.s();
        d.process = process(in.index());
        d.name = in.str();
        for (std::int64_t* v : {&d.sm_count, &d.core_clock_khz, &d.memory_clock_khz, &d.memory_bus_width_bits,
                                &d.memory_bandwidth_bytes_per_s, &d.global_memory_bytes, &d.compute_capability_major,
                                &d.compute_capability_minor}) {
          *v = in.s();
        }
        devices.push_back(b.add_device(std::move(d)));
        break;
      }
      case kTrack: {
        TrackInfo t;
        const std::uint64_t kind = in.u();
        if (kind > 1) throw Damaged{"a track of unknown kind"};
        t.kind = static_cast<TrackKind>(kind);
        t.process = process(in.index());
        t.tid = in.o();
        t.device = device(in.index());
        t.stream = in.o();
        t.name = in.str();
        tracks.push_back(b.add_track(std::move(t)));
        break;
      }
      case kTrackName: {
        const TrackId id = track(in.u32());
        b.track(id).name = in.str();
        break;
      }
      case kCudaApi: {
        CudaApiRecord r;
        r.track = track(in.u32());
        r.start = start(in);
        r.end = plus(r.start, in.s());
        r.name = str(in.u32());
        r.cbid = in.s32();
        r.kind = static_cast<ApiKind>(in.u() & 1);
        r.correlation = in.o();
        r.external_id = in.o();
        r.result = in.s32();
        r.stream = in.o();
        r.event = in.o();
        event(EventTable::CudaApi, b.add(r));
        break;
      }
      case kGpuOp: {
        GpuOpRecord r;
        r.track = track(in.u32());
        const std::uint64_t kind = in.u();
        if (kind > 3) throw Damaged{"a GPU operation of unknown kind"};
        r.kind = static_cast<GpuOpKind>(kind);
        r.subkind = static_cast<std::uint8_t>(in.u());
        r.start = start(in);
        r.end = plus(r.start, in.s());
        r.name = str(in.u32());
        r.correlation = in.o();
        r.bytes = in.s();
        r.event = in.o();
        if (in.u() != 0) {
          LaunchConfig& l = r.launch;
          for (std::int32_t* v : {&l.grid[0], &l.grid[1], &l.grid[2], &l.block[0], &l.block[1], &l.block[2],
                                  &l.registers_per_thread, &l.shared_memory_static, &l.shared_memory_dynamic}) {
            *v = in.s32();
          }
        }
        event(EventTable::GpuOp, b.add(r));
        break;
      }
      case kAnnotation: {
        AnnotationRecord r;
        r.track = track(in.u32());
        r.start = start(in);
        r.end = plus(r.start, in.s());
        r.name = str(in.u32());
        r.domain = str(in.u32());
        r.category = str(in.u32());
        r.payload = in.o();
        r.external_id = in.o();
        event(EventTable::Annotation, b.add(r));
        break;
      }
      case kFlow: {
        FlowRecord r;
        r.kind = str(in.u32());
        r.from_track = track(in.u32());
        r.from_time = in.s();
        r.to_track = track(in.u32());
        r.to_time = in.s();
        r.id = in.o();
        b.add(r);
        break;
      }
      case kCalibration: {
        CalibrationRecord r;
        r.event_kind = in.str();
        r.cost_ns = in.f64();
        r.samples = in.s();
        r.method = in.str();
        b.add(r);
        break;
      }
      case kOverhead: {
        OverheadRecord r;
        r.track = track(in.u32());
        r.start = start(in);
        r.end = plus(r.start, in.s());
        r.kind = str(in.u32());
        b.add(r);
        break;
      }
      case kThreadLoad: {
        ThreadLoadRecord r;
        r.track = track(in.u32());
        r.start = start(in);
        r.end = plus(r.start, in.s());
        r.cpu_ns = in.o();
        r.runqueue_ns = in.o();
        r.events = in.s();
        r.cost_samples = in.s();
        r.range_cost_ns = in.f64();
        r.mark_cost_ns = in.f64();
        b.add(r);
        break;
      }
      case kMemoryEvent: {
        MemoryEventRecord r;
        r.track = track(in.u32());
        r.time = start(in);
        r.device_type = in.o();
        r.device_id = in.o();
        r.addr = in.o();
        r.bytes = in.s();
        r.total_allocated = in.o();
        r.total_reserved = in.o();
        b.add(r);
        break;
      }
      case kArg: {
        const std::int64_t id = in.s();
        if (id < 1 || static_cast<std::uint64_t>(id) > events.size()) throw Damaged{"an arg of an event the log never defined"};
        EventArg a;
        a.key = str(in.u32());
        const std::uint64_t t = in.u();
        if (t > 3) throw Damaged{"an arg of unknown type"};
        a.type = static_cast<ArgType>(t);
        a.int_value = in.s();
        a.double_value = in.f64();
        a.text = str(in.u32());
        const std::uint64_t e = events[static_cast<std::size_t>(id - 1)];
        b.add_arg(static_cast<EventTable>(e >> 32), static_cast<EventIndex>(e & 0xffffffffu), a);
        break;
      }
      default:
        throw Damaged{"a record of unknown type " + std::to_string(type)};
    }
    if (in.p != in.end) throw Damaged{"a record longer than its fields"};
  }
};

std::string read_all(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw TraceError(path.string() + ": cannot open: " + std::strerror(errno));
  std::string data;
  f.seekg(0, std::ios::end);
  const auto size = f.tellg();
  if (size > 0) {
    data.resize(static_cast<std::size_t>(size));
    f.seekg(0);
    f.read(data.data(), size);
    data.resize(static_cast<std::size_t>(f.gcount()));
  }
  if (f.bad()) throw TraceError(path.string() + ": cannot read: " + std::strerror(errno));
  return data;
}

} // namespace

bool looks_like_trace_log(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  char head[sizeof kMagic] = {};
  f.read(head, sizeof head);
  return f.gcount() == sizeof head && std::memcmp(head, kMagic, sizeof kMagic) == 0;
}

Trace read_trace_log(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw TraceError(path.string() + ": no such file");
  if (std::filesystem::is_directory(path, ec)) throw TraceError(path.string() + ": is a folder, not a trace log");
  const std::string data = read_all(path);
  const auto* bytes = reinterpret_cast<const unsigned char*>(data.data());
  const std::size_t size = data.size();
  // A log is never empty (its header is written when it is created); a file that holds a
  // strict prefix of the header is a log killed before its first write completed.
  if (size == 0 || std::memcmp(data.data(), kMagic, std::min(size, sizeof kMagic)) != 0) {
    throw TraceError(path.string() + ": not a dreamscope trace log");
  }
  Decoder d;
  d.b.set_origin(path.string());
  d.b.set_source(TraceSource::Tracer);
  bool cut = size < kHeaderBytes;
  if (!cut) {
    std::uint32_t version = 0;
    for (int i = 0; i < 4; ++i) version |= std::uint32_t{bytes[sizeof kMagic + i]} << (8 * i);
    if (version > kTraceLogVersion) {
      throw TraceError(path.string() + ": trace log version " + std::to_string(version) +
                       " is newer than this build reads (" + std::to_string(kTraceLogVersion) + ")");
    }
    if (version == 0) throw TraceError(path.string() + ": not a dreamscope trace log (version 0)");
  }
  std::size_t pos = kHeaderBytes;
  while (!cut && pos < size) {
    const std::size_t at = pos;
    const std::uint8_t type = bytes[pos++];
    std::uint64_t len = 0;
    bool have_len = false;
    for (int shift = 0; shift < 64 && pos < size; shift += 7) {
      const unsigned char b = bytes[pos++];
      len |= std::uint64_t{b & 0x7fu} << shift;
      if ((b & 0x80) == 0) {
        have_len = true;
        break;
      }
    }
    if (!have_len || len > size - pos) {
      cut = true; // the last record was cut short: everything before it stands
      break;
    }
    try {
      d.record(type, Body{bytes + pos, bytes + pos + len});
    } catch (const Damaged& e) {
      throw TraceError(path.string() + ": damaged trace log: " + e.what + " (record at byte " + std::to_string(at) + ")");
    }
    pos += static_cast<std::size_t>(len);
  }
  // Only close() writes complete = 1, and it is the last record: a log cut short never
  // claims to be complete.
  if (cut) d.b.set_meta("complete", "0");
  return std::move(d.b).build();
}

} // namespace dreamscope
