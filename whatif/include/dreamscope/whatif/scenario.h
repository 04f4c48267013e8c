// Scenario files: a named, parameterized list of graph transforms, written in TOML.
//
//   name = "data"
//   description = "More data-loader workers, a cache, faster storage"
//   [parameters]
//   workers = 0                                  # the default; `-p workers=8` overrides it
//   [[transform]]
//   op = "move"
//   when = "${workers > 0}"
//   select = { category = "prep" }
//   pool = "${workers}"
//
// A string value of the form "${...}" is an expression over the parameters (arithmetic,
// comparisons, &&, ||, !); a lone parameter name keeps the parameter's type. Everything
// that is wrong in a file is reported as "FILE:LINE:COLUMN: what" (docs/whatif.md).
#pragma once

#include <dreamscope/whatif/cost_models.h>
#include <dreamscope/storage/trace.h>

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace dreamscope::whatif {

struct SourcePosition {
  std::string file;
  int line = 0;
  int column = 0;
};

// A scenario that cannot be read or instantiated; what() is "FILE:LINE:COLUMN: what".
class ScenarioError : public std::runtime_error {
 public:
  ScenarioError(SourcePosition where, const std::string& what);
  const SourcePosition& where() const { return where_; }

 private:
  SourcePosition where_;
};

using ParameterValue = std::variant<bool, std::int64_t, double, std::string>;
std::string to_string(const ParameterValue& v);

struct Parameter {
  std::string name;
  ParameterValue default_value;
  std::string help;
};

// The `kind` a selector names, parsed when the scenario loads: kernel, compute (a kernel that
// is not communication), comm (a communication kernel: NCCL, RCCL, NVSHMEM, multimem
// collectives; storage/kernel_classes.h), memcpy, memset, sync (an API call that waits for the
// GPU), gpu (kernel, memcpy or memset), api (a CUDA API call), launch (an API call that
// launched GPU work), cpu (any CPU task), annotation (CPU work inside an annotation), gap (CPU
// work outside any recorded event).
enum class TaskClass : std::uint8_t {
  Kernel, Compute, Communication, Memcpy, Memset, Sync, Gpu, Api, Launch, Cpu, Annotation, Gap
};
std::string_view to_string(TaskClass c);
std::optional<TaskClass> parse_task_class(std::string_view name);
// "kernel, memcpy, ..., gap", for messages.
std::string task_class_names();

// Which tasks a transform applies to. Every field set must match (AND); a field left unset
// matches everything.
struct Selector {
  std::vector<TaskClass> kinds; // any of these

  std::optional<std::string> name;       // ECMAScript regex searched in the task's name
  std::optional<std::string> not_name;   // regex the task's name must not contain
  std::optional<std::string> annotation; // regex: some enclosing annotation's name matches
  std::optional<std::string> not_annotation; // regex: no enclosing annotation's name matches
  std::optional<std::string> category;   // regex matching the whole category of an enclosing
                                         // annotation: "fetch", "fetch|prep", ...
  std::optional<std::string> not_category; // regex: no enclosing annotation's whole category matches
  // Regexes over the categories of all annotations on a task's thread: the thread must carry
  // one matching `resource_with` and none matching `resource_without` ("the threads that
  // load data but run no step": a data loader's threads).
  std::optional<std::string> resource_with;
  std::optional<std::string> resource_without;
  std::optional<std::int64_t> rank;      // the rank of a distributed job (ProcessInfo::rank)
  std::optional<std::int64_t> thread;    // OS thread id
  std::optional<std::int64_t> stream;    // CUDA stream id
  std::optional<std::pair<std::int64_t, std::int64_t>> steps; // [first, last], inclusive
  std::optional<std::pair<TimeNs, TimeNs>> window;            // [begin, end) of the task's start
  SourcePosition where;

  bool selects_everything() const;
};

// set_duration's cost model, still in scenario terms: the wave-scaling origin is the GPU the
// trace ran on, known only once a trace is at hand.
struct CostModelSpec {
  std::variant<ConstantCost, RatioCost, RingAllReduceCost> fixed;
  std::optional<std::string> wave_scaling_to; // destination device name
  std::optional<std::string> wave_scaling_from; // overrides the trace's device
};

struct ScaleSpec {
  Selector select;
  double ratio = 1.0;
  TimeNs add = 0;
  // Scale only the time each task spent off the CPU (waiting on storage), keeping its CPU
  // part (DependencyGraph::cpu_share): `part = "off_cpu"`.
  bool off_cpu_only = false;
};
struct SetDurationSpec {
  Selector select;
  CostModelSpec model;
};
struct RemoveSpec {
  Selector select;
  bool with_launches = false; // also remove the CUDA API calls that launched the GPU tasks
};
// A new task on `resource` (an existing "thread:TID"/"stream:ID" or a new named one),
// after the tasks `after` selects and before those `before` selects. With groups = N the
// `after` tasks are split, in time order, into N consecutive groups and one task is
// inserted after each group (a gradient bucket's all-reduce, for instance).
struct InsertSpec {
  std::string name;
  std::string resource;
  CostModelSpec duration;
  std::int64_t bytes = 0; // what the cost model sees; split evenly over the groups
  Selector after;
  std::optional<Selector> before;
  std::int64_t groups = 1;
};
// The tasks selected become one task on the resource of the first, with their summed time
// (or the cost model's), keeping the first task's launch when `keep_launch`.
struct FuseSpec {
  Selector select;
  std::string name = "fused"; // what the report calls the fused task
  std::optional<CostModelSpec> duration;
  bool keep_launch = true;
  bool per_step = true; // one fused task per step rather than one for the whole run
};
// Moves selected tasks to another resource, or to a pool of `pool` workers. `cores` is how
// many CPU cores every thread of the job shares in the prediction: 0, no limit (a core per
// thread); kTracedMachineCores (-1), as many as the traced machine had (meta cpu_cores; no
// limit when the trace does not say).
inline constexpr std::int64_t kTracedMachineCores = -1;
struct MoveSpec {
  Selector select;
  std::string resource;
  std::int64_t pool = 0;
  std::int64_t cores = 0;
  // With a pool: how many items may be handed out before the first is consumed (PyTorch's
  // DataLoader keeps workers × prefetch_factor batches outstanding); 0: no bound.
  std::int64_t ahead = 0;
};
struct AddEdgeSpec {
  Selector from;
  Selector to;
  TimeNs delay = 0;
};
struct RemoveEdgeSpec {
  Selector from;
  Selector to;
};
struct SetPolicySpec {
  std::string policy;
};
// Scales the selected tasks of one rank of a distributed job so that, step by step, they take
// the median of what the same selection took on the other ranks: the job without that rank
// being a straggler. kStragglerRank: the rank the others waited for most at collectives.
inline constexpr std::int64_t kStragglerRank = -1;
// With `cores` (as a move's), the ranks of each machine share its cores in the prediction and
// the tasks are first made their work at full speed (cpu_sharing.h): on a machine with fewer
// cores than busy ranks, a straggler's extra work also slowed the others' measured tasks.
struct MatchRanksSpec {
  Selector select;
  std::int64_t rank = kStragglerRank;
  std::int64_t cores = 0;
};

using TransformSpec = std::variant<ScaleSpec, SetDurationSpec, RemoveSpec, InsertSpec, FuseSpec, MoveSpec,
                                   AddEdgeSpec, RemoveEdgeSpec, SetPolicySpec, MatchRanksSpec>;


struct Transform {
  TransformSpec spec;
  std::string op;
  SourcePosition where;
};

// Every selector of the transforms limited to one rank of the job (those that name a rank of
// their own keep it): a single-rank scenario applied to one rank (`dreamscope whatif --rank`).
void restrict_to_rank(std::vector<Transform>& transforms, std::int64_t rank);

// A scenario as written: parameters with their defaults, transforms still holding
// expressions. `instantiate` binds the parameters.
class Scenario {
 public:
  // Parses TOML text; `file` names it in errors. Throws ScenarioError.
  static Scenario parse(std::string_view toml_text, std::string file);
  static Scenario load(const std::string& path);

  const std::string& name() const { return name_; }
  const std::string& description() const { return description_; }
  const std::string& file() const { return file_; }
  const std::vector<Parameter>& parameters() const { return parameters_; }

  // The transforms with the parameters bound: defaults overridden by `overrides` (as
  // given on the command line, "8", "0.5", "true", "A100"). An override for a parameter the
  // scenario does not declare, a value of the wrong type, or a transform that is invalid
  // for these values is an error naming the file and line.
  std::vector<Transform> instantiate(const std::map<std::string, std::string>& overrides = {}) const;

  // The parameter values `instantiate` would use.
  std::map<std::string, ParameterValue> bind(const std::map<std::string, std::string>& overrides) const;

 private:
  std::string name_;
  std::string description_;
  std::string file_;
  std::string text_;
  std::vector<Parameter> parameters_;
};

// The scenarios shipped with dreamscope (whatif/scenarios/*.toml, embedded at build time).
struct BuiltinScenario {
  std::string_view name;
  std::string_view toml;
};
std::span<const BuiltinScenario> builtin_scenarios();

// A built-in by name, or else a TOML file at that path. Throws ScenarioError.
Scenario find_scenario(const std::string& name_or_path);

// Expressions over named values: numbers, booleans, strings in '...', + - * / ( ),
// < <= > >= == !=, && || !. Used for "${...}" values and for `--fail-if` gates.
using ExpressionValues = std::map<std::string, ParameterValue>;
ParameterValue evaluate_expression(std::string_view expression, const ExpressionValues& values);

} // namespace dreamscope::whatif
