// The built-in scenarios, embedded from whatif/scenarios/*.toml by
// whatif/scenarios/CMakeLists.txt, and the lookup of a scenario by name or path.
#include <dreamscope/whatif/scenario.h>

#include <fmt/format.h>

#include <filesystem>

namespace dreamscope::whatif {

namespace {

#if __has_include("dreamscope_builtin_scenarios.inc")
constexpr BuiltinScenario kBuiltinScenarios[] = {
#include "dreamscope_builtin_scenarios.inc"
};
#else
// The build did not run whatif/scenarios/CMakeLists.txt: no built-ins, and `--list` says so.
constexpr std::span<const BuiltinScenario> kBuiltinScenarios{};
#endif

} // namespace

std::span<const BuiltinScenario> builtin_scenarios() { return kBuiltinScenarios; }

Scenario find_scenario(const std::string& name_or_path) {
  for (const auto& builtin : builtin_scenarios()) {
    if (builtin.name == name_or_path) {
      return Scenario::parse(builtin.toml, fmt::format("<built-in {}.toml>", builtin.name));
    }
  }
  std::error_code ec;
  // Anything at that path is for load() to judge: a FIFO or a folder gets its own message.
  if (std::filesystem::exists(name_or_path, ec)) return Scenario::load(name_or_path);
  std::string known;
  for (const auto& builtin : builtin_scenarios()) known += (known.empty() ? "" : ", ") + std::string(builtin.name);
  throw ScenarioError(SourcePosition{name_or_path, 0, 0},
                      fmt::format("no built-in scenario of that name and no such file (built-ins: {})",
                                  known.empty() ? "none in this build" : known));
}

} // namespace dreamscope::whatif
