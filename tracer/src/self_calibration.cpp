// Measures what the hot path costs on this machine, once at tracer start, into scratch
// buffers that no writer drains. Every part file carries the result, the basis of overhead
// correction:
// - nvtx_range, nvtx_mark: the cost of recording a range (push and pop) and a mark, calls
//   back to back. Against untraced runs of cpu_train --fine-annotations this has come within
//   a few per cent of what a range really costs a job in one state of the development VM, and
//   1.5-2x short of it in another (docs/simulation.md).
// - nvtx_range_timed, nvtx_mark_timed: what the entry points' own in-run timing
//   (ThreadBuffer::sample_cost) reads in the same state, through the real entry points, for
//   ranges around other work as in a job (a small dot product inside each: calls back to
//   back find the branch predictors and caches warmer than a job leaves them, and time
//   faster). Overhead correction scales the first by how much slower that timing reads later
//   in the run.
// - nvtx_range_in_work, nvtx_mark_in_work: what those calls cost the work around them, as the
//   time of the rounds with calls less that of rounds of the work alone. Recorded for the
//   study of a better model (docs/simulation.md, "What the correction cannot remove"); not
//   used by the correction yet.
// - nvtx_range_counted: a range that a cost probe counts and does not record, through the
//   entry points back to back (inside two recorded ones: a thread's two outermost levels are
//   always recorded). The probes measure what recording adds to such a call; the correction adds
//   this back, and charges it for the ranges the probes counted (writer_thread.cpp).
// - clock_read: how far apart two back-to-back reads of the tracer's clock are. The in-run
//   timing of a call ends with a clock read of its own, which calls that are not timed do
//   not make; overhead correction takes this much off a timed range (docs/simulation.md).
#include "tracer_state.h"

#include <dreamscope/storage/limits.h>

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

constexpr int kRounds = 5, kPerRound = 1000, kInWorkRounds = 9;

template <class F>
double median_cost(ThreadBuffer& buffer, F&& body, int rounds = kRounds) {
  std::vector<double> costs;
  for (int r = 0; r < rounds; ++r) {
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

// Median over rounds of the ns between two back-to-back reads of the hot path's clock.
double clock_read_pair_ns(bool tsc, double ns_per_tick) {
  std::vector<double> rounds;
  for (int r = 0; r < kInWorkRounds; ++r) {
    std::uint64_t sum = 0;
    int pairs = 0;
    for (int i = 0; i < kPerRound; ++i) {
      const std::uint64_t a = ticks(tsc);
      const std::uint64_t b = ticks(tsc);
      // A thread moved to a core whose counter is behind reads a pair backwards: skipped, not
      // wrapped into 2^64 ticks.
      if (b >= a) {
        sum += b - a;
        ++pairs;
      }
    }
    if (pairs > 0) rounds.push_back(static_cast<double>(sum) * ns_per_tick / pairs);
  }
  if (rounds.empty()) return -1; // no pair read forwards: no figure
  std::sort(rounds.begin(), rounds.end());
  return rounds[rounds.size() / 2];
}

} // namespace

std::vector<CalibrationRecord> self_calibrate(Tracer& t) {
  // The rounds run in a chunk the pool has mapped ready, every page touched (ChunkPool):
  // faults of a fresh chunk are a one-time cost per chunk, not a per-event one. Where only
  // the kernel had populated it, the first write to each page still cost ~5 us on a guest
  // under shadow paging, and back-to-back ranges timed 96-135 ns where they cost 21.
  // Afterwards the chunk goes back to the free list, where the first thread that records
  // finds it.
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
    // Rounds of the work alone and of the work with calls alternate, so that a change of the
    // machine's state falls on both: their difference per round is what the calls cost among
    // the work, and the median of those differences is the figure.
    auto in_work = [&](auto&& with_calls) {
      std::vector<double> costs;
      for (int r = 0; r < kInWorkRounds; ++r) {
        const double alone = median_cost(scratch, [&](int) { work.run(); }, 1);
        costs.push_back(median_cost(scratch, with_calls, 1) - alone);
      }
      std::sort(costs.begin(), costs.end());
      // A difference of two timings: where the calls cost the work next to nothing (a mark
      // among warm pages, ~8 ns) noise can take it below zero, and a trace must not claim a
      // negative cost (the reader refuses the part that holds one).
      return std::max(0.0, costs[costs.size() / 2]);
    };
    const double range_in_work = in_work([&](int) {
      calibration_push("calibration");
      work.run();
      calibration_pop();
    });
    const double mark_in_work = in_work([&](int) {
      calibration_mark("calibration");
      work.run();
    });
    const double ns_per_tick = t.clock.ns_per_tick();
    const double push = timed_mean(scratch, EventKind::Push, ns_per_tick);
    const double pop = timed_mean(scratch, EventKind::Pop, ns_per_tick);
    const double mark = timed_mean(scratch, EventKind::Mark, ns_per_tick);
    // After the timed rounds were read. The flag is the process's: a thread that records
    // meanwhile has its inner pushes counted too, which is all a probe does; at start-up there
    // is seldom one.
    calibration_push("calibration"); // two levels: a probe counts from the third
    calibration_push("calibration");
    g_hot.cost_probe.store(true, std::memory_order_relaxed);
    const double range_counted = median_cost(scratch, [&](int) {
      calibration_push("calibration");
      calibration_pop();
    });
    g_hot.cost_probe.store(false, std::memory_order_relaxed);
    calibration_pop();
    calibration_pop();
    exchange_thread_buffer(own);
    const std::string method = "self-calibration at tracer start: the entry points' own timing of 9 x 1000 calls";
    const std::int64_t samples = kInWorkRounds * kPerRound / ThreadBuffer::kCostSampleEvery;
    if (push >= 0 && pop >= 0) out.push_back(CalibrationRecord{"nvtx_range_timed", push + pop, samples, method});
    if (mark >= 0) out.push_back(CalibrationRecord{"nvtx_mark_timed", mark, samples, method});
    const std::string in_work_method =
        "self-calibration at tracer start: 9 x 1000 calls around work, less the work alone (median of rounds)";
    out.push_back(CalibrationRecord{"nvtx_range_in_work", range_in_work, kInWorkRounds * kPerRound, in_work_method});
    out.push_back(CalibrationRecord{"nvtx_mark_in_work", mark_in_work, kInWorkRounds * kPerRound, in_work_method});
    out.push_back(CalibrationRecord{"nvtx_range_counted", range_counted, kRounds * kPerRound,
                                    "self-calibration at tracer start: median of 5 x 1000 ranges a cost probe "
                                    "counts, through the entry points"});
    out.push_back(CalibrationRecord{"clock_read", clock_read_pair_ns(tsc, ns_per_tick), kInWorkRounds * kPerRound,
                                    "self-calibration at tracer start: two clock reads back to back, median of 9 x 1000"});
  }
  // Whatever a moment of the machine made of a figure, the part must stay readable: the
  // reader refuses a part with a cost outside [0, 1e9] ns (dreamscope/storage/limits.h), and every
  // event in it with the part. A figure that could not be measured is left out instead.
  std::erase_if(out, [](const CalibrationRecord& r) {
    return !(r.cost_ns >= 0 && r.cost_ns <= limits::kMaxCalibrationCostNs);
  });
  return out;
}

} // namespace dreamscope::tracer
