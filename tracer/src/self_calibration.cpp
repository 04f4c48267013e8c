// Measures what the hot path costs on this machine, once at tracer start, into scratch
// buffers that no writer drains. Every part file carries the result, the basis of overhead
// correction:
// - nvtx_range, nvtx_mark: the cost of recording a range (push and pop) and a mark, calls
//   back to back. Against untraced runs of cpu_train --fine-annotations this has come within
//   a few per cent of what a range really costs a job in the machine's usual state
//   (docs/simulation.md): calls back to back cost more than the same calls among the job's
//   code, which an out-of-order core overlaps with them, and that about makes up for the
//   decoding of the call's arguments that this loop leaves out.
// - nvtx_range_timed, nvtx_mark_timed: what the entry points' own in-run timing
//   (ThreadBuffer::sample_cost) reads in the same state, through the real entry points, for
//   ranges around other work as in a job (a small dot product inside each: calls back to
//   back find the branch predictors and caches warmer than a job leaves them, and time
//   faster). On the development VM this reads what the same calls read in a job's run in the
//   machine's usual state, to a few per cent (docs/simulation.md).
//   Overhead correction scales the first by how much slower that timing reads later in the
//   run.
#include "tracer_state.h"

#include <algorithm>
#include <string>
#include <vector>

namespace dreamscope::tracer {
namespace {

// The work between timed calls: a dot product, compute-bound and in cache.
struct Work {
  static constexpr int kLength = 128;
  float x[kLength], w[kLength];
  Work() {
    for (int i = 0; i < kLength; ++i) {
      x[i] = 1.0f + static_cast<float>(i % 7);
      w[i] = 0.5f - static_cast<float>(i % 5) * 0.1f;
    }
  }
  void run() const {
    float s = 0;
    for (int i = 0; i < kLength; ++i) s += x[i] * w[i];
    asm volatile("" : : "x"(s)); // keeps the result, so the loop stays
  }
};

constexpr int kRounds = 5, kPerRound = 1000;

template <class F>
double median_cost(ThreadBuffer& buffer, F&& body) {
  std::vector<double> costs;
  for (int r = 0; r < kRounds; ++r) {
    buffer.drain([](const Event&, std::uint64_t) {});
    const std::int64_t a = monotonic_ns();
    for (int i = 0; i < kPerRound; ++i) body(i);
    costs.push_back(static_cast<double>(monotonic_ns() - a) / kPerRound);
  }
  buffer.drain([](const Event&, std::uint64_t) {});
  std::sort(costs.begin(), costs.end());
  return costs[costs.size() / 2];
}

// Mean ns of the calls of `kind` the buffer timed; -1 if none.
double timed_mean(const ThreadBuffer& b, EventKind kind, double ns_per_tick) {
  const auto [calls, ticks] = b.cost_tally(kind);
  return calls == 0 ? -1 : static_cast<double>(ticks) * ns_per_tick / static_cast<double>(calls);
}

} // namespace

std::vector<CalibrationRecord> self_calibrate(Tracer& t) {
  // The rounds run in a chunk mapped with its pages present: page faults of a fresh chunk
  // are a one-time cost per thread, not a per-event one. Afterwards the chunk goes back to
  // the free list, where the first thread that records finds it.
  t.pool->refill(1);
  const std::uint32_t name = t.strings.intern("calibration");
  const bool tsc = g_hot.use_tsc;
  std::vector<CalibrationRecord> out;
  {
    ThreadBuffer scratch(*t.pool, 0, 0, 0);
    const double range = median_cost(scratch, [&](int i) {
      scratch.push(Event{ticks(tsc), i, 0, name, 0, static_cast<std::uint8_t>(EventKind::Push), 0});
      scratch.pop(Event{ticks(tsc), kNoPayload, 0, 0, 0, static_cast<std::uint8_t>(EventKind::Pop), 0});
    });
    const double mark = median_cost(scratch, [&](int i) {
      scratch.add(Event{ticks(tsc), i, 0, name, 0, static_cast<std::uint8_t>(EventKind::Mark), 0});
    });
    const std::string method = "self-calibration at tracer start: median of 5 x 1000 calls into a scratch buffer";
    out.push_back(CalibrationRecord{"nvtx_range", range, kRounds * kPerRound, method});
    out.push_back(CalibrationRecord{"nvtx_mark", mark, kRounds * kPerRound, method});
  }
  {
    // The entry points NVTX calls, recording into a scratch buffer made the thread's own.
    ThreadBuffer scratch(*t.pool, 0, 0, 0);
    ThreadBuffer* own = exchange_thread_buffer(&scratch);
    const Work work;
    median_cost(scratch, [&](int) {
      calibration_push("calibration");
      work.run();
      calibration_pop();
    });
    median_cost(scratch, [&](int) {
      calibration_mark("calibration");
      work.run();
    });
    exchange_thread_buffer(own);
    const double ns_per_tick = t.clock.ns_per_tick();
    const double push = timed_mean(scratch, EventKind::Push, ns_per_tick);
    const double pop = timed_mean(scratch, EventKind::Pop, ns_per_tick);
    const double mark = timed_mean(scratch, EventKind::Mark, ns_per_tick);
    const std::string method = "self-calibration at tracer start: the entry points' own timing of 5 x 1000 calls";
    const std::int64_t samples = kRounds * kPerRound / ThreadBuffer::kCostSampleEvery;
    if (push >= 0 && pop >= 0) out.push_back(CalibrationRecord{"nvtx_range_timed", push + pop, samples, method});
    if (mark >= 0) out.push_back(CalibrationRecord{"nvtx_mark_timed", mark, samples, method});
  }
  return out;
}

} // namespace dreamscope::tracer
