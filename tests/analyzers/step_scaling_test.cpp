// What made a report of many steps slow: per-step overlap sums over every interval
// (analyzers/src/intervals.h, OverlapIndex), against the plain definition it replaced, on
// random and edge cases.
#include "intervals.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace dreamscope::analyzers {
namespace {

using detail::Interval;
using detail::OverlapIndex;

// What the analyses summed before: every interval's overlap with the window.
std::int64_t overlap_by_scan(const std::vector<Interval>& set, std::int64_t start, std::int64_t end) {
  std::int64_t sum = 0;
  for (const Interval& i : set) sum += std::max<std::int64_t>(0, std::min(end, i.end) - std::max(start, i.start));
  return sum;
}

TEST(OverlapIndex, EqualsTheScanOverEveryIntervalOnRandomSets) {
  std::mt19937_64 rng(38);
  for (int round = 0; round < 200; ++round) {
    std::uniform_int_distribution<std::int64_t> at(-50, 1000), length(0, round % 2 ? 40 : 400);
    std::vector<Interval> set(static_cast<std::size_t>(round % 37));
    for (Interval& i : set) {
      i.start = at(rng);
      i.end = i.start + length(rng);
    }
    // Overlapping intervals count each time; a merged list is the analyses' usual input.
    for (const std::vector<Interval>& s : {set, detail::merge_intervals(set)}) {
      const OverlapIndex index(s);
      for (int q = 0; q < 100; ++q) {
        const std::int64_t a = at(rng), b = a + length(rng) - 20; // some windows empty or reversed
        ASSERT_EQ(index.overlap(a, b), overlap_by_scan(s, a, b)) << "round " << round << " [" << a << ", " << b << ")";
      }
    }
  }
}

TEST(OverlapIndex, EdgesTouchingAndZeroLengthIntervals) {
  const OverlapIndex index({{10, 20}, {20, 30}, {25, 25}, {40, 50}});
  EXPECT_EQ(index.overlap(0, 10), 0);   // ends where the first begins
  EXPECT_EQ(index.overlap(20, 20), 0);  // an empty window
  EXPECT_EQ(index.overlap(15, 25), 10); // across a touching pair
  EXPECT_EQ(index.overlap(30, 40), 0);  // the gap between
  EXPECT_EQ(index.overlap(0, 100), 30);
  EXPECT_EQ(index.overlap(45, 44), 0);  // reversed
  EXPECT_EQ(OverlapIndex({}).overlap(0, 100), 0);
}

TEST(OverlapIndex, InstantsNearTheLimitsOfATraceDoNotOverflow) {
  // 10^4 intervals at ~2^62 ns: their prefix sums pass 2^63 many times over.
  constexpr std::int64_t kFar = std::int64_t{1} << 62;
  std::vector<Interval> set;
  for (std::int64_t i = 0; i < 10000; ++i) set.push_back({kFar - 100000 + 10 * i, kFar - 100000 + 10 * i + 5});
  const OverlapIndex index(set);
  EXPECT_EQ(index.overlap(kFar - 100000, kFar), 50000);
  EXPECT_EQ(index.overlap(kFar - 100000 + 3, kFar - 100000 + 23), 2 + 5 + 3);
  const OverlapIndex negative({{-kFar, -kFar + 10}, {-kFar + 5, -kFar + 20}});
  EXPECT_EQ(negative.overlap(-kFar, -kFar + 100), 25);
}

} // namespace
} // namespace dreamscope::analyzers
