// `dreamscope info TRACE`: what a trace holds, for a person or (with --json) a script.
#include "commands.h"
#include "output.h"

#include <dreamscope/analyzers/duration_text.h>
#include <dreamscope/whatif/cost_probes.h>
#include <dreamscope/whatif/probe_steps.h>
#include <dreamscope/whatif/overhead_correction.h>
#include <dreamscope/storage/storage.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>

namespace dreamscope::cli {

using analyzers::format_duration;

namespace {

struct InfoOptions {
  std::vector<std::string> traces;
  bool json = false;
  std::string output;
  std::size_t top = 5;
};

std::string exit_status_text(std::int64_t status) {
  if (status == kNoValue) return "running or unknown";
  if (status > 128) return fmt::format("{} (killed by signal {})", status, status - 128);
  return std::to_string(status);
}

// "yes", or why not: the recording was cut short, or the import dropped events (how many, why).
std::string complete_text(const TraceSummary& s) {
  if (!s.closed_cleanly) return "NO: the tracer did not close this trace cleanly";
  if (s.import_events_dropped == 0) return "yes";
  std::string why;
  for (const auto& issue : s.import_issues) {
    if (issue.effect != ImportEffect::Dropped) continue;
    why += fmt::format("{}{} x {}", why.empty() ? "" : ", ", issue.count, issue.id);
  }
  return fmt::format("no: {} of {} events in the file dropped on import ({})", s.import_events_dropped,
                     s.import_events_read, why);
}

std::string render_text(const std::string& path, const TraceSummary& s, const whatif::ProbeSummary& probes,
                        const whatif::ProbeStepSummary& steps) {
  std::string out;
  auto line = [&](std::string_view key, const std::string& value) { out += fmt::format("{:<18}{}\n", key, value); };
  line("trace", path);
  line("source", s.source);
  if (!s.command.empty()) line("command", s.command);
  if (!s.host.empty()) line("host", s.host);
  if (!s.cpu_cores.empty()) line("cpu cores", s.cpu_cores);
  // Imported traces and tracer part logs were never a trace.db: no schema to name.
  if (!s.schema_version.empty()) line("schema", fmt::format("v{} (dreamscope {})", s.schema_version, s.dreamscope_version));
  line("complete", complete_text(s));
  // Said plainly, next to `complete`: a recording can be complete and hold nothing.
  if (!s.nothing_to_analyze.empty()) {
    line("analyzable", "NO: " + s.nothing_to_analyze +
                           "; analyze, replay, whatif, diff and export refuse it without --allow-empty");
  }
  line("time span", fmt::format("{} ({} .. {} ns)", format_duration(s.end - s.begin), s.begin, s.end));
  line("dropped events", std::to_string(s.dropped_events));
  if (s.tracer_writer_cpu_ns != kNoValue && s.end > s.begin) {
    line("tracer writer", fmt::format("{} of CPU ({:.1f} % of one core over the run)",
                                      format_duration(s.tracer_writer_cpu_ns),
                                      100.0 * static_cast<double>(s.tracer_writer_cpu_ns) /
                                          static_cast<double>(s.end - s.begin)));
  }
  if (s.recording_pauses > 0) {
    line("recording paused", fmt::format("{} time{} by the program, {} in all: what ran then is not in the trace",
                                         s.recording_pauses, s.recording_pauses == 1 ? "" : "s",
                                         format_duration(s.recording_paused_ns)));
  }
  if (s.range_timed_in_run_ns >= 0 || s.threads_runqueue_ns != kNoValue) {
    // Whether the run was in the state start-up calibration measured (docs/simulation.md,
    // "Telling the state of a traced run").
    std::string cost;
    if (s.range_timed_in_run_ns >= 0 && s.clock_read_ns > 0) {
      // The correction's own figure (per window there, on the run's mean here).
      const whatif::OverheadCosts start{.range_ns = std::max(0.0, s.range_cost_ns), .clock_read_ns = s.clock_read_ns};
      cost = fmt::format("range timed {:.1f} ns in the run, less {:.1f} ns for its own clock read: about {:.1f} ns "
                         "charged ({:.1f} ns back to back, {:.1f} ns timed at start-up)",
                         s.range_timed_in_run_ns, s.clock_read_ns, whatif::charged_cost(s.range_timed_in_run_ns, true, start),
                         s.range_cost_ns, s.range_timed_at_start_ns);
    } else if (s.range_timed_in_run_ns >= 0 && s.range_timed_at_start_ns > 0 && s.range_in_work_at_start_ns > 0) {
      cost = fmt::format("range timed {:.1f} ns in the run, {:.1f} ns at start-up ({:.2f}x; calibrated cost {:.1f} ns, "
                         "{:.1f} ns among work)",
                         s.range_timed_in_run_ns, s.range_timed_at_start_ns,
                         s.range_timed_in_run_ns / s.range_timed_at_start_ns, s.range_cost_ns,
                         s.range_in_work_at_start_ns);
    } else if (s.range_timed_in_run_ns >= 0 && s.range_timed_at_start_ns > 0) {
      cost = fmt::format("range timed {:.1f} ns in the run, {:.1f} ns at start-up ({:.2f}x; calibrated cost {:.1f} ns)",
                         s.range_timed_in_run_ns, s.range_timed_at_start_ns,
                         s.range_timed_in_run_ns / s.range_timed_at_start_ns, s.range_cost_ns);
    } else if (s.range_timed_in_run_ns >= 0) {
      cost = fmt::format("range timed {:.1f} ns in the run", s.range_timed_in_run_ns);
    }
    if (s.threads_runqueue_ns != kNoValue && s.threads_cpu_ns != kNoValue) {
      const double runnable = static_cast<double>(s.threads_cpu_ns + s.threads_runqueue_ns);
      cost += fmt::format("{}threads waited {} for a core ({:.1f} % of their runnable time)", cost.empty() ? "" : "; ",
                          format_duration(s.threads_runqueue_ns),
                          runnable > 0 ? 100.0 * static_cast<double>(s.threads_runqueue_ns) / runnable : 0.0);
    }
    line("tracer cost", cost);
  }
  if (steps.probes > 0) {
    // What overhead correction charges where probe steps measured (docs/simulation.md, "Probe steps").
    std::string text = fmt::format("{} of {} measured", steps.measured, steps.probes);
    if (steps.measured > 0) {
      text += fmt::format("; a recorded range cost {:.1f} ns where its calls timed {:.1f} ns (medians)", steps.cost_ns,
                          steps.timing_ns);
    }
    // Which state of the machine each window was in, by its calls' timing (probe_steps.h).
    auto state = [&](const char* name, const whatif::ProbeStepState& st) {
      if (st.windows == 0 && st.measured == 0) return;
      text += fmt::format("; {} state: {} window{}, {} probe step{} measured", name, st.windows,
                          st.windows == 1 ? "" : "s", st.measured, st.measured == 1 ? "" : "s");
      if (st.measured > 0) text += fmt::format(" (a range cost {:.1f} ns, timed {:.1f})", st.cost_ns, st.timing_ns);
    };
    state("fast", steps.fast);
    state("slow", steps.slow);
    if (steps.measured >= static_cast<std::int64_t>(whatif::ThreadProbeSteps::kMinMeasures)) {
      text += "; overhead correction charges each window's ranges their timing less what the probe steps nearest it "
              "found the timing over-reads (docs/simulation.md, \"Probe steps\")";
    } else {
      text += fmt::format("; under the {} a thread needs, so overhead correction charges the calls' in-run timing "
                          "(docs/simulation.md, \"Overhead correction\")",
                          whatif::ThreadProbeSteps::kMinMeasures);
    }
    // The ranges they counted, copied in from recorded neighbours (docs/tracing.md, "Probe steps").
    if (steps.filled_ranges > 0) {
      text += fmt::format("; the {} ranges they counted are filled in from recorded steps", steps.filled_ranges);
    }
    line("probe steps", text);
  } else if (probes.probes > 0) {
    // What overhead correction charges where the probes measured (docs/simulation.md, "Cost probes").
    std::string text = fmt::format("{} of {} measured", probes.measured, probes.probes);
    auto state = [&](const char* name, std::int64_t windows, double record_ns) {
      if (windows > 0 && record_ns >= 0) {
        text += fmt::format("; recording a call cost {:.1f} ns in the {} {} window{}", record_ns, windows, name,
                           windows == 1 ? "" : "s");
      }
    };
    state("fast", probes.fast_windows, probes.fast_record_ns);
    state("slow", probes.slow_windows, probes.slow_record_ns);
    text += "; not charged by overhead correction, which follows the calls' timing (docs/simulation.md, \"Cost probes\")";
    line("cost probes", text);
  }
  if (!s.warnings.empty()) line("warnings", s.warnings);
  if (s.ranks.ranks > 0) {
    std::string ranks = fmt::format("{}", s.ranks.ranks);
    if (s.ranks.world_size != kNoValue) ranks += fmt::format(" of world size {}", s.ranks.world_size);
    ranks += s.ranks.hosts == 0 ? std::string(", hosts not recorded")
                                : fmt::format(" on {} host{}", s.ranks.hosts, s.ranks.hosts == 1 ? "" : "s");
    if (s.ranks.clock_aligned > 0) {
      ranks += fmt::format("; clocks of {} aligned on their collectives (largest shift {:.3f} ms)",
                           s.ranks.clock_aligned, static_cast<double>(s.ranks.largest_clock_offset) / 1e6);
    }
    line("ranks", ranks);
  }
  if (!s.job_notes.empty()) {
    std::string notes = s.job_notes;
    std::replace(notes.begin(), notes.end(), '\n', ';');
    line("job", notes);
  }

  out += fmt::format("\nprocesses ({}{})\n", s.processes.size(),
                     s.processes_without_events ? fmt::format("; {} more without events, not listed",
                                                              s.processes_without_events)
                                                : "");
  for (const auto& p : s.processes) {
    std::string rank;
    if (p.rank != kNoValue) {
      rank = fmt::format("rank {}", p.rank);
      if (p.world_size != kNoValue) rank += fmt::format("/{}", p.world_size);
      if (p.local_rank != kNoValue) rank += fmt::format(" (local {})", p.local_rank);
      rank += "  ";
    }
    if (!p.host.empty()) rank += fmt::format("on {}  ", p.host);
    if (p.clock_offset != 0) rank += fmt::format("clock {:+.3f} ms  ", static_cast<double>(p.clock_offset) / 1e6);
    out += fmt::format("  pid {:<8} {}{}  exit {}\n", p.pid == kNoValue ? std::string("?") : std::to_string(p.pid),
                       rank, p.command.empty() ? p.name : p.command, exit_status_text(p.exit_status));
    // The CPU its threads used (thread_load rows), those that recorded no events apart: the
    // threads that work without recording (an OpenMP pool, PyTorch's autograd thread).
    std::int64_t cpu = 0, silent_cpu = 0;
    std::size_t busy = 0, silent = 0;
    for (const auto& t : p.threads) {
      if (t.cpu_ns == kNoValue || t.cpu_ns <= 0) continue;
      cpu += t.cpu_ns;
      ++busy;
      if (t.events == 0) {
        silent_cpu += t.cpu_ns;
        ++silent;
      }
    }
    if (busy > 0) {
      out += fmt::format("    cpu {} on {} thread{}{}\n", format_duration(cpu), busy, busy == 1 ? "" : "s",
                         silent == 0 ? std::string()
                                     : fmt::format(", {} of it on {} that recorded no events", format_duration(silent_cpu),
                                                   silent));
    }
    for (const auto& t : p.threads) {
      std::string load;
      if (t.cpu_ns != kNoValue) {
        load = fmt::format("  cpu {}", format_duration(t.cpu_ns));
        if (t.runqueue_ns != kNoValue && t.runqueue_ns > 0) {
          load += fmt::format(", waited {} for a core", format_duration(t.runqueue_ns));
        }
      }
      out += fmt::format("    thread {:<8} {:<24} {} events{}\n", t.tid, t.name.empty() ? "-" : t.name, t.events, load);
    }
  }
  out += fmt::format("\ndevices ({})\n", s.devices.size());
  for (const auto& d : s.devices) {
    out += fmt::format("  gpu {}  {}  sm_{}{}  {} SMs  {} MHz  {:.0f} GB/s  {:.1f} GiB\n", d.ordinal, d.name,
                       d.compute_capability_major, d.compute_capability_minor, d.sm_count, d.core_clock_khz / 1000,
                       static_cast<double>(d.memory_bandwidth_bytes_per_s) / 1e9,
                       static_cast<double>(d.global_memory_bytes) / (1024.0 * 1024 * 1024));
  }
  out += fmt::format("\nstreams ({})\n", s.streams.size());
  for (const auto& st : s.streams) {
    out += fmt::format("  gpu {} stream {:<6} {:<16} {} events\n", st.device_ordinal,
                       st.stream == kContextWideStream ? std::string("all")
                       : st.stream == kNoValue         ? std::string("none") // a device's stream-less row
                                                       : std::to_string(st.stream),
                       st.name.empty() ? "-" : st.name, st.events);
  }
  const auto& c = s.counts;
  out += "\nevents\n";
  auto count = [&](std::string_view what, std::size_t n) { out += fmt::format("  {:<16}{:>12}\n", what, n); };
  count("runtime API", c.runtime_api);
  count("driver API", c.driver_api);
  count("kernels", c.kernels);
  count("memcpy", c.memcpys);
  count("memset", c.memsets);
  count("sync", c.syncs);
  count("annotations", c.annotations);
  count("flows", c.flows);
  count("overhead", c.overheads);
  count("thread loads", c.thread_loads);
  count("memory events", c.memory_events);
  count("total", c.total());

  out += fmt::format("\ntop {} kernels by total time\n", s.top_kernels.size());
  if (s.top_kernels.empty()) out += "  (no kernels)\n";
  for (const auto& k : s.top_kernels) {
    out += fmt::format("  {:>12}  {:>8}x  {}\n", format_duration(k.total), k.count, k.name);
  }
  return out;
}

std::string render_json(const std::string& path, const TraceSummary& s, const whatif::ProbeSummary& probes,
                        const whatif::ProbeStepSummary& steps) {
  using nlohmann::json;
  auto opt = [](std::int64_t v) { return v == kNoValue ? json(nullptr) : json(v); };
  json j;
  j["trace"] = path;
  j["source"] = s.source;
  j["command"] = s.command;
  j["host"] = s.host;
  j["cpu_cores"] = s.cpu_cores.empty() ? json(nullptr) : json(std::stoll(s.cpu_cores));
  j["tracer_writer_cpu_ns"] = opt(s.tracer_writer_cpu_ns);
  j["recording_paused"] = {{"pauses", s.recording_pauses}, {"ns", s.recording_paused_ns}};
  auto cost = [](double v) { return v >= 0 ? json(v) : json(nullptr); };
  auto state_json = [&](const whatif::ProbeStepState& st) {
    return json{{"windows", st.windows}, {"measured", st.measured}, {"cost_ns", cost(st.cost_ns)},
                {"timing_ns", cost(st.timing_ns)}};
  };
  j["tracer_cost"] = {{"range_cost_ns", cost(s.range_cost_ns)},
                      {"range_timed_at_start_ns", cost(s.range_timed_at_start_ns)},
                      {"range_in_work_at_start_ns", cost(s.range_in_work_at_start_ns)},
                      {"range_timed_in_run_ns", cost(s.range_timed_in_run_ns)},
                      {"clock_read_ns", cost(s.clock_read_ns)},
                      {"threads_cpu_ns", opt(s.threads_cpu_ns)},
                      {"threads_runqueue_ns", opt(s.threads_runqueue_ns)},
                      {"cost_probes", {{"probes", probes.probes}, {"measured", probes.measured},
                                       {"fast_windows", probes.fast_windows}, {"slow_windows", probes.slow_windows},
                                       {"fast_record_ns", cost(probes.fast_record_ns)},
                                       {"slow_record_ns", cost(probes.slow_record_ns)}}},
                      {"probe_steps", {{"probes", steps.probes}, {"measured", steps.measured},
                                       {"cost_ns", cost(steps.cost_ns)}, {"timing_ns", cost(steps.timing_ns)},
                                       {"filled_ranges", steps.filled_ranges},
                                       {"fast_state", state_json(steps.fast)},
                                       {"slow_state", state_json(steps.slow)}}}};
  j["schema_version"] = s.schema_version;
  j["dreamscope_version"] = s.dreamscope_version;
  j["complete"] = s.complete;
  j["nothing_to_analyze"] = s.nothing_to_analyze.empty() ? json(nullptr) : json(s.nothing_to_analyze);
  j["import_events_read"] = s.import_events_read;
  j["import_events_dropped"] = s.import_events_dropped;
  j["import_issues"] = json::object();
  for (const auto& issue : s.import_issues) {
    j["import_issues"][issue.id] = {{"count", issue.count}, {"severity", to_string(issue.severity)},
                                    {"effect", to_string(issue.effect)}};
  }
  j["dropped_events"] = s.dropped_events;
  j["warnings"] = s.warnings;
  j["begin_ns"] = s.begin;
  j["end_ns"] = s.end;
  j["duration_ns"] = s.end - s.begin;
  j["processes_without_events"] = s.processes_without_events;
  j["job_notes"] = s.job_notes;
  j["ranks"] = {{"ranks", s.ranks.ranks},
                {"world_size", opt(s.ranks.world_size)},
                {"hosts", s.ranks.hosts},
                {"clock_aligned", s.ranks.clock_aligned},
                {"largest_clock_offset_ns", s.ranks.largest_clock_offset}};
  j["processes"] = json::array();
  for (const auto& p : s.processes) {
    json jp{{"pid", opt(p.pid)},     {"name", p.name},
            {"command", p.command},  {"exit_status", opt(p.exit_status)},
            {"rank", opt(p.rank)},   {"local_rank", opt(p.local_rank)},
            {"world_size", opt(p.world_size)}, {"host", p.host},
            {"clock_offset_ns", p.clock_offset}};
    jp["threads"] = json::array();
    for (const auto& t : p.threads) {
      jp["threads"].push_back({{"tid", t.tid}, {"name", t.name}, {"events", t.events}, {"cpu_ns", opt(t.cpu_ns)},
                               {"runqueue_ns", opt(t.runqueue_ns)}});
    }
    j["processes"].push_back(std::move(jp));
  }
  j["devices"] = json::array();
  for (const auto& d : s.devices) {
    j["devices"].push_back({{"ordinal", d.ordinal},
                            {"name", d.name},
                            {"sm_count", d.sm_count},
                            {"core_clock_khz", d.core_clock_khz},
                            {"memory_bandwidth_bytes_per_s", d.memory_bandwidth_bytes_per_s},
                            {"global_memory_bytes", d.global_memory_bytes},
                            {"compute_capability", fmt::format("{}.{}", d.compute_capability_major,
                                                               d.compute_capability_minor)}});
  }
  j["streams"] = json::array();
  for (const auto& st : s.streams) {
    j["streams"].push_back(
        {{"device", st.device_ordinal}, {"stream", opt(st.stream)}, {"name", st.name}, {"events", st.events}});
  }
  const auto& c = s.counts;
  j["events"] = {{"runtime_api", c.runtime_api}, {"driver_api", c.driver_api}, {"kernel", c.kernels},
                 {"memcpy", c.memcpys},          {"memset", c.memsets},         {"sync", c.syncs},
                 {"annotation", c.annotations},  {"flow", c.flows},             {"overhead", c.overheads},
                 {"thread_load", c.thread_loads}, {"memory_event", c.memory_events}, {"total", c.total()}};
  j["top_kernels"] = json::array();
  for (const auto& k : s.top_kernels) {
    j["top_kernels"].push_back({{"name", k.name}, {"count", k.count}, {"total_ns", k.total}});
  }
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

const CommandRegistration info_command(20, "info", [](CLI::App& app) -> CommandAction {
  auto opts = std::make_shared<InfoOptions>();
  auto* cmd = app.add_subcommand("info", "Summarize a trace: source, time span, processes, threads, devices, "
                                         "streams, event counts, top kernels, completeness");
  auto allow_empty = add_allow_empty_flag(cmd, RefuseEmpty::Imports);
  add_trace_inputs(cmd, opts->traces)->required();
  cmd->add_flag("--json", opts->json, "Print JSON instead of text");
  cmd->add_option("-o,--output", opts->output, "Write to this file instead of stdout");
  cmd->add_option("--top", opts->top, "How many kernels to list")->capture_default_str();
  cmd->footer(
      "Example:\n  dreamscope info trace.db\n  dreamscope info --json trace.db > info.json\n"
      "  dreamscope info traces/              # a job: one trace per rank in the folder");
  return [opts, allow_empty] {
    Trace trace = open_job(opts->traces, *allow_empty, RefuseEmpty::Imports);
    TraceSummary s = summarize(trace, opts->top);
    const std::string label = inputs_label(opts->traces);
    const whatif::ProbeSummary probes = whatif::summarize_probes(trace);
    const whatif::ProbeStepSummary steps = whatif::summarize_probe_steps(trace);
    write_output(opts->output, opts->json ? render_json(label, s, probes, steps) : render_text(label, s, probes, steps));
    return kExitOk;
  };
});

} // namespace
} // namespace dreamscope::cli
