// The tracer's configuration, read once from the variables a launcher set
// (dreamscope/storage/tracer_environment.h names them and says what each means).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace dreamscope::tracer {

struct Config {
  std::string output_dir;        // where part files go
  bool nvtx = true;              // record NVTX ranges and marks
  bool cuda = true;              // record CUDA through CUPTI
  bool cuda_api_all = false;     // keep every CUDA API call, the cheap frequent ones too
  // Record only the calls an analysis reads (CUPTI is asked for those calls alone), rather
  // than every call less the frequent no-GPU-work ones ("most").
  bool cuda_api_used_only = true;
  std::int64_t job_start_ns = 0; // the recording window's origin (0: no window)
  std::int64_t delay_ns = 0;
  std::int64_t duration_ns = -1; // -1: to the end
  // The cap on the memory of every thread's buffered events together.
  std::size_t buffer_bytes = std::size_t{512} << 20;
  // How often the writer asks CUPTI for the activity records it has completed (0: only when
  // buffers fill and at exit).
  std::int64_t cupti_flush_ms = 100;
  // The mean time between cost probes, in ms (writer_thread.cpp; 0: none, the default until
  // they are shown to correct better than the calls' timing), and how long one lasts.
  std::int64_t cost_probe_ms = 0;
  std::int64_t cost_probe_length_ms = 5;
  // Probe steps: one outermost range in this many on average, per thread, counts its inner
  // pushes instead of recording them (nvtx_injection.cpp; 0: none, the default). Takes the
  // place of the time-window probes where both are asked for.
  std::int64_t cost_probe_steps = 0;
  // The writer gives way to the job's threads after each slice of its busy time (0: never).
  std::int64_t writer_slice_ns = 0;
  std::string command; // the job's command line
};

Config config_from_environment();

} // namespace dreamscope::tracer
