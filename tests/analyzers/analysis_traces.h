// Hand-built traces whose breakdowns can be worked out on paper, shared by the analyzer tests.
#pragma once

#include <dreamscope/storage/trace.h>

#include <string_view>

namespace dreamscope::test {

constexpr TimeNs us(double v) { return static_cast<TimeNs>(v * 1000.0); }

// One process with one thread, one GPU with streams, and helpers to add events by name.
class TraceMaker {
 public:
  explicit TraceMaker(TraceSource source = TraceSource::Tracer) {
    b_.set_source(source);
    process_ = b_.add_process(ProcessInfo{.pid = 1, .name = "python"});
    DeviceInfo d;
    d.ordinal = 0;
    d.name = "Test GPU";
    d.sm_count = 10;
    d.compute_capability_major = 8;
    d.compute_capability_minor = 0;
    device_ = b_.add_device(d);
    thread_ = b_.thread_track(process_, 1, "MainThread");
  }

  TrackId thread() const { return thread_; }
  TrackId worker(std::int64_t tid) { return b_.thread_track(process_, tid, "worker"); }
  TrackId stream(std::int64_t s) { return b_.stream_track(device_, s); }

  void annotation(std::string_view name, TimeNs start, TimeNs end, std::string_view category = "operation",
                  std::int64_t payload = kNoValue, std::optional<TrackId> track = std::nullopt) {
    b_.add(AnnotationRecord{.track = track.value_or(thread_), .start = start, .end = end, .name = b_.intern(name),
                            .domain = b_.intern("test"), .category = b_.intern(category), .payload = payload});
  }
  void api(std::string_view name, TimeNs start, TimeNs end, std::int64_t correlation) {
    b_.add(CudaApiRecord{.track = thread_, .start = start, .end = end, .name = b_.intern(name),
                         .correlation = correlation});
  }
  void gpu(std::int64_t stream_id, std::string_view name, TimeNs start, TimeNs end, std::int64_t correlation,
           GpuOpKind kind = GpuOpKind::Kernel, LaunchConfig launch = {}) {
    b_.add(GpuOpRecord{.track = stream(stream_id), .kind = kind, .start = start, .end = end, .name = b_.intern(name),
                       .correlation = correlation, .launch = launch});
  }
  Trace build() && { return std::move(b_).build(); }

 private:
  TraceBuilder b_;
  ProcessId process_{0};
  DeviceId device_{0};
  TrackId thread_{0};
};

// Two streams, five launches, in µs (see hta tests for the numbers worked out):
//   stream 7: gemm [100,110) c1, Memcpy HtoD [130,135) c2, gemm [140,150) c3, gemm [200,210) c4
//   stream 9: ncclKernel_AllReduce [105,120) c5
//   calls:    c1 cudaLaunchKernel [90,95), c5 [96,99), c2 cudaMemcpyAsync [125,127),
//             c3 cudaLaunchKernel [132,133), c4 [150,152)
inline void add_hta_workload(TraceMaker& m) {
  m.api("cudaLaunchKernel", us(90), us(95), 1);
  m.api("cudaLaunchKernel", us(96), us(99), 5);
  m.api("cudaMemcpyAsync", us(125), us(127), 2);
  m.api("cudaLaunchKernel", us(132), us(133), 3);
  m.api("cudaLaunchKernel", us(150), us(152), 4);
  m.gpu(7, "gemm", us(100), us(110), 1);
  m.gpu(7, "Memcpy HtoD (Pageable -> Device)", us(130), us(135), 2, GpuOpKind::Memcpy);
  m.gpu(7, "gemm", us(140), us(150), 3);
  m.gpu(7, "gemm", us(200), us(210), 4);
  m.gpu(9, "ncclKernel_AllReduce_RING_LL_Sum_float", us(105), us(120), 5);
}

} // namespace dreamscope::test
