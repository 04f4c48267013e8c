// The replay simulator: list scheduling of a DependencyGraph (design.md, "Simulation").
//
//   ready    = max over start predecessors (their start or end + edge delay)
//   start    = max(ready, resource free + gap)
//   duration = max(base × ratio + add, 0)
//   end      = max(start, max over completion predecessors (end + delay)) + duration
//
// The earliest startable task goes first; ties are broken by a pluggable policy. Syncs are
// resolved when their task starts, against the GPU tasks issued by then. The result has each
// task's predicted times and the constraint that bound it, from which the critical path and
// the predicted Trace (predicted_trace.h) are derived.
//
// With `cpu_cores` set, the tasks that use a CPU (DependencyGraph::uses_cpu) share that many
// cores: while n of them run on k < n cores, each progresses at k/n of full speed, as under
// the OS's fair scheduler (processor sharing). Their durations are then CPU work at full
// speed, and the end of each is when its work is done. With `cpu_pool` given, each resource
// shares the cores of its own pool (a machine of a distributed job), `cpu_cores` per pool.
// `cpu_background` adds, per pool, a load that no task carries (threads of the trace with CPU
// time and no events: an OpenMP pool): b running threads' worth makes the rate
// min(1, cores / (n + b)).
#pragma once

#include "dreamscope/graph/dependency_graph.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

namespace dreamscope::whatif {

// What decided a task's start or end.
enum class Constraint : std::uint8_t {
  RunStart = 0,      // first task on its resource: run begin + gap
  ResourceOrder = 1, // previous task on the thread or stream + gap
  Launch = 2,        // the API call that launched it (start + latency)
  Dependency = 3,    // a what-if dependency edge
  EventWait = 4,     // a cudaStreamWaitEvent on its stream
  Duration = 5,      // its own duration (end only)
  Sync = 6,          // a GPU task it synchronized with (end only)
  Flow = 7,          // the producer of a batch it waited for (end only)
  Handoff = 8,       // the start of the task on another thread that handed it the work
  Collective = 9,    // the last rank to arrive at a collective (its call's start; end only)
};
std::string_view to_string(Constraint c);
// Constraints that tie a task's start to another task's start rather than its end: a
// critical path crosses them from start to start.
inline bool from_start(Constraint c) { return c == Constraint::Launch || c == Constraint::Handoff; }
// Constraints that set a task's end from another task (TaskBinding::end_by): through that
// task's end (a sync, a flow), or its start (the last rank's arrival at a collective).
inline bool end_set_by_task(Constraint c) {
  return c == Constraint::Sync || c == Constraint::Flow || c == Constraint::Collective;
}
inline bool end_from_start(Constraint c) { return c == Constraint::Collective; }

struct TaskBinding {
  TaskId start_by = kNoTask; // the task whose start or end set this task's start
  TaskId end_by = kNoTask;   // for Sync / Flow / Collective: the task whose end (start) set this task's end
  Constraint start = Constraint::RunStart;
  Constraint end = Constraint::Duration;
};

// Breaks ties between tasks that can start at the same time: lower key first.
class TiePolicy {
 public:
  virtual ~TiePolicy() = default;
  virtual std::uint64_t key(const DependencyGraph& graph, TaskId t) const = 0;
};

// The default: the order in which the tasks started in the measured run, which keeps the
// replay of an unmodified graph in measured order.
class MeasuredOrderPolicy final : public TiePolicy {
 public:
  std::uint64_t key(const DependencyGraph& graph, TaskId t) const override;
};

// GPU tasks before CPU tasks, then measured order: a GPU that never waits for a CPU tie.
class GpuFirstPolicy final : public TiePolicy {
 public:
  std::uint64_t key(const DependencyGraph& graph, TaskId t) const override;
};

struct SimulationResult {
  std::vector<TimeNs> start, end; // per task; kNoValue for tasks never scheduled
  std::vector<TaskBinding> binding;
  TimeNs begin = 0;               // the run's begin (as measured: replay keeps the origin)
  TimeNs end_time = 0;            // latest predicted end over all tasks
  std::size_t unscheduled = 0;    // tasks left waiting (a cycle a what-if introduced)
  TimeNs cpu_contention = 0;      // with cpu_cores: time added to CPU tasks by sharing cores

  TimeNs span() const { return end_time - begin; }
};

// A step of a pool's background load (cpu_sharing.h): from `time` on, `threads` running
// threads' worth (fractional: a thread that ran half a window is half a thread over it), until
// the next step. None before the first step.
struct CpuLoadStep {
  TimeNs time = 0;
  double threads = 0;
  bool operator==(const CpuLoadStep&) const = default;
};

struct SimulationOptions {
  const TiePolicy* policy = nullptr; // null: MeasuredOrderPolicy
  bool record_bindings = true;
  // CPU cores the threads share (0: every thread has its own); per pool with `cpu_pool`.
  std::size_t cpu_cores = 0;
  // Per resource of the graph, the pool (machine) whose cores it shares; empty: one pool.
  std::vector<std::uint32_t> cpu_pool;
  // Per pool, load on its cores from threads without tasks, in time order; empty: none. Pinned
  // to the measured times: it does not move with the predicted tasks.
  std::vector<std::vector<CpuLoadStep>> cpu_background;
  // A group of streams that several syncs wait for (a device sync's) is indexed, so that a
  // sync costs O(log n) rather than a look at every stream and a wait for each task still
  // running; false: every sync looks at each (the same result; the tests' reference).
  bool index_stream_groups = true;
};

SimulationResult simulate(const DependencyGraph& graph, const SimulationOptions& options = {});

// One step of the critical path: a task, and the constraint through which the path reached
// it from the task after it. The path runs from the last task to end back to the run start.
struct CriticalPathStep {
  TaskId task = kNoTask;
  Constraint via = Constraint::Duration;
  bool through_start = false; // the path reached this task's start (a launch), not its end
};

// The chain of binding constraints that ends at the task with the latest end, last first.
std::vector<CriticalPathStep> critical_path(const DependencyGraph& graph, const SimulationResult& result);

// A point that a walk back along a critical path reaches: a task's end, or its start.
struct CriticalPathPoint {
  TaskId task = kNoTask;
  bool at_end = true;
};
// The point a walk goes on to from another, and the binding that leads there.
struct CriticalPathLink {
  CriticalPathPoint to;
  Constraint via = Constraint::Duration;
};
// One step of the walk back, the rule critical_path() and the analyzers' per-step paths
// share: the binding that set the point's time leads to the task that set it. A point at a
// task's end goes to what ended it (a sync's or flow's task at its end, a collective's last
// rank at its arrival) where the end waited for one (TaskBinding::end_by), else to what
// started it: the previous task's end (resource order, a dependency, an event), or the start
// of the call that launched it or the thread that handed it the work (a launch, a handoff).
// A point at a task's start goes to what started it. None at the run's start (or where the
// binding names no task); the task it leads to may be one that never ended.
std::optional<CriticalPathLink> critical_path_link(const SimulationResult& result, CriticalPathPoint p);

} // namespace dreamscope::whatif
