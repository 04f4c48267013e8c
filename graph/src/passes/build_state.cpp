#include "build_state.h"

namespace dreamscope::graph_build {

void TaskTable::set_cpu_share(TaskId t, double share) {
  cpu_share[t] = static_cast<float>(std::clamp(share, 0.0, 1.0));
}

std::uint32_t process_of(const Trace& trace, ResourceId r) {
  const auto& tr = trace.tracks()[r];
  if (tr.kind == TrackKind::CpuThread) return tr.process;
  if (tr.device < trace.devices().size()) return trace.devices()[tr.device].process;
  return kNoIndex;
}

std::vector<ResourceId> streams_of_process(const Trace& trace, const TaskTable& tasks, ResourceId thread) {
  std::vector<ResourceId> out;
  const std::uint32_t p = process_of(trace, thread);
  for (ResourceId r = 0; r < tasks.resource_count(); ++r) {
    if (!tasks.is_stream(r)) continue;
    const std::uint32_t sp = process_of(trace, r);
    if (sp == p || sp == kNoIndex || p == kNoIndex) out.push_back(r);
  }
  return out;
}

ResourceId find_stream(const Trace& trace, const TaskTable& tasks, ResourceId thread, std::int64_t stream_id) {
  if (stream_id == kNoValue) return kNoIndex;
  for (ResourceId r : streams_of_process(trace, tasks, thread)) {
    if (trace.tracks()[r].stream == stream_id) return r;
  }
  return kNoIndex;
}

} // namespace dreamscope::graph_build
