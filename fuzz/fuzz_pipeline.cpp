#include "fuzz_pipeline.h"

#include <dreamscope/storage/exporters.h>
#include <dreamscope/analyzers/report.h>
#include <dreamscope/storage/trace_summary.h>
#include <dreamscope/whatif/whatif_engine.h>

#include <sqlite3.h>
#include <unistd.h>

#include <fstream>

namespace dreamscope::fuzz {

std::filesystem::path scratch_file(std::string_view suffix) {
  const std::filesystem::path shm("/dev/shm");
  std::error_code ec;
  const auto dir = std::filesystem::is_directory(shm, ec) ? shm : std::filesystem::temp_directory_path();
  return dir / ("dreamscope-fuzz-" + std::to_string(::getpid()) + std::string(suffix));
}

void write_file(const std::filesystem::path& path, const std::uint8_t* data, std::size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
}

// SQLite's own calls rather than sqlite_file.h's: the fuzzer's SQL runs under limits and a
// progress handler that no reader or writer of dreamscope needs, and its failures are ignored.
bool sql_to_database(const std::filesystem::path& path, const std::uint8_t* data, std::size_t size) {
  std::error_code ec;
  std::filesystem::remove(path, ec);
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) {
    sqlite3_close(db);
    return false;
  }
  // A recursive CTE or a huge zeroblob would only measure SQLite: bound steps and sizes.
  sqlite3_limit(db, SQLITE_LIMIT_LENGTH, 1 << 20);
  sqlite3_limit(db, SQLITE_LIMIT_SQL_LENGTH, 1 << 20);
  int steps = 0;
  sqlite3_progress_handler(db, 1000, [](void* n) { return ++*static_cast<int*>(n) > 2000 ? 1 : 0; }, &steps);
  sqlite3_exec(db, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;", nullptr, nullptr, nullptr);
  const std::string sql(reinterpret_cast<const char*>(data), size);
  sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr); // statements before an error stay
  sqlite3_close(db);
  return true;
}

void run_commands_on(const Trace& trace) {
  (void)summarize(trace);
  whatif::ReplayOptions replay_options;
  replay_options.correct_overhead = true;
  replay_options.make_trace = true;
  const whatif::ReplayReport replayed = whatif::replay(trace, replay_options);
  const auto report = analyzers::analyze_trace(trace, "fuzz");
  (void)analyzers::render_json(report);
  (void)analyzers::render_text(report);
  if (replayed.predicted) (void)analyzers::render_json(analyzers::analyze_trace(*replayed.predicted, "predicted"));

  std::vector<whatif::ScenarioRequest> requests;
  requests.push_back({whatif::find_scenario("amp"), {}});
  requests.push_back({whatif::find_scenario("data"), {{"workers", "4"}}});
  whatif::WhatIfOptions options;
  options.make_trace = true;
  (void)whatif::run_whatif(trace, requests, options);
  export_chrome(trace, "/dev/null");
}

void expect_clean(const std::function<void()>& body) {
  try {
    body();
  } catch (const TraceError&) {
  } catch (const whatif::ScenarioError&) {
  } catch (const whatif::TransformError&) {
  } catch (const std::invalid_argument&) {
  }
}

} // namespace dreamscope::fuzz
