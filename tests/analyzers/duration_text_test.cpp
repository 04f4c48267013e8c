// format_duration: the one text of a duration that the reports, the commands and the GUI print.
#include <dreamscope/analyzers/duration_text.h>

#include <gtest/gtest.h>

#include <limits>

namespace dreamscope::analyzers {
namespace {

TEST(DurationText, WholeNanosecondsBelowAMicrosecond) {
  EXPECT_EQ(format_duration(0), "0 ns");
  EXPECT_EQ(format_duration(1), "1 ns");
  EXPECT_EQ(format_duration(830), "830 ns");
  EXPECT_EQ(format_duration(999), "999 ns");
}

TEST(DurationText, ThreeDecimalsInTheLargestUnitReached) {
  EXPECT_EQ(format_duration(1'000), "1.000 us");
  EXPECT_EQ(format_duration(1'234), "1.234 us");
  EXPECT_EQ(format_duration(999'950), "999.950 us");
  EXPECT_EQ(format_duration(999'999), "999.999 us");
  EXPECT_EQ(format_duration(1'000'000), "1.000 ms");
  EXPECT_EQ(format_duration(12'345'678), "12.346 ms");
  EXPECT_EQ(format_duration(1'000'000'000), "1.000 s");
  EXPECT_EQ(format_duration(1'204'000'000), "1.204 s");
  EXPECT_EQ(format_duration(3'600'000'000'000), "3600.000 s"); // no unit above s
}

TEST(DurationText, NegativeDurationsReadAsTheirMagnitudeWithASign) {
  EXPECT_EQ(format_duration(-5), "-5 ns");
  EXPECT_EQ(format_duration(-999), "-999 ns");
  EXPECT_EQ(format_duration(-1'500), "-1.500 us");
  EXPECT_EQ(format_duration(-2'500'000), "-2.500 ms");
  EXPECT_EQ(format_duration(-1'204'000'000), "-1.204 s");
}

// The unit is picked from the duration before rounding: just below a unit, the rounding may
// reach 1000 of the smaller unit.
TEST(DurationText, TheUnitIsPickedBeforeRounding) {
  EXPECT_EQ(format_duration(999'999'499), "999.999 ms");
  EXPECT_EQ(format_duration(999'999'500), "1000.000 ms");
  EXPECT_EQ(format_duration(999'999'999), "1000.000 ms");
  EXPECT_EQ(format_duration(999'999'999'999), "1000.000 s");
}

// The double ns / unit is rounded as printf rounds it: correctly, and an exact tie to even.
// 1.0005 is no tie: its double is a little below it.
TEST(DurationText, RoundsTheDoubleCorrectlyWithTiesToEven) {
  EXPECT_EQ(format_duration(1'062'500), "1.062 ms");    // 1.0625 exactly
  EXPECT_EQ(format_duration(1'187'500), "1.188 ms");    // 1.1875 exactly
  EXPECT_EQ(format_duration(1'062'500'000), "1.062 s"); // 1.0625 exactly
  EXPECT_EQ(format_duration(-1'062'500), "-1.062 ms");
  EXPECT_EQ(format_duration(1'000'500), "1.000 ms");
}

// kNoValue is a number like any other here: a caller that may hold one says so itself.
TEST(DurationText, NoValueAndTheExtremesAreNumbers) {
  EXPECT_EQ(format_duration(kNoValue), "-9223372036.855 s");
  EXPECT_EQ(format_duration(std::numeric_limits<TimeNs>::max()), "9223372036.855 s");
}

TEST(DurationText, RulerTicksTakeTheDecimalsTheirSpacingNeeds) {
  EXPECT_EQ(format_duration(1'500'000, {.tick = 500'000}), "1.5 ms");
  EXPECT_EQ(format_duration(3'000'000, {.tick = 1'000'000}), "3 ms");
  EXPECT_EQ(format_duration(1'000'200, {.tick = 200}), "1.0002 ms");
  EXPECT_EQ(format_duration(2'500, {.tick = 500}), "2.5 us");
  EXPECT_EQ(format_duration(-250, {.tick = 50}), "-250 ns");
  // At most six decimals, however fine the ticks.
  EXPECT_EQ(format_duration(1'000'000'001, {.tick = 1}), "1.000000 s");
}

// The first tick reads in the unit of the spacing, not of its own value.
TEST(DurationText, RulerTicksAtZeroTakeTheUnitOfTheirSpacing) {
  EXPECT_EQ(format_duration(0, {.tick = 50}), "0 ns");
  EXPECT_EQ(format_duration(0, {.tick = 1'000'000}), "0 ms");
  EXPECT_EQ(format_duration(0, {.tick = 2'000'000'000}), "0 s");
}

// A tick of 0 ns or less spaces nothing: the value's own unit, decimals down to the ns.
TEST(DurationText, RulerTicksOfNoSpacingReadToTheNanosecond) {
  EXPECT_EQ(format_duration(1'500, {.tick = 0}), "1.500 us");
  EXPECT_EQ(format_duration(1'500'000, {.tick = -5}), "1.500000 ms");
}

} // namespace
} // namespace dreamscope::analyzers
