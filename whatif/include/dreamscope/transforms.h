// What-if primitives applied to a DependencyGraph (design.md, "What-if primitives").
//
// `TaskSelection` answers select(): which tasks a Selector names, looking through the Trace
// the graph came from for names, enclosing annotations, threads, streams and steps. A GPU
// task is "inside" whatever annotation enclosed the CPU call that launched it.
//
// `apply` edits the graph in place through the knobs the graph offers (duration ratio and
// offset, removal, gap) and chooses the simulator's tie policy. Every primitive applied here
// keeps the graph acyclic and each resource's FIFO order: none of them adds an edge or moves
// a task. move, insert, add_edge and remove_edge need structural edits the graph does not
// offer yet; `apply` reports them as unsupported rather than approximating them.
#pragma once

#include <dreamscope/cost_models.h>
#include <dreamscope/dependency_graph.h>
#include <dreamscope/scenario.h>
#include <dreamscope/simulator.h>
#include <dreamscope/trace.h>

#include <memory>
#include <optional>
#include <regex>
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

  // Tasks the selector names, in TaskId order; removed tasks are never selected.
  std::vector<TaskId> select(const Selector& selector) const;

  // The task's name: API call, annotation or GPU operation; "" for CPU work and synthetic tasks.
  std::string_view name(TaskId t) const;
  // The step the task belongs to (step annotation payload, or the step's ordinal), if any.
  std::optional<std::int64_t> step(TaskId t) const;
  // The CPU call that launched a GPU task (kNoTask when unknown or not a GPU task).
  TaskId launcher(TaskId t) const { return launcher_[t]; }
  // Whether a CUDA API task launched GPU work.
  bool is_launch(TaskId t) const { return is_launch_[t] != 0; }

  // Step annotations in time order: the rows whose category is "step" or whose name starts
  // with "ProfilerStep#" (PyTorch profiler).
  const std::vector<EventIndex>& step_annotations() const { return steps_; }

  const Trace& trace() const { return trace_; }
  const DependencyGraph& graph() const { return graph_; }

 private:
  // The annotation row enclosing the task on its thread (for GPU tasks: enclosing its launch
  // call), innermost first; kNoIndex when none.
  EventIndex enclosing_annotation(TaskId t) const;
  TrackId context_track(TaskId t) const;
  bool matches_kind(TaskId t, const std::string& kind) const;

  const Trace& trace_;
  const DependencyGraph& graph_;
  std::vector<TaskId> launcher_;
  std::vector<std::uint8_t> is_launch_;
  std::vector<EventIndex> steps_;
  std::vector<std::int64_t> step_of_annotation_; // per annotation row; kNoValue outside steps
  std::vector<std::vector<StringId>> track_categories_; // distinct annotation categories per track
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
};

// Applies the transforms in order. `selection` must describe `graph` as built from the trace
// (removals do not invalidate it). Throws TransformError for an unsupported primitive or a
// cost model that cannot be resolved (an unknown traced GPU).
void apply(const std::vector<Transform>& transforms, const TaskSelection& selection, DependencyGraph& graph,
           AppliedScenario& applied);

// Each primitive on its own, for tests and for the data-stall breakdown.
TransformEffect scale(DependencyGraph& graph, const std::vector<TaskId>& tasks, double ratio, TimeNs add);
TransformEffect set_duration(DependencyGraph& graph, const TaskSelection& selection, const std::vector<TaskId>& tasks,
                             const CostModel& model);
TransformEffect remove(DependencyGraph& graph, const TaskSelection& selection, const std::vector<TaskId>& tasks,
                       bool with_launches);
// The tasks of each group (one per step with `per_step`, else one) become its first task in
// measured start order, with their summed duration or `model` applied to that sum. The others
// and their launch calls are removed; the survivor's launch too unless `keep_launch`.
TransformEffect fuse(DependencyGraph& graph, const TaskSelection& selection, const std::vector<TaskId>& tasks,
                     bool per_step, bool keep_launch, const std::optional<CostModel>& model);

// The cost model of a spec for this trace: wave scaling starts from the traced GPU.
CostModel resolve_cost_model(const CostModelSpec& spec, const Trace& trace, const SourcePosition& where);

} // namespace dreamscope::whatif
