#include "format.h"
#include "timescale.h"

#include <gtest/gtest.h>

namespace dreamscope::gui {
namespace {

TEST(TimeScale, MapsTimeToPixelsAndBack) {
  const TimeScale s(1000, 10.0);
  EXPECT_DOUBLE_EQ(s.x_of(1000), 0.0);
  EXPECT_DOUBLE_EQ(s.x_of(2000), 100.0);
  EXPECT_DOUBLE_EQ(s.x_of(995), -0.5);
  EXPECT_EQ(s.time_at(100), 2000);
  EXPECT_EQ(s.time_at(0.25), 1003); // rounds to the nearest nanosecond
  EXPECT_DOUBLE_EQ(s.width_of(55), 5.5);
}

TEST(TimeScale, FitPutsTheRangeInsideTheMargins) {
  const TimeScale s = TimeScale::fit(5000, 15000, 1020, 10);
  EXPECT_NEAR(s.x_of(5000), 10.0, 0.01);
  EXPECT_NEAR(s.x_of(15000), 1010.0, 0.01);
  const TimeScale empty = TimeScale::fit(7, 7, 100);
  EXPECT_GT(empty.ns_per_pixel(), 0); // a zero-length trace still gets a usable scale
}

TEST(TimeScale, ZoomKeepsTheAnchorFixed) {
  const TimeScale s(0, 100.0);
  const TimeNs under_cursor = s.time_at(300);
  const TimeScale in = s.zoomed(4, 300);
  EXPECT_DOUBLE_EQ(in.ns_per_pixel(), 25.0);
  EXPECT_EQ(in.time_at(300), under_cursor);
  const TimeScale out = in.zoomed(0.25, 300);
  EXPECT_EQ(out, s);
}

TEST(TimeScale, ZoomIsClampedAtBothEnds) {
  const TimeScale deep = TimeScale(0, 1.0).zoomed(1e9, 0);
  EXPECT_DOUBLE_EQ(deep.ns_per_pixel(), TimeScale::kMinNsPerPixel);
  const TimeScale wide = TimeScale(0, 1.0).zoomed(1e-30, 0);
  EXPECT_DOUBLE_EQ(wide.ns_per_pixel(), TimeScale::kMaxNsPerPixel);
  EXPECT_DOUBLE_EQ(TimeScale(0, -5).ns_per_pixel(), TimeScale::kMinNsPerPixel);
}

TEST(TimeScale, PanMovesTheContent) {
  const TimeScale s(10000, 50.0);
  const TimeScale right = s.panned(20); // content moves right: earlier times come into view
  EXPECT_EQ(right.origin(), 9000);
  EXPECT_DOUBLE_EQ(right.x_of(10000), 20.0);
  EXPECT_EQ(right.panned(-20), s);
}

TEST(Format, DurationsAndRulerLabels) {
  EXPECT_EQ(format_duration(830), QStringLiteral("830 ns"));
  EXPECT_EQ(format_duration(12345678), QStringLiteral("12.346 ms"));
  EXPECT_EQ(format_duration(1204000000), QStringLiteral("1.204 s"));
  EXPECT_EQ(format_ruler_time(1500000, 500000), QStringLiteral("1.5 ms"));
  EXPECT_EQ(format_ruler_time(3000000, 1000000), QStringLiteral("3 ms"));
  EXPECT_EQ(format_ruler_time(1000200, 200), QStringLiteral("1.0002 ms"));
  EXPECT_EQ(format_ruler_time(0, 50), QStringLiteral("0 ns"));
}

} // namespace
} // namespace dreamscope::gui
