// Measures what the hot path costs on this machine, once at tracer start: the same code the
// NVTX entry points run, into a scratch buffer that no writer drains. Every part file
// carries the result, the basis of overhead correction.
#include "tracer_state.h"

#include <algorithm>
#include <string>
#include <vector>

namespace dreamscope::tracer {

std::vector<CalibrationRecord> self_calibrate(Tracer& t) {
  ThreadBuffer scratch(*t.pool, 0, 0, 0);
  const std::uint32_t name = t.strings.intern("calibration");
  constexpr int kRounds = 5, kPerRound = 1000;
  auto median_cost = [&](auto&& body) {
    std::vector<double> costs;
    for (int r = 0; r < kRounds; ++r) {
      scratch.drain([](const Event&, std::uint64_t) {});
      const std::int64_t a = monotonic_ns();
      for (int i = 0; i < kPerRound; ++i) body(i);
      costs.push_back(static_cast<double>(monotonic_ns() - a) / kPerRound);
    }
    std::sort(costs.begin(), costs.end());
    return costs[costs.size() / 2];
  };
  const bool tsc = g_hot.use_tsc;
  // The rounds run in a chunk mapped with its pages present: page faults of a fresh chunk
  // are a one-time cost per thread, not a per-event one. Afterwards the chunk goes back to
  // the free list, where the first thread that records finds it.
  t.pool->refill(1);
  const double range = median_cost([&](int i) {
    scratch.push(Event{ticks(tsc), i, 0, name, 0, static_cast<std::uint8_t>(EventKind::Push), 0});
    scratch.pop(Event{ticks(tsc), kNoPayload, 0, 0, 0, static_cast<std::uint8_t>(EventKind::Pop), 0});
  });
  const double mark = median_cost([&](int i) {
    scratch.add(Event{ticks(tsc), i, 0, name, 0, static_cast<std::uint8_t>(EventKind::Mark), 0});
  });
  const std::string method = "self-calibration at tracer start: median of 5 x 1000 calls into a scratch buffer";
  return {CalibrationRecord{"nvtx_range", range, kRounds * kPerRound, method},
          CalibrationRecord{"nvtx_mark", mark, kRounds * kPerRound, method}};
}

} // namespace dreamscope::tracer
