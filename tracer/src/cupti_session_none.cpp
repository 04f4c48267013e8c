// The CUPTI session of a build without CUPTI (no CUDA toolkit): nothing is ever active, so
// the recorder calls the same functions whatever the build and records NVTX and the CPU
// side only. The CUDA driver never loads this build for CUPTI: it has no InitializeInjection.
#include "cupti_session.h"

namespace dreamscope::tracer {

std::uint64_t cupti_drain(TraceTarget&, bool, bool) { return 0; }
void cupti_flush_all() {}
void cupti_flush_completed() {}
bool cupti_active() { return false; }
std::optional<CalibrationRecord> cupti_calibrate_api_cost() { return std::nullopt; }
std::uint64_t cupti_calibration_calls() { return 0; }
void cupti_keep_buffers_ready() {}
void cupti_forget_after_fork() {}

// Still taken across fork, in the same order as with CUPTI: one code path for both builds.
std::mutex& cupti_flush_mutex() {
  static std::mutex m;
  return m;
}
std::mutex& cupti_queue_mutex() {
  static std::mutex m;
  return m;
}

} // namespace dreamscope::tracer
