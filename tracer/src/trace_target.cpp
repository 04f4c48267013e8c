#include "trace_target.h"

#include <string>

namespace dreamscope::tracer {

TrackId TraceTarget::thread_track(std::int64_t tid, std::uint64_t pthread_id, std::string_view name) {
  auto it = by_tid_.find(tid);
  if (it != by_tid_.end()) {
    // Made by CUPTI's records of the thread's calls, before the thread recorded anything.
    if (unnamed_.count(it->second) && !name.empty() && !thread_names_.count(tid)) {
      writer_.rename_track(it->second, std::string(name));
      unnamed_.erase(it->second);
    }
    if (pthread_id != 0) by_pthread_.emplace(static_cast<std::uint32_t>(pthread_id), it->second);
    return it->second;
  }
  if (auto n = thread_names_.find(tid); n != thread_names_.end()) name = n->second;
  const TrackId t = writer_.add_track(
      TrackInfo{.kind = TrackKind::CpuThread, .process = process_, .tid = tid, .name = std::string(name)});
  by_tid_.emplace(tid, t);
  if (name.empty()) unnamed_.insert(t);
  if (pthread_id != 0) by_pthread_.emplace(static_cast<std::uint32_t>(pthread_id), t);
  return t;
}

void TraceTarget::name_thread(std::int64_t tid, const std::string& name) {
  auto [known, inserted] = thread_names_.try_emplace(tid, name);
  if (!inserted) {
    if (known->second == name) return;
    known->second = name;
  }
  if (auto it = by_tid_.find(tid); it != by_tid_.end()) writer_.rename_track(it->second, name);
}

TrackId TraceTarget::cupti_thread_track(std::uint32_t thread_id, bool system_ids) {
  if (auto it = by_tid_.find(thread_id); it != by_tid_.end()) return it->second;
  if (!system_ids) {
    if (auto p = by_pthread_.find(thread_id); p != by_pthread_.end()) return p->second;
  }
  return thread_track(thread_id, 0, {});
}

void TraceTarget::add_device(std::uint32_t cupti_device, DeviceInfo info) {
  if (devices_.count(cupti_device)) return;
  info.process = process_;
  devices_.emplace(cupti_device, writer_.add_device(info));
}

DeviceId TraceTarget::device(std::uint32_t cupti_device) {
  auto it = devices_.find(cupti_device);
  if (it != devices_.end()) return it->second;
  const DeviceId d = writer_.add_device(DeviceInfo{.ordinal = cupti_device, .process = process_});
  devices_.emplace(cupti_device, d);
  return d;
}

TrackId TraceTarget::stream_track(std::uint32_t cupti_device, std::uint32_t stream) {
  auto key = std::make_pair(cupti_device, stream);
  auto it = streams_.find(key);
  if (it != streams_.end()) return it->second;
  const DeviceId d = device(cupti_device);
  const TrackId t = writer_.add_track(TrackInfo{.kind = TrackKind::GpuStream, .process = process_, .device = d,
                                                .stream = stream, .name = "stream " + std::to_string(stream)});
  streams_.emplace(key, t);
  return t;
}

} // namespace dreamscope::tracer
