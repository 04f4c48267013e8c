// What-if primitives applied to a DependencyGraph (design.md, "What-if primitives").
//
// `TaskSelection` answers select(): which tasks a Selector names, looking through the Trace
// the graph came from for names, enclosing annotations, threads, streams and steps. A GPU
// task is "inside" whatever annotation enclosed the CPU call that launched it.
//
// `apply` edits the graph in place: the knobs (duration ratio and offset, removal, gap), the
// structural edits (move, insert, add_edge, remove_edge through DependencyGraph::apply and
// add_edges / remove_edges) and the simulator's tie policy. Every primitive keeps each
// resource's FIFO order, and one whose edges would close a cycle is refused with an error
// rather than left for the replay to drop.
//
// Structural edits renumber the tasks, while `TaskSelection` keeps describing the graph as
// built from the trace: AppliedScenario carries the map from those ids to the current ones.
#pragma once

#include <dreamscope/whatif/cost_models.h>
#include <dreamscope/graph/dependency_graph.h>
#include <dreamscope/whatif/scenario.h>
#include <dreamscope/whatif/simulator.h>
#include <dreamscope/storage/trace.h>

#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace dreamscope::whatif {

// A transform the engine cannot apply to this graph; what() names the scenario file and line.
class TransformError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Per-task facts the selectors need, computed once per graph.
class TaskSelection {
 public:
  TaskSelection(const Trace& trace, const DependencyGraph& graph);

  // Tasks the selector names, in TaskId order; tasks removed when it was built are never
  // selected. Ids are those of the graph this selection was built with, as it was then: edits
  // that keep the ids (scale, remove, add_edge) may be made to that very graph afterwards.
  std::vector<TaskId> select(const Selector& selector) const;

  // The task's name: API call, annotation or GPU operation; "" for CPU work and synthetic tasks.
  std::string_view name(TaskId t) const;
  // The step the task belongs to (step annotation payload, or the step's ordinal), if any.
  std::optional<std::int64_t> step(TaskId t) const;
  // The rank of the job the task ran on (ProcessInfo::rank of its thread, or of its stream's
  // device); kNoValue for a single-process trace or a resource a what-if added.
  std::int64_t rank(TaskId t) const;
  // The CPU call that launched a GPU task (kNoTask when unknown or not a GPU task).
  TaskId launcher(TaskId t) const { return launcher_[t]; }
  // Whether a CUDA API task launched GPU work.
  bool is_launch(TaskId t) const { return is_launch_[t] != 0; }

  // Step annotations in time order: the rows whose category is "step" or whose name starts
  // with "ProfilerStep#" (PyTorch profiler).
  const std::vector<AnnotationIndex>& step_annotations() const { return steps_; }

  const Trace& trace() const { return trace_; }
  const DependencyGraph& graph() const { return graph_; }

  // The annotation row enclosing the task on its thread (for GPU tasks: enclosing its launch
  // call), innermost first; kNoIndex when none. A task of a burst that another thread
  // handed over and waited for (the graph's inferred handoff and join: PyTorch's autograd
  // thread running backward() for the training thread) with no annotation of its own is
  // inside what enclosed the waiting task.
  AnnotationIndex enclosing_annotation(TaskId t) const;

 private:
  TrackId context_track(TaskId t) const;
  bool matches_kind(TaskId t, TaskClass kind) const;
  bool is_communication(TaskId t) const;

  const Trace& trace_;
  const DependencyGraph& graph_;
  std::vector<TaskId> launcher_;
  std::vector<std::uint8_t> is_launch_;
  // Per task, what the graph said of it when this was built (kBuiltRemoved, kBuiltSyncLike).
  static constexpr std::uint8_t kBuiltRemoved = 1, kBuiltSyncLike = 2;
  std::vector<std::uint8_t> built_;
  std::vector<AnnotationIndex> steps_;
  std::vector<std::int64_t> step_of_annotation_; // per annotation row; kNoValue outside steps
  std::vector<TaskId> handed_by_;   // per task: the waiting task of the burst it is in, or kNoTask
  // Per annotation row, its enclosing one: on its own thread, or for a range at the top of a
  // handed-over burst, what enclosed the waiting task. kNoIndex at the top.
  std::vector<AnnotationIndex> parent_;
  std::vector<std::vector<StringId>> track_categories_; // distinct annotation categories per track
  std::vector<std::int64_t> rank_of_track_;
  // Per kernel name: a communication kernel? (-1: not asked yet.) Asked for every kernel.
  mutable std::vector<std::int8_t> communication_;
};

// What one applied transform did, for the report.
struct TransformEffect {
  std::string op;
  SourcePosition where;
  std::size_t tasks = 0;       // tasks changed
  TimeNs time_before = 0;      // their summed durations before
  TimeNs time_after = 0;       // and after
  std::string detail;          // e.g. the cost model used
};

// The graph's knobs after a scenario, and the policy to simulate with.
struct AppliedScenario {
  std::vector<TransformEffect> effects;
  std::unique_ptr<TiePolicy> policy; // null: the simulator's default
  std::size_t cpu_cores = 0;         // CPU cores the threads share in the simulation (0: no limit)
  bool contention_removed = false;   // the graph's CPU tasks are their work at full speed
  // For each task of the graph the selection describes, its id in the edited graph; empty
  // while no structural edit has renumbered anything.
  std::vector<TaskId> current;

  TaskId to_current(TaskId t) const { return current.empty() ? t : current[t]; }
  // Folds an edit's renumbering into `current`.
  void renumbered(const EditResult& edit);
  // The inverse of `current` over the edited graph: kNoTask for tasks a what-if inserted.
  std::vector<TaskId> original_ids(std::size_t task_count) const;
};

// Applies the transforms in order. `selection` must describe `graph` as built from the trace
// (removals do not invalidate it). Throws TransformError for an unsupported primitive or a
// cost model that cannot be resolved (an unknown traced GPU).
void apply(const std::vector<Transform>& transforms, const TaskSelection& selection, DependencyGraph& graph,
           AppliedScenario& applied);

// Each primitive on its own, for tests and for the data-stall breakdown.
TransformEffect scale(DependencyGraph& graph, const std::vector<TaskId>& tasks, double ratio, TimeNs add);
// Scales the part of each task's time spent off the CPU by `ratio`, keeping its CPU part:
// storage K times faster shortens a fetch's wait for the disk, not its reads' CPU work.
TransformEffect scale_off_cpu(DependencyGraph& graph, const std::vector<TaskId>& tasks, double ratio);
TransformEffect set_duration(DependencyGraph& graph, const TaskSelection& selection, const std::vector<TaskId>& tasks,
                             const CostModel& model);
TransformEffect remove(DependencyGraph& graph, const TaskSelection& selection, const std::vector<TaskId>& tasks,
                       bool with_launches);
// Brings `rank`'s share of `tasks` (selected over every rank) to the median of the other
// ranks' shares, step by step (MatchRanksSpec); kStragglerRank: the rank the others waited for
// most at the trace's collectives. Throws TransformError when the trace has no such rank, or
// (for the straggler) no collectives to tell it by.
TransformEffect match_ranks(DependencyGraph& graph, const TaskSelection& selection, const std::vector<TaskId>& tasks,
                            std::int64_t rank);
// The tasks of each group (one per step with `per_step`, else one) become its first task in
// measured start order, with their summed duration or `model` applied to that sum. The others
// and their launch calls are removed; the survivor's launch too unless `keep_launch`.
// `name` is what the report calls the fused task.
TransformEffect fuse(DependencyGraph& graph, const TaskSelection& selection, const std::vector<TaskId>& tasks,
                     bool per_step, bool keep_launch, const std::optional<CostModel>& model,
                     std::string_view name = "fused");

// Structural primitives. Task ids are those of `graph` as it is now.
// Moves `tasks` to a resource, merged among its tasks by measured start. Each run of moved
// tasks still starts after the task that preceded it on its old thread (its inputs), but that
// thread no longer waits for it (add_edge says who consumes the result).
TransformEffect move(DependencyGraph& graph, const std::vector<TaskId>& tasks, ResourceId resource,
                     EditResult& result);
// Moves groups of tasks (one batch's fetch and prep: what one worker does for one item) to a
// pool of `workers` new resources named after `like`, group g to worker g mod workers in
// measured order. Workers prefetch ahead: an item waits for nothing its old thread did
// before it, but the task that followed it there (the training loop that loaded inline)
// waits for it. `ahead` > 0 bounds how far: item g is handed out only when the task that
// consumes item g − ahead has started (a Handoff edge), as PyTorch's DataLoader puts the next
// index in a worker's queue when a batch arrives. How many cores the workers and the other
// threads share is the simulation's (SimulationOptions::cpu_cores; a move's `cores` sets it).
TransformEffect move_to_pool(DependencyGraph& graph, const std::vector<std::vector<TaskId>>& groups,
                             std::size_t workers, const TrackInfo& like, EditResult& result,
                             std::size_t ahead = 0);
// A Dependency edge (end → start, plus `delay`) from each `from` to each `to`, paired in
// measured start order: i-th with i-th when both lists have the same size, otherwise one to
// many or many to one. Throws TransformError (prefixed by `where`) when the lists cannot be
// paired, or when an edge would close a cycle (then nothing is added).
TransformEffect add_edge(DependencyGraph& graph, const std::vector<TaskId>& from, const std::vector<TaskId>& to,
                         TimeNs delay, const std::string& where = {});
// Removes every edge from a `from` task to a `to` task.
TransformEffect remove_edge(DependencyGraph& graph, const std::vector<TaskId>& from, const std::vector<TaskId>& to);
// A synthetic task on `resource` (or on a new one, `new_resource`) after each group of tasks,
// taking that group's duration: it starts once the group's last task has ended and the
// resource is free, and the first `before` task that starts after the group waits for it.
// Inserted tasks follow each other on the resource in the order their groups ended. The
// inserted ids are in `result.inserted`. Throws TransformError on a cycle.
TransformEffect insert(DependencyGraph& graph, ResourceId resource, std::optional<TrackInfo> new_resource,
                       const std::string& name, const std::vector<std::vector<TaskId>>& groups,
                       const std::vector<TaskId>& before, const std::vector<TimeNs>& durations, EditResult& result,
                       const std::string& where = {});
// Whether the graph, with `extra` edges added, has a cycle through edges and resource order.
bool has_cycle(const DependencyGraph& graph, std::span<const EdgeSpec> extra = {});

// The cost model of a spec for this trace: wave scaling starts from the traced GPU.
CostModel resolve_cost_model(const CostModelSpec& spec, const Trace& trace, const SourcePosition& where);

} // namespace dreamscope::whatif
