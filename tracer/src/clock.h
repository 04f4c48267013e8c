// The tracer's clock. The hot path reads the raw TSC (one instruction, no syscall); the
// writer thread turns ticks into CLOCK_MONOTONIC nanoseconds, the one clock of the trace
// and the one CUPTI is given through its timestamp callback. Every process of a job maps
// its own ticks onto CLOCK_MONOTONIC, so processes line up in the merged trace.
#pragma once

#include <cstdint>
#include <ctime>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define DREAMSCOPE_HAVE_TSC 1
#endif

namespace dreamscope::tracer {

inline std::int64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// CPU time the calling thread has used (the writer thread's, for meta tracer_writer_cpu_ns).
inline std::int64_t thread_cpu_ns() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Raw ticks: TSC where it is invariant, else nanoseconds.
inline std::uint64_t ticks(bool use_tsc) {
#ifdef DREAMSCOPE_HAVE_TSC
  if (use_tsc) return __rdtsc();
#endif
  (void)use_tsc;
  return static_cast<std::uint64_t>(monotonic_ns());
}

// Ticks -> monotonic ns: a continuous line of segments, each steered towards the line
// through the first (ticks, ns) anchor and the newest one. The writer takes a new anchor as
// the run goes on (each time the interval doubles), so the slope gets more precise with
// time while no converted time ever jumps. Used by the writer thread only.
class TickConverter {
 public:
  void start(bool use_tsc);
  void refine();
  std::int64_t to_ns(std::uint64_t t) const;
  // Nanoseconds per tick on the newest slope: for durations measured in ticks.
  double ns_per_tick() const { return segments_.empty() ? 1.0 : segments_.back().slope; }
  bool uses_tsc() const { return use_tsc_; }

 private:
  bool use_tsc_ = false;
  std::uint64_t t0_ = 0;
  std::int64_t ns0_ = 0;
  struct Segment {
    std::uint64_t t;  // from this tick on
    std::int64_t ns;  // the time at t
    double slope;     // ns per tick
  };
  std::vector<Segment> segments_;
  std::int64_t refined_interval_ = 0; // ns between the anchors of the newest slope
};

// True when the CPU's TSC runs at a constant rate and does not stop in idle states.
bool tsc_is_invariant();

} // namespace dreamscope::tracer
