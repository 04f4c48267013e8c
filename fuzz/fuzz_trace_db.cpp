// A dreamscope trace.db, written as SQL text (the seeds are `sqlite3 .dump`s of real traces and
// of the damaged ones in ../shared/data/fuzz), through the reader and every command after it.
#include "fuzz_pipeline.h"

#include <dreamscope/storage/importers.h>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace dreamscope;
  static const auto path = fuzz::scratch_file("-trace.db");
  if (!fuzz::sql_to_database(path, data, size)) return 0;
  fuzz::expect_clean([&] {
    const Trace trace = load_trace(path);
    fuzz::run_commands_on(trace);
  });
  return 0;
}
