#include "commands.h"

#include <dreamscope/trace_file.h>

#include <cstdio>
#include <iostream>
#include <map>

int main(int argc, char** argv) {
  using namespace dreamscope::cli;
  CLI::App app{
      "dreamscope: a cross-stack profiler and what-if simulator for GPU training jobs.\n"
      "Trace a run, see where the time went, and predict what a change would buy.\n"
      "Run `dreamscope COMMAND --help` for a command's options; docs/ has the manual.",
      "dreamscope"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("dreamscope ") + DREAMSCOPE_VERSION);

  std::map<const CLI::App*, CommandAction> actions;
  auto add = [&](void (*reg)(CLI::App&, CommandAction&)) {
    CommandAction action;
    reg(app, action);
    actions[app.get_subcommands({}).back()] = std::move(action);
  };
  add(register_info_command);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitUsage;
  }
  for (const auto& [cmd, action] : actions) {
    if (cmd->parsed()) {
      try {
        return action();
      } catch (const dreamscope::TraceError& e) {
        std::fprintf(stderr, "dreamscope: %s\n", e.what());
        return kExitError;
      } catch (const std::exception& e) {
        std::fprintf(stderr, "dreamscope %s: %s\n", cmd->get_name().c_str(), e.what());
        return kExitError;
      }
    }
  }
  return kExitUsage;
}
