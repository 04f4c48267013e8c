// Where decoded events go: the writer of one process's part file (any TraceSink: the
// tracer's trace log, a SQLite trace in tests), plus the lookups that turn OS thread ids,
// CUDA devices and streams into tracks. Used by the NVTX writer loop and by the CUPTI
// decoder alike, and by tests that feed the decoder directly.
#pragma once

#include <dreamscope/storage/trace_sink.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

namespace dreamscope::tracer {

class TraceTarget {
 public:
  TraceTarget(TraceSink& writer, ProcessId process) : writer_(writer), process_(process) {}

  TraceSink& writer() { return writer_; }
  ProcessId process() const { return process_; }

  StringId intern(std::string_view s) { return writer_.intern(s); }

  // The CPU track of an OS thread, created on first use. `pthread_id` lets CUPTI's thread
  // ids find the same track where CUPTI reports pthread_self() values.
  TrackId thread_track(std::int64_t tid, std::uint64_t pthread_id, std::string_view name);
  // The track for a thread id as CUPTI reports it: the OS thread id (`system_ids`, what the
  // tracer asks CUPTI for), else the low 32 bits of pthread_self(), which find the thread
  // only once it recorded something of its own.
  TrackId cupti_thread_track(std::uint32_t thread_id, bool system_ids);
  // A name the program gave a thread (nvtxNameOsThread): its track, made or to be made,
  // carries it instead of the OS's name.
  void name_thread(std::int64_t tid, const std::string& name);

  // CUPTI device ids -> the trace's device rows; a GPU op on a device whose DEVICE record
  // has not been seen gets a row with the ordinal alone.
  void add_device(std::uint32_t cupti_device, DeviceInfo info);
  DeviceId device(std::uint32_t cupti_device);
  TrackId stream_track(std::uint32_t cupti_device, std::uint32_t stream);

  // The recording window ([from, to) in trace ns); events starting outside it are skipped.
  void set_window(std::int64_t from, std::int64_t to) { window_from_ = from, window_to_ = to; }
  bool in_window(std::int64_t t) const { return t >= window_from_ && t < window_to_; }

  std::uint64_t rows_skipped_by_window = 0;

 private:
  TraceSink& writer_;
  ProcessId process_;
  std::unordered_map<std::int64_t, TrackId> by_tid_;
  std::unordered_map<std::uint32_t, TrackId> by_pthread_;
  std::unordered_set<TrackId> unnamed_;
  std::unordered_map<std::int64_t, std::string> thread_names_;
  std::map<std::uint32_t, DeviceId> devices_;
  std::map<std::pair<std::uint32_t, std::uint32_t>, TrackId> streams_;
  std::int64_t window_from_ = INT64_MIN, window_to_ = INT64_MAX;
};

} // namespace dreamscope::tracer
