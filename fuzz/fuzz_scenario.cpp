// A scenario file through the parser, then applied to a small training trace with steps,
// launches, kernels, copies, syncs and a data pipeline: what `dreamscope whatif -s FILE` does.
#include "fuzz_pipeline.h"

#include <dreamscope/whatif/whatif_engine.h>

namespace {

using namespace dreamscope;

// Three steps of: fetch and prep on a loader thread, a wait, forward with two launches and
// kernels, a copy, a synchronize; the shapes every built-in scenario selects.
Trace training_trace() {
  TraceBuilder b;
  b.set_meta("source", "tracer");
  b.set_meta("cpu_cores", "2");
  const auto p = b.add_process(ProcessInfo{.pid = 1, .name = "train"});
  const auto d = b.add_device(DeviceInfo{.ordinal = 0, .name = "NVIDIA H100 80GB HBM3", .sm_count = 132});
  const TrackId main = b.thread_track(p, 1, "main");
  const TrackId loader = b.thread_track(p, 2, "loader");
  const TrackId stream = b.stream_track(d, 7);
  const StringId dreamscope = b.intern("dreamscope");
  std::int64_t correlation = 1;
  for (std::int64_t step = 0; step < 3; ++step) {
    const TimeNs t0 = step * 1'000'000;
    auto range = [&](TrackId track, const char* name, const char* category, TimeNs start, TimeNs end) {
      b.add(AnnotationRecord{.track = track, .start = t0 + start, .end = t0 + end, .name = b.intern(name),
                             .domain = dreamscope, .category = b.intern(category), .payload = step});
    };
    range(loader, "fetch", "fetch", 0, 200'000);
    range(loader, "prep", "prep", 200'000, 400'000);
    range(main, "step", "step", 0, 1'000'000);
    range(main, "wait", "wait", 10'000, 400'000);
    range(main, "forward", "operation", 400'000, 900'000);
    for (const char* kernel : {"ampere_sgemm_128x64_tn", "vectorized_elementwise_kernel"}) {
      const TimeNs at = 420'000 + (correlation % 2) * 100'000;
      b.add(CudaApiRecord{.track = main, .start = t0 + at, .end = t0 + at + 5'000, .name = b.intern("cudaLaunchKernel"),
                          .correlation = correlation});
      b.add(GpuOpRecord{.track = stream, .kind = GpuOpKind::Kernel, .start = t0 + at + 10'000,
                        .end = t0 + at + 90'000, .name = b.intern(kernel), .correlation = correlation,
                        .launch = LaunchConfig{.grid = {64, 1, 1}, .block = {256, 1, 1}}});
      ++correlation;
    }
    b.add(CudaApiRecord{.track = main, .start = t0 + 700'000, .end = t0 + 710'000, .name = b.intern("cudaMemcpyAsync"),
                        .correlation = correlation});
    b.add(GpuOpRecord{.track = stream, .kind = GpuOpKind::Memcpy, .subkind = 1, .start = t0 + 720'000,
                      .end = t0 + 760'000, .name = b.intern("Memcpy HtoD"), .correlation = correlation++,
                      .bytes = 1 << 20});
    b.add(CudaApiRecord{.track = main, .start = t0 + 800'000, .end = t0 + 880'000,
                        .name = b.intern("cudaDeviceSynchronize"), .correlation = correlation++});
  }
  return std::move(b).build();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const Trace trace = training_trace();
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  fuzz::expect_clean([&] {
    const whatif::Scenario scenario = whatif::Scenario::parse(text, "fuzz.toml");
    whatif::WhatIfOptions options;
    options.make_trace = true;
    (void)whatif::run_whatif(trace, {whatif::ScenarioRequest{scenario, {}}}, options);
  });
  return 0;
}
