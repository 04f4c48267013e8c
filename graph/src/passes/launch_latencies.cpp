// Pass 4, launch latencies: launch edges, and the gap that, with the launch latency, puts
// each GPU task where it was. A task launched onto a clear stream waited for its launch:
// latency = start - call start, no gap. A task launched behind work (the previous task on its
// stream, or an event it was told to wait for) waited for that: gap = start - the later of
// the two, and the latency is the run's typical one, so that once the work ahead gets faster
// the task still cannot start before a launch reaches the GPU.
//
// Reads: TaskTable; Launches (launcher); Synchronization::stream_barrier (so it runs after
//   every pass that makes a GPU task wait for something other than its stream).
// Writes: launch edges; gap of GPU tasks; kTaskIssuedByEdge;
//   warnings gpu_op_before_launch, gpu_ops_without_launch.
#include "passes.h"

#include <algorithm>

namespace dreamscope::graph_build {

void set_launch_latencies(GraphBuildState& s) {
  TaskTable& tasks = s.tasks;
  const std::vector<TaskId>& launcher = s.launches.launcher;
  const std::vector<TimeNs>& barrier = s.sync.stream_barrier;
  const TimeNs run_begin = s.trace.begin_time();
  auto blocker = [&](TaskId t, TimeNs prev_end) {
    return barrier[t] == kNoValue ? prev_end : std::max(prev_end, barrier[t]);
  };
  std::vector<TimeNs> clear_latencies;
  for (ResourceId r = 0; r < tasks.resource_count(); ++r) {
    if (!tasks.is_stream(r)) continue;
    TimeNs prev_end = run_begin;
    for (TaskId t = tasks.first(r); t < tasks.end(r); ++t) {
      if (launcher[t] != kNoTask) {
        const TimeNs call_start = tasks.measured_start[launcher[t]];
        if (blocker(t, prev_end) <= call_start && tasks.measured_start[t] >= call_start) {
          clear_latencies.push_back(tasks.measured_start[t] - call_start);
        }
      }
      prev_end = std::max(prev_end, tasks.measured_end[t]);
    }
  }
  TimeNs typical = 0;
  if (!clear_latencies.empty()) {
    auto mid = clear_latencies.begin() + static_cast<std::ptrdiff_t>(clear_latencies.size() / 2);
    std::nth_element(clear_latencies.begin(), mid, clear_latencies.end());
    typical = *mid;
  }
  for (ResourceId r = 0; r < tasks.resource_count(); ++r) {
    if (!tasks.is_stream(r)) continue;
    TimeNs prev_end = run_begin;
    for (TaskId t = tasks.first(r); t < tasks.end(r); ++t) {
      const TimeNs start = tasks.measured_start[t];
      const TimeNs waited_for = blocker(t, prev_end);
      const TimeNs stream_gap = std::max<TimeNs>(0, start - waited_for);
      if (launcher[t] != kNoTask) {
        const TimeNs call_start = tasks.measured_start[launcher[t]];
        TimeNs latency = start - call_start;
        if (latency < 0) {
          ++s.warnings.gpu_op_before_launch;
          latency = 0;
        }
        if (waited_for <= call_start) {
          tasks.gap[t] = 0;
        } else {
          tasks.gap[t] = stream_gap;
          latency = std::min(latency, typical);
        }
        s.edges.add(launcher[t], t, EdgeKind::Launch, latency);
        tasks.flags[t] |= kTaskIssuedByEdge;
      } else {
        ++s.warnings.gpu_ops_without_launch;
        tasks.gap[t] = stream_gap;
      }
      prev_end = std::max(prev_end, tasks.measured_end[t]);
    }
  }
}

} // namespace dreamscope::graph_build
