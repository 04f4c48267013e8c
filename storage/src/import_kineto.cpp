// PyTorch profiler (Kineto) Chrome-trace JSON → Trace.
//
// One pass over the document with simdjson's on-demand parser: no DOM is built, each
// traceEvents element is read field by field and becomes a row right away. Names of
// processes, threads and streams arrive in metadata events that Kineto writes after the
// events they name, and flows are paired by id, so both are resolved once the pass ends.
#include "dreamscope/importers.h"
#include "dreamscope/trace_file.h"

#include "import_input.h"

#include <simdjson.h>

#include <utility>

#include <charconv>
#include <chrono>
#include <cmath>
#include <cstring>
#include <unordered_map>

namespace dreamscope {

namespace {

namespace od = simdjson::ondemand;

// What an X event becomes, by its cat.
enum class EventClass : std::uint8_t {
  CpuAnnotation, // cpu_op, user_annotation, python_function, Operator, and unknown CPU cats
  RuntimeApi,    // cuda_runtime, Runtime, mtia_runtime, *_runtime
  DriverApi,     // cuda_driver, *_driver
  GpuKernel,     // kernel, Kernel, mtia_ccp_events
  GpuMemcpy,     // gpu_memcpy, Memcpy
  GpuMemset,     // gpu_memset, Memset
  GpuSync,       // cuda_sync
  GpuAnnotation, // gpu_user_annotation, cuda_profiler_range, unknown cats with a device or stream
  ProfilerSpan,  // Trace: the profiler's own span, dropped as HTA does
  Unknown,       // decided per event: GPU annotation if it names a device or stream, else CPU
};

EventClass classify_category(std::string_view cat) {
  static const std::pair<std::string_view, EventClass> known[] = {
      {"cpu_op", EventClass::CpuAnnotation},        {"user_annotation", EventClass::CpuAnnotation},
      {"python_function", EventClass::CpuAnnotation}, {"Operator", EventClass::CpuAnnotation},
      {"cuda_runtime", EventClass::RuntimeApi},     {"Runtime", EventClass::RuntimeApi},
      {"mtia_runtime", EventClass::RuntimeApi},     {"cuda_driver", EventClass::DriverApi},
      {"kernel", EventClass::GpuKernel},            {"Kernel", EventClass::GpuKernel},
      {"mtia_ccp_events", EventClass::GpuKernel},   {"gpu_memcpy", EventClass::GpuMemcpy},
      {"Memcpy", EventClass::GpuMemcpy},            {"gpu_memset", EventClass::GpuMemset},
      {"Memset", EventClass::GpuMemset},            {"cuda_sync", EventClass::GpuSync},
      {"gpu_user_annotation", EventClass::GpuAnnotation},
      {"cuda_profiler_range", EventClass::GpuAnnotation},
      {"Trace", EventClass::ProfilerSpan},
  };
  for (const auto& [name, cls] : known) {
    if (cat == name) return cls;
  }
  if (cat.ends_with("_runtime")) return EventClass::RuntimeApi; // hip_runtime, xpu_runtime, ...
  if (cat.ends_with("_driver")) return EventClass::DriverApi;
  return EventClass::Unknown;
}

// A JSON scalar or raw JSON text as found in the input; views into simdjson's buffers,
// which live as long as the parser's document.
struct JsonValue {
  od::json_type type = od::json_type::null;
  std::string_view text; // numbers and compound values: the JSON text; strings: unescaped
  bool present = false;
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\r' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool is_integer_text(std::string_view s) {
  return s.find_first_of(".eE") == std::string_view::npos;
}

std::optional<std::int64_t> parse_int(std::string_view s) {
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<double> parse_double(std::string_view s) {
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

// A JSON number of microseconds as exact nanoseconds: the decimal text is scaled by 1000
// as digits, so "1234.567" is 1234567 ns, not the 1234566.99... a double would give.
// Digits past the nanosecond are rounded half away from zero.
std::optional<TimeNs> parse_us_as_ns(std::string_view s) {
  bool negative = false;
  std::size_t i = 0;
  if (i < s.size() && s[i] == '-') {
    negative = true;
    ++i;
  }
  unsigned __int128 digits = 0;
  int digit_count = 0;
  int exponent = 3; // µs → ns
  bool any = false, point = false;
  for (; i < s.size(); ++i) {
    char c = s[i];
    if (c >= '0' && c <= '9') {
      any = true;
      if (digit_count < 30) {
        digits = digits * 10 + static_cast<unsigned>(c - '0');
        if (digits != 0) ++digit_count;
        if (point) --exponent;
      } else if (!point) {
        ++exponent; // beyond 30 significant digits the value overflows anyway
      }
    } else if (c == '.' && !point) {
      point = true;
    } else if (c == 'e' || c == 'E') {
      auto e = parse_int(s.substr(i + 1 + (i + 1 < s.size() && s[i + 1] == '+')));
      if (!e || *e > 40 || *e < -40) return std::nullopt;
      exponent += static_cast<int>(*e);
      i = s.size();
      break;
    } else {
      return std::nullopt;
    }
  }
  if (!any) return std::nullopt;
  for (; exponent > 0; --exponent) {
    digits *= 10;
    if (digits > static_cast<unsigned __int128>(std::numeric_limits<std::int64_t>::max())) return std::nullopt;
  }
  if (exponent < 0) {
    unsigned __int128 divisor = 1;
    for (; exponent < 0; ++exponent) {
      divisor *= 10;
      if (divisor > static_cast<unsigned __int128>(1) << 100) return std::nullopt;
    }
    digits = (digits + divisor / 2) / divisor;
  }
  if (digits > static_cast<unsigned __int128>(std::numeric_limits<std::int64_t>::max())) return std::nullopt;
  auto v = static_cast<std::int64_t>(digits);
  return negative ? -v : v;
}

// "[512, 1, 1]" → {512, 1, 1}; missing entries stay 0.
void parse_dim3(std::string_view s, std::int32_t out[3]) {
  int n = 0;
  std::size_t i = 0;
  while (i < s.size() && n < 3) {
    while (i < s.size() && !(s[i] >= '0' && s[i] <= '9') && s[i] != '-') ++i;
    std::int64_t v = 0;
    auto [p, ec] = std::from_chars(s.data() + i, s.data() + s.size(), v);
    if (ec != std::errc()) break;
    out[n++] = static_cast<std::int32_t>(v);
    i = static_cast<std::size_t>(p - s.data());
  }
}

CopyKind copy_kind_from_text(std::string_view s) {
  // Kineto's "Memcpy HtoD (Host -> Device)", AMD's args.kind "HtoD", MTIA's "HOST_TO_DEVICE".
  if (s.starts_with("Memcpy ")) s.remove_prefix(7);
  static const std::pair<std::string_view, CopyKind> kinds[] = {
      {"HtoD", CopyKind::HtoD}, {"DtoH", CopyKind::DtoH}, {"HtoA", CopyKind::HtoA}, {"AtoH", CopyKind::AtoH},
      {"AtoA", CopyKind::AtoA}, {"AtoD", CopyKind::AtoD}, {"DtoA", CopyKind::DtoA}, {"DtoD", CopyKind::DtoD},
      {"HtoH", CopyKind::HtoH}, {"PtoP", CopyKind::PtoP}, {"HOST_TO_DEVICE", CopyKind::HtoD},
      {"DEVICE_TO_HOST", CopyKind::DtoH}, {"DEVICE_TO_DEVICE", CopyKind::DtoD}, {"HOST_TO_HOST", CopyKind::HtoH},
  };
  for (const auto& [prefix, kind] : kinds) {
    if (s.starts_with(prefix)) return kind;
  }
  return CopyKind::Unknown;
}

SyncKind sync_kind_from_text(std::string_view s) {
  if (s == "Event Sync") return SyncKind::EventSynchronize;
  if (s == "Stream Wait Event") return SyncKind::StreamWaitEvent;
  if (s == "Stream Sync") return SyncKind::StreamSynchronize;
  if (s == "Context Sync") return SyncKind::ContextSynchronize;
  return SyncKind::Unknown;
}

struct RawArg {
  std::string_view key;
  JsonValue value;
};

// One traceEvents element, as read.
struct RawEvent {
  std::string_view ph, cat, name, bp;
  JsonValue pid, tid, ts, dur, id;
  std::vector<RawArg> args;
  bool args_not_object = false;

  void clear() {
    ph = cat = name = bp = {};
    pid = tid = ts = dur = id = JsonValue{};
    args.clear();
    args_not_object = false;
  }
  const JsonValue* arg(std::string_view key) const {
    for (const auto& a : args) {
      if (a.key == key) return &a.value;
    }
    return nullptr;
  }
};

std::optional<std::int64_t> as_int(const JsonValue& v) {
  if (!v.present || v.type != od::json_type::number) return std::nullopt;
  if (is_integer_text(v.text)) return parse_int(v.text);
  auto d = parse_double(v.text);
  if (!d || !std::isfinite(*d) || std::trunc(*d) != *d) return std::nullopt;
  return static_cast<std::int64_t>(*d);
}

std::optional<std::int64_t> as_int(const JsonValue* v) { return v ? as_int(*v) : std::nullopt; }

// A flow endpoint, paired with its other end after the pass.
struct FlowEnd {
  std::string_view cat;
  std::int64_t id = 0;
  char phase = 's';
  std::int64_t pid = 0, tid = 0;
  TimeNs ts = 0;
  std::uint64_t event_number = 0;
};

struct PidTid {
  std::int64_t pid = 0, tid = 0;
  bool operator==(const PidTid&) const = default;
};
struct PidTidHash {
  std::size_t operator()(const PidTid& k) const {
    return std::hash<std::int64_t>{}(k.pid * 1000003 ^ k.tid);
  }
};

class KinetoImporter {
 public:
  KinetoImporter(const std::filesystem::path& path, ImportStats& stats, const ImportProgressFn& progress)
      : path_(path), stats_(stats), progress_(progress) {}

  Trace run() {
    InputBuffer input = read_input(path_, progress_);
    stats_.bytes = input.size;
    bytes_total_ = input.size;

    // A UTF-8 byte order mark, which some editors add, is not JSON: parse after it.
    const std::size_t bom = input.size >= 3 && std::memcmp(input.data(), "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
    begin_ = input.data() + bom;
    std::size_t first = bom;
    while (first < input.size && std::isspace(static_cast<unsigned char>(input.data()[first]))) ++first;
    if (first == input.size) fail("empty file, not a trace");
    const char c = input.data()[first];
    if (c != '{' && c != '[') {
      fail(input.was_gzip ? "gzip data that is not JSON, so not a PyTorch profiler trace"
                          : "not JSON, so not a PyTorch profiler trace (and not SQLite either)");
    }

    builder_.set_source(TraceSource::Kineto);
    builder_.set_origin(path_.string());
    builder_.set_meta("kineto.file", path_.string());
    pytorch_ = builder_.intern("pytorch");

    od::parser parser;
    od::document doc;
    const simdjson::padded_string_view json(input.data() + bom, input.size - bom, input.storage.size() - bom);
    auto error = parser.iterate(json).get(doc);
    if (error) fail(std::string("not valid JSON (") + simdjson::error_message(error) + ")");
    bool saw_events = false;
    if (c == '[') {
      // The Chrome trace format's bare-array form: the array is the event list.
      od::array events;
      if (doc.get_array().get(events)) fail("not valid JSON (top-level array)");
      read_events(events, doc);
      saw_events = true;
    } else {
      od::object root;
      if ((error = doc.get_object().get(root))) fail(std::string("not valid JSON (") + simdjson::error_message(error) + ")");
      for (auto field_result : root) {
        od::field field;
        if ((error = std::move(field_result).get(field))) json_error(error, doc, saw_events);
        std::string_view key;
        if ((error = field.unescaped_key().get(key))) json_error(error, doc, saw_events);
        if (stopped_) break;
        od::value value = field.value();
        if (key == "traceEvents") {
          od::array events;
          if (value.get_array().get(events)) fail("traceEvents is not an array");
          saw_events = true;
          read_events(events, doc);
          if (stopped_) break;
        } else if (key == "deviceProperties") {
          read_device_properties(value, doc);
        } else {
          read_top_level_meta(key, value, doc);
        }
      }
    }
    if (!saw_events) fail("no traceEvents array, so not a PyTorch profiler trace");
    finish();
    return std::move(builder_).build();
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw TraceError(path_.string() + ": " + what); }

  std::uint64_t offset(od::document& doc) const {
    const char* p = nullptr;
    if (doc.current_location().get(p)) return bytes_total_;
    return static_cast<std::uint64_t>(p - begin_);
  }

  // Syntax errors: before any event was read the file is not a trace; after, the events
  // read so far are kept and the rest is reported lost, as a truncated trace is still useful.
  void json_error(simdjson::error_code error, od::document& doc, bool events_started) {
    if (!events_started && stats_.events_read == 0) {
      fail(std::string("not valid JSON (") + simdjson::error_message(error) + " at byte " +
           std::to_string(offset(doc)) + ")");
    }
    stats_.note("damaged JSON: the events after it are lost", ImportSeverity::Warning,
                std::string(simdjson::error_message(error)) + " after event #" + std::to_string(stats_.events_read));
    stopped_ = true;
  }

  bool read_value(od::value& v, JsonValue& out) {
    od::json_type type;
    if (v.type().get(type)) return false;
    out.type = type;
    out.present = true;
    switch (type) {
      case od::json_type::string:
        return !v.get_string().get(out.text);
      case od::json_type::number:
      case od::json_type::boolean:
      case od::json_type::null: {
        out.text = trim(v.raw_json_token());
        if (type == od::json_type::boolean) return !v.get_bool().error();
        if (type == od::json_type::null) return !v.is_null().error();
        return true;
      }
      case od::json_type::array: {
        od::array a;
        if (v.get_array().get(a)) return false;
        if (a.raw_json().get(out.text)) return false;
        out.text = trim(out.text);
        return true;
      }
      case od::json_type::object: {
        od::object o;
        if (v.get_object().get(o)) return false;
        if (o.raw_json().get(out.text)) return false;
        out.text = trim(out.text);
        return true;
      }
    }
    return false;
  }

  void read_events(od::array& events, od::document& doc) {
    for (auto element : events) {
      od::value v;
      simdjson::error_code error = element.get(v);
      if (error) return json_error(error, doc, true);
      ++stats_.events_read;
      od::object obj;
      if (v.get_object().get(obj)) {
        // Skip the non-object element itself; a syntax error shows up on the next step.
        stats_.note("traceEvents element that is not an object (ignored)", ImportSeverity::Warning,
                    "element #" + std::to_string(stats_.events_read));
        continue;
      }
      event_.clear();
      bool bad_field = false;
      for (auto field_result : obj) {
        od::field field;
        if ((error = std::move(field_result).get(field))) return json_error(error, doc, true);
        std::string_view key;
        if ((error = field.unescaped_key().get(key))) return json_error(error, doc, true);
        od::value fv = field.value();
        bool ok = true;
        if (key.size() <= 4) {
          if (key == "ph") ok = !fv.get_string().get(event_.ph);
          else if (key == "cat") ok = !fv.get_string().get(event_.cat);
          else if (key == "name") {
            ok = read_value(fv, name_value_);
            event_.name = name_value_.text;
          }
          else if (key == "pid") ok = read_value(fv, event_.pid);
          else if (key == "tid") ok = read_value(fv, event_.tid);
          else if (key == "ts") ok = read_value(fv, event_.ts);
          else if (key == "dur") ok = read_value(fv, event_.dur);
          else if (key == "id") ok = read_value(fv, event_.id);
          else if (key == "bp") ok = !fv.get_string().get(event_.bp);
          else if (key == "args") ok = read_args(fv);
        }
        if (!ok) {
          stats_.note("event field of an unexpected type (event ignored)", ImportSeverity::Warning,
                      "field '" + std::string(key) + "' of element #" + std::to_string(stats_.events_read));
          bad_field = true;
        }
      }
      if (!bad_field) handle_event();
      if ((stats_.events_read & 0xffff) == 0 && progress_) {
        progress_(ImportProgress{offset(doc), bytes_total_});
      }
    }
  }

  bool read_args(od::value& v) {
    od::object obj;
    if (v.get_object().get(obj)) {
      event_.args_not_object = true;
      return true;
    }
    for (auto field_result : obj) {
      od::field field;
      if (std::move(field_result).get(field)) return false;
      RawArg a;
      if (field.unescaped_key().get(a.key)) return false;
      od::value av = field.value();
      if (!read_value(av, a.value)) return false;
      event_.args.push_back(a);
    }
    return true;
  }

  std::string example() const {
    std::string e = "event #" + std::to_string(stats_.events_read);
    if (!event_.name.empty()) e += " '" + std::string(event_.name.substr(0, 80)) + "'";
    if (event_.ts.present) e += " at ts " + std::string(event_.ts.text);
    return e;
  }

  void handle_event() {
    const std::string_view ph = event_.ph;
    if (ph == "X") return handle_complete();
    if (ph == "M") return handle_metadata();
    if (ph == "s" || ph == "f" || ph == "t") return handle_flow();
    if (ph.empty()) {
      stats_.note("event without ph (ignored)", ImportSeverity::Warning, example());
    } else if (ph == "i" || ph == "I") {
      stats_.note("instant event, no dur (dropped, as HTA does)", ImportSeverity::Info, example());
    } else {
      stats_.note("event of phase '" + std::string(ph) + "', which PyTorch profiler traces do not use (ignored)",
                  ImportSeverity::Warning, example());
    }
  }

  // Flags float timestamps: HTA then rounds ts up and ends down to whole µs.
  void note_precision(const JsonValue& v) {
    if (!ns_precision_ && !is_integer_text(v.text)) ns_precision_ = true;
  }

  std::uint32_t process_index(std::int64_t pid) {
    auto [it, inserted] = processes_.try_emplace(pid, 0);
    if (inserted) it->second = builder_.add_process(ProcessInfo{.pid = pid});
    return it->second;
  }

  std::uint32_t device_index(std::int64_t ordinal) {
    auto [it, inserted] = devices_.try_emplace(ordinal, 0);
    if (inserted) it->second = builder_.add_device(DeviceInfo{.ordinal = ordinal});
    return it->second;
  }

  void remember_origin(std::int64_t pid, std::int64_t tid, TrackId track) {
    origin_.try_emplace(PidTid{pid, tid}, track);
    if (track >= track_origin_.size()) track_origin_.resize(track + 1, PidTid{kNoValue, kNoValue});
    if (track_origin_[track].pid == kNoValue) track_origin_[track] = PidTid{pid, tid};
  }

  void handle_complete() {
    if (event_.cat.empty()) {
      return stats_.note("event without cat (dropped, as HTA does)", ImportSeverity::Info, example());
    }
    EventClass cls = classify_category(event_.cat);
    if (cls == EventClass::ProfilerSpan) {
      return stats_.note("profiler span, cat Trace (dropped, as HTA does)", ImportSeverity::Info, example());
    }
    if (!event_.dur.present) {
      return stats_.note("event without dur (dropped, as HTA does)", ImportSeverity::Info, example());
    }
    if (!event_.ts.present) return stats_.note("event without ts (dropped)", ImportSeverity::Warning, example());
    if (event_.ts.type != od::json_type::number || event_.dur.type != od::json_type::number) {
      return stats_.note("ts or dur that is not a number (event dropped)", ImportSeverity::Warning, example());
    }
    auto ts = parse_us_as_ns(event_.ts.text);
    auto dur = parse_us_as_ns(event_.dur.text);
    if (!ts || !dur) return stats_.note("ts or dur out of range (event dropped)", ImportSeverity::Warning, example());
    if (*dur < 0) return stats_.note("negative dur (event dropped)", ImportSeverity::Warning, example());
    note_precision(event_.ts);
    note_precision(event_.dur);
    if (event_.args_not_object) {
      stats_.note("args that is not an object (args ignored)", ImportSeverity::Warning, example());
    }
    const TimeNs start = *ts, end = *ts + *dur;

    auto pid = as_int(event_.pid);
    std::optional<std::int64_t> tid = as_int(event_.tid);
    std::optional<std::int64_t> tid_stream;
    if (!tid && event_.tid.type == od::json_type::string && event_.tid.text.starts_with("stream ")) {
      // The 2021 format names a GPU row "stream 7".
      tid_stream = parse_int(trim(event_.tid.text.substr(7)));
      tid = tid_stream;
    }
    if (!pid || !tid) {
      return stats_.note("event whose pid or tid is not a number (dropped)", ImportSeverity::Warning, example());
    }

    if (cls == EventClass::Unknown) {
      const bool on_gpu = event_.arg("device") != nullptr || event_.arg("stream") != nullptr || tid_stream;
      stats_.note("category '" + std::string(event_.cat) + "' this importer does not know (kept as annotations)",
                  ImportSeverity::Info, example());
      cls = on_gpu ? EventClass::GpuAnnotation : EventClass::CpuAnnotation;
    }

    const StringId name = builder_.intern(event_.name);
    consumed_.assign(event_.args.size(), false);
    auto take = [&](std::string_view key) -> const JsonValue* {
      for (std::size_t i = 0; i < event_.args.size(); ++i) {
        if (event_.args[i].key == key) {
          consumed_[i] = true;
          return &event_.args[i].value;
        }
      }
      return nullptr;
    };
    auto take_external_id = [&]() {
      auto v = as_int(take("External id"));
      if (!v) v = as_int(take("external id")); // the 2022 format
      return v.value_or(kNoValue);
    };

    EventTable table;
    EventIndex row;
    switch (cls) {
      case EventClass::CpuAnnotation: {
        TrackId track = cpu_track(*pid, *tid);
        AnnotationRecord a{.track = track, .start = start, .end = end, .name = name, .domain = pytorch_,
                           .category = builder_.intern(event_.cat)};
        a.external_id = take_external_id();
        table = EventTable::Annotation;
        row = builder_.add(a);
        break;
      }
      case EventClass::RuntimeApi:
      case EventClass::DriverApi: {
        TrackId track = cpu_track(*pid, *tid);
        CudaApiRecord r{.track = track, .start = start, .end = end, .name = name};
        r.kind = cls == EventClass::DriverApi ? ApiKind::Driver : ApiKind::Runtime;
        r.correlation = as_int(take("correlation")).value_or(kNoValue);
        r.external_id = take_external_id();
        if (auto cbid = as_int(event_.arg("cbid"))) {
          take("cbid");
          r.cbid = static_cast<std::int32_t>(*cbid);
        }
        // AMD writes the stream as "0x0"; a non-numeric stream stays an arg.
        if (auto stream = as_int(event_.arg("stream"))) {
          take("stream");
          r.stream = *stream;
        }
        table = EventTable::CudaApi;
        row = builder_.add(r);
        break;
      }
      case EventClass::GpuAnnotation: {
        // Kineto draws GPU annotations on their stream's row without naming the stream in args.
        TrackId track = gpu_track(*pid, *tid, tid_stream ? tid_stream : tid);
        AnnotationRecord a{.track = track, .start = start, .end = end, .name = name,
                           .domain = event_.cat == "cuda_profiler_range" ? builder_.intern("cupti") : pytorch_,
                           .category = builder_.intern(event_.cat)};
        a.external_id = take_external_id();
        table = EventTable::Annotation;
        row = builder_.add(a);
        break;
      }
      default: {
        TrackId track = gpu_track(*pid, *tid, tid_stream);
        GpuOpRecord g{.track = track, .start = start, .end = end, .name = name};
        g.correlation = as_int(take("correlation")).value_or(kNoValue);
        if (cls == EventClass::GpuKernel) {
          if (const JsonValue* dir = event_.arg("direction");
              dir && dir->type == od::json_type::string && event_.name.starts_with("dma")) {
            // MTIA's DMA engine requests are copies: direction and size, no launch config.
            take("direction");
            g.kind = GpuOpKind::Memcpy;
            g.subkind = static_cast<std::uint8_t>(copy_kind_from_text(dir->text));
            if (auto size = as_int(event_.arg("size"))) {
              take("size");
              g.bytes = *size;
            }
          } else {
            g.kind = GpuOpKind::Kernel;
            if (const JsonValue* grid = event_.arg("grid"); grid && grid->type == od::json_type::array) {
              take("grid");
              parse_dim3(grid->text, g.launch.grid);
            }
            if (const JsonValue* block = event_.arg("block"); block && block->type == od::json_type::array) {
              take("block");
              parse_dim3(block->text, g.launch.block);
            }
            if (auto regs = as_int(event_.arg("registers per thread"))) {
              take("registers per thread");
              g.launch.registers_per_thread = static_cast<std::int32_t>(*regs);
            }
            // Kineto reports static + dynamic shared memory as one sum.
            if (auto shared = as_int(event_.arg("shared memory"))) {
              take("shared memory");
              g.launch.shared_memory_static = static_cast<std::int32_t>(*shared);
            }
          }
        } else if (cls == EventClass::GpuMemcpy) {
          g.kind = GpuOpKind::Memcpy;
          CopyKind kind = copy_kind_from_text(event_.name);
          if (kind == CopyKind::Unknown) {
            if (const JsonValue* k = event_.arg("kind"); k && k->type == od::json_type::string) {
              kind = copy_kind_from_text(k->text);
              if (kind != CopyKind::Unknown) take("kind");
            }
          }
          g.subkind = static_cast<std::uint8_t>(kind);
          if (auto bytes = as_int(event_.arg("bytes"))) {
            take("bytes");
            g.bytes = *bytes;
          }
        } else if (cls == EventClass::GpuMemset) {
          g.kind = GpuOpKind::Memset;
          if (auto bytes = as_int(event_.arg("bytes"))) {
            take("bytes");
            g.bytes = *bytes;
          }
        } else {
          g.kind = GpuOpKind::Sync;
          g.subkind = static_cast<std::uint8_t>(sync_kind_from_text(event_.name));
          if (auto ev = as_int(event_.arg("wait_on_cuda_event_id")); ev && *ev >= 0) {
            take("wait_on_cuda_event_id");
            g.event = *ev;
          }
          // The calls of a wait on an event name neither the event nor the record waited on;
          // the wait's sync record names the record, by its correlation id, and its stream.
          // Each such record is an event of its own, named by that id (the wait is on that
          // record, whatever else recorded the same CUDA event): both calls get it as their
          // event, the record its stream, and the wait the stream it is on.
          const auto record = as_int(event_.arg("wait_on_cuda_event_record_corr_id"));
          const auto on_stream = as_int(event_.arg("wait_on_stream"));
          if (g.correlation != kNoValue && record && *record >= 0 && on_stream && *on_stream >= 0) {
            const std::int64_t waiting = builder_.tracks()[track].stream;
            call_targets_.push_back({.correlation = g.correlation,
                                     .stream = waiting >= 0 && waiting != kContextWideStream ? waiting : kNoValue,
                                     .event = *record});
            call_targets_.push_back({.correlation = *record, .stream = *on_stream, .event = *record});
          }
        }
        table = EventTable::GpuOp;
        row = builder_.add(g);
        break;
      }
    }
    ++stats_.events_kept;
    for (std::size_t i = 0; i < event_.args.size(); ++i) {
      if (!consumed_[i]) add_arg(table, row, event_.args[i]);
    }
  }

  void add_arg(EventTable table, EventIndex row, const RawArg& a) {
    EventArg arg{.key = builder_.intern(a.key)};
    const JsonValue& v = a.value;
    switch (v.type) {
      case od::json_type::number: {
        if (is_integer_text(v.text)) {
          if (auto i = parse_int(v.text)) {
            arg.type = ArgType::Int;
            arg.int_value = *i;
            break;
          }
        }
        if (auto d = parse_double(v.text)) {
          arg.type = ArgType::Double;
          arg.double_value = *d;
        } else {
          arg.type = ArgType::Json;
          arg.text = builder_.intern(v.text);
        }
        break;
      }
      case od::json_type::string:
        arg.type = ArgType::String;
        arg.text = builder_.intern(v.text);
        break;
      default:
        arg.type = ArgType::Json;
        arg.text = builder_.intern(v.text);
        break;
    }
    builder_.add_arg(table, row, arg);
  }

  TrackId cpu_track(std::int64_t pid, std::int64_t tid) {
    if (last_cpu_.pid == pid && last_cpu_.tid == tid && last_cpu_track_ != kNoIndex) return last_cpu_track_;
    TrackId t = builder_.thread_track(process_index(pid), tid);
    remember_origin(pid, tid, t);
    last_cpu_ = PidTid{pid, tid};
    last_cpu_track_ = t;
    return t;
  }

  // Device: args.device, else the pid (Kineto's GPU rows are one pid per device). Stream:
  // args.stream, else the 2021 format's "stream N" tid; a GPU event with neither (MTIA's
  // DMA_REQUEST row) goes on its device's stream-less track, which HTA calls stream -1.
  TrackId gpu_track(std::int64_t pid, std::int64_t tid, std::optional<std::int64_t> tid_stream) {
    std::int64_t device = as_int(event_.arg("device")).value_or(pid);
    if (event_.arg("device")) consume("device");
    std::int64_t stream = kNoValue;
    if (auto s = as_int(event_.arg("stream"))) {
      consume("stream");
      stream = *s;
    } else if (tid_stream) {
      stream = *tid_stream;
    }
    TrackId t = builder_.stream_track(device_index(device), stream);
    remember_origin(pid, tid, t);
    return t;
  }

  void consume(std::string_view key) {
    for (std::size_t i = 0; i < event_.args.size(); ++i) {
      if (event_.args[i].key == key) consumed_[i] = true;
    }
  }

  void handle_metadata() {
    auto pid = as_int(event_.pid);
    if (!pid) return; // Kineto's "Spans"/"Traces" pseudo-processes
    const JsonValue* name = event_.arg("name");
    const JsonValue* labels = event_.arg("labels");
    if (event_.name == "process_name" && name && name->type == od::json_type::string) {
      process_names_.try_emplace(*pid, name->text);
    } else if (event_.name == "process_labels" && labels && labels->type == od::json_type::string) {
      process_labels_.try_emplace(*pid, labels->text);
    } else if (event_.name == "thread_name" && name && name->type == od::json_type::string) {
      if (auto tid = as_int(event_.tid)) thread_names_.try_emplace(PidTid{*pid, *tid}, name->text);
    }
  }

  void handle_flow() {
    FlowEnd f;
    f.cat = event_.cat;
    f.phase = event_.ph[0];
    f.event_number = stats_.events_read;
    auto id = as_int(event_.id);
    if (!id && event_.id.type == od::json_type::string) id = parse_int(event_.id.text);
    auto pid = as_int(event_.pid);
    auto tid = as_int(event_.tid);
    auto ts = event_.ts.type == od::json_type::number ? parse_us_as_ns(event_.ts.text) : std::nullopt;
    if (!id || !pid || !tid || !ts) {
      return stats_.note("flow event without a numeric id, pid, tid or ts (dropped)", ImportSeverity::Warning,
                         example());
    }
    if (f.phase == 't') {
      return stats_.note("flow step event, ph t (ignored: flows are kept as start to finish)",
                         ImportSeverity::Info, example());
    }
    f.id = *id;
    f.pid = *pid;
    f.tid = *tid;
    f.ts = *ts;
    flows_.push_back(f);
  }

  void read_device_properties(od::value& value, od::document& doc) {
    od::array devices;
    if (value.get_array().get(devices)) {
      stats_.note("deviceProperties that is not an array (ignored)", ImportSeverity::Warning, "");
      return;
    }
    for (auto element : devices) {
      od::object obj;
      if (element.get_object().get(obj)) {
        stats_.note("deviceProperties entry that is not an object (ignored)", ImportSeverity::Warning, "");
        continue;
      }
      std::optional<std::int64_t> id;
      DeviceInfo d;
      std::int64_t memory_clock_khz = 0, bus_width = 0;
      for (auto field_result : obj) {
        od::field field;
        if (auto error = std::move(field_result).get(field)) return json_error(error, doc, false);
        std::string_view key;
        if (field.unescaped_key().get(key)) continue;
        od::value fv = field.value();
        JsonValue v;
        if (!read_value(fv, v)) continue;
        auto number = as_int(v);
        if (key == "id") id = number;
        else if (key == "name" && v.type == od::json_type::string) d.name = std::string(v.text);
        else if (key == "numSms" && number) d.sm_count = *number;
        else if (key == "totalGlobalMem" && number) d.global_memory_bytes = *number;
        else if (key == "computeMajor" && number) d.compute_capability_major = *number;
        else if (key == "computeMinor" && number) d.compute_capability_minor = *number;
        else if (key == "clockRate" && number) d.core_clock_khz = *number;
        else if (key == "memoryClockRate" && number) memory_clock_khz = *number;
        else if (key == "memoryBusWidth" && number) bus_width = *number;
      }
      if (!id) {
        stats_.note("deviceProperties entry without an id (ignored)", ImportSeverity::Warning, d.name);
        continue;
      }
      d.memory_clock_khz = memory_clock_khz;
      d.memory_bus_width_bits = bus_width;
      // DDR: two transfers per clock.
      d.memory_bandwidth_bytes_per_s = memory_clock_khz * 1000 * 2 * (bus_width / 8);
      DeviceInfo& target = builder_.device(device_index(*id));
      d.ordinal = *id;
      d.process = target.process;
      target = d;
    }
  }

  void read_top_level_meta(std::string_view key, od::value& value, od::document&) {
    JsonValue v;
    if (!read_value(value, v)) return;
    std::string text(v.text);
    if (key == "host_name" && v.type == od::json_type::string) builder_.set_meta("host", text);
    if (key == "distributedInfo" && v.type == od::json_type::object) distributed_info_ = text;
    builder_.set_meta("kineto." + std::string(key), std::move(text));
  }

  void finish() {
    pair_flows();
    builder_.set_call_targets(std::move(call_targets_));

    // Names known only now. GPU rows carry Kineto's "stream 7 " names; keep them trimmed.
    for (auto& [pid, index] : processes_) {
      auto it = process_names_.find(pid);
      if (it != process_names_.end()) builder_.process(index).name = std::string(it->second);
    }
    for (TrackId t = 0; t < track_origin_.size(); ++t) {
      const PidTid origin = track_origin_[t];
      if (origin.pid == kNoValue) continue;
      auto it = thread_names_.find(origin);
      if (it != thread_names_.end()) builder_.track(t).name = std::string(trim(it->second));
    }
    const std::uint32_t only_process = processes_.size() == 1 ? processes_.begin()->second : kNoIndex;
    for (auto& [ordinal, index] : devices_) {
      DeviceInfo& d = builder_.device(index);
      if (d.process == kNoIndex) d.process = only_process;
      if (d.name.empty()) {
        auto it = process_labels_.find(ordinal);
        if (it != process_labels_.end()) d.name = std::string(it->second);
      }
    }

    builder_.set_meta("kineto.ts_precision", ns_precision_ ? "ns" : "us");
    // Complete as far as the file goes; a damaged file is not.
    builder_.set_meta("complete", stopped_ ? "0" : "1");
    if (!distributed_info_.empty()) {
      // The rank, for multi-rank analyses; the full object stays in kineto.distributedInfo.
      simdjson::dom::parser p;
      simdjson::dom::element e;
      if (!p.parse(distributed_info_).get(e)) {
        std::int64_t rank = 0;
        if (!e["rank"].get(rank)) builder_.set_meta("rank", std::to_string(rank));
      }
    }
    builder_.set_meta("import_events_read", std::to_string(stats_.events_read));
    if (!stats_.issues.empty()) builder_.set_meta("import_warnings", stats_.summary());
  }

  void pair_flows() {
    // Pair by (cat, id); several of one id (Kineto reuses fwdbwd ids across steps) pair in time order.
    std::stable_sort(flows_.begin(), flows_.end(), [](const FlowEnd& a, const FlowEnd& b) {
      if (a.cat != b.cat) return a.cat < b.cat;
      if (a.id != b.id) return a.id < b.id;
      return a.ts < b.ts;
    });
    std::size_t i = 0;
    while (i < flows_.size()) {
      std::size_t j = i;
      while (j < flows_.size() && flows_[j].cat == flows_[i].cat && flows_[j].id == flows_[i].id) ++j;
      std::vector<const FlowEnd*> starts, finishes;
      for (std::size_t k = i; k < j; ++k) (flows_[k].phase == 's' ? starts : finishes).push_back(&flows_[k]);
      const std::size_t pairs = std::min(starts.size(), finishes.size());
      for (std::size_t k = 0; k < pairs; ++k) add_flow(*starts[k], *finishes[k]);
      for (std::size_t k = pairs; k < starts.size(); ++k) {
        stats_.note("flow start without a finish (dropped)", ImportSeverity::Warning, flow_example(*starts[k]));
      }
      for (std::size_t k = pairs; k < finishes.size(); ++k) {
        // Kineto writes an ac2g finish on the CPU thread of runtime calls that launched nothing.
        const bool runtime_artifact = finishes[k]->cat == "ac2g" && !origin_is_gpu(*finishes[k]);
        stats_.note(runtime_artifact ? "ac2g flow finish without a start, on a CPU thread (Kineto marks runtime "
                                       "calls that launched nothing this way; dropped)"
                                     : "flow finish without a start (dropped)",
                    runtime_artifact ? ImportSeverity::Info : ImportSeverity::Warning, flow_example(*finishes[k]));
      }
      i = j;
    }
  }

  bool origin_is_gpu(const FlowEnd& f) const {
    auto it = origin_.find(PidTid{f.pid, f.tid});
    return it != origin_.end() && builder_.tracks()[it->second].kind == TrackKind::GpuStream;
  }

  std::string flow_example(const FlowEnd& f) const {
    return "event #" + std::to_string(f.event_number) + ", " + std::string(f.cat) + " id " + std::to_string(f.id);
  }

  void add_flow(const FlowEnd& from, const FlowEnd& to) {
    auto a = origin_.find(PidTid{from.pid, from.tid});
    auto b = origin_.find(PidTid{to.pid, to.tid});
    if (a == origin_.end() || b == origin_.end()) {
      stats_.note("flow to or from a thread with no events (dropped)", ImportSeverity::Warning, flow_example(from));
      return;
    }
    builder_.add(FlowRecord{.kind = builder_.intern(from.cat), .from_track = a->second, .from_time = from.ts,
                            .to_track = b->second, .to_time = to.ts, .id = from.id});
    ++stats_.events_kept;
  }

  const std::filesystem::path& path_;
  ImportStats& stats_;
  const ImportProgressFn& progress_;
  const char* begin_ = nullptr;
  std::uint64_t bytes_total_ = 0;
  bool stopped_ = false;

  TraceBuilder builder_;
  StringId pytorch_ = 0;
  RawEvent event_;
  JsonValue name_value_;
  std::vector<bool> consumed_;
  bool ns_precision_ = false;
  std::string distributed_info_;

  std::unordered_map<std::int64_t, std::uint32_t> processes_;
  std::map<std::int64_t, std::uint32_t> devices_;
  std::unordered_map<PidTid, TrackId, PidTidHash> origin_; // Kineto's (pid, tid) → our track
  std::vector<PidTid> track_origin_;                       // our track → its first (pid, tid)
  PidTid last_cpu_{kNoValue, kNoValue};
  TrackId last_cpu_track_ = kNoIndex;

  std::unordered_map<std::int64_t, std::string_view> process_names_, process_labels_;
  std::unordered_map<PidTid, std::string_view, PidTidHash> thread_names_;
  std::vector<FlowEnd> flows_;
  std::vector<CallTarget> call_targets_; // from GPU sync records, for their calls
};

} // namespace

Trace import_kineto(const std::filesystem::path& path, ImportStats* stats, const ImportProgressFn& progress) {
  ImportStats local;
  ImportStats& s = stats ? *stats : local;
  s = ImportStats{};
  const auto t0 = std::chrono::steady_clock::now();
  Trace trace = KinetoImporter(path, s, progress).run();
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return trace;
}

} // namespace dreamscope
