// Shared by the commands: opening their traces and jobs, checking and writing their outputs (a
// report to stdout or a file), their common options and --fail-if gates.
#pragma once

#include <dreamscope/storage/importers.h>
#include <dreamscope/whatif/scenario.h>
#include <dreamscope/storage/trace.h>

#include <CLI/CLI.hpp>

#include <memory>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace dreamscope::cli {

// Why `path` cannot be written, if it cannot: its folder is missing or not writable, or the
// file exists and is not writable. Checked before any work that would be lost.
std::optional<std::string> output_problem(const std::filesystem::path& path);

// Every command that writes a trace.db (trace -o, import -o, whatif -o) keeps an existing file
// unless the user passed --force, and checks the output's folder exists before doing any work.
// Reports and exports are derived from a trace and are replaced. Throws TraceError naming the path.
void check_trace_output(const std::string& path, bool force);

// Writes `text` to `path`, or to stdout when path is empty or "-", with ill-formed UTF-8
// replaced by U+FFFD (every report is UTF-8 text). Throws TraceError naming the file when it
// cannot be written.
void write_output(const std::string& path, const std::string& text);

// Which traces with nothing to analyze a command refuses: any (analyze, whatif, replay, diff,
// export, import), or only imports that kept nothing (info, which shows a recording that holds
// no events and says so).
enum class RefuseEmpty { Any, Imports };

// How every command opens its trace: load_trace, then a refusal (TraceError naming the file,
// the reason and the counts) of a trace with nothing to analyze (empty_trace_problem: a
// recording that holds no events, an import that kept nothing, or nothing of the CPU or GPU
// side that the file holds), unless `allow_empty`. `detail`: how much of the file to keep
// (importers.h).
Trace open_trace(const std::string& path, bool allow_empty, ImportStats* stats = nullptr,
                 const ImportProgressFn& progress = {}, ImportDetail detail = ImportDetail::Full,
                 RefuseEmpty refuse = RefuseEmpty::Any);

// The refusal open_trace makes of `trace` read from `path` (TraceError), unless `allow_empty`;
// for the commands that load a job's files themselves.
void check_not_empty(const std::string& path, const Trace& trace, bool allow_empty,
                     RefuseEmpty refuse = RefuseEmpty::Any);

// How every command opens what it is given: one trace as open_trace does, or a distributed
// job (several files, a folder of them, a glob) as one Trace (storage's load_job: every rank's
// file in parallel, clocks aligned), each file refused as open_trace would. What the loader
// inferred (ranks from file names, clocks shifted) is in the trace's meta.job_notes.
Trace open_job(const std::vector<std::string>& inputs, bool allow_empty, RefuseEmpty refuse = RefuseEmpty::Any);

// How a command names what it opened in its output: the file, or "FIRST and N more".
std::string inputs_label(const std::vector<std::string>& inputs);

// Adds the positional inputs of a command that opens a trace or a job: TRACE...
CLI::Option* add_trace_inputs(CLI::App* cmd, std::vector<std::string>& inputs);

// The --fail-if gates of `command` (whatif, diff) over the values its report offers: each
// condition that holds is said on stderr, "dreamscope COMMAND: gate failed: CONDITION (WHY)",
// and makes the result kExitGateFailed; kExitOk when none holds. A condition that is not true
// or false is std::invalid_argument (a command-line error).
int apply_gates(std::string_view command, const std::vector<std::string>& gates,
                const whatif::ExpressionValues& values, const std::string& why);

// Adds --allow-empty to a command that opens a trace; pass the flag's value to open_trace.
// `refuse`: what the command refuses without it (its help says which).
std::shared_ptr<bool> add_allow_empty_flag(CLI::App* cmd, RefuseEmpty refuse = RefuseEmpty::Any);

} // namespace dreamscope::cli
