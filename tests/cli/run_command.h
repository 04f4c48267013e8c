// Runs a command line through the shell and captures what it printed and its exit code.
#pragma once

#include <array>
#include <cstdio>
#include <string>
#include <sys/wait.h>

namespace dreamscope::test {

struct CommandResult {
  int exit_code = -1;
  std::string out; // stdout and stderr together, in order
};

inline CommandResult run_command(const std::string& command) {
  CommandResult r;
  std::FILE* p = ::popen((command + " 2>&1").c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  std::size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int status = ::pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

inline std::string dreamscope_bin() { return std::string(DREAMSCOPE_BIN_DIR) + "/dreamscope"; }

// Runs `dreamscope ARGS` from the repository root, where the documented examples' relative
// paths start.
inline CommandResult run_dreamscope(const std::string& args) {
  return run_command("cd " DREAMSCOPE_SOURCE_DIR " && " + dreamscope_bin() + " " + args);
}

} // namespace dreamscope::test
