// Each `dreamscope` subcommand lives in its own src/*_command.cpp and registers itself with
// a static `CommandRegistration`; main.cpp parses the command line and runs the chosen one.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>

namespace dreamscope::cli {

// Exit codes shared by every command.
inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;  // bad input, unreadable or unwritable file
inline constexpr int kExitUsage = 2;  // bad command line
inline constexpr int kExitGateFailed = 3; // a --fail-if condition held (whatif, diff)
// 3 and up are a command's own (documented in its --help), e.g. a failed CI gate.

// A command's action; returns the process exit code.
using CommandAction = std::function<int()>;

// Adds the subcommand and its options to `app` and returns what to run when it is chosen.
using CommandSetup = std::function<CommandAction(CLI::App& app)>;

// `order` places the command in `dreamscope --help` (lower first): the workflow order
// trace, info, import, export, analyze, replay, whatif, diff, calibrate, gui.
struct CommandRegistration {
  CommandRegistration(int order, std::string name, CommandSetup setup);
};

} // namespace dreamscope::cli
