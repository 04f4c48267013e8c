// What made a report of many steps slow and large: per-step overlap sums over every interval
// (analyzers/src/common/intervals.h, OverlapIndex), tables that listed every step (listed_steps)
// and a JSON report held whole as one document (json_text.h). Each against the plain
// definition it replaced, on random and edge cases.
#include "common/intervals.h"
#include "common/json_text.h"

#include <dreamscope/analyzers/report.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <set>
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
    std::vector<Interval> windows(100);
    for (Interval& w : windows) {
      w.start = at(rng);
      w.end = w.start + length(rng) - 20; // some windows empty or reversed
    }
    // In any order (each search starts where the last ended), and in time order as steps are.
    std::vector<Interval> in_order = windows;
    std::sort(in_order.begin(), in_order.end(), [](const Interval& x, const Interval& y) { return x.start < y.start; });
    for (const std::vector<Interval>& s : {set, detail::merge_intervals(set)}) {
      const OverlapIndex index(s);
      for (const std::vector<Interval>& w : {windows, in_order}) {
        const std::vector<std::int64_t> got = index.overlaps(w);
        ASSERT_EQ(got.size(), w.size());
        for (std::size_t q = 0; q < w.size(); ++q) {
          ASSERT_EQ(got[q], overlap_by_scan(s, w[q].start, w[q].end))
              << "round " << round << " [" << w[q].start << ", " << w[q].end << ")";
        }
      }
      ASSERT_EQ(index.overlap(windows[0].start, windows[0].end), overlap_by_scan(s, windows[0].start, windows[0].end));
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

TEST(ListedSteps, EveryStepWhenThereAreNoMoreThanTheLimit) {
  EXPECT_EQ(listed_steps({}, 15), std::vector<std::size_t>{});
  EXPECT_EQ(listed_steps({5, 1, 9}, 3), (std::vector<std::size_t>{0, 1, 2}));
  EXPECT_EQ(listed_steps({5, 1, 9}, 1000), (std::vector<std::size_t>{0, 1, 2}));
  EXPECT_EQ(listed_steps_note(3, 3), "");
}

TEST(ListedSteps, TheFirstTheSlowestAndTheMedianInStepOrder) {
  // 100 steps of 10 + i % 7 ns, but steps 50 and 80 slow and step 2 slowest of all.
  std::vector<TimeNs> d(100);
  for (std::size_t i = 0; i < d.size(); ++i) d[i] = 10 + static_cast<TimeNs>(i % 7);
  d[50] = 500;
  d[80] = 400;
  d[2] = 900; // among the first: the slowest part takes the next ones
  const std::vector<std::size_t> rows = listed_steps(d, 9);
  ASSERT_EQ(rows.size(), 9u);
  EXPECT_TRUE(std::is_sorted(rows.begin(), rows.end()));
  const std::set<std::size_t> listed(rows.begin(), rows.end());
  for (std::size_t i : {0u, 1u, 2u}) EXPECT_TRUE(listed.count(i)) << "first " << i;
  for (std::size_t i : {50u, 80u}) EXPECT_TRUE(listed.count(i)) << "slow " << i;
  // The third slowest is the earliest step of the longest usual duration (16 ns: i % 7 == 6).
  EXPECT_TRUE(listed.count(6));
  // The median duration is 13 ns; the three around it take that duration.
  std::size_t median = 0;
  for (std::size_t i : rows) median += d[i] == 13;
  EXPECT_EQ(median, 3u);
  EXPECT_EQ(listed_steps_note(9, 100),
            "9 of 100 steps listed: the first 3, the 3 slowest and 3 around the median duration; --all-steps "
            "lists every step.");
}

TEST(ListedSteps, SmallLimitsAndEqualDurationsAreStable) {
  const std::vector<TimeNs> same(1000, 7);
  EXPECT_EQ(listed_steps(same, 1), std::vector<std::size_t>{0});
  EXPECT_EQ(listed_steps(same, 2), (std::vector<std::size_t>{0, 1}));
  // Ties go to the earlier step: the slowest of equals are the first not taken, the median's
  // the steps around the middle.
  EXPECT_EQ(listed_steps(same, 6), (std::vector<std::size_t>{0, 1, 2, 3, 500, 501}));
  EXPECT_EQ(listed_steps_note(1, 1000), "1 of 1000 steps listed: the first 1; --all-steps lists every step.");
  EXPECT_EQ(listed_steps_note(2, 1000),
            "2 of 1000 steps listed: the first 1 and the 1 slowest; --all-steps lists every step.");
}

TEST(ListedSteps, TakesLogLinearTimeOnAMillionSteps) {
  // Not a timing test: it would take minutes if any part scanned all steps per listed step.
  std::vector<TimeNs> d(1'000'000);
  std::mt19937_64 rng(7);
  for (TimeNs& t : d) t = static_cast<TimeNs>(rng() % 1000);
  EXPECT_EQ(listed_steps(d, 1000).size(), 1000u);
}

// The report's text as one document would dump it, from members and rows written apart.
TEST(JsonText, PartsWrittenApartGiveTheDumpOfTheWholeDocument) {
  using nlohmann::json;
  const json row = {{"name", "a\nb \xff"}, {"count", 3}, {"share", 0.1 + 0.2}, {"none", nullptr}};
  const json doc = {{"schema", "x"},
                    {"empty_array", json::array()},
                    {"empty_object", json::object()},
                    {"rows", json::array({row, json::array({1, "two", json::array()}), 7})},
                    {"nested", {{"b", {{"deeper", json::array({json::object(), 1.5e-9})}}}, {"a", true}}}};
  const std::string whole = detail::dump_json(doc);
  EXPECT_EQ(detail::json_object(detail::json_members(doc, 0), 0), whole);

  detail::JsonMembers parts = detail::json_members(doc, 0);
  const json& rows = doc["rows"];
  parts["rows"] = detail::json_rows(rows.size(), 1, [&](std::size_t i) { return rows[i]; });
  detail::JsonMembers nested = detail::json_members(doc["nested"], 1);
  nested["b"] = detail::json_object(detail::json_members(doc["nested"]["b"], 2), 2);
  parts["nested"] = detail::json_object(std::move(nested), 1);
  parts["empty_array"] = detail::json_rows(0, 1, [&](std::size_t) { return json(); });
  EXPECT_EQ(detail::json_object(std::move(parts), 0), whole);
  EXPECT_EQ(detail::json_object({}, 3), "{}");
}

} // namespace
} // namespace dreamscope::analyzers
