// What the fuzz targets share: the path every command runs on a loaded trace, scratch files
// for loaders that read paths, and the rule that tells a clean refusal from a bug.
#pragma once

#include <dreamscope/storage/trace.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

namespace dreamscope::fuzz {

// A file of this process's own in /dev/shm (or the temp folder), rewritten for each input.
std::filesystem::path scratch_file(std::string_view suffix);
void write_file(const std::filesystem::path& path, const std::uint8_t* data, std::size_t size);

// Runs SQL text into a fresh SQLite file at `path`, bounded in time and size so that the
// fuzzer explores tables and rows rather than SQLite's own performance. False if the SQL
// did not run at all.
bool sql_to_database(const std::filesystem::path& path, const std::uint8_t* data, std::size_t size);

// info, analyze, replay (with overhead correction), whatif (amp, data) and export on `trace`.
void run_commands_on(const Trace& trace);

// Runs `body`; the errors a command reports as a clean one-line refusal (TraceError,
// ScenarioError, TransformError, std::invalid_argument from the expression language) are
// expected. Anything else escapes, and libFuzzer reports it as a crash: std::bad_alloc,
// std::out_of_range, a JSON library's exception are bugs, as are signals and sanitizer reports.
void expect_clean(const std::function<void()>& body);

} // namespace dreamscope::fuzz
