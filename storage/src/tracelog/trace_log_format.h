// The trace log's bytes, shared by its writer (trace_log_writer.cpp, in the small library the
// tracer links) and its reader (trace_log_reader.cpp, in storage): the header, the record
// types and the integer encodings. docs/design-notes.md, "Part files are raw logs".
#pragma once

#include "dreamscope/storage/columns.h"
#include "dreamscope/storage/trace.h"

#include <cstddef>
#include <cstdint>

namespace dreamscope::trace_log_format {

// "\x89DSLOG\r\n": a byte no text starts with, the name, and a CR LF that a text-mode copy
// would mangle; then the version as 4 bytes, little-endian.
inline constexpr char kMagic[8] = {'\x89', 'D', 'S', 'L', 'O', 'G', '\r', '\n'};
inline constexpr std::size_t kHeaderBytes = sizeof kMagic + 4;

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

// A table's record holds the columns the table had when the record was introduced
// (columns::Definition::log_columns), in the definition's order (tables.h) but for a GPU op's
// launch configuration, the one field of variable length (0, or 1 and its nine fields), which
// ends them; then the columns appended to the table since, in order. A reader takes each of
// those only where the record has bytes left: a log written before a column existed ends its
// records without it, and reads it as its default, whatever its version. Version 4 so appended
// a process's place in a distributed job.
// Calls f(column, appended) for each column of `Record`, in the order its record holds them
// (above); `appended` is std::true_type for the columns appended since.
template <class Record, class F>
constexpr void for_each_in_record(F&& f) {
  constexpr auto& all = columns::Definition<Record>::columns;
  constexpr std::size_t first = columns::Definition<Record>::log_columns;
  static_assert(first > 0 && first <= columns::count<Record>);
  columns::each_indexed(all, [&](const auto& c, auto i) {
    if constexpr (i < first && !columns::is<decltype(c), columns::Launch>) f(c, std::false_type{});
  });
  columns::each_indexed(all, [&](const auto& c, auto i) {
    if constexpr (columns::is<decltype(c), columns::Launch>) {
      static_assert(i < first, "a launch configuration ends the columns a record was introduced with");
      f(c, std::false_type{});
    }
  });
  columns::each_indexed(all, [&](const auto& c, auto i) {
    if constexpr (i >= first) f(c, std::true_type{});
  });
}

inline std::uint64_t zigzag(std::int64_t v) {
  return (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
}
inline std::int64_t unzigzag(std::uint64_t u) { return static_cast<std::int64_t>(u >> 1) ^ -static_cast<std::int64_t>(u & 1); }
inline std::uint64_t opt(std::int64_t v) { return v == kNoValue ? 0 : zigzag(v) + 1; }
inline std::int64_t unopt(std::uint64_t u) { return u == 0 ? kNoValue : unzigzag(u - 1); }
inline std::uint64_t opt_index(std::uint32_t v) { return v == kNoIndex ? 0 : std::uint64_t{v} + 1; }

} // namespace dreamscope::trace_log_format
