// Pass 9, blocking residuals: a blocking task's measured time is part waiting, part its own
// work after the wait; only the latter is its duration, as the wait comes back in replay from
// its edges and syncs. Runs last, once every wait is known.
//
// Reads: wait_end (from every pass that linked a wait); TaskTable (measured times, kinds,
//   source rows, resources) and the Trace's names of calls and annotations.
// Writes: base of every task that waited; ready_base (what a blocking task that waited takes
//   when it need not wait: DependencyGraph::ready_duration).
#include "passes.h"

#include <algorithm>
#include <limits>
#include <map>
#include <tuple>

namespace dreamscope::graph_build {

void set_blocking_residuals(GraphBuildState& s) {
  const Trace& trace = s.trace;
  TaskTable& tasks = s.tasks;
  // Blocking tasks by thread and name: what those that did not wait took, and the shortest
  // residual of those that did.
  struct Group {
    std::vector<TimeNs> ready;
    TimeNs shortest_residual = std::numeric_limits<TimeNs>::max();
  };
  std::map<std::tuple<ResourceId, TaskKind, StringId>, Group> groups;
  auto key = [&](TaskId t) {
    const std::uint32_t row = tasks.source_row[t]; // of the table the task's kind says
    StringId name = kNoIndex;
    if (row != kNoIndex && tasks.kind[t] == TaskKind::Annotation) name = trace.annotations().name[row];
    if (row != kNoIndex && tasks.kind[t] == TaskKind::CudaApi) name = trace.cuda_api().name[row];
    return std::make_tuple(tasks.resource[t], tasks.kind[t], name);
  };
  std::vector<TaskId> waited;
  for (TaskId t = 0; t < tasks.size(); ++t) {
    if (s.wait_end[t] == kNoValue) continue;
    const TimeNs woke = std::max(tasks.measured_start[t], s.wait_end[t]);
    tasks.base[t] = std::max<TimeNs>(0, tasks.measured_end[t] - woke);
    Group& group = groups[key(t)];
    if (s.wait_end[t] > tasks.measured_start[t]) {
      waited.push_back(t);
      group.shortest_residual = std::min(group.shortest_residual, tasks.base[t]);
    } else {
      group.ready.push_back(tasks.base[t]);
    }
  }
  for (auto& [k, group] : groups) {
    if (group.ready.empty()) continue;
    auto mid = group.ready.begin() + static_cast<std::ptrdiff_t>(group.ready.size() / 2);
    std::nth_element(group.ready.begin(), mid, group.ready.end());
    group.shortest_residual = *mid;
  }
  for (TaskId t : waited) {
    const TimeNs ready = groups[key(t)].shortest_residual;
    if (ready < tasks.base[t]) s.ready_base.emplace_back(t, ready);
  }
}

} // namespace dreamscope::graph_build
