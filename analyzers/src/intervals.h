// Interval arithmetic shared by the analyses (internal).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace dreamscope::analyzers::detail {

struct Interval {
  std::int64_t start = 0;
  std::int64_t end = 0;
};

// Sorts by start and merges, an interval joining the current group when its start is not
// after the group's running maximum end (HTA's merge_kernel_intervals, so touching
// intervals merge).
inline std::vector<Interval> merge_intervals(std::vector<Interval> v) {
  std::sort(v.begin(), v.end(), [](const Interval& a, const Interval& b) { return a.start < b.start; });
  std::vector<Interval> out;
  for (const Interval& i : v) {
    if (!out.empty() && i.start <= out.back().end) {
      out.back().end = std::max(out.back().end, i.end);
    } else {
      out.push_back(i);
    }
  }
  return out;
}

inline std::int64_t total_length(const std::vector<Interval>& merged) {
  std::int64_t sum = 0;
  for (const Interval& i : merged) sum += i.end - i.start;
  return sum;
}

// Length of the intersection of two merged (sorted, disjoint) interval lists.
inline std::int64_t intersection_length(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  std::int64_t sum = 0;
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const std::int64_t lo = std::max(a[i].start, b[j].start);
    const std::int64_t hi = std::min(a[i].end, b[j].end);
    if (hi > lo) sum += hi - lo;
    if (a[i].end < b[j].end) ++i; else ++j;
  }
  return sum;
}

// The intersection of two merged (sorted, disjoint) interval lists, as a merged list.
inline std::vector<Interval> intersect_intervals(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  std::vector<Interval> out;
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const std::int64_t lo = std::max(a[i].start, b[j].start);
    const std::int64_t hi = std::min(a[i].end, b[j].end);
    if (hi > lo) out.push_back({lo, hi});
    if (a[i].end < b[j].end) ++i; else ++j;
  }
  return out;
}

// `a` less `b`, both merged; the result is merged.
inline std::vector<Interval> subtract_intervals(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  std::vector<Interval> out;
  std::size_t j = 0;
  for (Interval rest : a) {
    while (j < b.size() && b[j].end <= rest.start) ++j;
    for (std::size_t k = j; k < b.size() && b[k].start < rest.end && rest.start < rest.end; ++k) {
      if (b[k].start > rest.start) out.push_back({rest.start, b[k].start});
      rest.start = std::max(rest.start, b[k].end);
    }
    if (rest.end > rest.start) out.push_back(rest);
  }
  return out;
}

// Round half away from zero to `decimals` places, as the reports print HTA's rounded figures.
inline double round_to(double v, int decimals) {
  double scale = 1;
  for (int i = 0; i < decimals; ++i) scale *= 10;
  return std::round(v * scale) / scale;
}

} // namespace dreamscope::analyzers::detail
