#include "build_state.h"

#include <iterator>

namespace dreamscope::graph_build {

void TaskTable::set_cpu_share(TaskId t, double share) {
  cpu_share[t] = static_cast<float>(std::clamp(share, 0.0, 1.0));
}

ProcessId process_of(const Trace& trace, ResourceId r) {
  const auto& tr = trace.tracks()[r];
  if (tr.kind == TrackKind::CpuThread) return tr.process;
  if (tr.device < trace.devices().size()) return trace.devices()[tr.device].process;
  return kNoIndex;
}

ProcessStreams::Streams& ProcessStreams::entry(const Trace& trace, const TaskTable& tasks, ResourceId thread) {
  if (!grouped_) {
    for (ResourceId r = 0; r < tasks.resource_count(); ++r) {
      if (tasks.is_stream(r)) by_owner_[process_of(trace, r)].push_back(r);
    }
    grouped_ = true;
  }
  const ProcessId p = process_of(trace, thread);
  auto [it, fresh] = by_process_.try_emplace(p);
  Streams& streams = it->second;
  if (!fresh) return streams;
  if (p == kNoIndex) { // every stream
    for (const auto& [owner, list] : by_owner_) streams.list.insert(streams.list.end(), list.begin(), list.end());
    std::sort(streams.list.begin(), streams.list.end());
  } else {
    static const std::vector<ResourceId> kNone;
    const auto own = by_owner_.find(p), unknown = by_owner_.find(kNoIndex);
    const auto& a = own != by_owner_.end() ? own->second : kNone;
    const auto& b = unknown != by_owner_.end() ? unknown->second : kNone;
    std::merge(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(streams.list));
  }
  for (ResourceId r : streams.list) streams.by_id.try_emplace(trace.tracks()[r].stream, r);
  return streams;
}

const std::vector<ResourceId>& ProcessStreams::of(const Trace& trace, const TaskTable& tasks, ResourceId thread) {
  return entry(trace, tasks, thread).list;
}

ResourceId ProcessStreams::find(const Trace& trace, const TaskTable& tasks, ResourceId thread, std::int64_t stream_id) {
  if (stream_id == kNoValue) return kNoIndex;
  const Streams& streams = entry(trace, tasks, thread);
  const auto it = streams.by_id.find(stream_id);
  return it != streams.by_id.end() ? it->second : kNoIndex;
}

const std::vector<ResourceId>& streams_of_process(GraphBuildState& s, ResourceId thread) {
  return s.process_streams.of(s.trace, s.tasks, thread);
}

ResourceId find_stream(GraphBuildState& s, ResourceId thread, std::int64_t stream_id) {
  return s.process_streams.find(s.trace, s.tasks, thread, stream_id);
}

} // namespace dreamscope::graph_build
