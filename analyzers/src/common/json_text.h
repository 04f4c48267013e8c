// A report's JSON, written exactly as nlohmann's dump(2) writes it, but assembled from parts:
// a long array is dumped a row at a time instead of held whole as one document (internal).
//
// A nlohmann document holds each object as a std::map of strings: about 500 bytes for a row
// of three numbers and a name, so 10^5 rows of HTA's annotation table (a trace of 10^5 steps
// names each one) took 50 MB on top of the text they make. Here a row's document lives only
// while its text is written.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <map>
#include <string>
#include <utility>

namespace dreamscope::analyzers::detail {

inline std::string dump_json(const nlohmann::json& value) {
  return value.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

// `value` as dump(2) writes it nested `depth` levels deep: every line after its first
// indented by 2 * depth more. Strings hold their newlines escaped, so every newline of the
// text is one of the layout's.
inline std::string json_at(const nlohmann::json& value, int depth) {
  std::string text = dump_json(value);
  if (depth == 0 || text.find('\n') == std::string::npos) return text;
  const std::string indent(2 * static_cast<std::size_t>(depth), ' ');
  std::string out;
  out.reserve(text.size() + text.size() / 4);
  for (char c : text) {
    out += c;
    if (c == '\n') out += indent;
  }
  return out;
}

// An object's members as texts nested `depth + 1` deep, by key: nlohmann keeps an object's
// keys in a std::map, so this is its order too.
using JsonMembers = std::map<std::string, std::string>;

// Each member of `object` (a JSON object) as a text nested `depth + 1` deep.
inline JsonMembers json_members(const nlohmann::json& object, int depth) {
  JsonMembers m;
  for (const auto& [key, value] : object.items()) m[key] = json_at(value, depth + 1);
  return m;
}

// The object of `members` nested `depth` deep; each member's text is let go once written.
inline std::string json_object(JsonMembers&& members, int depth) {
  if (members.empty()) return "{}";
  const std::string inner(2 * static_cast<std::size_t>(depth + 1), ' ');
  std::size_t size = 0;
  for (const auto& [key, text] : members) size += inner.size() + key.size() + text.size() + 8;
  std::string out = "{\n";
  out.reserve(size + 2 * static_cast<std::size_t>(depth) + 4);
  bool first = true;
  for (auto& [key, text] : members) {
    if (!first) out += ",\n";
    first = false;
    out += inner;
    out += dump_json(nlohmann::json(key));
    out += ": ";
    out += text;
    std::string().swap(text);
  }
  out += '\n';
  out.append(2 * static_cast<std::size_t>(depth), ' ');
  out += '}';
  return out;
}

// The array of `n` rows nested `depth` deep, `text(i)` giving the i-th's text nested
// `depth + 1` deep.
template <class RowText>
std::string json_texts(std::size_t n, int depth, RowText&& text) {
  if (n == 0) return "[]";
  const std::string inner(2 * static_cast<std::size_t>(depth + 1), ' ');
  std::string out = "[\n";
  for (std::size_t i = 0; i < n; ++i) {
    if (i > 0) out += ",\n";
    out += inner;
    out += text(i);
  }
  out += '\n';
  out.append(2 * static_cast<std::size_t>(depth), ' ');
  out += ']';
  return out;
}

// The array of `n` rows nested `depth` deep, `row(i)` giving the i-th as a document.
template <class Row>
std::string json_rows(std::size_t n, int depth, Row&& row) {
  return json_texts(n, depth, [&](std::size_t i) { return json_at(row(i), depth + 1); });
}

} // namespace dreamscope::analyzers::detail
