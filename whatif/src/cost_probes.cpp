#include "dreamscope/whatif/cost_probes.h"

#include "median.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace dreamscope::whatif {

namespace {

// A window measures speed when it recorded at least this many calls: fewer, and the job's own
// work between them (which varies from one part of a step to the next) swamps the records' cost.
constexpr std::int64_t kMinEvents = 64;
// A probe's two neighbours must agree on their speed within this much: otherwise the machine
// changed state around the probe, and the difference is the state's, not the records'.
constexpr double kStableNeighbours = 0.10;
// The probes whose speeds are nearest a window's say what a record cost it.
constexpr std::size_t kNearestProbes = 7;
// A probe's neighbours: the nearest plain windows (nine in ten of their calls recorded at least:
// a probe may end just after a window began) within 50 ms of it. A probe counted half of its
// calls at least.
constexpr double kPlain = 0.9;
constexpr double kProbe = 0.5;
constexpr TimeNs kNeighbourReach = 50'000'000;

// The share of the window's calls that were recorded (the others a probe counted).
double recorded_share(const ThreadLoadRecord& w) {
  const std::int64_t calls = w.events + w.probe_events;
  return calls > 0 ? static_cast<double>(w.events) / static_cast<double>(calls) : 1;
}

// CPU ns per call, recorded or counted; -1 where not known.
double raw_speed(const ThreadLoadRecord& w) {
  const std::int64_t calls = w.events + w.probe_events;
  if (calls < kMinEvents || w.cpu_ns == kNoValue || w.cpu_ns <= 0) return -1;
  return static_cast<double>(w.cpu_ns) / static_cast<double>(calls);
}

// Whether `w` can stand beside probe `p`: a plain window with a speed, at least half as long as
// the probe (a window cut short by a pause or a resume holds the loaders' refill, not the job's
// usual mix of work per call).
bool neighbour(const ThreadLoadRecord& w, const ThreadLoadRecord& p) {
  return recorded_share(w) >= kPlain && raw_speed(w) > 0 && 2 * (w.end - w.start) >= p.end - p.start;
}


} // namespace

ThreadProbes::ThreadProbes(std::span<const ThreadLoadRecord> windows) {
  for (std::size_t i = 0; i < windows.size(); ++i) {
    const ThreadLoadRecord& p = windows[i];
    if (recorded_share(p) > kProbe) continue;
    ++probes_;
    const double up = raw_speed(p);
    if (up <= 0) continue;
    // The nearest plain windows on either side: the next ones, unless a pause of recording or
    // a window too short to measure came between.
    const ThreadLoadRecord* a = nullptr;
    const ThreadLoadRecord* b = nullptr;
    for (std::size_t j = i; j-- > 0 && windows[j].end >= p.start - kNeighbourReach;) {
      if (neighbour(windows[j], p)) {
        a = &windows[j];
        break;
      }
    }
    for (std::size_t j = i + 1; j < windows.size() && windows[j].start <= p.end + kNeighbourReach; ++j) {
      if (neighbour(windows[j], p)) {
        b = &windows[j];
        break;
      }
    }
    if (!a || !b) continue;
    const double ua = raw_speed(*a), ub = raw_speed(*b);
    const double neighbours = (ua + ub) / 2;
    if (std::abs(ua - ub) > kStableNeighbours * neighbours) continue;
    // CPU per call = work + record * recorded share, the work the same in the three windows.
    const double fewer_recorded = (recorded_share(*a) + recorded_share(*b)) / 2 - recorded_share(p);
    // Negative where noise outweighed a small cost: kept, so that the median is not pushed up.
    measures_.push_back({p.start, neighbours, (neighbours - up) / fewer_recorded});
  }
  std::sort(measures_.begin(), measures_.end(),
            [](const ProbeMeasure& x, const ProbeMeasure& y) { return x.speed_ns < y.speed_ns; });
  std::vector<double> records;
  for (const ProbeMeasure& m : measures_) records.push_back(m.record_ns);
  median_record_ns_ = records.empty() ? -1 : std::max(0.0, median_of(records, -1));
  std::vector<double> speeds;
  for (const ThreadLoadRecord& w : windows) {
    if (const double s = speed_ns(w); s > 0) speeds.push_back(s);
  }
  if (!speeds.empty()) {
    const auto at = speeds.begin() + static_cast<std::ptrdiff_t>(speeds.size() / 5);
    std::nth_element(speeds.begin(), at, speeds.end());
    fast_speed_ns_ = *at;
  }
}

double ThreadProbes::speed_ns(const ThreadLoadRecord& w) const {
  const double s = raw_speed(w);
  if (s <= 0) return -1;
  return s + std::max(0.0, median_record_ns_) * (1 - recorded_share(w));
}

double ThreadProbes::record_ns(double speed_ns) const {
  if (measures_.empty()) return -1;
  if (speed_ns <= 0) return median_record_ns_;
  // The nearest kNearestProbes by speed: a window of the sorted measures grown from where
  // `speed_ns` falls, toward whichever side is nearer.
  auto hi = std::lower_bound(measures_.begin(), measures_.end(), speed_ns,
                             [](const ProbeMeasure& m, double s) { return m.speed_ns < s; });
  auto lo = hi;
  while (static_cast<std::size_t>(hi - lo) < std::min(kNearestProbes, measures_.size())) {
    if (lo == measures_.begin() || (hi != measures_.end() && hi->speed_ns - speed_ns < speed_ns - std::prev(lo)->speed_ns)) {
      ++hi;
    } else {
      --lo;
    }
  }
  std::vector<double> records;
  for (auto it = lo; it != hi; ++it) records.push_back(it->record_ns);
  return std::max(0.0, median_of(records, -1));
}

ProbeSummary summarize_probes(const Trace& trace) {
  ProbeSummary out;
  const auto& loads = trace.thread_loads(); // sorted by track, then start
  std::vector<double> fast, slow;
  for (std::size_t i = 0; i < loads.size();) {
    std::size_t j = i;
    std::vector<ThreadLoadRecord> windows;
    while (j < loads.size() && loads[j].track == loads[i].track) {
      if (loads[j].events > 0 || loads[j].probe_events > 0) windows.push_back(loads[j]);
      ++j;
    }
    i = j;
    const ThreadProbes probes(windows);
    out.probes += probes.probes();
    out.measured += static_cast<std::int64_t>(probes.measures().size());
    if (!probes.measured()) continue;
    for (const ThreadLoadRecord& w : windows) {
      const double speed = probes.speed_ns(w);
      if (speed <= 0) continue;
      const bool is_slow = probes.slow(speed);
      ++(is_slow ? out.slow_windows : out.fast_windows);
      (is_slow ? slow : fast).push_back(probes.record_ns(speed));
    }
  }
  out.fast_record_ns = median_of(fast, -1);
  out.slow_record_ns = median_of(slow, -1);
  return out;
}

} // namespace dreamscope::whatif
