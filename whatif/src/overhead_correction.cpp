#include "dreamscope/whatif/overhead_correction.h"

#include "dreamscope/whatif/probe_steps.h"
#include "dreamscope/whatif/writer_interference.h"

#include <dreamscope/storage/tracer_environment.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <span>
#include <vector>

namespace dreamscope::whatif {

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
  costs.range_timed_ns = pick("nvtx_range_timed");
  costs.marker_timed_ns = pick("nvtx_mark_timed");
  costs.clock_read_ns = pick("clock_read");
  costs.python_range_ns = pick("python_range");
  costs.range_counted_ns = pick("nvtx_range_counted");
  costs.cuda_launch_ns = pick("cuda_launch");
  return costs;
}

// The in-run timing reads a call from the clock read that gives its event's time to one more
// read once its record is written. That second read is the sampled calls' own: the calls that
// are not timed skip it, and the job's code after them overlaps with their tail. Measured on
// the development VM in both of its states (docs/simulation.md, "Overhead correction"), the
// timing of a range (two calls) read 1-14 ns (median 10.5) more than the range cost the job,
// about what two back-to-back clock reads are apart (12 ns): so a range is charged its timing
// less one such pair, a mark (one call) less half of one, and never less than the
// back-to-back calibration, unless the run's own timing read less than that: a call never
// costs the thread more than its timing, clock read included, and a start-up caught in a
// slower moment than the run (back to back 30 ns, the run's ranges timed 23-26 ns and cost
// 19; 2026-11-28) would otherwise charge every range of the run its moment. Traces without the clock's calibration (an older tracer) keep the
// earlier model: the calibrated cost scaled by how much slower the calls timed in the run
// than at start-up, never lowered (it left half the cost in where calls among the job's work
// cost twice what they cost back to back). Without any start-up figure, the timing itself.
double charged_cost(double timed_ns, bool range, const OverheadCosts& costs) {
  const double base = range ? costs.range_ns : costs.marker_ns;
  if (costs.clock_read_ns > 0) {
    const double over = range ? costs.clock_read_ns : costs.clock_read_ns / 2;
    return std::max(std::min(base, timed_ns), timed_ns - over);
  }
  const double base_timed = range ? costs.range_timed_ns : costs.marker_timed_ns;
  if (!(base > 0 && base_timed > 0)) return timed_ns;
  return base * std::max(1.0, timed_ns / base_timed);
}

namespace {

// Per CUDA API row, whether the call launched a kernel (not only copies or memsets, whose
// recording the launch calibration did not measure): one pass over the kernels, each looked up
// by its correlation id, as TaskSelection finds launches.
std::vector<std::uint8_t> kernel_launching_calls(const Trace& trace) {
  std::vector<std::uint8_t> launched(trace.cuda_api().size(), 0);
  const auto& ops = trace.gpu_ops();
  for (GpuOpIndex op{0}; op < ops.size(); ++op) {
    if (ops.kind[op] != GpuOpKind::Kernel || ops.correlation[op] == kNoValue) continue;
    if (const auto api = trace.cuda_api_with_correlation(ops.correlation[op])) launched[*api] = 1;
  }
  return launched;
}

// A window's timed costs stand for its thread's calls when this many were timed; fewer, and the
// thread's mean over the run does (or, without one, start-up calibration).
constexpr std::int64_t kMinCostSamples = 32;

// The in-run costs of one thread: per window, and its mean over the run. Not from the time-window
// cost probes (cost_probes.h): on this repository's bench and fixtures their measure, in the
// thread's CPU time, came out below what the paused blocks showed recording cost, where the
// calls' timing came nearer (docs/simulation.md, "Cost probes"). Where the thread's probe steps
// measured (probe_steps.h), a range is charged its window's timing less the over-read those
// found at that timing; elsewhere the timing less one clock pair (charged_cost).
class InRunCosts {
 public:
  InRunCosts(std::span<const ThreadLoadRecord> windows, const OverheadCosts& fallback,
             const ThreadProbeSteps* probe_steps)
      : windows_(windows), fallback_(fallback),
        probe_steps_(probe_steps && probe_steps->usable() ? probe_steps : nullptr) {
    double range_sum = 0, mark_sum = 0;
    std::int64_t range_n = 0, mark_n = 0;
    for (const auto& w : windows) {
      if (w.range_cost_ns >= 0) {
        range_sum += w.range_cost_ns * static_cast<double>(w.cost_samples);
        range_n += w.cost_samples;
      }
      if (w.mark_cost_ns >= 0) {
        mark_sum += w.mark_cost_ns * static_cast<double>(w.cost_samples);
        mark_n += w.cost_samples;
      }
    }
    range_ = range_n >= kMinCostSamples ? range_sum / static_cast<double>(range_n) : -1;
    mark_ = mark_n >= kMinCostSamples ? mark_sum / static_cast<double>(mark_n) : -1;
  }
  bool by_probe_steps() const { return probe_steps_ != nullptr; }
  // The cost of an event starting at `at`, and whether it was timed in the run.
  std::pair<double, bool> cost(TimeNs at, bool range) const {
    auto it = std::upper_bound(windows_.begin(), windows_.end(), at,
                               [](TimeNs t, const ThreadLoadRecord& w) { return t < w.start; });
    if (it != windows_.begin() && at < std::prev(it)->end && std::prev(it)->cost_samples >= kMinCostSamples) {
      const double c = range ? std::prev(it)->range_cost_ns : std::prev(it)->mark_cost_ns;
      if (c >= 0) return {scaled(c, range), true};
    }
    const double c = range ? range_ : mark_;
    if (c >= 0) return {scaled(c, range), true};
    return {range ? fallback_.range_ns : fallback_.marker_ns, false};
  }

  double scaled(double timed, bool range) const {
    if (range && probe_steps_) return probe_steps_->range_cost(timed);
    return charged_cost(timed, range, fallback_);
  }

 private:
  std::span<const ThreadLoadRecord> windows_;
  OverheadCosts fallback_;
  const ThreadProbeSteps* probe_steps_;
  double range_ = -1, mark_ = -1;
};

// The thread loads of each track (Trace::thread_loads is sorted by track, then start), of the
// windows in which the thread recorded events: the tracer also writes the CPU time of windows
// without any (and of threads that never record), in which there is nothing to correct.
// `loads` keeps the rows the spans point into.
std::vector<std::span<const ThreadLoadRecord>> loads_by_track(const Trace& trace, std::vector<ThreadLoadRecord>& loads) {
  std::vector<std::span<const ThreadLoadRecord>> out(trace.tracks().size());
  loads.clear();
  std::copy_if(trace.thread_loads().begin(), trace.thread_loads().end(), std::back_inserter(loads),
               [](const ThreadLoadRecord& l) { return l.events > 0 || l.probe_events > 0; });
  for (std::size_t i = 0; i < loads.size();) {
    std::size_t j = i;
    while (j < loads.size() && loads[j].track == loads[i].track) ++j;
    if (loads[i].track < out.size()) out[loads[i].track] = std::span(loads).subspan(i, j - i);
    i = j;
  }
  return out;
}

// The time each thread waited for a core in each CPU task. A window of the thread's load says
// how long it waited in all; where in the window it waited it does not say. Waits for a core
// come as preemptions of a timeslice or more, which make the task they fall in far longer
// than it would be: so a window's wait is taken from its longest tasks first, down to the
// level at which the time above it equals the wait (as water fills from the top), not spread
// over every task, which would shorten the many that did not wait. Per task, in task order.
std::vector<double> runqueue_waits(const std::vector<std::span<const ThreadLoadRecord>>& loads,
                                   const DependencyGraph& graph) {
  std::vector<double> waited(graph.task_count(), 0.0);
  std::vector<std::pair<TimeNs, TaskId>> in_window; // (time inside the window, task)
  for (ResourceId r = 0; r < graph.resource_count() && r < loads.size(); ++r) {
    if (graph.is_stream(r) || loads[r].empty()) continue;
    TaskId first = graph.resource_first(r);
    TimeNs covered = std::numeric_limits<TimeNs>::min();
    for (const ThreadLoadRecord& win : loads[r]) {
      // The tracer's windows of a thread never overlap; a trace whose do is not taken at its
      // word (and would make this quadratic: every window over every task).
      if (win.start < covered) continue;
      covered = win.end;
      if (win.cpu_ns == kNoValue || win.runqueue_ns == kNoValue || win.runqueue_ns <= 0) continue;
      while (first < graph.resource_end(r) && graph.measured_end(first) <= win.start) ++first;
      in_window.clear();
      for (TaskId t = first; t < graph.resource_end(r) && graph.measured_start(t) < win.end; ++t) {
        if (!graph.uses_cpu(t) || graph.duration(t) <= 0) continue;
        const TimeNs inside = std::min({win.end, graph.measured_end(t)}) - std::max(win.start, graph.measured_start(t));
        if (inside > 0) in_window.emplace_back(std::min(inside, graph.duration(t)), t);
      }
      if (in_window.empty()) continue;
      std::sort(in_window.begin(), in_window.end(), std::greater<>());
      // The level L where the time above L over the longest tasks equals the wait.
      double wait = static_cast<double>(win.runqueue_ns), above = 0, level = 0;
      std::size_t k = 0;
      for (; k < in_window.size(); ++k) {
        const double next = k + 1 < in_window.size() ? static_cast<double>(in_window[k + 1].first) : 0.0;
        const double grow = (static_cast<double>(in_window[k].first) - next) * static_cast<double>(k + 1);
        if (above + grow >= wait) {
          level = static_cast<double>(in_window[k].first) - (wait - above) / static_cast<double>(k + 1);
          break;
        }
        above += grow;
      }
      for (std::size_t i = 0; i <= k && i < in_window.size(); ++i) {
        waited[in_window[i].second] += std::max(0.0, static_cast<double>(in_window[i].first) - level);
      }
    }
  }
  return waited;
}

// Takes the writer's share of the threads' waits for a core out of their CPU tasks: the
// writer ran `writer_cpu_ns` on the job's cores, so at most that much of the waiting was for
// it; the rest was for the job's other threads or other processes, and is there without the
// tracer too. Returns the time removed.
double remove_writer_share(const std::vector<double>& waited, double writer_cpu_ns, DependencyGraph& graph) {
  double total = 0;
  for (double w : waited) total += w;
  if (total <= 0 || writer_cpu_ns <= 0) return 0;
  const double share = std::min(1.0, writer_cpu_ns / total);
  double removed = 0;
  for (TaskId t = 0; t < graph.task_count(); ++t) {
    if (waited[t] <= 0) continue;
    const TimeNs duration = graph.duration(t);
    const TimeNs take = static_cast<TimeNs>(std::floor(std::min(share * waited[t], static_cast<double>(duration))));
    if (take <= 0) continue;
    // The CPU part of a task whose share was measured stays what it was.
    const double cpu = graph.cpu_share(t);
    if (cpu < 1.0) graph.set_cpu_share(t, std::min(1.0, cpu * static_cast<double>(duration) / static_cast<double>(duration - take)));
    graph.scale(t, graph.ratio(t), graph.add(t) - take);
    removed += static_cast<double>(take);
  }
  return removed;
}

// Charges the CPU tasks of `track` `per_ns` for each ns of theirs inside [start, end); returns
// what it charged.
double charge_overlap(const DependencyGraph& graph, ResourceId track, TimeNs start, TimeNs end, double per_ns,
                      std::vector<double>& charge) {
  const TaskId first = graph.resource_first(track), last = graph.resource_end(track);
  TaskId lo = first, hi = last; // first task that ends after `start`
  while (lo < hi) {
    const TaskId mid = lo + (hi - lo) / 2;
    if (graph.measured_end(mid) <= start) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  double charged = 0;
  for (TaskId t = lo; t < last && graph.measured_start(t) < end; ++t) {
    const TimeNs overlap = std::min(end, graph.measured_end(t)) - std::max(start, graph.measured_start(t));
    if (overlap <= 0) continue;
    charge[t] += per_ns * static_cast<double>(overlap);
    charged += per_ns * static_cast<double>(overlap);
  }
  return charged;
}

} // namespace

OverheadCorrection correct_overhead(const Trace& trace, DependencyGraph& graph, std::optional<OverheadCosts> costs) {
  OverheadCorrection out;
  out.costs = costs ? *costs : overhead_costs(trace.calibration());
  const std::size_t n = graph.task_count();
  std::vector<ThreadLoadRecord> recorded_loads;
  const auto loads = loads_by_track(trace, recorded_loads);
  // Charges in fractional nanoseconds: a 30.4 ns range cost must not round to 30 per range.
  std::vector<double> charge(n, 0.0);
  const auto& ann = trace.annotations();
  const std::optional<StringId> python_domain = trace.find_string("dreamscope.auto");
  double in_run_range_sum = 0;
  std::int64_t in_run_ranges = 0;
  for (TrackId track{0}; track < trace.tracks().size(); ++track) {
    const AnnotationRange rows = trace.annotations_on(track);
    // Costs passed in are what the user wants charged; otherwise the thread's own.
    std::optional<ThreadProbeSteps> probe_steps;
    if (!costs && !rows.empty() && graph.resource_count() > track && !graph.is_stream(track)) {
      probe_steps.emplace(trace, track, loads[track], out.costs.range_counted_ns);
      out.probe_steps += probe_steps->probes();
      out.probe_steps_measured += static_cast<std::int64_t>(probe_steps->measures().size());
    }
    const InRunCosts thread_costs(costs ? std::span<const ThreadLoadRecord>() : loads[track], out.costs,
                                  probe_steps ? &*probe_steps : nullptr);
    if (thread_costs.by_probe_steps()) ++out.threads_by_probe_steps;
    for (auto row = rows.begin; row < rows.end; ++row) {
      const TaskId t = graph.annotation_first(row);
      if (t == kNoTask) continue;
      const bool range = ann.end[row] > ann.start[row];
      if (ann.filled_from[row] != kNoValue) {
        // A range filled into a probe step was counted, not recorded: its calls are charged as
        // counted ones with their window. One from Python still paid its wrapper, all of
        // python_range but the recording a counted call skips.
        if (range && python_domain && ann.domain[row] == *python_domain && out.costs.python_range_ns > 0) {
          charge[t] += std::max(0.0, out.costs.python_range_ns - out.costs.range_ns);
        }
        continue;
      }
      const auto [cost, in_run] = thread_costs.cost(ann.start[row], range);
      const bool from_python = range && python_domain && ann.domain[row] == *python_domain;
      charge[t] += from_python && out.costs.python_range_ns > 0 ? out.costs.python_range_ns : cost;
      ++out.events_charged;
      if (in_run) {
        ++out.events_charged_in_run;
        if (range) {
          in_run_range_sum += cost;
          ++in_run_ranges;
        }
      }
    }
  }
  if (in_run_ranges > 0) out.in_run_range_ns = in_run_range_sum / static_cast<double>(in_run_ranges);
  // The calls a cost probe counted are in no row, but cost their thread what a counted call
  // does (start-up nvtx_range_counted, a range's worth per two calls): charged to the CPU tasks
  // of the probe's window, by how much of it each covers.
  if (!costs && out.costs.range_counted_ns > 0) {
    for (const auto& windows : loads) {
      for (const ThreadLoadRecord& w : windows) {
        if (w.probe_events <= 0 || w.end <= w.start || w.track >= graph.resource_count() || graph.is_stream(w.track)) continue;
        const double per_ns = out.costs.range_counted_ns / 2 * static_cast<double>(w.probe_events) /
                              static_cast<double>(w.end - w.start);
        out.counted_calls += w.probe_events;
        charge_overlap(graph, w.track, w.start, w.end, per_ns, charge);
      }
    }
  }
  const auto& api = trace.cuda_api();
  if (out.costs.cuda_api_ns > 0 || out.costs.cuda_launch_ns > 0) {
    const std::vector<std::uint8_t> launched_kernel =
        out.costs.cuda_launch_ns > 0 ? kernel_launching_calls(trace) : std::vector<std::uint8_t>{};
    for (CudaApiIndex row{0}; row < api.size(); ++row) {
      const TaskId t = graph.api_first(row);
      if (t == kNoTask) continue;
      const bool kernel_launch = !launched_kernel.empty() && launched_kernel[row] != 0;
      const double cost = kernel_launch ? out.costs.cuda_launch_ns : out.costs.cuda_api_ns;
      if (cost <= 0) continue;
      charge[t] += cost;
      ++out.events_charged;
      if (kernel_launch) ++out.launches_charged;
    }
  }
  // The profiler's own work on a thread (CUPTI buffer handling) is charged where it happened.
  const std::optional<StringId> writer_busy = trace.find_string(tracer_environment::kWriterBusy);
  for (const OverheadRecord& o : trace.overheads()) {
    if (o.track >= graph.resource_count() || graph.is_stream(o.track)) continue;
    if (o.kind == writer_busy) continue; // the writer's time beside the thread: below
    ++out.overhead_records;
    charge_overlap(graph, o.track, o.start, o.end, 1.0, charge);
  }
  // What the writer's busy spells slowed the threads that ran beside them: the slowed share of
  // each spell's time (writer_interference.h). Not with costs passed in: those say what to charge.
  if (!costs) {
    const WriterInterference writer = measure_writer_interference(trace);
    out.writer_spells = writer.spells;
    out.writer_spells_measured = writer.measured;
    out.writer_slowdown = writer.median_slowdown;
    double slowed = 0;
    for (const WriterSlowdown& w : writer.slowed) {
      if (w.track >= graph.resource_count() || graph.is_stream(w.track)) continue;
      slowed += charge_overlap(graph, w.track, w.start, w.end, w.slowdown / (1 + w.slowdown), charge);
    }
    out.writer_slowdown_charged_ns = static_cast<TimeNs>(slowed);
  }
  // Before the tracer's costs: a task's wait for a core is part of its measured time, not of
  // the work the costs are taken from.
  double runqueue_removed = 0;
  if (!recorded_loads.empty() && trace.tracer_writer_cpu_ns() != kNoValue) {
    runqueue_removed = remove_writer_share(runqueue_waits(loads, graph),
                                           static_cast<double>(trace.tracer_writer_cpu_ns()), graph);
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
  out.runqueue_removed_ns = saturated_ns(runqueue_removed);
  return out;
}

} // namespace dreamscope::whatif
