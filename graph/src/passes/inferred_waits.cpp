// Pass 6, inferred waits: waits that no call or annotation names, inferred from timing alone.
// A call that took far longer than it should and returned moments after a GPU task ended
// waited for that task (a full launch queue); a thread that sat in one task while another
// thread of its process ran a burst of work, and went on moments after it, handed the work
// over and waited for it (PyTorch's backward()).
//
// Reads: TaskTable (tasks, measured times, api_last, kinds); kTaskBlocking, so it runs after
//   every pass that links a named wait (CUDA synchronization, data pipeline): a task already
//   known to wait for something is not given a guessed wait too.
// Writes: sync edges (queue waits), handoff and join edges; wait_end and kTaskBlocking
//   (note_wait); base of the piece before a burst that a handoff starts, or gap of a burst
//   that is its thread's first task, set to 0.
#include "passes.h"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace dreamscope::graph_build {
namespace {

// A launch (or async copy, or any call that should return at once) that took far longer
// than a launch takes and returned moments after a GPU op of its process ended waited for
// that op: the device's work queue was full, and the op's end freed the slot the call
// needed (or the call synchronizes implicitly, as cudaFree does). In a GPU-bound run most
// launches block this way, so their time is the GPU's, and a what-if that speeds the GPU
// up must let them return sooner: each becomes a sync on that op.
void add_queue_waits(GraphBuildState& s) {
  constexpr TimeNs kSlowCall = 50'000; // launches take a few µs
  constexpr TimeNs kWake = 20'000;     // a blocked call returns within µs of the slot freeing
  const Trace& trace = s.trace;
  const TaskTable& tasks = s.tasks;
  const auto& api = trace.cuda_api();
  std::map<std::vector<ResourceId>, std::vector<TaskId>> ops_by_end; // streams → their tasks by end
  for (EventIndex row = 0; row < api.size(); ++row) {
    const TaskId last = tasks.api_last[row];
    if (last == kNoTask || (tasks.flags[last] & kTaskBlocking)) continue;
    const TimeNs start = api.start[row], end = api.end[row];
    if (end - start < kSlowCall) continue;
    auto [it, fresh] = ops_by_end.try_emplace(streams_of_process(trace, tasks, tasks.resource[last]));
    std::vector<TaskId>& ops = it->second;
    if (fresh) {
      for (ResourceId st : it->first) {
        for (TaskId t = tasks.first(st); t < tasks.end(st); ++t) ops.push_back(t);
      }
      std::sort(ops.begin(), ops.end(), [&](TaskId a, TaskId b) { return tasks.measured_end[a] < tasks.measured_end[b]; });
    }
    auto after = std::upper_bound(ops.begin(), ops.end(), end,
                                  [&](TimeNs t, TaskId op) { return t < tasks.measured_end[op]; });
    if (after == ops.begin()) continue;
    const TaskId op = *std::prev(after);
    const TimeNs op_end = tasks.measured_end[op];
    if (op_end <= start || end - op_end > kWake) continue;
    s.edges.add(op, last, EdgeKind::Sync, 0);
    s.note_wait(last, op_end);
  }
}

// A thread that sits in one task for a long time while another thread of its process, idle
// before and after, runs a burst of events that ends just before the first thread goes on,
// was waiting for that burst: PyTorch's backward() on the training thread while the autograd
// engine's device thread runs the backward operators and their launches. The waiting task
// may be any task of a CPU thread: an API call, an annotation, or untraced CPU work (a wait
// in code nothing traced, as an inference server's request thread waiting for its worker).
// A replay that kept the wait as fixed CPU time would not move when the burst gets faster
// (a faster GPU, mixed precision). The burst's first task starts a measured delay after the
// wait starts (Handoff; the idle piece before it no longer holds it back), and the wait ends
// a measured delay after the burst's last task (Join).
void add_thread_handoffs(GraphBuildState& s) {
  constexpr TimeNs kMinWait = 500'000;   // shorter waits are not worth the risk of a false match
  constexpr TimeNs kMinResume = 200'000; // how soon after the burst the waiter resumes, at least...
  constexpr double kResumeShare = 0.02;  // ... or this share of the wait
  const Trace& trace = s.trace;
  TaskTable& tasks = s.tasks;
  std::vector<ResourceId> threads;
  for (ResourceId r = 0; r < tasks.resource_count(); ++r) {
    if (!tasks.is_stream(r) && tasks.first(r) != tasks.end(r)) threads.push_back(r);
  }
  if (threads.size() < 2) return;
  auto is_event = [&](TaskId t) { return tasks.kind[t] != TaskKind::CpuWork; };
  const std::vector<TimeNs>& starts = tasks.measured_start;
  // Every thread's events, per process, by start: a wait looks only at the events that
  // start inside it. Trying every other thread for every long range cost threads² (3000
  // threads of one 1 ms operator each: 5 s; bench/complexity.py's waiting_threads shape).
  struct EventStart {
    TimeNs start;
    ResourceId thread;
    TaskId task;
  };
  std::map<std::uint32_t, std::vector<EventStart>> events_by_process;
  for (ResourceId b : threads) {
    auto& events = events_by_process[process_of(trace, b)];
    for (TaskId t = tasks.first(b); t < tasks.end(b); ++t) {
      if (is_event(t)) events.push_back({starts[t], b, t});
    }
  }
  for (auto& [process, events] : events_by_process) {
    std::stable_sort(events.begin(), events.end(), [](const EventStart& x, const EventStart& y) { return x.start < y.start; });
  }
  std::vector<TaskId> seen_for(tasks.resource_count(), kNoTask); // the wait that last looked at a thread
  // The burst each wait was handed to, so that no burst is matched to a wait inside a burst
  // it was itself handed: two threads each running one 1 ms operator from the same moment
  // were each other's handoff and join, a cycle that left every task unscheduled.
  struct Burst {
    ResourceId thread = 0;
    TaskId first = kNoTask, last = kNoTask;
  };
  std::unordered_map<TaskId, Burst> burst_of;
  const auto serves = [&](TaskId waiter, ResourceId thread, TaskId task) {
    const auto it = burst_of.find(waiter);
    return it != burst_of.end() && it->second.thread == thread && it->second.first <= task && task <= it->second.last;
  };
  for (ResourceId a : threads) {
    const auto& events = events_by_process[process_of(trace, a)];
    for (TaskId p = tasks.first(a); p < tasks.end(a); ++p) {
      const TimeNs ps = starts[p], pe = tasks.measured_end[p];
      if (pe - ps < kMinWait || (tasks.flags[p] & kTaskBlocking)) continue;
      const TimeNs slack = std::max<TimeNs>(kMinResume, static_cast<TimeNs>(kResumeShare * static_cast<double>(pe - ps)));
      TaskId best_first = kNoTask, best_last = kNoTask;
      ResourceId best_thread = 0;
      TimeNs best_resume = slack + 1;
      auto it = std::lower_bound(events.begin(), events.end(), ps,
                                 [](const EventStart& e, TimeNs t) { return e.start < t; });
      for (; it != events.end() && it->start < pe; ++it) {
        const ResourceId b = it->thread;
        // A thread's first event at or after the wait's start is the first of it seen here.
        if (b == a || seen_for[b] == p) continue;
        seen_for[b] = p;
        const TaskId begin = tasks.first(b), end = tasks.end(b);
        const TaskId first = it->task;
        // Idle from before the wait began: the piece before the burst is b's idle time.
        if (first > begin && (is_event(first - 1) || starts[first - 1] > ps)) continue;
        // The burst's last event, and b idle from its end until after the waiter resumed.
        TaskId last = static_cast<TaskId>(std::lower_bound(starts.begin() + first, starts.begin() + end, pe) - starts.begin());
        if (last < end && is_event(last) && starts[last] <= pe) continue;
        do {
          --last;
        } while (last > first && !is_event(last));
        if (tasks.measured_end[last] > pe) continue;
        if (last + 1 < end && tasks.measured_end[last + 1] < pe) continue; // b idle, then busy again before p ended
        if (serves(first, a, p) || serves(last, a, p)) continue; // p is already that burst's wait's burst
        const TimeNs resume = pe - tasks.measured_end[last];
        // The soonest resume; among equals, the lowest thread, as when threads were tried in order.
        if (resume < best_resume || (best_first != kNoTask && resume == best_resume && b < best_thread)) {
          best_resume = resume;
          best_first = first;
          best_last = last;
          best_thread = b;
        }
      }
      if (best_first == kNoTask) continue;
      burst_of[p] = Burst{best_thread, best_first, best_last};
      s.edges.add(p, best_first, EdgeKind::Handoff, starts[best_first] - ps);
      // What held the burst back is the handoff, not the idle time before it on its thread
      // (the piece before it, or the gap before a thread's first task).
      if (best_first > tasks.first(tasks.resource[best_first])) {
        tasks.base[best_first - 1] = 0;
      } else {
        tasks.gap[best_first] = 0;
      }
      s.edges.add(best_last, p, EdgeKind::Join, 0);
      s.note_wait(p, tasks.measured_end[best_last]);
    }
  }
}

} // namespace

void add_inferred_waits(GraphBuildState& s) {
  add_queue_waits(s);
  add_thread_handoffs(s);
}

} // namespace dreamscope::graph_build
