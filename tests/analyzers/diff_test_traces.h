// Pairs of traces whose differences are known, shared by the diff's analysis and CLI tests.
#pragma once

#include "analysis_traces.h"

namespace dreamscope::test {

// Three steps of a loop: forward launches gemm; A loads, B augments instead; in B gemm takes
// twice as long (all in µs).
inline Trace training_loop(bool b, int steps = 3, std::int64_t first_number = 1) {
  TraceMaker m;
  for (int i = 0; i < steps; ++i) {
    const double t0 = i * 2000.0;
    const double step = b ? 900 : 1000;
    m.annotation("step", us(t0), us(t0 + step), "step", first_number + i);
    m.annotation("forward", us(t0), us(t0 + 300));
    m.api("cudaLaunchKernel", us(t0 + 100), us(t0 + 110), 10 * i + 1);
    m.gpu(7, "gemm", us(t0 + 120), us(t0 + (b ? 920 : 520)), 10 * i + 1);
    if (b) {
      m.annotation("augment", us(t0 + 300), us(t0 + 500));
    } else {
      m.annotation("load", us(t0 + 300), us(t0 + 600));
    }
    m.annotation("optimizer", us(t0 + step - 400), us(t0 + step));
  }
  return std::move(m).build();
}

// A job of four ranks, two steps each (µs): forward, an all-reduce that waits for every rank,
// then the optimizer. In B rank 2's forward takes 300 µs more; the other ranks wait for it.
inline Trace job(bool slowed) {
  TraceBuilder b;
  const StringId domain = b.intern("test");
  for (std::int64_t rank = 0; rank < 4; ++rank) {
    ProcessInfo p;
    p.pid = 100 + rank;
    p.name = "python";
    p.rank = rank;
    p.local_rank = rank;
    p.world_size = 4;
    const auto process = b.add_process(p);
    DeviceInfo dev;
    dev.ordinal = rank;
    dev.process = process;
    const auto device = b.add_device(dev);
    const TrackId thread = b.thread_track(process, 100 + rank, "MainThread");
    const TrackId stream = b.stream_track(device, 7);
    auto ann = [&](std::string_view name, std::string_view category, double start, double end,
                   std::int64_t payload = kNoValue) {
      b.add(AnnotationRecord{.track = thread, .start = us(start), .end = us(end), .name = b.intern(name),
                             .domain = domain, .category = b.intern(category), .payload = payload});
    };
    for (int step = 0; step < 2; ++step) {
      const double t0 = step * 2000.0;
      const double forward_end = slowed && rank == 2 ? 700 : 400;
      const double reduce_end = slowed ? 800 : 500;
      const double end = slowed ? 1300 : 1000;
      ann("step", "step", t0, t0 + end, step + 1);
      ann("forward", "operation", t0, t0 + forward_end);
      const std::int64_t correlation = rank * 100 + step;
      b.add(CudaApiRecord{.track = thread, .start = us(t0 + 10), .end = us(t0 + 20), .name = b.intern("cudaLaunchKernel"),
                          .correlation = correlation});
      b.add(GpuOpRecord{.track = stream, .kind = GpuOpKind::Kernel, .start = us(t0 + 30), .end = us(t0 + 330),
                        .name = b.intern("gemm"), .correlation = correlation});
      ann("all_reduce", "collective", t0 + forward_end, t0 + reduce_end);
      ann("optimizer", "operation", t0 + reduce_end, t0 + end);
    }
  }
  return std::move(b).build();
}

} // namespace dreamscope::test
