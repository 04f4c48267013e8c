// The TensorBoard plugin's GPU metrics (its gpu_metrics_parser.py and docs/gpu_utilization.md):
// GPU utilization, estimated SM efficiency and estimated achieved occupancy over the steps, and
// the utilization and SM-efficiency timelines over the whole trace.
#include "tensorboard/tensorboard_model.h"

#include <algorithm>
#include <map>

namespace dreamscope::analyzers {

namespace {

using tb::DeviceOp;
using tb::Interval;

struct Weighted {
  TimeNs start = 0, end = 0;
  double value = 0;
};

// The plugin's sweep over kernel endpoints, starts before ends at equal times and otherwise in
// kernel order, with the running sum kept in a double as it keeps it: a range is emitted
// wherever that sum is above 0, so a rounding leftover after kernels end still gives one (the
// plugin's own test expects such a range; docs/analyze.md).
std::vector<SmEfficiencyRange> sm_efficiency_sweep(const std::vector<Weighted>& kernels) {
  struct Endpoint {
    TimeNs time;
    bool end;
    double value;
  };
  std::vector<Endpoint> points;
  points.reserve(kernels.size() * 2);
  for (const Weighted& k : kernels) {
    points.push_back({k.start, false, k.value});
    points.push_back({k.end, true, k.value});
  }
  std::stable_sort(points.begin(), points.end(), [](const Endpoint& a, const Endpoint& b) {
    return a.time != b.time ? a.time < b.time : (!a.end && b.end);
  });
  std::vector<SmEfficiencyRange> out;
  if (points.empty()) return out;
  TimeNs last_time = points[0].time;
  double sum = points[0].value;
  for (std::size_t i = 1; i < points.size(); ++i) {
    const Endpoint& p = points[i];
    if (p.time > last_time && sum > 0.0) out.push_back({last_time, p.time, std::min(sum, 1.0)});
    last_time = p.time;
    sum += p.end ? -p.value : p.value;
  }
  return out;
}

// Buckets of 10^k µs, at most 100 over [begin, end), the last one running to `end`; each the
// share of it some kernel ran, then a closing point at `end`.
void utilization_timeline(const std::vector<Interval>& busy, TimeNs begin, TimeNs end, DeviceEfficiency& e) {
  constexpr TimeNs kMicrosecond = 1000;
  TimeNs bucket = kMicrosecond;
  // Span / bucket > 100, in integers that cannot overflow.
  while ((end - begin) / bucket > 100 || ((end - begin) / bucket == 100 && (end - begin) % bucket != 0)) bucket *= 10;
  const TimeNs count = (end - begin) / bucket;
  if (count <= 0 || busy.empty()) return;
  e.bucket = bucket;
  std::size_t k = 0;
  for (TimeNs i = 0; i < count; ++i) {
    const TimeNs lo = begin + i * bucket;
    const TimeNs hi = i + 1 < count ? lo + bucket : end;
    while (k < busy.size() && busy[k].end <= lo) ++k;
    TimeNs covered = 0;
    for (std::size_t j = k; j < busy.size() && busy[j].start < hi; ++j) {
      covered += std::min(hi, busy[j].end) - std::max(lo, busy[j].start);
    }
    e.utilization_timeline.push_back({lo, static_cast<double>(covered) / static_cast<double>(hi - lo)});
  }
  e.utilization_timeline.push_back({end, 0.0});
}

} // namespace

std::vector<DeviceEfficiency> gpu_efficiency(const Trace& trace) {
  const tb::Model model = tb::build_model(trace);
  const tb::Steps steps = tb::device_steps(model);
  std::vector<DeviceEfficiency> out;
  if (steps.steps.empty()) return out;
  const TimeNs first = steps.steps.front().start, last = steps.steps.back().end;
  const TimeNs span = last - first;

  std::map<std::int64_t, std::vector<const DeviceOp*>> kernels_of_device; // by ordinal
  for (const DeviceOp& d : model.device_ops) {
    if (d.kind == GpuOpKind::Kernel) kernels_of_device[d.device].push_back(&d);
  }
  for (const auto& [ordinal, kernels] : kernels_of_device) {
    DeviceEfficiency e;
    e.device = ordinal;
    for (const DeviceInfo& info : trace.devices()) {
      if (info.ordinal == ordinal) e.name = info.name;
    }
    e.steps_time = span;

    std::vector<Interval> ranges;
    std::vector<Weighted> blocks;
    double occupancy_weighted = 0, occupancy_time = 0; // overlapping kernels: sums past int64 ns

    for (const DeviceOp* k : kernels) {
      ranges.push_back({k->start, k->end});
      // Clipped to the steps: only kernel time within them counts toward the averages.
      const TimeNs clipped = std::min(k->end, last) - std::max(k->start, first);
      if (auto b = tb::blocks_per_sm(model, *k); b && *b > 0.0) {
        blocks.push_back({k->start, k->end, *b});
        ++e.kernels_with_blocks_per_sm;
      }
      if (auto o = tb::occupancy_pct(model, *k); o && *o >= 0.0) {
        ++e.kernels_with_occupancy;
        if (clipped > 0) {
          occupancy_weighted += *o * static_cast<double>(clipped);
          occupancy_time += static_cast<double>(clipped);
        }
      }
    }
    const std::vector<Interval> busy = detail::merge_intervals(std::move(ranges));
    e.busy = detail::intersection_length(busy, {{first, last}});
    if (span > 0) e.gpu_utilization = static_cast<double>(e.busy) / static_cast<double>(span);
    utilization_timeline(busy, model.timeline_begin, model.timeline_end, e);

    e.sm_efficiency_ranges = sm_efficiency_sweep(blocks);
    double weighted = 0;
    bool in_steps = false;
    for (const SmEfficiencyRange& r : e.sm_efficiency_ranges) {
      const TimeNs clipped = std::min(r.end, last) - std::max(r.start, first);
      if (clipped <= 0) continue;
      in_steps = true;
      weighted += r.efficiency * static_cast<double>(clipped);
    }
    if (in_steps && span > 0) e.sm_efficiency = weighted / static_cast<double>(span);
    if (occupancy_time > 0) e.achieved_occupancy = occupancy_weighted / occupancy_time / 100.0;
    out.push_back(std::move(e));
  }
  return out;
}

} // namespace dreamscope::analyzers
