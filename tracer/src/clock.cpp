#include "clock.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>

namespace dreamscope::tracer {

bool tsc_is_invariant() {
#ifdef DREAMSCOPE_HAVE_TSC
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("flags", 0) == 0) {
      return line.find(" constant_tsc") != std::string::npos && line.find(" nonstop_tsc") != std::string::npos;
    }
  }
#endif
  return false;
}

namespace {

// One (ticks, ns) pair read together: the ticks are the middle of two reads around the
// clock_gettime call, from the tightest of a few tries. A pair whose reads lie far apart
// (the thread was preempted in between, which happens all the time when the job has more
// threads than the machine has cores) would tilt the slope by microseconds.
bool read_anchor(std::uint64_t& t, std::int64_t& ns) {
  std::uint64_t best = UINT64_MAX;
  for (int attempt = 0; attempt < 8; ++attempt) {
    const std::uint64_t a = ticks(true);
    const std::int64_t n = monotonic_ns();
    const std::uint64_t b = ticks(true);
    if (b >= a && b - a < best) {
      best = b - a;
      t = a + (b - a) / 2;
      ns = n;
    }
  }
  // 20 k ticks: 5 to 10 us on current CPUs, a hundred times a clock_gettime call.
  return best < 20'000;
}

} // namespace

void TickConverter::start(bool use_tsc) {
  use_tsc_ = use_tsc;
  t0_ = ticks(use_tsc_);
  ns0_ = monotonic_ns();
  segments_.assign(1, Segment{t0_, ns0_, 1.0});
  if (!use_tsc_) return;
  read_anchor(t0_, ns0_);
  // A first slope from a short interval; refine() replaces it with ever longer ones.
  std::this_thread::sleep_for(std::chrono::microseconds(500));
  std::uint64_t t = 0;
  std::int64_t ns = 0;
  double slope = 1.0;
  if (read_anchor(t, ns) && t > t0_) slope = static_cast<double>(ns - ns0_) / static_cast<double>(t - t0_);
  segments_.assign(1, Segment{t0_, ns0_, slope});
}

// A new slope must not move events already converted: a thread whose events straddle the
// change would see time jump (by the old slope's error times the run's length, easily more
// than a short range lasts). So the mapping is continuous: each refinement starts a segment
// at the current mapping's value and steers it to meet the line through the first and the
// newest anchor one interval later, by which time the next refinement takes over.
void TickConverter::refine() {
  if (!use_tsc_) return;
  // Only when the interval has doubled (50 ms, 100 ms, 200 ms, ...): each slope is more
  // precise than the last, and a long run has a few dozen segments at most.
  const std::int64_t now = monotonic_ns();
  if (now - ns0_ < std::max<std::int64_t>(50'000'000, 2 * refined_interval_)) return;
  std::uint64_t t = 0;
  std::int64_t ns = 0;
  if (!read_anchor(t, ns) || t <= t0_ || t <= segments_.back().t) return;
  const double span = static_cast<double>(t - t0_);
  const double fit = static_cast<double>(ns - ns0_) / span;
  const std::int64_t here = to_ns(t);
  const double slope = fit + static_cast<double>(ns - here) / span;
  if (slope <= 0) return;
  segments_.push_back(Segment{t, here, slope});
  refined_interval_ = ns - ns0_;
}

std::int64_t TickConverter::to_ns(std::uint64_t t) const {
  if (!use_tsc_) return static_cast<std::int64_t>(t);
  // Nearly every event falls in the newest segment.
  std::size_t i = segments_.size() - 1;
  while (i > 0 && t < segments_[i].t) --i;
  const Segment& s = segments_[i];
  const double delta = static_cast<double>(static_cast<std::int64_t>(t - s.t));
  return s.ns + static_cast<std::int64_t>(delta * s.slope);
}

} // namespace dreamscope::tracer
