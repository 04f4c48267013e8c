#include "importers/kineto/kineto_format.h"

#include "dreamscope/storage/limits.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

namespace dreamscope::kineto {

EventClass classify_category(std::string_view cat) {
  static const std::pair<std::string_view, EventClass> known[] = {
      {"cpu_op", EventClass::CpuAnnotation},        {"user_annotation", EventClass::CpuAnnotation},
      {"python_function", EventClass::CpuAnnotation}, {"Operator", EventClass::CpuAnnotation},
      {"DataLoader", EventClass::CpuAnnotation},    {"Python", EventClass::CpuAnnotation},
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

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\r' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool is_integer_text(std::string_view s) {
  // A loop, not find_first_of: that calls memchr on ".eE" for every byte of s.
  for (const char c : s) {
    if (c == '.' || c == 'e' || c == 'E') return false;
  }
  return true;
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
namespace {

std::optional<TimeNs> parse_us_as_ns_any(std::string_view s);

} // namespace

std::optional<TimeNs> parse_us_as_ns(std::string_view s) {
  // Every ts and dur goes through here. Kineto writes at most 3 decimals of a µs, which fit in
  // 64 bits as they are: "1234.567" → 1234 * 1000 + 567, and a Unix-epoch time has 16 digits
  // before the point. Anything else (more digits, an exponent, junk) takes the general way.
  constexpr std::int64_t kMaxWhole = (std::numeric_limits<std::int64_t>::max() - 999) / 1000;
  const char* p = s.data();
  const char* const end = p + s.size();
  const bool negative = p < end && *p == '-';
  if (negative) ++p;
  const char* const digits_start = p;
  std::int64_t whole = 0;
  while (p < end && *p >= '0' && *p <= '9' && p - digits_start < 16) whole = whole * 10 + (*p++ - '0');
  if (whole > kMaxWhole) return parse_us_as_ns_any(s);
  bool any = p > digits_start;
  std::int64_t ns = whole * 1000;
  if (p < end && *p == '.') {
    ++p;
    std::int64_t scale = 100;
    for (int n = 0; n < 3 && p < end && *p >= '0' && *p <= '9'; ++n, ++p, scale /= 10) {
      ns += (*p - '0') * scale;
      any = true;
    }
  }
  if (p != end || !any) return parse_us_as_ns_any(s);
  return negative ? -ns : ns;
}

namespace {

std::optional<TimeNs> parse_us_as_ns_any(std::string_view s) {
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

} // namespace

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

bool is_json_number(std::string_view s) {
  std::size_t i = 0;
  auto digits = [&] {
    const std::size_t from = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    return i > from;
  };
  if (i < s.size() && s[i] == '-') ++i;
  if (i < s.size() && s[i] == '0') {
    ++i;
  } else if (!digits()) {
    return false;
  }
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (!digits()) return false;
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (!digits()) return false;
  }
  return i == s.size();
}

namespace {

// Where the JSON string that opens at `s[i]` (a quote) ends: the index after its closing
// quote, or npos if it does not close, holds a raw control character or an escape JSON does
// not have (`\a`, a `\u` without four hex digits). Those were copied into exported files.
std::size_t json_string_end(std::string_view s, std::size_t i) {
  for (++i; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '"') return i + 1;
    if (c < 0x20) return std::string_view::npos;
    if (c != '\\') continue;
    if (++i >= s.size()) return std::string_view::npos;
    switch (s[i]) {
      case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't': break;
      case 'u':
        if (i + 4 >= s.size()) return std::string_view::npos;
        for (std::size_t k = 1; k <= 4; ++k) {
          if (!std::isxdigit(static_cast<unsigned char>(s[i + k]))) return std::string_view::npos;
        }
        i += 4;
        break;
      default: return std::string_view::npos;
    }
  }
  return std::string_view::npos;
}

bool is_json_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

} // namespace

// Called once per distinct compound arg text (shapes, types, strides: the importer keeps the
// verdict per interned text). JSON's grammar, without recursion (a fuzzed arg can nest a
// million brackets): what passes is written into exported files as it is.
bool is_valid_json_text(std::string_view s) {
  enum class Want { Value, FirstValue, FirstKey, Key, Colon, Next, Done };
  std::string open; // '[' or '{' of each container still open, innermost last
  Want want = Want::Value;
  const auto after_value = [&] { return open.empty() ? Want::Done : Want::Next; };
  std::size_t i = 0;
  for (;;) {
    while (i < s.size() && is_json_space(s[i])) ++i;
    if (i == s.size()) return want == Want::Done;
    const char c = s[i];
    switch (want) {
      case Want::Done:
        return false;
      case Want::Colon:
        if (c != ':') return false;
        ++i;
        want = Want::Value;
        break;
      case Want::Next:
        if (c == ',') {
          ++i;
          want = open.back() == '[' ? Want::Value : Want::Key;
        } else if ((c == ']' && open.back() == '[') || (c == '}' && open.back() == '{')) {
          ++i;
          open.pop_back();
          want = after_value();
        } else {
          return false;
        }
        break;
      case Want::FirstKey:
      case Want::Key:
        if (want == Want::FirstKey && c == '}') {
          ++i;
          open.pop_back();
          want = after_value();
          break;
        }
        if (c != '"' || (i = json_string_end(s, i)) == std::string_view::npos) return false;
        want = Want::Colon;
        break;
      case Want::FirstValue:
      case Want::Value:
        if (want == Want::FirstValue && c == ']') {
          ++i;
          open.pop_back();
          want = after_value();
        } else if (c == '[' || c == '{') {
          open.push_back(c);
          ++i;
          want = c == '[' ? Want::FirstValue : Want::FirstKey;
        } else if (c == '"') {
          if ((i = json_string_end(s, i)) == std::string_view::npos) return false;
          want = after_value();
        } else {
          // A literal or a number runs to the next space or punctuation: "1[" is one token.
          std::size_t end = i;
          while (end < s.size() && !is_json_space(s[end]) && std::string_view(",:[]{}\"").find(s[end]) == std::string_view::npos) {
            ++end;
          }
          const std::string_view token = s.substr(i, end - i);
          if (token != "true" && token != "false" && token != "null" && !is_json_number(token)) return false;
          i = end;
          want = after_value();
        }
        break;
    }
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

std::optional<std::int64_t> as_int(const JsonValue& v) {
  if (!v.present || v.type != od::json_type::number) return std::nullopt;
  if (is_integer_text(v.text)) return parse_int(v.text);
  auto d = parse_double(v.text);
  if (!d || !std::isfinite(*d) || std::trunc(*d) != *d) return std::nullopt;
  // 4.2e64 is a whole number too, but no int64 (found by fuzz_kineto_import): 2^63 is exact
  // as a double, and the cast of anything outside [-2^63, 2^63) is undefined.
  constexpr double kTwoTo63 = 9223372036854775808.0;
  if (*d < -kTwoTo63 || *d >= kTwoTo63) return std::nullopt;
  return static_cast<std::int64_t>(*d);
}

bool type_arg(const JsonValue& v, EventArg& arg) {
  switch (v.type) {
    case od::json_type::number: {
      if (is_integer_text(v.text)) {
        if (auto i = parse_int(v.text)) {
          arg.type = ArgType::Int;
          arg.int_value = *i;
          return true;
        }
      }
      auto d = parse_double(v.text);
      if (d && is_json_number(v.text)) {
        arg.type = ArgType::Double;
        arg.double_value = *d;
        return true;
      }
      arg.type = ArgType::String;
      return false;
    }
    case od::json_type::string:
      arg.type = ArgType::String;
      return true;
    default:
      arg.type = is_valid_json_text(v.text) ? ArgType::Json : ArgType::String;
      return arg.type == ArgType::Json;
  }
}

std::optional<MemoryEventRecord> memory_event_args(const RawEvent& e, std::string_view& bad_key) {
  MemoryEventRecord m;
  // kNoValue for absent or null; false for what is no integer (or, `bounded`, one past the bytes bound).
  auto read = [&](std::string_view key, std::int64_t& out, bool bounded, bool address = false) {
    const JsonValue* v = e.arg(key);
    if (!v || !v->present || v->type == od::json_type::null) return true;
    std::optional<std::int64_t> n;
    if (v->type == od::json_type::number) {
      if (is_integer_text(v->text)) {
        n = parse_int(v->text);
        std::uint64_t u = 0;
        const auto [p, ec] = std::from_chars(v->text.data(), v->text.data() + v->text.size(), u);
        if (!n && address && ec == std::errc() && p == v->text.data() + v->text.size()) {
          n = static_cast<std::int64_t>(u); // an address past 2^63: its bit pattern
        }
      } else if (auto d = parse_double(v->text); d && std::isfinite(*d) && std::trunc(*d) == *d &&
                                                   std::fabs(*d) < 9.0e18) {
        n = static_cast<std::int64_t>(*d);
      }
    }
    if (!n || *n == kNoValue || (bounded && (*n <= -limits::kMaxAbsBytes || *n >= limits::kMaxAbsBytes))) {
      bad_key = key;
      return false;
    }
    out = *n;
    return true;
  };
  if (!read("Device Type", m.device_type, false) || !read("Device Id", m.device_id, false) ||
      !read("Addr", m.addr, false, true) || !read("Bytes", m.bytes, true) ||
      !read("Total Allocated", m.total_allocated, true) || !read("Total Reserved", m.total_reserved, true)) {
    return std::nullopt;
  }
  return m;
}

LegacyRow legacy_row(const JsonValue& pid) {
  if (!pid.present || pid.type != od::json_type::string) return LegacyRow::None;
  constexpr std::string_view kSuffix = " functions";
  const std::string_view text = pid.text;
  if (!text.ends_with(kSuffix) || text.size() == kSuffix.size()) return LegacyRow::None;
  const std::string_view device = text.substr(0, text.size() - kSuffix.size());
  for (const char c : device) {
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'))) return LegacyRow::None;
  }
  return device == "CPU" ? LegacyRow::Cpu : LegacyRow::Device;
}

std::optional<RemoteThread> legacy_remote_tid(const JsonValue& tid) {
  if (!tid.present || tid.type != od::json_type::string) return std::nullopt;
  std::string_view s = tid.text;
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  s = trim(s);
  // The exporter's f'" node_id:{evt.node_id}, thread_id:{evt.thread} "'.
  constexpr std::string_view kNode = "node_id:", kThread = ", thread_id:";
  if (!s.starts_with(kNode)) return std::nullopt;
  s.remove_prefix(kNode.size());
  const std::size_t comma = s.find(kThread);
  if (comma == std::string_view::npos) return std::nullopt;
  const auto node = parse_int(s.substr(0, comma));
  const auto thread = parse_int(s.substr(comma + kThread.size()));
  if (!node || !thread) return std::nullopt;
  return RemoteThread{*node, *thread};
}

std::string_view legacy_category(std::string_view name) {
  if (name.find("::") != std::string_view::npos) return "cpu_op";
  // An autograd node: an identifier ending in Backward and a version number (AddmmBackward0,
  // or without one before PyTorch 1.10: AddmmBackward).
  std::string_view stem = name;
  while (!stem.empty() && stem.back() >= '0' && stem.back() <= '9') stem.remove_suffix(1);
  constexpr std::string_view kBackward = "Backward";
  if (stem.size() > kBackward.size() && stem.ends_with(kBackward)) {
    const auto identifier = [](char c) {
      return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    };
    if (std::all_of(stem.begin(), stem.end(), identifier)) return "cpu_op";
  }
  return "user_annotation";
}

std::optional<std::int64_t> as_id(const JsonValue& v) {
  if (v.present && v.type == od::json_type::string) return parse_int(trim(v.text));
  return as_int(v);
}

} // namespace dreamscope::kineto
