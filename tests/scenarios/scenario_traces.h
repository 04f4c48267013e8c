// Hand-written traces whose replay timelines can be worked out on paper, for exact
// expectations on every what-if primitive (written with tests/common/hand_trace.h).
#pragma once

#include "../common/hand_trace.h"

#include <dreamscope/storage/trace.h>

#include <algorithm>
#include <string_view>

namespace dreamscope::scenario_test {

// One step of a GPU job on a V100, thread 1 and stream 7 (times in ns):
//   step [0, 5000)
//     forward   [0, 1000):    launch sgemm_nn [100, 200) → kernel [250, 2250)
//                             launch relu_fw  [300, 400) → kernel [2250, 3250) (queued)
//     optimizer [1000, 2000): launch adam_a [1100, 1200) → kernel [3250, 3750)
//                             launch adam_b [1300, 1400) → kernel [3750, 4250)
//     cudaDeviceSynchronize [2000, 4300): returns 50 ns after the last kernel
//     CPU work [4300, 5000)
inline Trace gpu_step_trace() {
  test::HandTrace w("Tesla V100-SXM2-16GB");
  const TrackId cpu = w.thread(1);
  const TrackId s = w.stream(7);
  w.annotation(cpu, "step", "step", 0, 5000, 0);
  w.annotation(cpu, "forward", "operation", 0, 1000);
  w.api(cpu, "cudaLaunchKernel", 100, 200, 1);
  w.kernel(s, "sgemm_nn", 250, 2250, 1);
  w.api(cpu, "cudaLaunchKernel", 300, 400, 2);
  w.kernel(s, "relu_fw", 2250, 3250, 2);
  w.annotation(cpu, "optimizer", "operation", 1000, 2000);
  w.api(cpu, "cudaLaunchKernel", 1100, 1200, 3);
  w.kernel(s, "adam_a", 3250, 3750, 3);
  w.api(cpu, "cudaLaunchKernel", 1300, 1400, 4);
  w.kernel(s, "adam_b", 3750, 4250, 4);
  w.api(cpu, "cudaDeviceSynchronize", 2000, 4300);
  return w.build();
}

// A prep-bound input pipeline (CPU only): a loader thread (tid 2) fetches batch b in
// [300b, 300b + 100) and preps it in [300b + 100, 300b + 300); the main thread (tid 1) runs
// step b = wait for batch b, then 100 ns of compute:
//   step 0 [0, 400)    wait [0, 300)    compute [300, 400)
//   step 1 [400, 700)  wait [400, 600)  compute [600, 700)
//   step 2 [700, 1000) wait [700, 900)  compute [900, 1000)
// `cpu_cores`: the traced machine's cores as `dreamscope trace` records them (meta
// cpu_cores); empty, as in an imported trace, leaves it out.
// With `silent_busy_until`, a third thread (tid 3) that recorded nothing ran on a core from 0
// until then (thread_load rows of 100 ns windows, as an OpenMP thread beside the steps).
inline Trace data_pipeline_trace(const std::string& cpu_cores = "", TimeNs silent_busy_until = 0) {
  test::HandTrace w("");
  if (!cpu_cores.empty()) w.meta("cpu_cores", cpu_cores);
  const TrackId main = w.thread(1);
  const TrackId loader = w.thread(2);
  if (silent_busy_until > 0) {
    const TrackId silent = w.thread(3);
    for (TimeNs t = 0; t < silent_busy_until; t += 100) {
      const TimeNs end = std::min(t + 100, silent_busy_until);
      w.thread_load(ThreadLoadRecord{.track = silent, .start = t, .end = end, .cpu_ns = end - t, .runqueue_ns = 0});
    }
  }
  for (std::int64_t b = 0; b < 3; ++b) {
    w.annotation(loader, "fetch", "fetch", 300 * b, 300 * b + 100, b);
    w.annotation(loader, "prep", "prep", 300 * b + 100, 300 * b + 300, b);
  }
  const TimeNs starts[] = {0, 400, 700};
  const TimeNs ready[] = {300, 600, 900};
  for (std::int64_t b = 0; b < 3; ++b) {
    w.annotation(main, "step", "step", starts[b], ready[b] + 100, b);
    w.annotation(main, "wait", "wait", starts[b], ready[b], b);
    w.annotation(main, "compute", "operation", ready[b], ready[b] + 100);
  }
  return w.build();
}

} // namespace dreamscope::scenario_test
