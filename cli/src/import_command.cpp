// `dreamscope import FILE -o trace.db`: a PyTorch profiler or Nsight Systems trace
// converted into a dreamscope trace, with the importer's own throughput and what it
// dropped or could not read, so that nothing is lost silently.
#include "commands.h"
#include "output.h"

#include <dreamscope/storage/importers.h>
#include <dreamscope/storage/trace_file.h>

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <unistd.h>

namespace dreamscope::cli {

namespace {

struct ImportOptions {
  std::string input;
  std::string output;
  bool quiet = false;
  bool force = false;
};

const CommandRegistration import_command(30, "import", [](CLI::App& app) -> CommandAction {
  auto opts = std::make_shared<ImportOptions>();
  auto* cmd = app.add_subcommand("import", "Convert a PyTorch profiler trace (.json, .json.gz) or an Nsight Systems "
                                           "SQLite export into a dreamscope trace");
  auto allow_empty = add_allow_empty_flag(cmd);
  cmd->add_option("file", opts->input, "The trace to import")->required();
  cmd->add_option("-o,--output", opts->output, "The dreamscope trace to write (trace.db)")->required();
  cmd->add_flag("-q,--quiet", opts->quiet, "Print only warnings");
  cmd->add_flag("-f,--force", opts->force, "Replace the output file if it exists");
  cmd->footer(
      "Prints \"Loaded X MB in Y s (Z MB/s)\" and a summary of what the importer dropped or could not read\n"
      "on stderr; the same summary is stored in the trace's meta.import_warnings.\n"
      "Every other command also opens these formats directly; import once to skip parsing next time.\n\n"
      "Example:\n  dreamscope import rank-0.pt.trace.json.gz -o rank0.db && dreamscope info rank0.db");
  return [opts, allow_empty] {
    check_trace_output(opts->output, opts->force);
    const TraceFormat format = detect_trace_format(opts->input);
    if (format == TraceFormat::DreamscopeDb) {
      throw TraceError(opts->input + ": already a dreamscope trace; nothing to import");
    }
    const bool tty = ::isatty(STDERR_FILENO) != 0 && !opts->quiet;
    ImportProgressFn progress;
    auto last = std::chrono::steady_clock::now();
    if (tty) {
      progress = [&last](const ImportProgress& p) {
        auto now = std::chrono::steady_clock::now();
        if (now - last < std::chrono::milliseconds(200) || p.bytes_total == 0) return;
        last = now;
        std::fprintf(stderr, "\r%-13.*s %3.0f%%", static_cast<int>(p.stage.size()), p.stage.data(),
                     100.0 * static_cast<double>(p.bytes_done) / static_cast<double>(p.bytes_total));
      };
    }
    ImportStats stats;
    Trace trace = open_trace(opts->input, *allow_empty, &stats, progress);
    if (tty) std::fprintf(stderr, "\r                   \r");
    write_trace(trace, opts->output);

    const double mb = static_cast<double>(stats.bytes) / 1e6;
    if (!opts->quiet && stats.bytes == 0 && stats.events_read == 0) {
      // A tracer part log is read, not imported: no importer counted what it kept.
      std::fprintf(stderr, "%s", fmt::format("{} events of {} written to {}\n", trace.event_count(), opts->input,
                                             opts->output)
                                     .c_str());
    } else if (!opts->quiet) {
      std::fprintf(stderr, "%s", fmt::format("Loaded {:.1f} MB in {:.3f} s ({:.0f} MB/s): {} of {} events kept, {} "
                                             "written to {}\n",
                                             mb, stats.seconds, stats.seconds > 0 ? mb / stats.seconds : 0.0,
                                             stats.events_kept, stats.events_read, trace.event_count(), opts->output)
                                     .c_str());
    }
    for (const auto& [id, issue] : stats.issues) {
      if (issue.severity == ImportSeverity::Info && opts->quiet) continue;
      std::fprintf(stderr, "%s", fmt::format("  {}: {} x {} [{}]{}\n", to_string(issue.severity), issue.count,
                                             issue.message, id, issue.example.empty() ? "" : "; e.g. " + issue.example)
                                     .c_str());
    }
    return kExitOk;
  };
});

} // namespace
} // namespace dreamscope::cli
