#include "environment_config.h"

#include <dreamscope/storage/tracer_environment.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace dreamscope::tracer {

namespace {

std::int64_t env_int(const char* name, std::int64_t fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  long long x = std::strtoll(v, &end, 10);
  return end && *end == 0 ? x : fallback;
}

} // namespace

Config config_from_environment() {
  namespace env = tracer_environment;
  Config c;
  if (const char* d = std::getenv(env::kOutputDir); d && *d) c.output_dir = d;
  if (const char* t = std::getenv(env::kSources); t && *t) {
    std::string s = t;
    c.nvtx = s.find("nvtx") != std::string::npos;
    c.cuda = s.find("cuda") != std::string::npos;
  }
  if (const char* a = std::getenv(env::kCudaApi); a && *a) {
    c.cuda_api_all = std::strcmp(a, "all") == 0;
    c.cuda_api_used_only = !c.cuda_api_all && std::strcmp(a, "most") != 0;
  }
  c.job_start_ns = env_int(env::kJobStartNs, 0);
  c.delay_ns = env_int(env::kDelayNs, 0);
  c.duration_ns = env_int(env::kDurationNs, -1);
  const std::int64_t mb = env_int(env::kBufferMb, 512);
  c.buffer_bytes = static_cast<std::size_t>(std::clamp<std::int64_t>(mb, 1, std::int64_t{1} << 20)) << 20;
  c.cupti_flush_ms = std::max<std::int64_t>(0, env_int(env::kCuptiFlushMs, 100));
  // "GAP_MS" or "GAP_MS:LENGTH_MS". A gap under four probes would leave the probes' neighbours
  // as short as they are.
  if (const char* p = std::getenv(env::kCostProbe); p && *p) {
    char* end = nullptr;
    c.cost_probe_ms = std::strtoll(p, &end, 10);
    if (end && *end == ':') c.cost_probe_length_ms = std::strtoll(end + 1, &end, 10);
    if (!end || *end != 0) {
      c.cost_probe_ms = Config{}.cost_probe_ms;
      c.cost_probe_length_ms = Config{}.cost_probe_length_ms;
    }
  }
  c.cost_probe_length_ms = std::clamp<std::int64_t>(c.cost_probe_length_ms, 1, 1000);
  c.cost_probe_ms = std::clamp<std::int64_t>(c.cost_probe_ms, 0, 1'000'000);
  if (c.cost_probe_ms > 0) c.cost_probe_ms = std::max(c.cost_probe_ms, 4 * c.cost_probe_length_ms);
  // Probe steps by default; time-window probes asked for alone take their place.
  c.cost_probe_steps = std::clamp<std::int64_t>(
      env_int(env::kCostProbeSteps, c.cost_probe_ms > 0 ? 0 : env::kDefaultCostProbeSteps), 0, 1'000'000);
  c.writer_slice_ns =
      std::clamp<std::int64_t>(env_int(env::kWriterSliceUs, env::kDefaultWriterSliceUs), 0, 1'000'000) * 1000;
  if (const char* cmd = std::getenv(env::kCommand); cmd && *cmd) c.command = cmd;
  return c;
}

} // namespace dreamscope::tracer
