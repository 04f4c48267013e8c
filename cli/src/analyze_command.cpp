// `dreamscope analyze TRACE`: where the time went, as terminal tables, Markdown for a CI job
// summary, JSON for scripts (schema in docs/analyze.md) or one self-contained HTML file.
#include "commands.h"
#include "output.h"

#include <dreamscope/importers.h>
#include <dreamscope/report.h>

#include <fmt/format.h>

#include <filesystem>
#include <memory>

namespace dreamscope::cli {

namespace {

struct AnalyzeOptions {
  std::string trace;
  std::string format = "text";
  std::string output;
  std::vector<std::string> only;
  std::size_t top = 15;
  bool no_step_filter = false;
};

std::string section_names() {
  std::string names;
  for (auto s : analyzers::kAllSections) {
    if (!names.empty()) names += ", ";
    names += analyzers::to_string(s);
  }
  return names;
}

const CommandRegistration analyze_command(50, "analyze", [](CLI::App& app) -> CommandAction {
  auto opts = std::make_shared<AnalyzeOptions>();
  auto* cmd = app.add_subcommand("analyze", "Where the time went: cross-stack breakdown per operation, "
                                            "HTA and TensorBoard-profiler analyses, data stalls, top kernels, "
                                            "the replayed run's critical path");
  auto allow_empty = add_allow_empty_flag(cmd);
  cmd->add_option("trace", opts->trace, "The trace: trace.db, PyTorch profiler JSON(.gz) or Nsight Systems SQLite")
      ->required();
  cmd->add_option("--format", opts->format, "text, md, json or html")
      ->check(CLI::IsMember({"text", "md", "json", "html"}))
      ->capture_default_str();
  cmd->add_option("-o,--output", opts->output, "Write to this file instead of stdout");
  cmd->add_option("--only", opts->only, "Only these analyses (comma-separated): " + section_names())->delimiter(',');
  cmd->add_option("--top", opts->top, "Rows in the longest tables and charts")->capture_default_str();
  cmd->add_flag("--no-step-filter", opts->no_step_filter,
                "Keep the last ProfilerStep's events in the HTA analyses (HTA leaves them out)");
  cmd->footer("Examples:\n"
              "  dreamscope analyze trace.db\n"
              "  dreamscope analyze rank0.pt.trace.json.gz --only hta,top-kernels\n"
              "  dreamscope analyze trace.db --only critical-path\n"
              "  dreamscope analyze trace.db --format md >> \"$GITHUB_STEP_SUMMARY\"\n"
              "  dreamscope analyze trace.db --format html -o report.html\n"
              "Exit codes: 0 ok, 1 unreadable trace or unwritable output, 2 bad command line.");
  return [opts, allow_empty] {
    analyzers::ReportOptions ro;
    if (!opts->only.empty()) {
      ro.sections.clear();
      for (const auto& name : opts->only) {
        auto s = analyzers::report_section_from_string(name);
        if (!s) {
          fmt::print(stderr, "dreamscope analyze: unknown analysis '{}' (known: {})\n", name, section_names());
          return kExitUsage;
        }
        ro.sections.push_back(*s);
      }
    }
    ro.top = opts->top;
    ro.hta.profiler_step_filter = !opts->no_step_filter;
    Trace trace = open_trace(opts->trace, *allow_empty);
    const auto report = analyzers::analyze_trace(trace, std::filesystem::path(opts->trace).filename().string(), ro);
    std::string text;
    if (opts->format == "md") text = analyzers::render_markdown(report);
    else if (opts->format == "json") text = analyzers::render_json(report);
    else if (opts->format == "html") text = analyzers::render_html(report);
    else text = analyzers::render_text(report);
    write_output(opts->output, text);
    return kExitOk;
  };
});

} // namespace
} // namespace dreamscope::cli
