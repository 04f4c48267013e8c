#include "commands.h"

#include <dreamscope/storage/limits.h>
#include <dreamscope/storage/memory_reuse.h>

#include <algorithm>
#include <cstdio>
#include <vector>

namespace dreamscope::cli {

namespace {
struct Registered {
  int order;
  std::string name;
  CommandSetup setup;
};
std::vector<Registered>& registry() {
  static std::vector<Registered> r;
  return r;
}
} // namespace

CommandRegistration::CommandRegistration(int order, std::string name, CommandSetup setup) {
  registry().push_back({order, std::move(name), std::move(setup)});
}

} // namespace dreamscope::cli

int main(int argc, char** argv) {
  using namespace dreamscope::cli;
  dreamscope::keep_freed_memory_for_reuse();
  CLI::App app{
      "dreamscope: a cross-stack profiler and what-if simulator for GPU training jobs.\n"
      "Trace a run, see where the time went, and predict what a change would buy.\n"
      "Run `dreamscope COMMAND --help` for a command's options; docs/ has the manual.",
      "dreamscope"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("dreamscope ") + DREAMSCOPE_VERSION);

  auto& commands = registry();
  std::sort(commands.begin(), commands.end(), [](const auto& a, const auto& b) { return a.order < b.order; });
  std::vector<std::pair<CLI::App*, CommandAction>> actions;
  for (auto& c : commands) {
    CommandAction action = c.setup(app);
    actions.emplace_back(app.get_subcommand(c.name), std::move(action));
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitUsage;
  }
  for (const auto& [cmd, action] : actions) {
    if (!cmd->parsed()) continue;
    try {
      return action();
    } catch (const std::exception& e) { // TraceError and the rest: the message names the file
      std::fprintf(stderr, "dreamscope %s: %s\n", cmd->get_name().c_str(), dreamscope::limits::one_line(e.what()).c_str());
      return kExitError;
    }
  }
  return kExitUsage;
}
