#include "dreamscope/overhead_correction.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace dreamscope {

OverheadCosts overhead_costs(const std::vector<CalibrationRecord>& calibration) {
  OverheadCosts costs;
  auto pick = [&](std::string_view kind) {
    const CalibrationRecord* best = nullptr;
    for (const auto& c : calibration) {
      if (c.event_kind == kind && (!best || c.samples > best->samples)) best = &c;
    }
    return best ? std::max(0.0, best->cost_ns) : 0.0;
  };
  costs.range_ns = pick("nvtx_range");
  costs.marker_ns = pick("nvtx_mark");
  costs.cuda_api_ns = pick("cuda_api");
  return costs;
}

OverheadCorrection correct_overhead(const Trace& trace, DependencyGraph& graph, std::optional<OverheadCosts> costs) {
  OverheadCorrection out;
  out.costs = costs ? *costs : overhead_costs(trace.calibration());
  const std::size_t n = graph.task_count();
  // Charges in fractional nanoseconds: a 30.4 ns range cost must not round to 30 per range.
  std::vector<double> charge(n, 0.0);
  const auto& ann = trace.annotations();
  for (EventIndex row = 0; row < ann.size(); ++row) {
    const TaskId t = graph.annotation_first(row);
    if (t == kNoTask) continue;
    charge[t] += ann.end[row] > ann.start[row] ? out.costs.range_ns : out.costs.marker_ns;
    ++out.events_charged;
  }
  const auto& api = trace.cuda_api();
  if (out.costs.cuda_api_ns > 0) {
    for (EventIndex row = 0; row < api.size(); ++row) {
      const TaskId t = graph.api_first(row);
      if (t == kNoTask) continue;
      charge[t] += out.costs.cuda_api_ns;
      ++out.events_charged;
    }
  }
  // The profiler's own work on a thread (CUPTI buffer handling) is charged where it happened.
  for (const OverheadRecord& o : trace.overheads()) {
    if (o.track >= graph.resource_count() || graph.is_stream(o.track)) continue;
    ++out.overhead_records;
    const TaskId first = graph.resource_first(o.track), end = graph.resource_end(o.track);
    TaskId lo = first, hi = end; // first task that ends after the record starts
    while (lo < hi) {
      const TaskId mid = lo + (hi - lo) / 2;
      if (graph.measured_end(mid) <= o.start) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    for (TaskId t = lo; t < end && graph.measured_start(t) < o.end; ++t) {
      const TimeNs overlap = std::min(o.end, graph.measured_end(t)) - std::max(o.start, graph.measured_start(t));
      if (overlap > 0) charge[t] += static_cast<double>(overlap);
    }
  }
  double charged = 0, removed = 0, unabsorbed = 0;
  for (ResourceId r = 0; r < graph.resource_count(); ++r) {
    if (graph.is_stream(r)) continue;
    double debt = 0;
    for (TaskId t = graph.resource_first(r); t < graph.resource_end(r); ++t) {
      charged += charge[t];
      debt += charge[t];
      if (graph.blocking(t)) {
        unabsorbed += debt;
        debt = 0;
        continue;
      }
      const double room = static_cast<double>(graph.duration(t));
      const double take = std::floor(std::min(debt, room));
      if (take <= 0) continue;
      graph.scale(t, graph.ratio(t), graph.add(t) - static_cast<TimeNs>(take));
      debt -= take;
      removed += take;
    }
    unabsorbed += debt;
  }
  // Sums of per-event costs over millions of events: whatever costs a trace or a calibration
  // file claims, the report's integers saturate instead of overflowing (found by fuzz_trace_db).
  auto saturated_ns = [](double v) -> TimeNs {
    if (!(v > 0)) return 0;
    return v >= 9.2e18 ? std::numeric_limits<TimeNs>::max() : static_cast<TimeNs>(v);
  };
  out.charged_ns = saturated_ns(charged);
  out.removed_ns = saturated_ns(removed);
  out.unabsorbed_ns = saturated_ns(unabsorbed);
  return out;
}

} // namespace dreamscope
