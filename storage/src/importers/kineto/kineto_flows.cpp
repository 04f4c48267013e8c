#include "importers/kineto/kineto_flows.h"

#include <algorithm>

namespace dreamscope::kineto {

std::int64_t FlowTable::id_of_text(std::string_view text) {
  auto it = text_ids_.find(text);
  if (it == text_ids_.end()) {
    // Negative: numeric ids are the profiler's own and never negative.
    it = text_ids_.emplace(std::string(text), -static_cast<std::int64_t>(text_ids_.size()) - 1).first;
  }
  return it->second;
}

void FlowTable::note_call_without_gpu_work(std::int64_t pid, std::int64_t tid, TimeNs start) {
  calls_without_gpu_work_.insert(CallKey{pid, tid, start});
}

void FlowTable::pair(TraceBuilder& builder, ImportStats& stats, const OriginMap& origin) {
  auto example = [](const FlowEnd& f) {
    return "event #" + std::to_string(f.event_number) + ", " + std::string(f.cat) + " id " + std::to_string(f.id);
  };
  auto on_gpu = [&](const FlowEnd& f) {
    auto it = origin.find(PidTid{f.pid, f.tid});
    return it != origin.end() && builder.tracks()[it->second].kind == TrackKind::GpuStream;
  };
  auto add_flow = [&](const FlowEnd& from, const FlowEnd& to) {
    auto a = origin.find(PidTid{from.pid, from.tid});
    auto b = origin.find(PidTid{to.pid, to.tid});
    if (a == origin.end() || b == origin.end()) {
      stats.note("kineto_flow_thread_without_events", example(from));
      return;
    }
    const FlowRecord flow{.kind = builder.intern(from.cat), .from_track = a->second, .from_time = from.ts,
                          .to_track = b->second, .to_time = to.ts, .id = from.id};
    builder.add(flow);
    ++stats.events_kept;
  };

  std::stable_sort(ends_.begin(), ends_.end(), [](const FlowEnd& a, const FlowEnd& b) {
    if (a.cat != b.cat) return a.cat < b.cat;
    if (a.id != b.id) return a.id < b.id;
    return a.ts < b.ts;
  });
  std::size_t i = 0;
  while (i < ends_.size()) {
    std::size_t j = i;
    while (j < ends_.size() && ends_[j].cat == ends_[i].cat && ends_[j].id == ends_[i].id) ++j;
    std::vector<const FlowEnd*> starts, finishes;
    for (std::size_t k = i; k < j; ++k) (ends_[k].phase == 's' ? starts : finishes).push_back(&ends_[k]);
    if (starts.empty() && finishes.size() == 2 && !on_gpu(*finishes[0]) && on_gpu(*finishes[1])) {
      // ROCm writes some launches' flows as two finishes, the CPU one first: still a launch.
      stats.note("kineto_flow_two_finishes", example(*finishes[0]));
      add_flow(*finishes[0], *finishes[1]);
      i = j;
      continue;
    }
    const std::size_t pairs = std::min(starts.size(), finishes.size());
    for (std::size_t k = 0; k < pairs; ++k) add_flow(*starts[k], *finishes[k]);
    for (std::size_t k = pairs; k < starts.size(); ++k) {
      // ROCm starts a flow on every hipMalloc and hipFree, which launch nothing.
      const bool allocation = calls_without_gpu_work_.count(CallKey{starts[k]->pid, starts[k]->tid, starts[k]->ts});
      // PyTorch 1.13 without Kineto writes each kernel it timed as a cpu_to_cuda (cpu_to_npu)
      // start alone: it no longer knows where the kernel ran.
      const bool legacy_kernel = starts[k]->cat.starts_with("cpu_to_");
      stats.note(allocation      ? "kineto_flow_start_on_runtime_call_without_gpu_work"
                 : legacy_kernel ? "kineto_flow_kernel_start_only"
                                 : "kineto_flow_start_without_finish",
                 example(*starts[k]));
    }
    for (std::size_t k = pairs; k < finishes.size(); ++k) {
      // Kineto writes an ac2g finish on the CPU thread of runtime calls that launched nothing.
      const bool runtime_artifact = finishes[k]->cat == "ac2g" && !on_gpu(*finishes[k]);
      stats.note(runtime_artifact ? "kineto_flow_finish_on_cpu_without_start" : "kineto_flow_finish_without_start",
                 example(*finishes[k]));
    }
    i = j;
  }
}

} // namespace dreamscope::kineto
