#include "dreamscope/whatif/probe_steps.h"

#include "median.h"

#include <dreamscope/storage/steps.h>
#include <dreamscope/storage/tracer_environment.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <optional>

namespace dreamscope::whatif {

namespace {

// A probe's neighbours: up to this many recorded steps of its name on either side, none further
// than this many times the probe's own length from it (a pause of recording in between leaves
// steps of another moment on the far side).
constexpr int kNeighboursASide = 4;
constexpr TimeNs kReachInSteps = 10;
// They recorded about as many inner ranges as the probe counted (the same work), and the two
// sides' levels agree within this much (the machine did not change state around the probe). A
// side's level is its second fastest step: where the writer shares a core with the thread, its
// drains slow two or three steps in twelve or so by half (docs/simulation.md, "The writer's
// drains"), which a state change does not look like, and which the neighbours' median passes
// over.
constexpr double kSameWork = 0.05;
constexpr double kStableNeighbours = 0.10;
// A window's timing stands for its calls where this many were timed (as overhead correction's).
constexpr std::int64_t kMinCostSamples = 32;
// The probes whose neighbours' timing is nearest a window's say what its timing over-reads.
constexpr std::size_t kNearest = 7;

constexpr std::string_view kProbeMark = tracer_environment::kProbeStepMark;
constexpr std::string_view kTracerDomain = tracer_environment::kTracerDomain;
constexpr std::string_view kWaitCategory = "wait";
// The tracer times this many counted ranges on the thread right after each probe step
// (tracer/src/nvtx_injection.cpp, time_counted_ranges), as an overhead record of this kind.
constexpr std::string_view kCountedTiming = tracer_environment::kCountedRangesTimed;
constexpr double kTimedCountedRanges = 256;
constexpr TimeNs kTimingAfterStep = 1'000'000;


// An outermost range of the thread: its name, when, how long it ran less its waits for data
// (a step's wait phase is the loaders' time, not its own), and the ranges inside two open ones
// it recorded; `counted` >= 0 for a probe step (the pushes it counted instead).
struct Step {
  StringId name{};
  TimeNs start = 0, end = 0;
  double active_ns = 0;
  std::int64_t inner = 0;
  std::int64_t counted = -1;
};

std::vector<Step> outermost_steps(const Trace& trace, TrackId track, std::optional<StringId> wait_category) {
  const auto& ann = trace.annotations();
  const AnnotationRange rows = trace.annotations_on(track);
  std::vector<Step> steps;
  std::vector<AnnotationIndex> outermost;
  for (auto row = rows.begin; row < rows.end; ++row) {
    const TimeNs start = ann.start[row], end = ann.end[row];
    if (end <= start) continue;
    if (ann.filled_from[row] != kNoValue) continue; // copied in at merge: the probe recorded none
    const std::uint16_t depth = ann.depth[row];
    if (depth == 0) {
      steps.push_back(Step{.name = ann.name[row], .start = start, .end = end, .active_ns = static_cast<double>(end - start)});
      outermost.push_back(row);
    } else if (!steps.empty() && start < steps.back().end) {
      if (depth >= 2) {
        ++steps.back().inner;
      } else if (wait_category && ann.category[row] == *wait_category) {
        steps.back().active_ns -= static_cast<double>(std::min(end, steps.back().end) - start);
      }
    }
  }
  const std::vector<std::int64_t> counted = probe_step_counts(trace, track, outermost);
  for (std::size_t i = 0; i < steps.size(); ++i) steps[i].counted = counted[i];
  return steps;
}

// The calls' timing of a range over [from, to): the windows' timings by their timed calls.
double timing_between(std::span<const ThreadLoadRecord> windows, TimeNs from, TimeNs to) {
  double sum = 0;
  std::int64_t n = 0;
  auto it = std::lower_bound(windows.begin(), windows.end(), from,
                             [](const ThreadLoadRecord& w, TimeNs t) { return w.end <= t; });
  for (; it != windows.end() && it->start < to; ++it) {
    if (it->cost_samples < kMinCostSamples || it->range_cost_ns < 0) continue;
    sum += it->range_cost_ns * static_cast<double>(it->cost_samples);
    n += it->cost_samples;
  }
  return n > 0 ? sum / static_cast<double>(n) : -1;
}

} // namespace

ThreadProbeSteps::ThreadProbeSteps(const Trace& trace, TrackId track, std::span<const ThreadLoadRecord> windows,
                                   double counted_range_ns) {
  const std::optional<StringId> probe_name = trace.find_string(kProbeMark);
  const std::optional<StringId> tracer_domain = trace.find_string(kTracerDomain);
  if (!probe_name || !tracer_domain || track >= trace.tracks().size()) return;
  const std::vector<Step> steps = outermost_steps(trace, track, trace.find_string(kWaitCategory));
  // A counted call costs what start-up calibration says in the machine's fast state, and more in
  // its slow one, as the thread's other work does: each probe's is scaled by how much slower the
  // probe step ran than the thread's fast probe steps of its name (their 20th percentile).
  std::vector<std::pair<StringId, double>> probe_lengths;
  for (const Step& s : steps) {
    if (s.counted > 0 && s.active_ns > 0) probe_lengths.emplace_back(s.name, s.active_ns);
  }
  std::sort(probe_lengths.begin(), probe_lengths.end());
  auto fast_length = [&](StringId name) {
    auto lo = std::lower_bound(probe_lengths.begin(), probe_lengths.end(), std::pair(name, -1.0));
    auto hi = std::upper_bound(probe_lengths.begin(), probe_lengths.end(), std::pair(name, 1e300));
    return lo == hi ? -1.0 : (lo + (hi - lo) / 5)->second;
  };
  // What a counted range cost right after each probe step, where the tracer timed it.
  std::vector<std::pair<TimeNs, double>> counted_timings; // start, ns a range
  if (const std::optional<StringId> timing_kind = trace.find_string(kCountedTiming)) {
    for (const OverheadRecord& o : trace.overheads()) {
      if (o.track == track && o.kind == *timing_kind && o.end > o.start) {
        counted_timings.emplace_back(o.start, static_cast<double>(o.end - o.start) / kTimedCountedRanges);
      }
    }
    std::sort(counted_timings.begin(), counted_timings.end());
  }
  auto counted_after = [&](TimeNs end) {
    auto it = std::lower_bound(counted_timings.begin(), counted_timings.end(), std::pair(end, -1.0));
    return it != counted_timings.end() && it->first - end <= kTimingAfterStep ? it->second : -1.0;
  };
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const Step& p = steps[i];
    if (p.counted < 0) continue;
    ++probes_;
    if (p.counted == 0 || p.active_ns <= 0) continue;
    const TimeNs reach = kReachInSteps * (p.end - p.start);
    std::vector<double> durations, inner;
    TimeNs from = p.start, to = p.end;
    int left = 0, right = 0;
    auto take = [&](const Step& s) {
      durations.push_back(s.active_ns);
      inner.push_back(static_cast<double>(s.inner));
      from = std::min(from, s.start);
      to = std::max(to, s.end);
    };
    for (std::size_t j = i; j-- > 0 && left < kNeighboursASide && p.start - steps[j].end <= reach;) {
      if (steps[j].name != p.name || steps[j].counted >= 0) continue;
      take(steps[j]);
      ++left;
    }
    for (std::size_t j = i + 1; j < steps.size() && right < kNeighboursASide && steps[j].start - p.end <= reach; ++j) {
      if (steps[j].name != p.name || steps[j].counted >= 0) continue;
      take(steps[j]);
      ++right;
    }
    if (left == 0 || right == 0) continue;
    auto level = [](std::span<const double> side) {
      std::vector<double> sorted(side.begin(), side.end());
      std::sort(sorted.begin(), sorted.end());
      return sorted[std::min<std::size_t>(1, sorted.size() - 1)];
    };
    // take() put the left side first.
    const double left_level = level(std::span(durations).first(static_cast<std::size_t>(left)));
    const double right_level = level(std::span(durations).subspan(static_cast<std::size_t>(left)));
    const auto [lo, hi] = std::minmax(left_level, right_level);
    if (lo <= 0 || hi > (1 + kStableNeighbours) * lo) continue;
    const double counted = static_cast<double>(p.counted);
    const double recorded = median_of(inner, -1);
    if (std::abs(recorded - counted) > kSameWork * counted) continue;
    // The counted range's cost as the tracer timed it right after the probe; else start-up's,
    // scaled by the probe's state.
    const double timed = counted_after(p.end);
    const double counted_cost = timed >= 0 ? timed : counted_range_ns * std::max(1.0, p.active_ns / fast_length(p.name));
    const double cost = (median_of(durations, -1) - p.active_ns + counted * counted_cost) / recorded;
    const double timing = timing_between(windows, from, to);
    if (!(cost > 0) || timing < 0) continue;
    measures_.push_back(ProbeStepMeasure{.at = p.start, .timing_ns = timing, .cost_ns = cost});
  }
  std::sort(measures_.begin(), measures_.end(),
            [](const ProbeStepMeasure& a, const ProbeStepMeasure& b) { return a.timing_ns < b.timing_ns; });
}

double ThreadProbeSteps::range_cost(double timing_ns) const {
  if (!usable()) return -1;
  // The kNearest measures nearest `timing_ns` in timing: a window of sorted measures.
  const std::size_t k = std::min(kNearest, measures_.size());
  auto first = std::lower_bound(measures_.begin(), measures_.end(), timing_ns,
                                [](const ProbeStepMeasure& m, double t) { return m.timing_ns < t; });
  std::size_t lo = static_cast<std::size_t>(first - measures_.begin());
  lo = lo > k / 2 ? lo - k / 2 : 0;
  lo = std::min(lo, measures_.size() - k);
  // Slide towards the closer side until the window is the k nearest.
  while (lo > 0 && timing_ns - measures_[lo - 1].timing_ns < measures_[lo + k - 1].timing_ns - timing_ns) --lo;
  while (lo + k < measures_.size() && measures_[lo + k].timing_ns - timing_ns < timing_ns - measures_[lo].timing_ns) ++lo;
  std::vector<double> over;
  over.reserve(k);
  for (std::size_t j = lo; j < lo + k; ++j) over.push_back(measures_[j].timing_ns - measures_[j].cost_ns);
  return std::max(0.0, timing_ns - median_of(std::move(over), -1));
}

ProbeStepSummary summarize_probe_steps(const Trace& trace) {
  ProbeStepSummary out;
  if (!trace.find_string(kProbeMark)) return out;
  double counted_range_ns = 0;
  std::int64_t samples = -1;
  for (const CalibrationRecord& c : trace.calibration()) {
    if (c.event_kind == "nvtx_range_counted" && c.samples > samples) {
      counted_range_ns = std::max(0.0, c.cost_ns);
      samples = c.samples;
    }
  }
  const auto& loads = trace.thread_loads(); // by track, then start
  std::vector<double> costs, timings;
  std::vector<double> state_costs[2], state_timings[2]; // fast, slow
  for (std::size_t i = 0; i < loads.size();) {
    std::size_t j = i;
    while (j < loads.size() && loads[j].track == loads[i].track) ++j;
    const auto windows = std::span(loads).subspan(i, j - i);
    const ThreadProbeSteps steps(trace, loads[i].track, windows, counted_range_ns);
    out.probes += steps.probes();
    out.measured += static_cast<std::int64_t>(steps.measures().size());
    // The thread's windows by state: their timings against the thread's fast level.
    std::vector<double> window_timings;
    for (const ThreadLoadRecord& w : windows) {
      if (w.cost_samples >= kMinCostSamples && w.range_cost_ns >= 0) window_timings.push_back(w.range_cost_ns);
    }
    std::sort(window_timings.begin(), window_timings.end());
    const double fast_up_to =
        window_timings.empty() ? 0 : (1 + kFastStateSpread) * window_timings[window_timings.size() / 10];
    for (const double t : window_timings) ++(t <= fast_up_to ? out.fast : out.slow).windows;
    for (const ProbeStepMeasure& m : steps.measures()) {
      costs.push_back(m.cost_ns);
      timings.push_back(m.timing_ns);
      const int state = !window_timings.empty() && m.timing_ns > fast_up_to ? 1 : 0;
      state_costs[state].push_back(m.cost_ns);
      state_timings[state].push_back(m.timing_ns);
    }
    i = j;
  }
  for (const TimeNs from : trace.annotations().filled_from) out.filled_ranges += from != kNoValue;
  out.cost_ns = median_of(std::move(costs), -1);
  out.timing_ns = median_of(std::move(timings), -1);
  for (int state = 0; state < 2; ++state) {
    ProbeStepState& s = state == 0 ? out.fast : out.slow;
    s.measured = static_cast<std::int64_t>(state_costs[state].size());
    s.cost_ns = median_of(std::move(state_costs[state]), -1);
    s.timing_ns = median_of(std::move(state_timings[state]), -1);
  }
  return out;
}

} // namespace dreamscope::whatif
