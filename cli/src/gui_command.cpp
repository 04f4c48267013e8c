// `dreamscope gui [TRACE]`: starts the desktop app, dreamscope-gui, which is installed and
// built next to the dreamscope executable.
#include "commands.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include <unistd.h>

namespace dreamscope::cli {

namespace {

// The directory of the running executable; argv[0] may be a bare name found on PATH.
std::filesystem::path own_directory() {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path() : self.parent_path();
}

const CommandRegistration gui_command(90, "gui", [](CLI::App& app) -> CommandAction {
  auto traces = std::make_shared<std::vector<std::string>>();
  auto* cmd = app.add_subcommand("gui", "Open the desktop app (dreamscope-gui): timeline, search, kernel table");
  cmd->add_option("trace", *traces, "A trace to open; or a distributed job: several files, a folder, a glob");
  cmd->footer("Example:\n  dreamscope gui trace.db\n  dreamscope gui traces/          # a job, one trace per rank\n\n"
              "dreamscope-gui must sit next to the dreamscope executable "
              "(it does in the build tree's bin/ and when installed).");
  return [traces]() -> int {
    const std::filesystem::path gui = own_directory() / "dreamscope-gui";
    if (!std::filesystem::exists(gui)) {
      std::fprintf(stderr,
                   "dreamscope gui: %s not found; it is built only where Qt 6 is installed "
                   "(scripts/install-deps.sh, then rebuild)\n",
                   gui.c_str());
      return kExitError;
    }
    std::string program = gui.string();
    std::vector<char*> argv{program.data()};
    for (std::string& t : *traces) argv.push_back(t.data());
    argv.push_back(nullptr);
    ::execv(program.c_str(), argv.data());
    // execv returns only on failure.
    std::fprintf(stderr, "dreamscope gui: cannot start %s: %s\n", program.c_str(), std::strerror(errno));
    return kExitError;
  };
});

} // namespace
} // namespace dreamscope::cli
