// Measures what the hot path costs on this machine, once at tracer start: the NVTX entry
// points themselves, recording into a scratch buffer that no writer drains. Every part file
// carries the result, the basis of overhead correction.
//
// What a range costs a job is its marginal cost: how much longer the job's code takes with
// the range around it. Calls back to back overstate it, as an out-of-order core overlaps the
// tracer's few dozen instructions with the job's own work; so each round times a small
// computation alone and wrapped in a range, and the difference is the cost (nvtx_range,
// nvtx_mark). The same rounds also read what the entry points' own in-run timing reads
// (ThreadBuffer::sample_cost) in this state (nvtx_range_timed, nvtx_mark_timed): overhead
// correction scales the marginal cost by how much slower that timing reads later in the run.
#include "tracer_state.h"

#include <algorithm>
#include <string>
#include <vector>

namespace dreamscope::tracer {
namespace {

// The work a range wraps in calibration: a dot product, compute-bound and in cache, as the
// innermost annotated code of a job tends to be.
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

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Mean ns of the calls of `kind` the buffer timed since `before` (calls, ticks); -1 if none.
double timed_mean(const ThreadBuffer& b, EventKind kind, std::pair<std::uint64_t, std::uint64_t> before,
                  double ns_per_tick) {
  const auto [calls, ticks] = b.cost_tally(kind);
  if (calls <= before.first) return -1;
  return static_cast<double>(ticks - before.second) * ns_per_tick / static_cast<double>(calls - before.first);
}

} // namespace

std::vector<CalibrationRecord> self_calibrate(Tracer& t) {
  ThreadBuffer scratch(*t.pool, 0, 0, 0);
  // The rounds run in a chunk mapped with its pages present: page faults of a fresh chunk
  // are a one-time cost per thread, not a per-event one. Afterwards the chunk goes back to
  // the free list, where the first thread that records finds it.
  t.pool->refill(1);
  ThreadBuffer* own = exchange_thread_buffer(&scratch);
  const Work work;
  constexpr int kRounds = 7, kPerRound = 2000;
  constexpr const char* kName = "calibration";
  auto per_call = [](std::int64_t since) { return static_cast<double>(monotonic_ns() - since) / kPerRound; };
  std::vector<double> range, mark;
  const auto push_before = scratch.cost_tally(EventKind::Push), pop_before = scratch.cost_tally(EventKind::Pop);
  const auto mark_before = scratch.cost_tally(EventKind::Mark);
  for (int r = 0; r < kRounds; ++r) {
    scratch.drain([](const Event&, std::uint64_t) {});
    std::int64_t a = monotonic_ns();
    for (int i = 0; i < kPerRound; ++i) work.run();
    const double plain = per_call(a);
    a = monotonic_ns();
    for (int i = 0; i < kPerRound; ++i) {
      calibration_push(kName);
      work.run();
      calibration_pop();
    }
    range.push_back(per_call(a) - plain);
    scratch.drain([](const Event&, std::uint64_t) {});
    a = monotonic_ns();
    for (int i = 0; i < kPerRound; ++i) {
      calibration_mark(kName);
      work.run();
    }
    mark.push_back(per_call(a) - plain);
  }
  scratch.drain([](const Event&, std::uint64_t) {});
  exchange_thread_buffer(own);
  const double ns_per_tick = t.clock.ns_per_tick();
  const double push_timed = timed_mean(scratch, EventKind::Push, push_before, ns_per_tick);
  const double pop_timed = timed_mean(scratch, EventKind::Pop, pop_before, ns_per_tick);
  const double mark_timed = timed_mean(scratch, EventKind::Mark, mark_before, ns_per_tick);
  const std::int64_t samples = kRounds * kPerRound;
  const std::string method = "self-calibration at tracer start: median of 7 x 2000 calls around a 128-term dot product";
  const std::string timed = "self-calibration at tracer start: the entry points' own timing of the same calls";
  std::vector<CalibrationRecord> out = {CalibrationRecord{"nvtx_range", std::max(0.0, median(range)), samples, method},
                                        CalibrationRecord{"nvtx_mark", std::max(0.0, median(mark)), samples, method}};
  const std::int64_t timed_samples = samples / ThreadBuffer::kCostSampleEvery;
  if (push_timed >= 0 && pop_timed >= 0) {
    out.push_back(CalibrationRecord{"nvtx_range_timed", push_timed + pop_timed, timed_samples, timed});
  }
  if (mark_timed >= 0) out.push_back(CalibrationRecord{"nvtx_mark_timed", mark_timed, timed_samples, timed});
  return out;
}

} // namespace dreamscope::tracer
