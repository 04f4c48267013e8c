#include "output.h"

#include "commands.h"

#include <dreamscope/storage/job.h>
#include <dreamscope/storage/limits.h>
#include <dreamscope/storage/trace_file.h>
#include <dreamscope/storage/trace_summary.h>

#include <fmt/format.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <variant>
#include <unistd.h>

namespace dreamscope::cli {

std::optional<std::string> output_problem(const std::filesystem::path& output) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path dir = output.has_parent_path() ? output.parent_path() : fs::path(".");
  if (!fs::is_directory(dir, ec)) return fmt::format("folder {} does not exist", dir.string());
  if (::access(dir.c_str(), W_OK) != 0) return fmt::format("folder {}: {}", dir.string(), std::strerror(errno));
  if (fs::is_directory(output, ec)) return fmt::format("{} is a directory", output.string());
  if (fs::exists(output, ec) && ::access(output.c_str(), W_OK) != 0) {
    return fmt::format("{}: {}", output.string(), std::strerror(errno));
  }
  return std::nullopt;
}

void check_trace_output(const std::string& path, bool force) {
  std::error_code ec;
  check_replaceable_output(path);
  if (std::filesystem::exists(path, ec) && !force) throw TraceError(path + " exists (use --force to replace it)");
  if (const auto problem = output_problem(path)) throw TraceError("cannot write " + path + ": " + *problem);
}

void write_output(const std::string& path, const std::string& raw) {
  // Every report is text in UTF-8, whatever bytes the trace held in its names: ill-formed
  // sequences become U+FFFD here, the one way out of every command (JSON is already clean).
  std::string repaired;
  if (!limits::is_valid_utf8(raw)) repaired = limits::repair_utf8(raw);
  const std::string& text = repaired.empty() ? raw : repaired;
  if (path.empty() || path == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    return;
  }
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) throw TraceError(path + ": cannot write: " + std::strerror(errno));
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  int err = errno;
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) throw TraceError(path + ": cannot write: " + std::strerror(err ? err : errno));
}

void check_not_empty(const std::string& path, const Trace& trace, bool allow_empty, RefuseEmpty refuse) {
  if (allow_empty) return;
  const std::string problem = refuse == RefuseEmpty::Any ? empty_trace_problem(trace) : empty_import_problem(trace);
  if (!problem.empty()) throw TraceError(path + ": " + problem + "; nothing to analyze (--allow-empty goes on anyway)");
}

Trace open_trace(const std::string& path, bool allow_empty, ImportStats* stats, const ImportProgressFn& progress,
                 ImportDetail detail, RefuseEmpty refuse) {
  Trace trace = load_trace(path, stats, progress, detail);
  check_not_empty(path, trace, allow_empty, refuse);
  return trace;
}

Trace open_job(const std::vector<std::string>& inputs, bool allow_empty, RefuseEmpty refuse) {
  const std::vector<std::filesystem::path> files = job_files(inputs);
  if (files.size() == 1) return open_trace(files.front().string(), allow_empty, nullptr, {}, ImportDetail::Full, refuse);
  JobLoadOptions options;
  if (!allow_empty) {
    options.check_file = [refuse](const std::filesystem::path& path, const Trace& trace) {
      check_not_empty(path.string(), trace, false, refuse);
    };
  }
  return load_job(files, options).trace;
}

std::string inputs_label(const std::vector<std::string>& inputs) {
  if (inputs.size() == 1) return inputs.front();
  return inputs.empty() ? std::string() : inputs.front() + " and " + std::to_string(inputs.size() - 1) + " more";
}

CLI::Option* add_trace_inputs(CLI::App* cmd, std::vector<std::string>& inputs) {
  return cmd->add_option("trace", inputs,
                         "The trace: trace.db, PyTorch profiler JSON(.gz), Nsight Systems SQLite or a tracer part log; "
                         "or a distributed job: several such files (one per rank), a folder of them, or a glob "
                         "(docs/multi-rank.md)");
}

int apply_gates(std::string_view command, const std::vector<std::string>& gates,
                const whatif::ExpressionValues& values, const std::string& why) {
  int status = kExitOk;
  for (const auto& gate : gates) {
    // A gate on a figure that is undefined (a speedup over a step of 0 ns) cannot decide, and
    // says so: it fails, as a gate that cannot tell the build is good must.
    std::string undefined;
    for (const auto& [name, value] : values) {
      const double* number = std::get_if<double>(&value);
      if (number == nullptr || !std::isnan(*number)) continue;
      for (std::size_t at = gate.find(name); at != std::string::npos; at = gate.find(name, at + 1)) {
        const auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'; };
        if ((at == 0 || !word(gate[at - 1])) && (at + name.size() == gate.size() || !word(gate[at + name.size()]))) {
          undefined = name;
          break;
        }
      }
      if (!undefined.empty()) break;
    }
    if (!undefined.empty()) {
      std::fprintf(stderr, "%s",
                   fmt::format("dreamscope {}: gate cannot decide: {} ({} is undefined: a step of 0 ns)\n", command,
                               limits::one_line(gate), undefined)
                       .c_str());
      status = kExitGateFailed;
      continue;
    }
    const auto held = whatif::evaluate_expression(gate, values);
    const auto* truth = std::get_if<bool>(&held);
    if (truth == nullptr) {
      throw std::invalid_argument(fmt::format("--fail-if {} is not a condition", limits::quoted(gate, 60)));
    }
    if (*truth) {
      std::fprintf(stderr, "%s", fmt::format("dreamscope {}: gate failed: {} ({})\n", command, gate, why).c_str());
      status = kExitGateFailed;
    }
  }
  return status;
}

std::shared_ptr<bool> add_allow_empty_flag(CLI::App* cmd, RefuseEmpty refuse) {
  auto allow = std::make_shared<bool>(false);
  cmd->add_flag("--allow-empty", *allow,
                refuse == RefuseEmpty::Any
                    ? "Go on with a trace that holds nothing to analyze: a recording with no events (no NVTX range, "
                      "CUDA API call or GPU operation), or an import that kept none of its events, or none of its "
                      "CPU or GPU side (by default that is an error, exit 1)"
                    : "Go on with an imported trace that kept none of its events, or none of its CPU or GPU side "
                      "(by default that is an error, exit 1; a recording with no events is shown, and said so)");
  return allow;
}

} // namespace dreamscope::cli
