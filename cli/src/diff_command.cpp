// `dreamscope diff A B`: what got faster, slower, appeared or vanished from one trace to
// another (two runs, two ranks, a run and its prediction), per step and per operation, kernel
// and CUDA call, for a person, a CI job summary, a script or a browser, with gates that fail
// the job on a regression against a stored baseline.
#include "commands.h"
#include "output.h"

#include <dreamscope/storage/job.h>
#include <dreamscope/storage/limits.h>
#include <dreamscope/whatif/scenario.h>
#include <dreamscope/analyzers/trace_diff.h>

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>

namespace dreamscope::cli {

namespace {

// A `--fail-if` condition held: B regressed against A.

struct DiffCommandOptions {
  std::string a, b;
  std::string format = "text";
  std::string output;
  std::size_t top = 15;
  double threshold = 5.0;
  std::int64_t rank = kNoValue;
  std::vector<std::int64_t> ranks;
  std::vector<std::int64_t> steps;
  std::vector<std::string> gates;
};

whatif::ExpressionValues expression_values(const std::map<std::string, double>& values) {
  whatif::ExpressionValues out;
  for (const auto& [name, value] : values) out[name] = value;
  return out;
}

// Gates are checked against the real names with placeholder values before any trace loads,
// so that a misspelt name fails at once.
void check_gates(const std::vector<std::string>& gates) {
  std::map<std::string, double> placeholders = analyzers::diff_gate_values(analyzers::TraceDiff{});
  for (auto& [name, value] : placeholders) value = 1.0;
  const auto values = expression_values(placeholders);
  for (const auto& gate : gates) {
    whatif::ParameterValue value;
    try {
      value = whatif::evaluate_expression(gate, values);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(fmt::format("--fail-if: {}", e.what())); // the message lists the names
    }
    if (!std::holds_alternative<bool>(value)) {
      throw std::invalid_argument(
          fmt::format("--fail-if {} is not a condition (e.g. 'step_change_pct > 5')", limits::quoted(gate, 60)));
    }
  }
}

// One rank of a trace, the error naming the file.
Trace rank_of(const Trace& trace, const std::string& path, std::int64_t rank) {
  try {
    return rank_subtrace(trace, rank);
  } catch (const TraceError& e) {
    throw TraceError(path + ": " + e.what());
  }
}

std::string label(const std::string& path, std::int64_t rank) {
  std::string name = std::filesystem::path(path).filename().string();
  return rank == kNoValue ? name : fmt::format("{} rank {}", name, rank);
}

const CommandRegistration diff_command(75, "diff", [](CLI::App& app) -> CommandAction {
  auto opts = std::make_shared<DiffCommandOptions>();
  auto* cmd = app.add_subcommand("diff", "What changed from trace A to trace B (two runs, two ranks, a run and its "
                                         "prediction): steps, and every operation, kernel and CUDA call that got "
                                         "faster, slower, appeared or vanished, by impact on the step");
  auto allow_empty = add_allow_empty_flag(cmd);
  cmd->add_option("A", opts->a,
                  "The baseline: trace.db, PyTorch profiler JSON(.gz), Nsight Systems SQLite or a tracer part log; "
                  "or a distributed job: a folder of its per-rank files, or a glob (quoted)")
      ->required();
  cmd->add_option("B", opts->b, "What is compared with it, of any of those kinds")->required();
  cmd->add_option("--format", opts->format, "text, markdown (md), json or html")
      ->check(CLI::IsMember({"text", "markdown", "md", "json", "html"}))
      ->capture_default_str();
  cmd->add_option("-o,--output", opts->output, "Write the report to this file instead of stdout");
  cmd->add_option("--top", opts->top, "Rows in the long tables and charts (JSON has every row)")
      ->capture_default_str();
  cmd->add_option("--threshold", opts->threshold,
                  "Percent: a time per step that moved by no more than this share of A's is unchanged")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            double v = -1;
            try {
              v = std::stod(text);
            } catch (const std::exception&) {
            }
            return v >= 0 && std::isfinite(v) ? std::string() : "'" + text + "' is not a percentage of 0 or more";
          },
          "PCT"))
      ->capture_default_str();
  auto* rank = cmd->add_option("--rank", opts->rank, "Compare rank R of A with rank R of B");
  cmd->add_option("--ranks", opts->ranks, "RA,RB: rank RA of A with rank RB of B (A and B may be one file)")
      ->delimiter(',')
      ->expected(2)
      ->excludes(rank);
  cmd->add_option("--steps", opts->steps, "Only the steps of these numbers, in both (HTA's iterations), e.g. 5,6,7")
      ->delimiter(',');
  cmd->add_option("--fail-if", opts->gates,
                  "Exit with 3 when this condition holds, e.g. 'step_change_pct > 5' (names below); repeatable");
  cmd->footer("Examples:\n"
              "  dreamscope diff baseline.db run.db\n"
              "  dreamscope diff run.db predicted.db --format html -o diff.html\n"
              "  dreamscope diff job.db job.db --ranks 0,3\n"
              "  dreamscope diff 'run1/rank*.json' run2/   # two jobs of per-rank files\n"
              "  dreamscope diff baseline.db run.db --format md --fail-if 'step_change_pct > 5' >> $GITHUB_STEP_SUMMARY\n"
              "Gate names: step_ms_a, step_ms_b (median step), step_change_pct (median step of B against A),\n"
              "slowest_step_change_pct, worst_step_change_pct (the matched step that grew most),\n"
              "top_regression_ms / top_improvement_ms (the largest change per step of one name), gpu_ms_a,\n"
              "gpu_ms_b, gpu_change_pct (GPU work per step), slower, faster, appeared, vanished (names),\n"
              "worst_rank_change_pct, rank_own_growth_ms (multi-rank jobs). See docs/diff.md.\n"
              "Exit codes: 0 ok, 1 unreadable trace, a trace with nothing to analyze (no events, an import that\n"
              "kept nothing; --allow-empty goes on), unknown rank or step, bad --fail-if or unwritable output,\n"
              "2 bad command line, 3 a --fail-if condition held (the report is still written).");
  return [opts, allow_empty, rank]() -> int {
    check_gates(opts->gates);
    if (!opts->output.empty() && opts->output != "-") {
      if (const auto problem = output_problem(opts->output)) {
        throw TraceError("cannot write " + opts->output + ": " + *problem);
      }
    }
    const Trace a = open_job({opts->a}, *allow_empty);
    std::optional<Trace> b_loaded;
    if (opts->b != opts->a) b_loaded = open_job({opts->b}, *allow_empty);
    const Trace& b = b_loaded ? *b_loaded : a;

    std::int64_t rank_a = kNoValue, rank_b = kNoValue;
    if (rank->count() > 0) rank_a = rank_b = opts->rank;
    if (opts->ranks.size() == 2) {
      rank_a = opts->ranks[0];
      rank_b = opts->ranks[1];
    }
    std::optional<Trace> sub_a, sub_b;
    if (rank_a != kNoValue) {
      sub_a = rank_of(a, opts->a, rank_a);
      sub_b = rank_of(b, opts->b, rank_b);
    }
    analyzers::DiffOptions o;
    o.threshold_pct = opts->threshold;
    o.steps = opts->steps;
    const auto diff = analyzers::diff_traces(sub_a ? *sub_a : a, sub_b ? *sub_b : b, o, label(opts->a, rank_a),
                                             label(opts->b, rank_b));
    std::string text;
    if (opts->format == "md" || opts->format == "markdown") text = analyzers::render_diff_markdown(diff, opts->top);
    else if (opts->format == "json") text = analyzers::render_diff_json(diff);
    else if (opts->format == "html") text = analyzers::render_diff_html(diff, opts->top);
    else text = analyzers::render_diff_text(diff, opts->top);
    write_output(opts->output, text);

    const auto numbers = analyzers::diff_gate_values(diff);
    return apply_gates("diff", opts->gates, expression_values(numbers),
                       fmt::format("median step {:.3f} ms -> {:.3f} ms, {:+.1f} %; top regression {:.3f} ms per step",
                                   numbers.at("step_ms_a"), numbers.at("step_ms_b"), numbers.at("step_change_pct"),
                                   numbers.at("top_regression_ms")));
  };
});

} // namespace
} // namespace dreamscope::cli
