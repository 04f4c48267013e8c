// The largest values a trace or a scenario may claim, and the checks that every loaded
// `Trace` passes before the rest of dreamscope sees it.
//
// A file written by anybody (a corrupt export, a fuzzer, a hostile colleague) must not make a
// command allocate, recurse, loop or overflow without bound. Input beyond these limits is
// refused with one line that names the file and the value (docs/limits.md lists them with the
// reasons); within them, every command runs in time and memory proportional to the input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace dreamscope::limits {

// Timestamps: |t| < 2^62 ns, about 146 years either side of the clock's zero. Unix-epoch
// nanoseconds (1.8e18 in 2026) fit with room to spare, and the difference of any two
// timestamps, and a timestamp plus any duration, stays inside int64.
inline constexpr std::int64_t kMaxAbsTimestampNs = std::int64_t{1} << 62;

// An event name (kernel, operator, range): 64 KiB. C++ template kernels reach a few KiB;
// longer "names" are data, and every selector runs over every name.
inline constexpr std::size_t kMaxNameBytes = 64 * 1024;

// Ids a trace.db may use for strings, processes, devices and tracks: non-negative and below
// 2^32 - 1, the width of the in-memory indices. Sparse ids are fine: memory follows the
// rows a file holds, not the ids it names.
inline constexpr std::int64_t kMaxId = (std::int64_t{1} << 32) - 2;

// What recording one event may cost (calibration rows): a second. Real costs are 20-50 ns;
// a larger claim is a damaged file, and correction multiplies it by millions of events.
inline constexpr double kMaxCalibrationCostNs = 1e9;

// Bytes of one memory event (an allocation, a release, the allocator's totals): within
// +-2^62, 4 EiB. The memory view sums them, saturating at this bound.
inline constexpr std::int64_t kMaxAbsBytes = std::int64_t{1} << 62;

// Annotation nesting on one thread: deeper ranges are still kept, but counted at this depth.
inline constexpr std::size_t kMaxNestingDepth = 65535;

// Parentheses and prefix operators in one scenario or --fail-if expression.
inline constexpr std::size_t kMaxExpressionDepth = 256;

// Workers of a `move` to a pool (the data scenario's `workers`), and cores.
inline constexpr std::int64_t kMaxPoolWorkers = 4096;
// A move pool's window of items handed out ahead of their consumption (workers × prefetch).
inline constexpr std::int64_t kMaxPoolItemsAhead = kMaxPoolWorkers * 1024;

// Ranks of a distributed job: a rank, local rank or world size is in [0, 2^24) (16.7 M
// ranks; the largest jobs run today are a few hundred thousand GPUs).
inline constexpr std::int64_t kMaxWorldSize = std::int64_t{1} << 24;

// A scenario file: 1 MiB of TOML is far more than any what-if needs.
inline constexpr std::size_t kMaxScenarioBytes = 1024 * 1024;

// Time in a prediction. A what-if may scale a duration by any finite ratio and add any cost
// within the limits above, so the durations and instants of a simulated run saturate at
// +-kMaxAbsTimestampNs instead of overflowing; a prediction that reaches the bound is refused
// (docs/limits.md). Within the bound, the difference of two instants fits in int64.
// `ns` rounded to the nearest nanosecond, clamped to +-kMaxAbsTimestampNs (NaN: 0).
std::int64_t saturated_ns(double ns);
// a + b, clamped to +-kMaxAbsTimestampNs (either may be outside the bound).
std::int64_t add_ns(std::int64_t a, std::int64_t b);

// `text` for a one-line message: control characters (newlines included) escaped, invalid
// UTF-8 shown as \xNN, and cut to about `max_chars` characters with the length said, so that
// an error quoting a 100 000-character name or a value with newlines stays one short line.
std::string quoted(std::string_view text, std::size_t max_chars = 80);

// `message` made one line, as every error the CLI prints is: control characters escaped and
// ill-formed UTF-8 shown as \xNN, whatever a message quoted from its input without quoted().
std::string one_line(std::string_view message);

// True when `text` is well-formed UTF-8 (no overlongs, surrogates or code points past U+10FFFF).
bool is_valid_utf8(std::string_view text);

// `text` with each ill-formed UTF-8 sequence replaced by U+FFFD, as browsers decode.
std::string repair_utf8(std::string_view text);

} // namespace dreamscope::limits
