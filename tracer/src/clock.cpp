#include "clock.h"

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

void TickConverter::start(bool use_tsc) {
  use_tsc_ = use_tsc;
  t0_ = ticks(use_tsc_);
  ns0_ = monotonic_ns();
  ns_per_tick_ = 1.0;
  if (!use_tsc_) return;
  // A first slope from a short interval; refine() replaces it with ever longer ones.
  const std::uint64_t a = ticks(true);
  const std::int64_t na = monotonic_ns();
  std::this_thread::sleep_for(std::chrono::microseconds(500));
  const std::uint64_t b = ticks(true);
  const std::int64_t nb = monotonic_ns();
  if (b > a) ns_per_tick_ = static_cast<double>(nb - na) / static_cast<double>(b - a);
}

void TickConverter::refine() {
  if (!use_tsc_) return;
  const std::uint64_t t = ticks(true);
  const std::int64_t ns = monotonic_ns();
  // Below 50 ms the read jitter of the anchors would dominate the slope.
  if (ns - ns0_ > 50'000'000 && t > t0_) ns_per_tick_ = static_cast<double>(ns - ns0_) / static_cast<double>(t - t0_);
}

std::int64_t TickConverter::to_ns(std::uint64_t t) const {
  if (!use_tsc_) return static_cast<std::int64_t>(t);
  const double delta = static_cast<double>(static_cast<std::int64_t>(t - t0_));
  return ns0_ + static_cast<std::int64_t>(delta * ns_per_tick_);
}

} // namespace dreamscope::tracer
