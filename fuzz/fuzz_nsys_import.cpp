// An Nsight Systems SQLite export, written as SQL text (the seeds are `sqlite3 .dump`s), through
// the nsys importer and every command after it. Mutating SQL explores the tables, columns and
// values an export may hold; SQLite's own page format is SQLite's to fuzz.
#include "fuzz_pipeline.h"

#include <dreamscope/storage/importers.h>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace dreamscope;
  static const auto path = fuzz::scratch_file("-nsys.sqlite");
  if (!fuzz::sql_to_database(path, data, size)) return 0;
  fuzz::expect_clean([&] {
    ImportStats stats;
    const Trace trace = import_nsys(path, &stats);
    fuzz::run_commands_on(trace);
  });
  return 0;
}
