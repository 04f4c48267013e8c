// A PyTorch-profiler trace (JSON, or gzip of it) through `dreamscope import`'s importer and
// every command after it.
#include "fuzz_pipeline.h"

#include <dreamscope/importers.h>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace dreamscope;
  static const auto path = fuzz::scratch_file(".json");
  fuzz::write_file(path, data, size);
  fuzz::expect_clean([&] {
    ImportStats stats;
    const Trace trace = import_kineto(path, &stats);
    fuzz::run_commands_on(trace);
  });
  return 0;
}
