#include "dreamscope/storage/limits.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace dreamscope::limits {

namespace {

// The length of the well-formed UTF-8 sequence at the start of `s`, or 0 if it is ill-formed
// (Unicode 15, table 3-7: no overlongs, no surrogates, nothing past U+10FFFF).
std::size_t utf8_sequence_length(std::string_view s) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char b0 = byte(0);
  if (b0 < 0x80) return 1;
  auto continuation = [&](std::size_t i, unsigned char lo = 0x80, unsigned char hi = 0xBF) {
    return i < s.size() && byte(i) >= lo && byte(i) <= hi;
  };
  if (b0 >= 0xC2 && b0 <= 0xDF) return continuation(1) ? 2 : 0;
  if (b0 >= 0xE0 && b0 <= 0xEF) {
    const unsigned char lo = b0 == 0xE0 ? 0xA0 : 0x80;
    const unsigned char hi = b0 == 0xED ? 0x9F : 0xBF;
    return continuation(1, lo, hi) && continuation(2) ? 3 : 0;
  }
  if (b0 >= 0xF0 && b0 <= 0xF4) {
    const unsigned char lo = b0 == 0xF0 ? 0x90 : 0x80;
    const unsigned char hi = b0 == 0xF4 ? 0x8F : 0xBF;
    return continuation(1, lo, hi) && continuation(2) && continuation(3) ? 4 : 0;
  }
  return 0;
}

} // namespace

bool is_valid_utf8(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    // ASCII runs are the common case: no need to classify byte by byte.
    if (static_cast<unsigned char>(text[i]) < 0x80) {
      ++i;
      continue;
    }
    const std::size_t n = utf8_sequence_length(text.substr(i));
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string repair_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    const std::size_t n = utf8_sequence_length(text.substr(i));
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
  return out;
}

namespace {

// Appends `text` to `out` with control characters escaped and ill-formed UTF-8 shown as \xNN,
// up to `max_chars` characters; `quote` is escaped too. Returns the bytes of `text` consumed.
std::size_t append_escaped(std::string& out, std::string_view text, std::size_t max_chars, char quote) {
  std::size_t shown = 0;
  std::size_t i = 0;
  while (i < text.size() && shown < max_chars) {
    const auto c = static_cast<unsigned char>(text[i]);
    const std::size_t n = utf8_sequence_length(text.substr(i));
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (quote && (c == static_cast<unsigned char>(quote) || c == '\\')) {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7F || n == 0) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    } else {
      out.append(text.substr(i, n));
      i += n;
      ++shown;
      continue;
    }
    ++i;
    ++shown;
  }
  return i;
}

} // namespace

std::string quoted(std::string_view text, std::size_t max_chars) {
  std::string out = "'";
  const std::size_t i = append_escaped(out, text, max_chars, '\'');
  out += '\'';
  if (i < text.size()) out += "... (" + std::to_string(text.size()) + " bytes)";
  return out;
}

std::string one_line(std::string_view message) {
  std::string out;
  out.reserve(message.size());
  append_escaped(out, message, message.size(), '\0');
  return out;
}

std::int64_t saturated_ns(double ns) {
  if (std::isnan(ns)) return 0;
  const double bound = static_cast<double>(kMaxAbsTimestampNs);
  return static_cast<std::int64_t>(std::round(std::clamp(ns, -bound, bound)));
}

std::int64_t add_ns(std::int64_t a, std::int64_t b) {
  std::int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) return b > 0 ? kMaxAbsTimestampNs : -kMaxAbsTimestampNs;
  return std::clamp(sum, -kMaxAbsTimestampNs, kMaxAbsTimestampNs);
}

} // namespace dreamscope::limits
