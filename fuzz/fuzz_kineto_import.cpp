// A PyTorch-profiler trace (JSON, or gzip of it) through `dreamscope import`'s importer and
// every command after it.
#include "fuzz_pipeline.h"

#include <dreamscope/storage/importers.h>

#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace dreamscope;
  static const auto path = fuzz::scratch_file(".json");
  fuzz::write_file(path, data, size);
  // Small inputs still take every way through the reader: events in runs of 1 to 256 bytes
  // (where repeated metadata is skipped), parsed in turn or on a thread of their own, with
  // every arg, without operators' (analyze --only) or without the operators a job's rank
  // summaries do not read, and the text
  // read whole or streamed a page at a time (import_input.h, open_input: large files).
  const std::uint8_t knob = size > 0 ? data[size - 1] : 0;
  const std::uint8_t knob2 = size > 1 ? data[size - 2] : 0;
  const ImportDetail detail = knob2 & 1 ? (knob2 & 4 ? ImportDetail::WithoutOperators : ImportDetail::WithoutOperatorArgs)
                                        : ImportDetail::Full;
  if (knob2 & 2) {
    ::setenv("DREAMSCOPE_IMPORT_STREAM_FROM", "0", 1);
    ::setenv("DREAMSCOPE_IMPORT_STREAM_CHUNK", "4096", 1);
  } else {
    ::unsetenv("DREAMSCOPE_IMPORT_STREAM_FROM");
  }
  ::setenv("DREAMSCOPE_IMPORT_RUN_BYTES", std::to_string(1 + (knob & 0x7f) * 2).c_str(), 1);
  ::setenv("DREAMSCOPE_IMPORT_THREADS", knob & 0x80 ? "2" : "1", 1);
  fuzz::expect_clean([&] {
    ImportStats stats;
    const Trace trace = import_kineto(path, &stats, {}, detail);
    fuzz::run_commands_on(trace);
  });
  return 0;
}
