// The trace log's reader: a part file, whole or cut short at any byte, as a Trace.
#include "dreamscope/storage/trace_log.h"
#include "tracelog/trace_log_format.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <vector>

namespace dreamscope {

using namespace trace_log_format;

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
