// A synthetic GPU training run, consistent by construction: the generator plays a small
// model of the hardware (stream queues, launch latency, syncs that return after what they
// wait for, loader workers that prepare batches ahead) and records what it did. Used by the
// baseline-invariant tests and the graph benchmark, at any size.
#pragma once

#include <dreamscope/storage/trace.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

namespace dreamscope::test {

struct SyntheticTraceOptions {
  int steps = 20;
  int launches_per_step = 40;
  int trainers = 1;       // threads launching GPU work, each with a compute and a copy stream
  int loader_workers = 2; // threads fetching and preparing batches
  std::uint64_t seed = 42;
};

// Tasks the graph of such a trace has, roughly: per launch a CPU gap, the call and the kernel.
inline std::size_t synthetic_task_estimate(const SyntheticTraceOptions& o) {
  return static_cast<std::size_t>(o.steps) * static_cast<std::size_t>(o.trainers) *
         (3 * static_cast<std::size_t>(o.launches_per_step) + 30);
}

inline Trace make_synthetic_training_trace(const SyntheticTraceOptions& o) {
  std::mt19937_64 rng(o.seed);
  auto uniform = [&](TimeNs lo, TimeNs hi) { return lo + static_cast<TimeNs>(rng() % static_cast<std::uint64_t>(hi - lo + 1)); };

  TraceBuilder b;
  b.set_source(TraceSource::Tracer);
  b.set_meta("command", "synthetic training run");
  const std::size_t launches = static_cast<std::size_t>(o.steps) * static_cast<std::size_t>(o.trainers) *
                               static_cast<std::size_t>(o.launches_per_step + 8);
  b.reserve(launches, launches, static_cast<std::size_t>(o.steps * o.trainers * 6));
  ProcessInfo p;
  p.pid = 4242;
  p.name = "python";
  const auto process = b.add_process(p);
  DeviceInfo d;
  d.process = process;
  d.name = "synthetic GPU";
  const auto device = b.add_device(d);

  const StringId dreamscope = b.intern("dreamscope");
  const StringId launch_name = b.intern("cudaLaunchKernel");
  const StringId copy_async = b.intern("cudaMemcpyAsync");
  const StringId copy_sync = b.intern("cudaMemcpy");
  const StringId record = b.intern("cudaEventRecord");
  const StringId stream_wait = b.intern("cudaStreamWaitEvent");
  const StringId stream_sync = b.intern("cudaStreamSynchronize");
  const StringId device_sync = b.intern("cudaDeviceSynchronize");
  const StringId event_sync = b.intern("cudaEventSynchronize");
  std::vector<StringId> kernel_names;
  for (const char* k : {"sgemm_128x64_nn", "relu_fwd", "layer_norm_fwd", "softmax_bwd", "sgemm_64x64_tn", "adam_step"}) {
    kernel_names.push_back(b.intern(k));
  }
  auto annotate = [&](TrackId track, std::string_view name, std::string_view category, TimeNs start, TimeNs end,
                      std::int64_t payload) {
    AnnotationRecord r;
    r.track = track;
    r.name = b.intern(name);
    r.domain = dreamscope;
    r.category = b.intern(category);
    r.start = start;
    r.end = end;
    r.payload = payload;
    b.add(r);
  };

  // Loader workers: batch k is fetched then prepared by worker k mod W, each worker in turn.
  const int batches = o.steps * o.trainers;
  std::vector<TimeNs> batch_ready(static_cast<std::size_t>(batches));
  for (int w = 0; w < o.loader_workers; ++w) {
    const TrackId worker = b.thread_track(process, 5000 + w, "loader-" + std::to_string(w));
    TimeNs t = uniform(0, 2000);
    for (int k = w; k < batches; k += o.loader_workers) {
      const TimeNs fetch_end = t + uniform(30'000, 120'000);
      const TimeNs prep_end = fetch_end + uniform(100'000, 500'000) * o.trainers / std::max(1, o.loader_workers);
      annotate(worker, "fetch", "fetch", t, fetch_end, k);
      annotate(worker, "prep", "prep", fetch_end, prep_end, k);
      batch_ready[static_cast<std::size_t>(k)] = prep_end;
      t = prep_end + uniform(1'000, 5'000);
    }
  }
  if (o.loader_workers == 0) std::fill(batch_ready.begin(), batch_ready.end(), 0);

  std::int64_t correlation = 1;
  for (int tr = 0; tr < o.trainers; ++tr) {
    const TrackId thread = b.thread_track(process, 4242 + tr, tr == 0 ? "MainThread" : "trainer-" + std::to_string(tr));
    const std::int64_t compute_id = 7 + 2 * tr, copy_id = 8 + 2 * tr;
    const TrackId compute = b.stream_track(device, compute_id);
    const TrackId copy = b.stream_track(device, copy_id);
    const std::int64_t copy_event = 100 + 2 * tr, forward_event = 101 + 2 * tr;
    TimeNs compute_free = 0, copy_free = 0, barrier = 0;
    TimeNs compute_last_end = 0, copy_last_end = 0, forward_event_end = 0;
    TimeNs t = 1000 + 37 * tr;

    auto call = [&](StringId name, TimeNs start, TimeNs end, std::int64_t corr, std::int64_t stream, std::int64_t event) {
      CudaApiRecord r;
      r.track = thread;
      r.name = name;
      r.start = start;
      r.end = end;
      r.correlation = corr;
      r.stream = stream;
      r.event = event;
      b.add(r);
    };
    // Runs an op on a stream queue: it starts once launched, once the queue is free and once
    // any event the stream waits for has happened.
    auto gpu_op = [&](TrackId stream, TimeNs& free, GpuOpKind kind, StringId name, TimeNs launched, TimeNs duration,
                      std::int64_t corr, TimeNs event_barrier) {
      const TimeNs queue_gap = uniform(500, 1500);
      const TimeNs start = std::max(launched + uniform(2'000, 5'000), std::max(free, event_barrier) + queue_gap);
      GpuOpRecord r;
      r.track = stream;
      r.kind = kind;
      r.name = name;
      r.start = start;
      r.end = start + duration;
      r.correlation = corr;
      b.add(r);
      free = r.end;
      return r.end;
    };

    for (int step = 0; step < o.steps; ++step) {
      const int batch = step * o.trainers + tr;
      const TimeNs step_start = t;
      const TimeNs wait_end = std::max(t + uniform(1'000, 3'000), batch_ready[static_cast<std::size_t>(batch)] + uniform(1'000, 4'000));
      annotate(thread, "wait_batch", "wait", t, wait_end, batch);
      t = wait_end + uniform(1'000, 5'000);

      // Input to the GPU on the copy stream; the compute stream waits for it by an event.
      TimeNs call_end = t + uniform(3'000, 6'000);
      call(copy_async, t, call_end, correlation, copy_id, kNoValue);
      copy_last_end = gpu_op(copy, copy_free, GpuOpKind::Memcpy, copy_async, t, uniform(10'000, 40'000), correlation++, 0);
      t = call_end + uniform(500, 2'000);
      call_end = t + uniform(800, 1'500);
      call(record, t, call_end, kNoValue, copy_id, copy_event);
      const TimeNs copy_event_end = copy_last_end;
      t = call_end + uniform(500, 2'000);
      call_end = t + uniform(800, 1'500);
      call(stream_wait, t, call_end, kNoValue, compute_id, copy_event);
      barrier = copy_event_end;
      t = call_end + uniform(500, 2'000);

      for (int phase = 0; phase < 2; ++phase) {
        const TimeNs phase_start = t;
        const int n = phase == 0 ? o.launches_per_step / 2 : o.launches_per_step - o.launches_per_step / 2;
        for (int i = 0; i < n; ++i) {
          t += uniform(1'000, 12'000);
          call_end = t + uniform(3'000, 8'000);
          call(launch_name, t, call_end, correlation, compute_id, kNoValue);
          const StringId kname = kernel_names[static_cast<std::size_t>(rng() % kernel_names.size())];
          compute_last_end = gpu_op(compute, compute_free, GpuOpKind::Kernel, kname, t, uniform(4'000, 120'000),
                                    correlation++, barrier);
          barrier = 0;
          t = call_end;
        }
        t += uniform(500, 2'000);
        annotate(thread, phase == 0 ? "forward" : "backward", "operation", phase_start, t, kNoValue);
        if (phase == 0) {
          call_end = t + uniform(800, 1'500);
          call(record, t, call_end, kNoValue, compute_id, forward_event);
          forward_event_end = compute_last_end;
          t = call_end + uniform(500, 2'000);
        }
      }
      if (step % 4 == 3) {
        const TimeNs end = std::max(t + uniform(1'000, 2'000), forward_event_end + uniform(1'500, 3'000));
        call(event_sync, t, end, kNoValue, kNoValue, forward_event);
        t = end + uniform(500, 2'000);
      }
      const int kind = o.trainers == 1 ? step % 3 : (step % 2 == 0 ? 0 : 2);
      if (kind == 0) {
        const TimeNs end = std::max(t + uniform(1'000, 2'000), compute_last_end + uniform(1'500, 3'000));
        call(stream_sync, t, end, kNoValue, compute_id, kNoValue);
        t = end;
      } else if (kind == 1) {
        const TimeNs end = std::max(t + uniform(1'000, 2'000), std::max(compute_last_end, copy_last_end) + uniform(1'500, 3'000));
        call(device_sync, t, end, kNoValue, kNoValue, kNoValue);
        t = end;
      } else {
        const std::int64_t corr = correlation++;
        compute_last_end = gpu_op(compute, compute_free, GpuOpKind::Memcpy, copy_sync, t, uniform(5'000, 15'000), corr, 0);
        const TimeNs end = compute_last_end + uniform(1'500, 3'000);
        call(copy_sync, t, end, corr, compute_id, kNoValue);
        t = end;
      }
      annotate(thread, "step#" + std::to_string(step), "step", step_start, t, step);
      t += uniform(5'000, 30'000);
    }
  }
  return std::move(b).build();
}

} // namespace dreamscope::test
