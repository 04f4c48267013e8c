// The doubles HTA and the TensorBoard plugin computed with (analyzers/src/hta/kineto_time.h): a
// Kineto time in µs, as Python's float() parsed its text, recovered from the exact ns the
// importer keeps. Checked against strtod of the same text, which rounds correctly as
// Python does, over every magnitude: times relative to the profiler's start and epoch ns.
#include "hta/kineto_time.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

namespace dreamscope::analyzers::detail {
namespace {

double parsed(TimeNs ns) {
  char text[48];
  const std::uint64_t magnitude = ns < 0 ? 0 - static_cast<std::uint64_t>(ns) : static_cast<std::uint64_t>(ns);
  std::snprintf(text, sizeof text, "%s%llu.%03llu", ns < 0 ? "-" : "", static_cast<unsigned long long>(magnitude / 1000),
                static_cast<unsigned long long>(magnitude % 1000));
  return std::strtod(text, nullptr);
}

TEST(KinetoTime, MicrosecondsAreTheDoubleParsedFromTheTextAtEveryMagnitude) {
  std::mt19937_64 rng(20261127);
  for (int bits = 1; bits <= 62; ++bits) {
    for (int k = 0; k < 20000; ++k) {
      const TimeNs ns = static_cast<TimeNs>(rng() >> (64 - bits));
      ASSERT_EQ(us_as_parsed(ns), parsed(ns)) << ns;
      ASSERT_EQ(us_as_parsed(-ns), parsed(-ns)) << -ns;
    }
  }
  // Around 2^53, where the fast division stops being exact, and the edges of the range.
  constexpr TimeNs kEdge = TimeNs{1} << 53;
  for (TimeNs ns = kEdge - 5000; ns <= kEdge + 5000; ++ns) {
    ASSERT_EQ(us_as_parsed(ns), parsed(ns)) << ns;
    ASSERT_EQ(us_as_parsed(ns), us_nearest_by_search(ns)) << ns;
  }
  for (TimeNs ns : {TimeNs{0}, TimeNs{1}, TimeNs{999}, TimeNs{1000}, INT64_MAX, INT64_MIN + 1}) {
    EXPECT_EQ(us_as_parsed(ns), parsed(ns)) << ns;
  }
}

} // namespace
} // namespace dreamscope::analyzers::detail
