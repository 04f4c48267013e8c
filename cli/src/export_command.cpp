// `dreamscope export TRACE --chrome out.json`: any trace, measured or predicted, in the
// Chrome trace format that the Perfetto UI and chrome://tracing open.
#include "commands.h"
#include "output.h"

#include <dreamscope/storage/exporters.h>
#include <dreamscope/storage/importers.h>

#include <fmt/format.h>

#include <cstdio>

namespace dreamscope::cli {

namespace {

struct ExportOptions {
  std::vector<std::string> traces;
  std::string chrome;
};

const CommandRegistration export_command(40, "export", [](CLI::App& app) -> CommandAction {
  auto opts = std::make_shared<ExportOptions>();
  auto* cmd = app.add_subcommand("export", "Write a trace in another tool's format (Chrome trace JSON for the "
                                           "Perfetto UI and chrome://tracing)");
  auto allow_empty = add_allow_empty_flag(cmd);
  add_trace_inputs(cmd, opts->traces)->required();
  cmd->add_option("--chrome", opts->chrome, "Write Chrome trace JSON to this file")->required();
  cmd->footer("Example:\n  dreamscope export trace.db --chrome trace.json   # then open it at https://ui.perfetto.dev");
  return [opts, allow_empty] {
    Trace trace = open_job(opts->traces, *allow_empty);
    export_chrome(trace, opts->chrome);
    std::fprintf(stderr, "%s", fmt::format("Wrote {} events and {} flows to {}\n", trace.event_count(),
                                           trace.flows().size(), opts->chrome)
                                   .c_str());
    return kExitOk;
  };
});

} // namespace
} // namespace dreamscope::cli
