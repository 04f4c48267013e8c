// `dreamscope replay TRACE`: rebuild the run's dependency graph, replay it, and compare the
// replay with the measurement per step and overall. The unmodified replay checks that the
// graph explains the trace (the baseline every what-if stands on); --correct-overhead
// predicts the run without the tracer instead.
#include "commands.h"
#include "output.h"

#include <dreamscope/analyzers/duration_text.h>
#include <dreamscope/analyzers/report.h>
#include <dreamscope/analyzers/run_json.h>
#include <dreamscope/storage/importers.h>
#include <dreamscope/storage/storage.h>
#include <dreamscope/whatif/whatif.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <memory>

namespace dreamscope::cli {

using analyzers::format_duration;

namespace {

struct ReplayCommandOptions {
  std::vector<std::string> traces;
  std::string predicted;
  std::string output;
  std::string format = "text";
  bool correct_overhead = false;
  std::vector<std::string> costs; // KIND=NS, replacing the trace's calibration row of that kind
  std::size_t max_steps = 50;
  bool all_steps = false;
};

// The trace's calibration rows with --cost overrides on top (as if that many samples).
whatif::OverheadCosts costs_for(const Trace& trace, const std::vector<std::string>& overrides) {
  std::vector<CalibrationRecord> rows = trace.calibration();
  for (const auto& o : overrides) {
    const auto eq = o.find('=');
    double ns = 0;
    try {
      if (eq == std::string::npos) throw std::invalid_argument(o);
      std::size_t used = 0;
      ns = std::stod(o.substr(eq + 1), &used);
      if (used != o.size() - eq - 1 || ns < 0) throw std::invalid_argument(o);
    } catch (const std::exception&) {
      throw std::invalid_argument("--cost: expected KIND=NANOSECONDS (e.g. nvtx_range=18.5), got '" + o + "'");
    }
    const std::string kind = o.substr(0, eq);
    if (kind != "nvtx_range" && kind != "nvtx_mark" && kind != "cuda_api" && kind != "cuda_launch") {
      throw std::invalid_argument("--cost: unknown event kind '" + kind +
                                  "' (nvtx_range, nvtx_mark, cuda_api, cuda_launch)");
    }
    std::erase_if(rows, [&](const CalibrationRecord& r) { return r.event_kind == kind; });
    rows.push_back({kind, ns, 1, "--cost"});
  }
  return whatif::overhead_costs(rows);
}

bool has_kernels(const Trace& trace) {
  const auto& kinds = trace.gpu_ops().kind;
  return std::find(kinds.begin(), kinds.end(), GpuOpKind::Kernel) != kinds.end();
}

std::string error_percent(double error) { return fmt::format("{:+.3f} %", 100 * error); }

std::string render_text(const ReplayCommandOptions& o, const Trace& trace, const whatif::ReplayReport& r) {
  std::string out;
  auto line = [&](std::string_view key, const std::string& value) { out += fmt::format("{:<14}{}\n", key, value); };
  line("trace", fmt::format("{} ({})", inputs_label(o.traces), to_string(trace.source())));
  const double seconds = r.build_seconds + r.simulate_seconds;
  line("graph", fmt::format("{} tasks, {} edges, {} syncs; built in {:.1f} ms, replayed in {:.1f} ms ({:.1f} M tasks/s)",
                            r.tasks, r.edges, r.sync_actions, 1e3 * r.build_seconds, 1e3 * r.simulate_seconds,
                            seconds > 0 ? static_cast<double>(r.tasks) / seconds / 1e6 : 0.0));
  if (r.correction) {
    const auto& c = *r.correction;
    if (c.costs.empty() && c.overhead_records == 0 && c.events_charged_in_run == 0 &&
        c.runqueue_removed_ns == 0) {
      line("overhead", "the trace has no calibration rows, thread loads or overhead records: nothing to remove");
    } else {
      line("overhead", fmt::format("removed {} ({} events, {} overhead records; {} hidden by waits)",
                                   format_duration(c.removed_ns), c.events_charged, c.overhead_records,
                                   format_duration(c.unabsorbed_ns)));
      if (c.events_charged_in_run > 0) {
        line("costs", fmt::format("{} events at their thread's cost timed in the run (a range {:.1f} ns on average); "
                                  "{} at start-up calibration (range {:.1f} ns, marker {:.1f} ns, API call {:.1f} ns)",
                                  c.events_charged_in_run, c.in_run_range_ns, c.events_charged - c.events_charged_in_run,
                                  c.costs.range_ns, c.costs.marker_ns, c.costs.cuda_api_ns));
      } else {
        line("costs", fmt::format("start-up calibration: range {:.1f} ns, marker {:.1f} ns, API call {:.1f} ns (the trace "
                                  "has no costs timed in the run)",
                                  c.costs.range_ns, c.costs.marker_ns, c.costs.cuda_api_ns));
      }
      if (c.launches_charged > 0) {
        line("launches", fmt::format("{} kernel launch calls charged {:.1f} ns each, CUPTI's instrumentation of the "
                                     "launch included (cuda_launch, from dreamscope calibrate)",
                                     c.launches_charged, c.costs.cuda_launch_ns));
      } else if (c.costs.cuda_launch_ns <= 0 && has_kernels(trace)) {
        line("launches", "the trace has no cuda_launch cost: what recording adds to each kernel launch beyond an API "
                         "call is not charged (`dreamscope calibrate --apply TRACE` on the machine that recorded it)");
      }
      if (c.counted_calls > 0) {
        line("probes", fmt::format("{} calls the tracer's cost probes counted and did not record, charged {:.1f} ns "
                                   "each (a counted call, back to back at start-up)",
                                   c.counted_calls, c.costs.range_counted_ns / 2));
      }
      if (c.probe_steps > 0) {
        line("probe steps", fmt::format("{} of the tracer's {} probe steps measured; the ranges of {} thread(s) charged "
                                        "their window's timing less what the probe steps nearest it found the timing "
                                        "reads above a range's cost in wall time (docs/simulation.md, \"Probe steps\"){}",
                                        c.probe_steps_measured, c.probe_steps, c.threads_by_probe_steps,
                                        c.threads_by_probe_steps == 0 ? "; none had the 3 that measured it takes" : ""));
      }
      if (c.costs.python_range_ns > 0) {
        line("python", fmt::format("each range recorded from Python (dreamscope.auto) charged {:.1f} ns: what a "
                                   "recorded module call cost over a plain one, as the traced process measured it "
                                   "at start",
                                   c.costs.python_range_ns));
      }
    }
    // The writer's CPU: removed where the job's threads waited for a core while it ran (thread
    // loads); what it cost the job otherwise (a core shared with it, caches) stays, said with
    // its size.
    const std::int64_t writer = trace.tracer_writer_cpu_ns();
    if (writer != kNoValue && writer > 0 && r.measured_span() > 0) {
      const std::string cores = trace.cpu_cores() > 0 ? std::to_string(trace.cpu_cores()) : std::string();
      line("writer", fmt::format("the tracer's writer thread used {} of CPU, {:.1f} % of one core over the run{}; {}",
                                 format_duration(writer),
                                 100.0 * static_cast<double>(writer) / static_cast<double>(r.measured_span()),
                                 cores.empty() ? "" : fmt::format(", on {} cores", cores),
                                 trace.thread_loads().empty()
                                     ? "the trace has no thread loads, so what that took from the job is not removed"
                                     : fmt::format("the job's threads waited {} for a core while it ran: removed",
                                                   format_duration(c.runqueue_removed_ns))));
      if (c.writer_spells > 0) {
        line("writer spells",
             c.writer_spells_measured == 0
                 ? fmt::format("the threads recorded beside {} of its busy spells; too few events in and out of them "
                               "to measure how much they slowed the threads, so nothing is removed for them",
                               c.writer_spells)
                 : fmt::format("the threads recorded beside {} of its busy spells; {} measured, in which the threads "
                               "ran {:+.1f} % slower (median): removed {} (docs/simulation.md, \"The writer's drains\")",
                               c.writer_spells, c.writer_spells_measured, 100 * c.writer_slowdown,
                               format_duration(c.writer_slowdown_charged_ns)));
      }
    }
  }
  if (trace.dropped_events() > 0) {
    line("dropped", fmt::format("{} events the tracer lost are not in the graph: their time shows as CPU work, "
                                "and their overhead is not corrected",
                                trace.dropped_events()));
  }
  if (r.warnings.total() > 0) line("warnings", r.warnings.describe());
  if (r.unscheduled > 0) line("unscheduled", fmt::format("{} tasks never ran (a cycle)", r.unscheduled));
  const char* predicted = r.correction ? "untraced" : "replayed";
  out += fmt::format("\n{:<28}{:>14}{:>14}{:>12}\n", "step", "measured", predicted, "error");
  const std::vector<std::size_t> rows = analyzers::listed_replay_steps(r, {o.max_steps, o.all_steps}, false);
  for (std::size_t i : rows) {
    const auto& s = r.steps[i];
    out += fmt::format("{:<28}{:>14}{:>14}{:>12}\n", s.name.substr(0, 27), format_duration(s.measured()),
                       format_duration(s.predicted()), error_percent(s.error()));
  }
  if (rows.size() < r.steps.size()) out += analyzers::listed_steps_note(rows.size(), r.steps.size()) + "\n";
  if (r.steps.empty()) out += "(no step annotations or ProfilerStep ranges)\n";
  if (!r.steps.empty()) {
    double worst = 0, sum_measured = 0, sum_predicted = 0;
    for (const auto& s : r.steps) {
      worst = std::max(worst, std::abs(s.error()));
      sum_measured += static_cast<double>(s.measured());
      sum_predicted += static_cast<double>(s.predicted());
    }
    const double n = static_cast<double>(r.steps.size());
    out += fmt::format("{:<28}{:>14}{:>14}{:>12}\n", "mean step", format_duration(static_cast<TimeNs>(sum_measured / n)),
                       format_duration(static_cast<TimeNs>(sum_predicted / n)),
                       error_percent(sum_measured > 0 ? (sum_predicted - sum_measured) / sum_measured : 0));
    out += fmt::format("{:<28}{:>40}\n", "worst step error", fmt::format("{:.3f} %", 100 * worst));
  }
  out += fmt::format("{:<28}{:>14}{:>14}{:>12}\n", "run", format_duration(r.measured_span()),
                     format_duration(r.predicted_span()), error_percent(r.error()));
  if (!o.predicted.empty()) out += fmt::format("\npredicted trace written to {}\n", o.predicted);
  return out;
}

std::string render_json(const ReplayCommandOptions& o, const Trace& trace, const whatif::ReplayReport& r) {
  return analyzers::replay_json(trace, r, inputs_label(o.traces), {o.max_steps, o.all_steps}, o.predicted);
}

const CommandRegistration replay_command(60, "replay", [](CLI::App& app) -> CommandAction {
  auto opts = std::make_shared<ReplayCommandOptions>();
  auto* cmd = app.add_subcommand("replay", "Replay a trace's dependency graph: measured and replayed time per step "
                                           "and overall, and the error; optionally without the tracer's overhead");
  auto allow_empty = add_allow_empty_flag(cmd);
  add_trace_inputs(cmd, opts->traces)->required();
  cmd->add_option("-o,--predicted", opts->predicted, "Write the predicted run as a trace.db here");
  cmd->add_flag("--correct-overhead", opts->correct_overhead,
                "Remove the tracer's own cost (calibration rows, overhead records) before replaying: "
                "predicts the untraced run");
  cmd->add_option("--cost", opts->costs,
                  "KIND=NS: the cost of one recorded event of a kind (nvtx_range, nvtx_mark, cuda_api, cuda_launch), "
                  "instead of the trace's calibration, e.g. from `dreamscope calibrate`; implies --correct-overhead");
  cmd->add_option("--format", opts->format, "text or json")->check(CLI::IsMember({"text", "json"}))->capture_default_str();
  cmd->add_option("--report", opts->output, "Write the report to this file instead of stdout");
  cmd->add_option("--max-steps", opts->max_steps,
                  fmt::format("Steps listed in the text report (in JSON: this or {}, whichever is more): the first, "
                              "the slowest and those around the median measured duration, with a note of how many "
                              "were left out; the mean step and the worst error are over every step",
                              analyzers::kJsonStepRows))
      ->capture_default_str();
  cmd->add_flag("--all-steps", opts->all_steps, "List every step, in text and in JSON");
  cmd->footer("Examples:\n"
              "  dreamscope replay trace.db\n"
              "  dreamscope replay trace.db --correct-overhead -o untraced.db\n"
              "  dreamscope replay trace.db --cost nvtx_range=18 --cost cuda_api=250\n"
              "  dreamscope replay rank0.pt.trace.json.gz --format json\n"
              "Exit codes: 0 ok, 1 unreadable trace, a trace with nothing to replay (no events, an import that\n"
              "kept nothing; --allow-empty goes on) or unwritable output, 2 bad command line.");
  return [opts, allow_empty] {
    const Trace trace = open_job(opts->traces, *allow_empty);
    whatif::ReplayOptions ro;
    ro.correct_overhead = opts->correct_overhead || !opts->costs.empty();
    if (!opts->costs.empty()) {
      try {
        ro.costs = costs_for(trace, opts->costs);
      } catch (const std::invalid_argument& e) {
        std::fprintf(stderr, "dreamscope replay: %s\n", e.what());
        return kExitUsage;
      }
    }
    ro.make_trace = !opts->predicted.empty();
    const whatif::ReplayReport report = whatif::replay(trace, ro);
    if (report.predicted) write_trace(*report.predicted, opts->predicted);
    write_output(opts->output, opts->format == "json" ? render_json(*opts, trace, report)
                                                      : render_text(*opts, trace, report));
    return kExitOk;
  };
});

} // namespace
} // namespace dreamscope::cli
