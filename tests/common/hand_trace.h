// Small traces written event by event, for tests with exact expected timelines.
#pragma once

#include <dreamscope/storage/trace.h>

#include <stdexcept>
#include <string>
#include <string_view>

namespace dreamscope::test {

// One process and at most one GPU (more of each on demand); threads and streams by id; every event named uniquely
// so that a test can find its row again after the Trace sorted its tables. The GPU's name
// matters to cross-GPU scenarios (it is looked up in the device table); an empty name
// makes a CPU-only trace.
class HandTrace {
 public:
  explicit HandTrace(std::string_view gpu_name = "test GPU") {
    ProcessInfo p;
    p.pid = 1000;
    p.name = "train";
    process_ = b_.add_process(p);
    if (!gpu_name.empty()) {
      DeviceInfo d;
      d.process = process_;
      d.name = std::string(gpu_name);
      device_ = b_.add_device(d);
    }
    b_.set_source(TraceSource::Tracer);
  }

  TrackId thread(std::int64_t tid) { return thread(process_, tid); }
  // Another process (a forked worker: parent_pid 1000, the first process's pid), and its threads.
  ProcessId process(ProcessInfo p) { return b_.add_process(std::move(p)); }
  TrackId thread(ProcessId process, std::int64_t tid) {
    return b_.thread_track(process, tid, "thread-" + std::to_string(tid));
  }
  TrackId stream(std::int64_t id) {
    if (device_ == kNoIndex) throw std::logic_error("a CPU-only HandTrace has no streams");
    return b_.stream_track(device_, id);
  }
  // Another GPU, of another process, and its streams.
  DeviceId device(ProcessId process, std::string name) {
    DeviceInfo d;
    d.process = process;
    d.name = std::move(name);
    return b_.add_device(d);
  }
  TrackId stream(DeviceId device, std::int64_t id) { return b_.stream_track(device, id); }

  void api(TrackId thread, std::string_view name, TimeNs start, TimeNs end, std::int64_t correlation = kNoValue,
           std::int64_t stream = kNoValue, std::int64_t event = kNoValue) {
    CudaApiRecord r;
    r.track = thread;
    r.name = b_.intern(name);
    r.start = start;
    r.end = end;
    r.correlation = correlation;
    r.stream = stream;
    r.event = event;
    b_.add(r);
  }

  GpuOpIndex gpu(TrackId stream, GpuOpKind kind, std::string_view name, TimeNs start, TimeNs end,
                 std::int64_t correlation = kNoValue) {
    GpuOpRecord r;
    r.track = stream;
    r.kind = kind;
    r.name = b_.intern(name);
    r.start = start;
    r.end = end;
    r.correlation = correlation;
    return b_.add(r);
  }
  void gpu_arg(GpuOpIndex row, std::string_view key, std::int64_t value) { b_.add_arg(row, key, value); }
  void kernel(TrackId stream, std::string_view name, TimeNs start, TimeNs end, std::int64_t correlation = kNoValue) {
    gpu(stream, GpuOpKind::Kernel, name, start, end, correlation);
  }

  void annotation(TrackId thread, std::string_view name, std::string_view category, TimeNs start, TimeNs end,
                  std::int64_t payload = kNoValue, std::string_view domain = "dreamscope") {
    AnnotationRecord r;
    r.track = thread;
    r.name = b_.intern(name);
    r.domain = b_.intern(domain);
    r.category = b_.intern(category);
    r.start = start;
    r.end = end;
    r.payload = payload;
    b_.add(r);
  }

  void calibration(std::string kind, double cost_ns) {
    b_.add(CalibrationRecord{.event_kind = std::move(kind), .cost_ns = cost_ns, .samples = 1000, .method = "test"});
  }
  void overhead(TrackId thread, TimeNs start, TimeNs end, std::string_view kind = "cupti_buffer") {
    b_.add(OverheadRecord{.track = thread, .start = start, .end = end, .kind = b_.intern(kind)});
  }

  void thread_load(const ThreadLoadRecord& r) { b_.add(r); }

  void meta(const std::string& key, std::string value) { b_.set_meta(key, std::move(value)); }
  Trace build() { return std::move(b_).build(); }

 private:
  TraceBuilder b_;
  ProcessId process_{0};
  DeviceId device_ = kNoIndex;
};

// The first row of a table (Index: its row type) whose name is `name`.
template <class Index>
Index row_named(const Trace& trace, const std::vector<StringId>& names, std::string_view name) {
  for (Index i{0}; i < names.size(); ++i) {
    if (trace.str(names[i]) == name) return i;
  }
  throw std::runtime_error("no event named " + std::string(name));
}
inline CudaApiIndex api_row(const Trace& t, std::string_view name) {
  return row_named<CudaApiIndex>(t, t.cuda_api().name, name);
}
inline GpuOpIndex gpu_row(const Trace& t, std::string_view name) {
  return row_named<GpuOpIndex>(t, t.gpu_ops().name, name);
}
inline AnnotationIndex annotation_row(const Trace& t, std::string_view name) {
  return row_named<AnnotationIndex>(t, t.annotations().name, name);
}

} // namespace dreamscope::test
