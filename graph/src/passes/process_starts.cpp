// Pass 7, process starts: a process forked by another process of the trace starts when its
// parent forked it, not at a fixed time. A thread's first task otherwise waits for its
// measured offset from the run's begin (the task pass's gap), so a prediction that makes the
// parent faster before the fork left the children where they were: overhead correction of a
// PyTorch run took CUPTI's start-up cost out of the training process, which then asked its
// DataLoader workers for batches they had not made yet, and the steps waiting for them grew.
// Each thread of a child process gets a handoff from the parent's task that was running
// on the parent's main thread when the child started, with the measured delay, and no gap.
//
// Reads: the Trace's processes and tracks; TaskTable (measured times, gap), so it runs after
//   the inferred waits, which may already have linked a thread's first task (gap 0).
// Writes: handoff edges; gap of a child thread's first task, set to 0.
#include "passes.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace dreamscope::graph_build {

void add_process_starts(GraphBuildState& s) {
  const Trace& trace = s.trace;
  TaskTable& tasks = s.tasks;
  const auto& processes = trace.processes();
  std::vector<ResourceId> threads; // of a known process
  for (ResourceId r = 0; r < tasks.resource_count(); ++r) {
    const TrackInfo& track = trace.tracks()[r];
    if (!tasks.is_stream(r) && track.kind == TrackKind::CpuThread && track.process < processes.size()) threads.push_back(r);
  }
  // (host, pid) -> the process's main thread (tid == pid).
  std::map<std::pair<std::string, std::int64_t>, ResourceId> main_thread;
  for (ResourceId r : threads) {
    const TrackInfo& track = trace.tracks()[r];
    const ProcessInfo& p = processes[track.process];
    if (track.tid == p.pid) main_thread.emplace(std::make_pair(p.host, p.pid), r);
  }
  for (ResourceId r : threads) {
    const TrackInfo& track = trace.tracks()[r];
    const TaskId first = tasks.first(r);
    if (first == tasks.end(r) || tasks.gap[first] == 0) continue;
    const ProcessInfo& child = processes[track.process];
    if (child.parent_pid == kNoValue || child.start == kNoValue) continue;
    const auto parent = main_thread.find({child.host, child.parent_pid});
    if (parent == main_thread.end()) continue;
    const ResourceId pr = parent->second;
    // The parent's task running when the child started: the last one starting at or before.
    const auto begin = tasks.measured_start.begin() + tasks.first(pr);
    const auto end = tasks.measured_start.begin() + tasks.end(pr);
    const auto after = std::upper_bound(begin, end, child.start);
    if (after == begin) continue; // forked before the parent recorded anything
    const TaskId forker = static_cast<TaskId>(std::prev(after) - tasks.measured_start.begin());
    if (tasks.measured_start[first] < tasks.measured_start[forker]) continue;
    s.edges.add(forker, first, EdgeKind::Handoff, tasks.measured_start[first] - tasks.measured_start[forker]);
    tasks.gap[first] = 0;
  }
}

} // namespace dreamscope::graph_build
