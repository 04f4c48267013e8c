// Pass 8, collectives: in a trace of several ranks (docs/multi-rank.md), each rank's call of a
// collective cannot complete before every rank of it has arrived. Each call's last task gets a
// collective edge from the first task of every other rank's call of the same instance
// (dreamscope/storage/collectives.h matches them), so that its end is the last arrival plus what it
// took after it (the transfer). A rank that was slow then makes the others wait in replay as
// it did in the run, and a what-if that speeds it up lets them go sooner.
//
// Reads: TaskTable (gpu_task, annotation_first, annotation_last, measured times); the
//   Trace's collectives (find_collectives).
// Writes: collective edges; wait_end and kTaskBlocking of each call's last task
//   (note_wait); warning collective_peer_after_return.
#include "passes.h"

#include <dreamscope/storage/collectives.h>

namespace dreamscope::graph_build {

namespace {

struct CallTasks {
  TaskId arrival = kNoTask;    // the call's first task: when its rank arrived
  TaskId completion = kNoTask; // its last task: what waits for the others
};

CallTasks tasks_of(const TaskTable& tasks, const CollectiveCall& call) {
  if (call.table == EventTable::GpuOp) return {tasks.gpu_task[call.row], tasks.gpu_task[call.row]};
  return {tasks.annotation_first[call.row], tasks.annotation_last[call.row]};
}

} // namespace

void add_collectives(GraphBuildState& s) {
  const JobCollectives job = find_collectives(s.trace);
  if (job.instances.empty()) return;
  TaskTable& tasks = s.tasks;
  std::vector<CallTasks> calls;
  for (const CollectiveInstance& inst : job.instances) {
    calls.clear();
    for (std::uint32_t c : inst.calls) {
      const CallTasks ct = tasks_of(tasks, job.calls[c]);
      if (ct.arrival != kNoTask && ct.completion != kNoTask) calls.push_back(ct);
    }
    // Every pair: the latest arrival is known only in replay, where a what-if may have moved
    // any rank. Quadratic in the ranks of one instance, which a trace of one machine's job
    // keeps small (docs/multi-rank.md says where this stops).
    for (const CallTasks& waiter : calls) {
      for (const CallTasks& peer : calls) {
        if (&peer == &waiter) continue;
        const TimeNs arrived = tasks.measured_start[peer.arrival];
        if (arrived > tasks.measured_end[waiter.completion]) {
          // Physically impossible: clocks still apart, or calls matched wrongly. A link would
          // hold the call past its measured end in the unmodified replay.
          ++s.warnings.collective_peer_after_return;
          continue;
        }
        s.edges.add(peer.arrival, waiter.completion, EdgeKind::Collective, 0);
        s.note_wait(waiter.completion, arrived);
      }
    }
  }
}

} // namespace dreamscope::graph_build
