// A tracer part log (.dslog, as a process killed at any point leaves it) through the log reader
// and every command after it.
#include "fuzz_pipeline.h"

#include <dreamscope/storage/trace_log.h>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace dreamscope;
  static const auto path = fuzz::scratch_file(".dslog");
  fuzz::write_file(path, data, size);
  fuzz::expect_clean([&] {
    const Trace trace = read_trace_log(path);
    fuzz::run_commands_on(trace);
  });
  return 0;
}
