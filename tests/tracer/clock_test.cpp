// The tick converter: converted times never run backwards, across slope refinements too,
// and stay on CLOCK_MONOTONIC.
#include "clock.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace dreamscope::tracer {
namespace {

TEST(TickConverter, MonotonicAcrossRefinementsAndCloseToTheClock) {
  if (!tsc_is_invariant()) GTEST_SKIP() << "no invariant TSC: ticks are CLOCK_MONOTONIC nanoseconds already";
  TickConverter c;
  c.start(true);
  // Ticks taken over 250 ms (several refinements: 50, 100, 200 ms), converted partly before
  // and partly after the refinements that follow them, as a writer with a backlog does.
  std::vector<std::uint64_t> taken;
  std::vector<std::int64_t> converted_early;
  const std::int64_t until = monotonic_ns() + 250'000'000;
  std::int64_t worst_offset = 0;
  while (monotonic_ns() < until) {
    const std::uint64_t a = ticks(true);
    const std::int64_t ns = monotonic_ns();
    const std::uint64_t b = ticks(true);
    taken.push_back(a);
    converted_early.push_back(c.to_ns(a));
    if (b - a < 2000) worst_offset = std::max(worst_offset, std::abs(c.to_ns(a + (b - a) / 2) - ns));
    c.refine();
  }
  ASSERT_GT(taken.size(), 1000u);
  std::int64_t last = INT64_MIN;
  for (std::size_t i = 0; i < taken.size(); ++i) {
    const std::int64_t now = c.to_ns(taken[i]); // after every refinement
    ASSERT_GE(now, last) << "time ran backwards at sample " << i;
    last = now;
    // A refinement never moves a time converted before it by more than its own error.
    ASSERT_LT(std::abs(now - converted_early[i]), 20'000) << "sample " << i;
  }
  EXPECT_LT(worst_offset, 100'000) << "converted times are off CLOCK_MONOTONIC by " << worst_offset << " ns";
}

} // namespace
} // namespace dreamscope::tracer
