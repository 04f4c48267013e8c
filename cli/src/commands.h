// Each `dreamscope` subcommand registers itself on the CLI11 app from its own file.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace dreamscope::cli {

// Exit codes shared by every command.
inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;  // bad input, unreadable or unwritable file
inline constexpr int kExitUsage = 2;  // bad command line

// A command's action; returns the process exit code.
using CommandAction = std::function<int()>;

// Registration: add the subcommand to `app`, and return the action to run when chosen.
void register_info_command(CLI::App& app, CommandAction& action);

} // namespace dreamscope::cli
