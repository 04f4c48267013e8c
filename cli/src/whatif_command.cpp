// `dreamscope whatif TRACE -s SCENARIO ...`: predict what an optimization would buy from one
// trace, for a person (text), a CI job summary (md) or a script (json), with gates that fail
// the job when a prediction falls short.
#include "commands.h"
#include "output.h"

#include <dreamscope/analyzers/duration_text.h>
#include <dreamscope/analyzers/run_json.h>
#include <dreamscope/storage/importers.h>
#include <dreamscope/storage/limits.h>
#include <dreamscope/storage/storage.h>
#include <dreamscope/whatif/whatif_engine.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>

namespace dreamscope::cli {

using analyzers::format_duration;

namespace {

struct WhatIfCommandOptions {
  std::vector<std::string> traces;
  std::vector<std::string> scenarios;
  std::vector<std::string> parameters;
  // For each -p, the index of the -s given last before it (-1: none), from the parse order.
  std::vector<int> parameter_after;
  std::string format = "text";
  std::string predicted;
  std::string output;
  std::vector<std::string> gates;
  bool list = false;
  bool no_data_stalls = false;
  bool correct_overhead = false;
  bool force = false;
  std::int64_t rank = kNoValue; // --rank: every scenario applied to this rank only
};

using whatif::Prediction;
using whatif::WhatIfReport;

std::string ms(double ns) { return format_duration(static_cast<TimeNs>(ns)); }
std::string percent(double fraction) { return fmt::format("{:+.1f} %", 100 * fraction); }
std::string times(double speedup) {
  return std::isfinite(speedup) ? fmt::format("{:.3f}×", speedup) : std::string("undefined");
}

std::string where(const whatif::SourcePosition& p) {
  return p.line > 0 ? fmt::format("{}:{}", p.file, p.line) : p.file;
}

std::string effect_text(const whatif::TransformEffect& e) {
  std::string s = fmt::format("{} tasks", e.tasks);
  if (e.time_before != 0 || e.time_after != 0) {
    s += fmt::format(", {} → {}", format_duration(e.time_before), format_duration(e.time_after));
  }
  if (!e.detail.empty()) s += fmt::format(" ({})", e.detail);
  return s;
}

// "-p workers=8" goes to the nearest -s before it that declares `workers`, or, given before
// any such -s, to every scenario declaring it; "-p data.workers=8" to every scenario named
// data. So `-s data -p storage=2 -s data -p synthetic=true` asks two questions.
std::vector<whatif::ScenarioRequest> requests_from(const WhatIfCommandOptions& o) {
  std::vector<whatif::ScenarioRequest> requests;
  for (const auto& name : o.scenarios) {
    whatif::ScenarioRequest r{whatif::find_scenario(name), {}, std::nullopt};
    if (o.rank != kNoValue) r.rank = o.rank;
    requests.push_back(std::move(r));
  }
  auto declares = [](const whatif::Scenario& s, const std::string& key) {
    const auto& params = s.parameters();
    return std::any_of(params.begin(), params.end(), [&](const auto& q) { return q.name == key; });
  };
  for (std::size_t i = 0; i < o.parameters.size(); ++i) {
    const std::string& p = o.parameters[i];
    const auto eq = p.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw std::invalid_argument(fmt::format("-p '{}': expected NAME=VALUE or SCENARIO.NAME=VALUE", p));
    }
    std::string key = p.substr(0, eq);
    const std::string value = p.substr(eq + 1);
    std::string scenario;
    if (const auto dot = key.find('.'); dot != std::string::npos) {
      scenario = key.substr(0, dot);
      key = key.substr(dot + 1);
    }
    bool used = false;
    if (scenario.empty()) {
      const int after = i < o.parameter_after.size() ? o.parameter_after[i] : -1;
      for (int k = std::min<int>(after, static_cast<int>(requests.size()) - 1); k >= 0 && !used; --k) {
        if (declares(requests[static_cast<std::size_t>(k)].scenario, key)) {
          requests[static_cast<std::size_t>(k)].overrides[key] = value;
          used = true;
        }
      }
      if (!used) {
        for (auto& r : requests) {
          if (declares(r.scenario, key)) {
            r.overrides[key] = value;
            used = true;
          }
        }
      }
    } else {
      for (auto& r : requests) {
        if (r.scenario.name() != scenario) continue;
        r.overrides[key] = value; // an undeclared SCENARIO.NAME is reported by the scenario itself
        used = true;
      }
    }
    if (!used) {
      throw std::invalid_argument(fmt::format("-p {}: no chosen scenario has a parameter '{}' (see --list)", p, key));
    }
  }
  return requests;
}

// A scenario whose selectors matched nothing predicts the baseline; say so rather than let a
// speedup of 1.000× read as a finding.
std::string render_list() {
  std::string out = "Built-in scenarios (dreamscope whatif TRACE -s NAME [-p PARAM=VALUE]):\n";
  const auto builtins = whatif::builtin_scenarios();
  if (builtins.empty()) out += "  none: this build did not embed whatif/scenarios\n";
  for (const auto& b : builtins) {
    const auto s = whatif::find_scenario(std::string(b.name));
    out += fmt::format("\n  {}\n    {}\n", s.name(), s.description());
    for (const auto& p : s.parameters()) {
      const std::string assignment = fmt::format("{}={}", p.name, whatif::to_string(p.default_value));
      out += assignment.size() <= 28 ? fmt::format("    -p {:<28} {}\n", assignment, p.help)
                                     : fmt::format("    -p {}\n       {:<28} {}\n", assignment, "", p.help);
    }
  }
  out += "\nA scenario can also be a TOML file of your own: see docs/whatif.md.\n";
  return out;
}

std::string render_text(const WhatIfCommandOptions& o, const WhatIfReport& r) {
  std::string out;
  auto line = [&](std::string_view key, const std::string& value) { out += fmt::format("{:<16}{}\n", key, value); };
  line("trace", fmt::format("{} ({} tasks, {} steps)", inputs_label(o.traces), r.tasks, r.step_count));
  if (r.correction) {
    line("overhead", fmt::format("the tracer's cost taken out first: {} removed from CPU tasks, {} events charged",
                                 format_duration(r.correction->removed_ns), r.correction->events_charged));
  }
  line("step (median)", fmt::format("measured {}, {} {} ({})", ms(r.measured_step_median),
                                    r.correction ? "untraced (predicted)" : "replayed", ms(r.replayed_step_median),
                                    percent(r.measured_step_median > 0
                                                ? r.replayed_step_median / r.measured_step_median - 1
                                                : 0)));
  out += fmt::format("\n{:<36}{:>16}{:>12}\n", "scenario", "predicted step", "speedup");
  for (const auto& p : r.predictions) {
    out += fmt::format("{:<36} {:>15}{:>12}\n", p.label, ms(p.step_median), times(p.speedup));
  }
  for (const auto& p : r.predictions) {
    out += fmt::format("\n{}\n", p.label);
    for (const auto& e : p.effects) out += fmt::format("  {:<14}{:<34} {}\n", e.op, where(e.where), effect_text(e));
    if (analyzers::matched_nothing(p)) out += "  NOTE: no task of this trace matched the scenario's selectors\n";
    if (p.unscheduled > 0) out += fmt::format("  WARNING: {} tasks never ran (the edits made a cycle)\n", p.unscheduled);
    out += "  critical path of the median step:\n";
    for (const auto& c : p.critical_path) out += fmt::format("    {:>12}  {}\n", format_duration(c.time), c.what);
  }
  out += "\ncritical path of the median step as traced:\n";
  for (const auto& c : r.baseline_critical_path) out += fmt::format("    {:>12}  {}\n", format_duration(c.time), c.what);
  if (r.data_stalls) {
    const auto& d = *r.data_stalls;
    out += fmt::format("\ndata stalls (DS-Analyzer, from three simulations; {})\n", d.basis_text());
    line("  as traced", ms(d.traced_step));
    line("  cached fetch", ms(d.cached_step));
    line("  no loading", ms(d.synthetic_step));
    line("  fetch stall", ms(d.fetch_stall()));
    line("  prep stall", ms(d.prep_stall()));
  }
  if (!o.predicted.empty()) out += fmt::format("\npredicted trace ({}) written to {}\n", r.predictions.back().label,
                                               o.predicted);
  return out;
}

std::string md_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '<') {
      out += "&lt;";
    } else if (c == '>') {
      out += "&gt;";
    } else {
      if (c == '|' || c == '`' || c == '*' || c == '_') out += '\\';
      out += c;
    }
  }
  return out;
}

std::string render_markdown(const WhatIfCommandOptions& o, const WhatIfReport& r) {
  std::string out = fmt::format("## dreamscope what-if: `{}`\n\n", inputs_label(o.traces));
  out += fmt::format("Measured median step **{}**, replayed {} ({}), {} steps, {} tasks.\n\n",
                     ms(r.measured_step_median), ms(r.replayed_step_median),
                     percent(r.measured_step_median > 0 ? r.replayed_step_median / r.measured_step_median - 1 : 0),
                     r.step_count, r.tasks);
  if (r.correction) {
    out += fmt::format("The tracer's cost was taken out first ({} removed): \"replayed\" is the untraced run as "
                       "predicted, and every speedup is against it.\n\n",
                       format_duration(r.correction->removed_ns));
  }
  out += "| scenario | predicted step | speedup |\n|---|---:|---:|\n";
  for (const auto& p : r.predictions) {
    out += fmt::format("| {} | {} | **{}** |\n", md_escape(p.label), ms(p.step_median), times(p.speedup));
  }
  for (const auto& p : r.predictions) {
    out += fmt::format("\n<details><summary>{}: what changed</summary>\n\n", md_escape(p.label));
    if (analyzers::matched_nothing(p)) out += "No task of this trace matched the scenario's selectors.\n\n";
    out += "| transform | where | effect |\n|---|---|---|\n";
    for (const auto& e : p.effects) {
      out += fmt::format("| {} | {} | {} |\n", e.op, md_escape(where(e.where)), md_escape(effect_text(e)));
    }
    out += "\n| critical path of the median step | time |\n|---|---:|\n";
    for (const auto& c : p.critical_path) out += fmt::format("| {} | {} |\n", md_escape(c.what), format_duration(c.time));
    out += "\n</details>\n";
  }
  if (r.data_stalls) {
    const auto& d = *r.data_stalls;
    out += fmt::format("\n**Data stalls** (DS-Analyzer's differential method, {}): ", d.basis_text());
    out += fmt::format("fetch stall {}, prep stall {} (as traced {}, cached fetch {}, no loading {}).\n",
                       ms(d.fetch_stall()), ms(d.prep_stall()), ms(d.traced_step), ms(d.cached_step),
                       ms(d.synthetic_step));
  }
  return out;
}

std::string render_json(const WhatIfCommandOptions& o, const WhatIfReport& r) {
  return analyzers::whatif_json(r, inputs_label(o.traces), o.predicted);
}

// Gates are checked against placeholder values before the simulations run, so that a
// misspelt name fails at once.
void check_gates(const std::vector<std::string>& gates, const std::vector<whatif::ScenarioRequest>& requests) {
  whatif::ExpressionValues placeholders;
  for (const char* name : {"speedup", "predicted_step_ms", "measured_step_ms", "replayed_step_ms", "fetch_stall_ms",
                           "prep_stall_ms"}) {
    placeholders[name] = 1.0;
  }
  for (const auto& r : requests) {
    std::string n = r.scenario.name();
    std::replace(n.begin(), n.end(), '-', '_');
    placeholders[n + ".speedup"] = 1.0;
    placeholders[n + ".predicted_step_ms"] = 1.0;
  }
  for (const auto& gate : gates) {
    whatif::ParameterValue value;
    try {
      value = whatif::evaluate_expression(gate, placeholders);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(fmt::format("--fail-if: {}", e.what()));
    }
    if (!std::holds_alternative<bool>(value)) {
      throw std::invalid_argument(
          fmt::format("--fail-if {} is not a condition (e.g. 'speedup < 1.10')", limits::quoted(gate, 60)));
    }
  }
}

const CommandRegistration whatif_command(70, "whatif", [](CLI::App& app) -> CommandAction {
  auto opts = std::make_shared<WhatIfCommandOptions>();
  auto* cmd = app.add_subcommand("whatif", "Predict what optimizations would buy from one trace: step time and "
                                           "speedup per scenario and combined, what changed on the critical path, "
                                           "and the data-stall breakdown");
  auto allow_empty = add_allow_empty_flag(cmd);
  add_trace_inputs(cmd, opts->traces);
  auto* scenario_option =
      cmd->add_option("-s,--scenario", opts->scenarios, "A built-in scenario (see --list) or a scenario TOML file; "
                                                        "repeat to combine")
          ->allow_extra_args(false);
  auto* parameter_option =
      cmd->add_option("-p,--param", opts->parameters, "Override a parameter: NAME=VALUE (the nearest -s before it "
                                                      "that declares NAME, else every one) or SCENARIO.NAME=VALUE")
          ->allow_extra_args(false);
  cmd->add_option("--format", opts->format, "text, md (a CI job summary) or json")
      ->check(CLI::IsMember({"text", "md", "json"}))
      ->capture_default_str();
  cmd->add_option("-o,--predicted", opts->predicted, "Write the last prediction (the combination) as a trace.db");
  cmd->add_flag("-f,--force", opts->force, "Replace the -o trace if it exists");
  cmd->add_option("--report", opts->output, "Write the report to this file instead of stdout");
  cmd->add_option("--fail-if", opts->gates, "Exit with 3 when this condition holds, e.g. 'speedup < 1.10'; names: "
                                            "speedup, predicted_step_ms, measured_step_ms, replayed_step_ms, "
                                            "fetch_stall_ms, prep_stall_ms, SCENARIO.speedup");
  cmd->add_option("--rank", opts->rank,
                  "In a trace of several ranks, apply every scenario to this rank only (by default to all of them); "
                  "with -s straggler, the rank to bring to the others' median")
      ->check(CLI::Range(std::int64_t{0}, limits::kMaxWorldSize - 1));
  cmd->add_flag("--list", opts->list, "List the built-in scenarios and their parameters");
  cmd->add_flag("--no-data-stalls", opts->no_data_stalls, "Skip the three data-stall simulations");
  cmd->add_flag("--correct-overhead", opts->correct_overhead,
                "Take the tracer's own cost out of the baseline first (as `replay --correct-overhead`): predict "
                "from the untraced run, and compare with it");
  cmd->footer("Examples:\n"
              "  dreamscope whatif --list\n"
              "  dreamscope whatif trace.db -s amp -s fused-optimizer\n"
              "  dreamscope whatif trace.db -s gpu -p device=H100 --format md >> $GITHUB_STEP_SUMMARY\n"
              "  dreamscope whatif trace.db -s data -p storage=2 --fail-if 'speedup < 1.10'\n"
              "  dreamscope whatif traces/ -s straggler            # a job, one trace per rank: without its straggler\n"
              "  dreamscope whatif job.db -s amp --rank 3           # mixed precision on rank 3 alone\n"
              "  dreamscope whatif trace.db -s amp --correct-overhead  # from the run without the tracer\n"
              "Exit codes: 0 ok, 1 unreadable trace, a trace with nothing to analyze (no events, an import that\n"
              "kept nothing; --allow-empty goes on), bad scenario or unwritable output, 2 bad command line,\n"
              "3 a --fail-if condition held (the report is still written).");
  return [opts, cmd, scenario_option, parameter_option, allow_empty]() -> int {
    int scenarios_seen = 0;
    opts->parameter_after.clear();
    for (const CLI::Option* option : cmd->parse_order()) {
      if (option == scenario_option) ++scenarios_seen;
      if (option == parameter_option) opts->parameter_after.push_back(scenarios_seen - 1);
    }
    if (opts->list) {
      write_output(opts->output, render_list());
      return kExitOk;
    }
    if (opts->traces.empty() || opts->scenarios.empty()) {
      std::fprintf(stderr, "dreamscope whatif: needs a TRACE and at least one -s SCENARIO (or --list)\n");
      return kExitUsage;
    }
    if (!opts->predicted.empty()) check_trace_output(opts->predicted, opts->force);
    // Scenarios first: a typo in one should not wait for a large trace to load.
    const auto requests = requests_from(*opts);
    for (const auto& r : requests) (void)r.scenario.instantiate(r.overrides);
    check_gates(opts->gates, requests);
    const Trace trace = open_job(opts->traces, *allow_empty);
    whatif::WhatIfOptions wo;
    wo.make_trace = !opts->predicted.empty();
    wo.data_stalls = !opts->no_data_stalls;
    wo.correct_overhead = opts->correct_overhead;
    WhatIfReport report = whatif::run_whatif(trace, requests, wo);
    if (wo.make_trace && report.predictions.back().predicted) {
      write_trace(*report.predictions.back().predicted, opts->predicted);
    }
    const std::string text = opts->format == "json" ? render_json(*opts, report)
                             : opts->format == "md" ? render_markdown(*opts, report)
                                                    : render_text(*opts, report);
    write_output(opts->output, text);

    const auto values = whatif::gate_values(report);
    return apply_gates("whatif", opts->gates, values,
                       fmt::format("speedup {}, predicted step {:.3f} ms", times(std::get<double>(values.at("speedup"))),
                                   std::get<double>(values.at("predicted_step_ms"))));
  };
});

} // namespace
} // namespace dreamscope::cli
