// Pass 8, collectives: in a trace of several ranks (docs/multi-rank.md), each rank's call of a
// collective cannot complete before every rank of it has arrived. Each call's last task waits
// for the first task of every other rank's call of the same instance
// (dreamscope/storage/collectives.h matches them), so that its end is the last arrival plus what
// it took after it (the transfer). A rank that was slow then makes the others wait in replay as
// it did in the run, and a what-if that speeds it up lets them go sooner.
//
// The instance is kept whole (DependencyGraph::collective), not as an edge per pair of ranks:
// R ranks made R² edges, and as many offers in replay (bench/complexity.py, coll_many). A peer
// that arrived after a call returned is not linked to it; sorted by arrival, the peers a call
// waits for are then a prefix, which is what a member records.
//
// Reads: TaskTable (gpu_task, annotation_first, annotation_last, measured times); the
//   Trace's collectives (find_collectives).
// Writes: collective_members, collective_begin, collective_links; wait_end and kTaskBlocking
//   of each call's last task (note_wait); warning collective_peer_after_return.
#include "passes.h"

#include <dreamscope/storage/collectives.h>

#include <algorithm>

namespace dreamscope::graph_build {

namespace {

CollectiveMember member_of(const TaskTable& tasks, const CollectiveCall& call) {
  if (call.table == EventTable::GpuOp) return {tasks.gpu_task[call.row], tasks.gpu_task[call.row]};
  return {tasks.annotation_first[call.row], tasks.annotation_last[call.row]};
}

} // namespace

void add_collectives(GraphBuildState& s) {
  const JobCollectives job = find_collectives(s.trace);
  if (job.instances.empty()) return;
  TaskTable& tasks = s.tasks;
  std::vector<CollectiveMember> members;
  std::vector<TimeNs> arrivals;
  s.collective_begin.push_back(0);
  for (const CollectiveInstance& inst : job.instances) {
    members.clear();
    for (std::uint32_t c : inst.calls) {
      CollectiveMember m = member_of(tasks, job.calls[c]);
      if (m.arrival == kNoTask || m.completion == kNoTask) continue;
      m.call = static_cast<std::uint32_t>(members.size());
      members.push_back(m);
    }
    // By arrival as measured (call order among equals): a call's peers are then those before
    // the first that arrived after it returned.
    std::stable_sort(members.begin(), members.end(), [&](const CollectiveMember& a, const CollectiveMember& b) {
      return tasks.measured_start[a.arrival] < tasks.measured_start[b.arrival];
    });
    arrivals.clear();
    for (const CollectiveMember& m : members) arrivals.push_back(tasks.measured_start[m.arrival]);
    const auto count = static_cast<std::uint32_t>(members.size());
    for (std::uint32_t pos = 0; pos < count; ++pos) {
      CollectiveMember& m = members[pos];
      const TimeNs returned = tasks.measured_end[m.completion];
      m.peers = static_cast<std::uint32_t>(std::upper_bound(arrivals.begin(), arrivals.end(), returned) - arrivals.begin());
      // Physically impossible, the peers left out: clocks still apart, or calls matched
      // wrongly. A link would hold the call past its measured end in the unmodified replay.
      const std::uint32_t linked = m.peers - (pos < m.peers ? 1 : 0);
      s.warnings.collective_peer_after_return += count - 1 - linked;
      s.collective_links += linked;
      if (linked == 0) continue;
      // The latest linked arrival: the prefix's last, or the one before it where that is this call.
      s.note_wait(m.completion, arrivals[pos == m.peers - 1 ? m.peers - 2 : m.peers - 1]);
    }
    if (count < 2) continue;
    s.collective_members.insert(s.collective_members.end(), members.begin(), members.end());
    s.collective_begin.push_back(static_cast<std::uint32_t>(s.collective_members.size()));
  }
  if (s.collective_begin.size() == 1) s.collective_begin.clear();
}

} // namespace dreamscope::graph_build
