// The TensorBoard plugin's overview: steps extended to the end of the GPU work their launches
// caused, and each step's time split by role in priority order.
#include "tensorboard/tensorboard_model.h"

#include "dreamscope/storage/limits.h"

#include <algorithm>
#include <limits>
#include <optional>

namespace dreamscope::analyzers {

namespace tb {

Steps device_steps(const Model& m) {
  constexpr TimeNs kNone = std::numeric_limits<TimeNs>::max();
  const std::size_t n = m.host_steps.size();
  Steps out;
  out.steps.reserve(n);
  for (const HostStep& h : m.host_steps) {
    out.steps.push_back(
        StepTime{.name = h.name, .start = h.start, .end = h.end, .host_start = h.start, .host_end = h.end});
  }
  if (n == 0) return out;

  // Only a runtime call that lies wholly inside a step's host span ties GPU work to the step;
  // one that straddles either edge is passed over (runtimes in time order, steps in order).
  std::vector<Interval> device(n, Interval{kNone, std::numeric_limits<TimeNs>::min()});
  std::vector<char> matched(m.device_ops.size(), 0);
  bool any_matched = false;
  std::size_t s = 0, r = 0;
  Interval current = device[0];
  while (s < n && r < m.runtimes.size()) {
    const RuntimeCall& call = m.runtimes[r];
    const HostStep& step = m.host_steps[s];
    if (call.start < step.start) {
      ++r;
    } else if (call.end <= step.end) {
      for (std::uint32_t op : call.device_ops) {
        current.start = std::min(current.start, m.device_ops[op].start);
        current.end = std::max(current.end, m.device_ops[op].end);
        matched[op] = 1;
        any_matched = true;
        ++out.steps[s].device_ops;
      }
      ++r;
    } else if (call.start < step.end) {
      ++r;
    } else {
      device[s++] = current;
      current = Interval{kNone, std::numeric_limits<TimeNs>::min()};
    }
  }
  if (s < n) device[s] = current;

  // "GPU used": some step launched something. Then the first step starts no earlier than
  // the end of the GPU work that ends before its own (launched before the profile began).
  out.gpu_used = any_matched;
  if (!out.gpu_used) return out;
  TimeNs prev_end = m.host_steps[0].start;
  if (device[0].start != kNone) {
    for (std::size_t i = 0; i < m.device_ops.size(); ++i) {
      if (!matched[i] && m.device_ops[i].end < device[0].start) prev_end = std::max(prev_end, m.device_ops[i].end);
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    StepTime& step = out.steps[i];
    step.start = std::max(prev_end, step.host_start);
    if (device[i].start == kNone) {
      step.end = std::max(step.host_end, step.start);
    } else {
      step.end = std::max(step.host_end, device[i].end);
      if (step.end < step.start) step.end = step.start;
    }
    prev_end = step.end;
  }

  // Trailing steps that launched nothing, or much less than the step before (the profiler
  // may have stopped before their kernels were recorded), are dropped.
  if (n > 1) {
    std::size_t last = n;
    while (last > 0 && out.steps[last - 1].device_ops == 0) --last;
    if (last > 0) {
      std::size_t keep = last;
      const std::size_t k = last - 1;
      if (k > 0 &&
          static_cast<double>(out.steps[k - 1].device_ops) * 0.8 > static_cast<double>(out.steps[k].device_ops)) {
        keep = k;
      }
      out.steps.resize(keep);
    }
  }
  return out;
}

} // namespace tb

StepBreakdown step_breakdown(const Trace& trace) {
  const tb::Model model = tb::build_model(trace);
  tb::Steps steps = tb::device_steps(model);
  StepBreakdown out;
  auto has = [&](StepCategory c) { return model.role_events[static_cast<std::size_t>(c)] > 0; };
  out.has_runtime = has(StepCategory::Runtime);
  out.has_kernel = has(StepCategory::Kernel);
  out.has_memcpy_or_memset = has(StepCategory::Memcpy) || has(StepCategory::Memset);
  out.has_communication = has(StepCategory::Communication);
  out.steps = std::move(steps.steps);
  if (out.steps.empty()) return out;

  // Each role claims what no higher-priority role claimed, over all steps at once; what is
  // left is Other. (The plugin, once the roles claimed a whole span, starts again from the
  // whole span for the next role and counts time twice: see docs/analyze.md.)
  std::vector<tb::Interval> span;
  for (const StepTime& s : out.steps) span.push_back({s.start, s.end});
  std::vector<tb::Interval> free = detail::merge_intervals(std::move(span));
  std::array<std::vector<tb::Interval>, kStepCategories> claimed;
  for (std::size_t r = 0; r < tb::kRoles; ++r) {
    claimed[r] = detail::intersect_intervals(free, model.roles[r]);
    free = detail::subtract_intervals(free, claimed[r]);
  }
  claimed[static_cast<std::size_t>(StepCategory::Other)] = std::move(free);

  std::vector<tb::Interval> windows;
  windows.reserve(out.steps.size());
  for (const StepTime& s : out.steps) windows.push_back({s.start, s.end});
  for (std::size_t c = 0; c < kStepCategories; ++c) {
    const std::vector<TimeNs> time = detail::OverlapIndex(claimed[c]).overlaps(windows);
    for (std::size_t i = 0; i < out.steps.size(); ++i) out.steps[i].time[c] = time[i];
  }
  TimeNs total = 0;
  for (const StepTime& s : out.steps) {
    for (std::size_t c = 0; c < kStepCategories; ++c) out.average[c] = limits::add_ns(out.average[c], s.time[c]);
    total = limits::add_ns(total, s.duration());
  }
  const auto count = static_cast<TimeNs>(out.steps.size());
  for (TimeNs& t : out.average) t /= count;
  out.average_duration = total / count;
  return out;
}

} // namespace dreamscope::analyzers
