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
  std::vector<ProcessId> processes;
  std::vector<DeviceId> devices;
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
  ProcessId process(std::uint32_t id) const {
    if (id == kNoIndex) return kNoIndex;
    if (id >= processes.size()) throw Damaged{"a process id the log never defined"};
    return processes[id];
  }
  DeviceId device(std::uint32_t id) const {
    if (id == kNoIndex) return kNoIndex;
    if (id >= devices.size()) throw Damaged{"a device id the log never defined"};
    return devices[id];
  }
  TimeNs start(Body& in) { return last_start = plus(last_start, in.s()); }
  void event(EventRow r) { events.push_back(std::uint64_t{static_cast<std::uint8_t>(r.table)} << 32 | r.row); }

  // The enumerations, as the log's readers have always taken them.
  static void decode(ApiKind& v, std::uint64_t u) { v = static_cast<ApiKind>(u & 1); }
  static void decode(GpuOpKind& v, std::uint64_t u) {
    if (u > 3) throw Damaged{"a GPU operation of unknown kind"};
    v = static_cast<GpuOpKind>(u);
  }
  static void decode(TrackKind& v, std::uint64_t u) {
    if (u > 1) throw Damaged{"a track of unknown kind"};
    v = static_cast<TrackKind>(u);
  }

  // A row from its record's fields (trace_log_format.h), each as its
  // encoding says (tables.h), with the log's ids turned into the builder's.
  template <class Record>
  Record row(Body& in) {
    using namespace columns;
    Record r;
    for_each_in_record<Record>([&](const auto& c, auto appended) {
      using C = decltype(c);
      if constexpr (appended) {
        if (in.p == in.end) return; // a log from before the column: its default
      }
      auto& v = r.*c.member;
      using T = std::remove_cvref_t<decltype(v)>;
      if constexpr (is<C, Track>) {
        v = track(in.u32());
      } else if constexpr (is<C, String>) {
        v = str(in.u32());
      } else if constexpr (is<C, Unsigned>) {
        v = static_cast<T>(in.u());
      } else if constexpr (is<C, Enum>) {
        decode(v, in.u());
      } else if constexpr (is<C, Int>) {
        v = static_cast<T>(in.s());
      } else if constexpr (is<C, Optional>) {
        v = in.o();
      } else if constexpr (is<C, Process>) {
        v = process(in.index());
      } else if constexpr (is<C, Device>) {
        v = device(in.index());
      } else if constexpr (is<C, Start>) {
        v = start(in);
      } else if constexpr (is<C, End>) {
        v = plus(start_of<C>(r), in.s());
      } else if constexpr (is<C, Real> || is<C, Cost>) {
        v = in.f64();
      } else if constexpr (is<C, Text>) {
        v = in.str();
      } else if constexpr (is<C, Launch>) {
        if (in.u() != 0) for_each_field(v, [&](std::int32_t& field, const char*) { field = in.s32(); });
      } else {
        static_assert(sizeof(C) == 0, "an encoding the part log does not read");
      }
    });
    return r;
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
      case kProcess: processes.push_back(b.add_process(row<ProcessInfo>(in))); break;
      case kProcessUpdate: {
        const std::uint32_t id = in.u32();
        ProcessInfo p = row<ProcessInfo>(in);
        b.process(process(id)) = std::move(p);
        break;
      }
      case kDevice: devices.push_back(b.add_device(row<DeviceInfo>(in))); break;
      case kTrack: tracks.push_back(b.add_track(row<TrackInfo>(in))); break;
      case kTrackName: {
        const TrackId id = track(in.u32());
        b.track(id).name = in.str();
        break;
      }
      case kCudaApi: event(b.add(row<CudaApiRecord>(in))); break;
      case kGpuOp: event(b.add(row<GpuOpRecord>(in))); break;
      case kAnnotation: event(b.add(row<AnnotationRecord>(in))); break;
      case kFlow: b.add(row<FlowRecord>(in)); break;
      case kCalibration: b.add(row<CalibrationRecord>(in)); break;
      case kOverhead: b.add(row<OverheadRecord>(in)); break;
      case kThreadLoad: b.add(row<ThreadLoadRecord>(in)); break;
      case kMemoryEvent: b.add(row<MemoryEventRecord>(in)); break;
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
        b.add_arg(EventRow{static_cast<EventTable>(e >> 32), static_cast<std::uint32_t>(e & 0xffffffffu)}, a);
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
