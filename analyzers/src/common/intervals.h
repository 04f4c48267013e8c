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

// How much of a window a fixed set of intervals covers, counting each interval's overlap
// (intervals that overlap each other count twice): the sum over the set of
// max(0, min(end, e) - max(start, s)), in O(log n) a window. The analyses ask it once per
// step; scanning the whole set for each step made a trace of 100k steps quadratic.
//
// An interval [s, e) overlaps [a, b) by T(s) - T(e), where T(x) = max(0, b - max(x, a)) is
// the window's time from x on. So the sum is the T of every start less the T of every end,
// and over sorted starts (or ends) T sums from a count and a prefix sum. Sums are 128-bit:
// 10^5 instants of 2^62 ns overflow 64 bits.
class OverlapIndex {
 public:
  explicit OverlapIndex(const std::vector<Interval>& set) {
    starts_.reserve(set.size());
    ends_.reserve(set.size());
    for (const Interval& i : set) {
      starts_.push_back(i.start);
      ends_.push_back(i.end);
    }
    std::sort(starts_.begin(), starts_.end());
    std::sort(ends_.begin(), ends_.end());
    start_sums_ = prefix_sums(starts_);
    end_sums_ = prefix_sums(ends_);
  }

  // Each window's overlap, in turn. A search starts where the window before's ended and
  // widens outwards, so windows in time order (steps) cost O(1) each beyond the first, and
  // any window at most O(log n): binary searches over all of a large set for each of 10^5
  // steps cost more than the rest of the step breakdown.
  std::vector<std::int64_t> overlaps(const std::vector<Interval>& windows) const {
    std::vector<std::int64_t> out;
    out.reserve(windows.size());
    Hint from_starts, from_ends;
    for (const Interval& w : windows) {
      out.push_back(w.end <= w.start ? 0
                                     : static_cast<std::int64_t>(time_after(starts_, start_sums_, w, from_starts) -
                                                                 time_after(ends_, end_sums_, w, from_ends)));
    }
    return out;
  }

  std::int64_t overlap(std::int64_t start, std::int64_t end) const { return overlaps({{start, end}}).front(); }

 private:
  static std::vector<__int128> prefix_sums(const std::vector<std::int64_t>& sorted) {
    std::vector<__int128> sums(sorted.size() + 1, 0);
    for (std::size_t i = 0; i < sorted.size(); ++i) sums[i + 1] = sums[i] + sorted[i];
    return sums;
  }

  // Where the last window's searches ended: the first instant after its start, the first at
  // or after its end.
  struct Hint {
    std::size_t inside = 0, after = 0;
  };

  // The first position of `sorted` whose instant is not `before`, searched outwards from
  // `hint` in growing strides, then by bisection within the last stride.
  template <class Before>
  static std::size_t partition_from(const std::vector<std::int64_t>& sorted, std::size_t hint, Before before) {
    hint = std::min(hint, sorted.size());
    std::size_t lo = hint, hi = hint, stride = 1; // the answer lies in [lo, hi]
    if (hint < sorted.size() && before(sorted[hint])) {
      lo = hi = hint + 1;
      while (hi < sorted.size() && before(sorted[hi])) {
        lo = hi + 1;
        hi += stride;
        stride *= 2;
      }
      hi = std::min(hi, sorted.size());
    } else {
      while (lo > 0 && !before(sorted[lo - 1])) {
        hi = lo - 1;
        lo = lo > stride ? lo - stride : 0;
        stride *= 2;
      }
    }
    return static_cast<std::size_t>(std::partition_point(sorted.begin() + static_cast<std::ptrdiff_t>(lo),
                                                         sorted.begin() + static_cast<std::ptrdiff_t>(hi), before) -
                                    sorted.begin());
  }

  // The sum of T(x) over `sorted` for the window [a, b): each x at or before a sees all of
  // [a, b), each x inside sees [x, b), each x at or after b nothing.
  static __int128 time_after(const std::vector<std::int64_t>& sorted, const std::vector<__int128>& sums,
                             const Interval& window, Hint& hint) {
    const std::int64_t a = window.start, b = window.end;
    hint.inside = partition_from(sorted, hint.inside, [a](std::int64_t x) { return x <= a; });
    hint.after = partition_from(sorted, std::max(hint.after, hint.inside), [b](std::int64_t x) { return x < b; });
    const auto inside = static_cast<__int128>(hint.after - hint.inside);
    return static_cast<__int128>(hint.inside) * (b - a) + inside * b - (sums[hint.after] - sums[hint.inside]);
  }

  std::vector<std::int64_t> starts_, ends_;
  std::vector<__int128> start_sums_, end_sums_;
};

// Round half away from zero to `decimals` places, as the reports print HTA's rounded figures.
inline double round_to(double v, int decimals) {
  double scale = 1;
  for (int i = 0; i < decimals; ++i) scale *= 10;
  return std::round(v * scale) / scale;
}

} // namespace dreamscope::analyzers::detail
