// analyzers: where the time of a run went, across the stack, on any `Trace` (measured or
// predicted). Each analysis is a pure function of a `const Trace&` returning value structs.
//
// - cross_stack_breakdown: RL-Scope's per-operation split into CPU only (framework / CUDA
//   API), GPU only and CPU+GPU overlap, from one sweep over all intervals.
// - hta_*: Holistic Trace Analysis's numbers (temporal, idle time, kernel types, comm/comp
//   overlap, launch stats, queue length, user annotations), with HTA's own parsing rules,
//   in HTA's unit (µs).
// - step_breakdown, gpu_efficiency, operator_kernel_views, distributed_view, module_view,
//   memory_view, memory_curve: the TensorBoard profiler plugin's overview, GPU metrics,
//   operator, kernel, distributed, module and memory views, as the plugin computes them.
// - data_stalls, top_kernels.
// - critical_path_analysis: the replayed run's critical path, split by what bound it.
// report.h renders all of them (`analyze_trace`) as text, Markdown, JSON or HTML.
#pragma once

#include "dreamscope/storage/trace.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace dreamscope::analyzers {

// ---- Cross-stack breakdown (RL-Scope) ---------------------------------------------------

// Time of one operation (an innermost annotation on a CPU thread), split by what the stack
// was doing. Every instant of the trace in which the CPU or the GPU was busy is counted in
// exactly one cell of one operation.
struct OperationTime {
  std::string name;             // annotation name; "(no operation)" for unannotated time
  std::int64_t instances = 0;   // innermost annotations with this name
  TimeNs cpu_framework = 0;     // CPU only: inside the annotation, not in a CUDA API call
  TimeNs cpu_cuda_api = 0;      // CPU only: inside a CUDA API call
  TimeNs gpu_only = 0;          // GPU busy, no CPU activity (billed to the launching operation)
  TimeNs cpu_gpu_overlap = 0;   // CPU and GPU busy at once
  TimeNs cpu_only() const { return cpu_framework + cpu_cuda_api; }
  TimeNs total() const { return cpu_only() + gpu_only + cpu_gpu_overlap; }
};

struct CrossStackBreakdown {
  std::vector<OperationTime> operations; // by total time, largest first
  OperationTime all;                     // the sum over operations
};

CrossStackBreakdown cross_stack_breakdown(const Trace& trace);

// ---- HTA-compatible analyses -------------------------------------------------------------

using TimeUs = std::int64_t; // HTA's unit for Kineto traces

enum class KernelType : std::uint8_t { Communication, Memory, Computation, Other };
std::string_view to_string(KernelType t);
// HTA's regexes, matched at the start of the name, in this order.
KernelType classify_kernel(std::string_view name);

struct HtaOptions {
  // HTA keeps only events of completed ProfilerSteps when there are two or more.
  bool profiler_step_filter = true;
  // Gaps below this are "kernel_wait" (HTA's consecutive_kernel_delay).
  TimeUs consecutive_kernel_delay = 30;
  // HTA's include_memory_kernels for the kernel-type and per-kernel breakdowns.
  bool include_memory_kernels = true;
};

struct TemporalBreakdown {
  TimeUs idle = 0, compute = 0, non_compute = 0, kernel_time = 0;
  double idle_pct = 0, compute_pct = 0, non_compute_pct = 0; // rounded to 2 decimals
};

struct StreamIdleTime {
  std::int64_t device = kNoValue; // device ordinal
  std::int64_t stream = kNoValue;
  TimeUs host_wait = 0, kernel_wait = 0, other = 0;
  double host_wait_ratio = 0, kernel_wait_ratio = 0, other_ratio = 0; // rounded to 2 decimals
  TimeUs total() const { return host_wait + kernel_wait + other; }
};

// One row of HTA's kernel-type table: "COMPUTATION", "COMMUNICATION", or an overlap such
// as "COMPUTATION overlapping COMMUNICATION"; time on the merged intervals.
struct KernelTypeTime {
  std::string kernel_type;
  TimeUs sum = 0;
  double percentage = 0; // rounded to 1 decimal, as HTA
};

struct KernelNameStats {
  std::string name;
  KernelType type = KernelType::Other;
  std::int64_t count = 0;
  TimeUs sum = 0, min = 0, max = 0;
  double mean = 0, stddev = 0; // sample standard deviation (0 for one kernel), as pandas
};

struct KernelBreakdown {
  std::vector<KernelTypeTime> by_type;   // largest first
  std::vector<KernelNameStats> by_name;  // by type, then by sum, largest first
};

struct KernelLaunch {
  std::int64_t correlation = kNoValue;
  std::string runtime_name;
  std::string kernel_name;
  TimeUs cpu_duration = 0, gpu_duration = 0, launch_delay = 0;
};

struct LaunchSummary {
  std::int64_t count = 0;
  double mean_cpu_duration = 0, mean_gpu_duration = 0, mean_launch_delay = 0;
  TimeUs max_launch_delay = 0;
  std::int64_t short_kernels = 0; // gpu duration shorter than the launch's cpu duration
};

struct QueueLengthPoint {
  TimeUs ts = 0;
  std::int64_t queue_length = 0;
};

struct StreamQueueLength {
  std::int64_t device = kNoValue;
  std::int64_t stream = kNoValue;
  std::vector<QueueLengthPoint> series; // a step function: each point is a change
  std::int64_t max = 0;
  double mean = 0; // over the points, as HTA's describe()
};

struct AnnotationTotal {
  std::string name;
  std::int64_t count = 0;
  TimeUs sum = 0;
};

struct HtaReport {
  TemporalBreakdown temporal;
  std::vector<StreamIdleTime> idle_time;
  KernelBreakdown kernels;
  std::optional<double> comm_comp_overlap_pct; // none without communication kernels
  std::vector<KernelLaunch> launches;
  LaunchSummary launch_summary;
  std::vector<StreamQueueLength> queue_length;
  std::vector<AnnotationTotal> cpu_annotations; // by sum, largest first
  std::vector<AnnotationTotal> gpu_annotations;
  std::int64_t profiler_steps = 0;   // distinct ProfilerStep#N
  bool step_filter_applied = false;
};

HtaReport hta_analyze(const Trace& trace, const HtaOptions& options = {});
TemporalBreakdown hta_temporal_breakdown(const Trace& trace, const HtaOptions& options = {});
std::vector<StreamIdleTime> hta_idle_time_breakdown(const Trace& trace, const HtaOptions& options = {});
KernelBreakdown hta_kernel_breakdown(const Trace& trace, const HtaOptions& options = {});
std::optional<double> hta_comm_comp_overlap(const Trace& trace, const HtaOptions& options = {});
std::vector<KernelLaunch> hta_kernel_launches(const Trace& trace, const HtaOptions& options = {});
std::vector<StreamQueueLength> hta_queue_length(const Trace& trace, const HtaOptions& options = {});
std::vector<AnnotationTotal> hta_cpu_annotations(const Trace& trace, const HtaOptions& options = {});
std::vector<AnnotationTotal> hta_gpu_annotations(const Trace& trace, const HtaOptions& options = {});

// ---- TensorBoard profiler plugin ------------------------------------------------------------
// The views of PyTorch's TensorBoard profiler plugin (torch_tb_profiler), computed as the plugin
// computes them from a PyTorch profiler (Kineto) trace and tested against the plugin's own test
// suite (tests/analyzers/tb_plugin_conformance_test.cpp). Traces from other sources get the
// nearest equivalents; docs/analyze.md lists both and the few places we differ on purpose.

enum class StepCategory : std::uint8_t {
  Kernel, Memcpy, Memset, Communication, Runtime, DataLoader, CpuExec, Other
};
inline constexpr std::size_t kStepCategories = 8;
std::string_view to_string(StepCategory c);

struct StepTime {
  std::string name; // "ProfilerStep#3", a dreamscope "step 3", "(CPU span)" or "(whole trace)"
  // The step on the timeline: from the ProfilerStep's start (or the previous step's end, if
  // later) to the end of the GPU work launched from inside it, if that is later than its end.
  TimeNs start = 0, end = 0;
  TimeNs host_start = 0, host_end = 0; // the step annotation itself
  std::int64_t device_ops = 0;         // GPU ops launched by runtime calls inside [host_start, host_end]
  std::array<TimeNs, kStepCategories> time{}; // indexed by StepCategory; sums to end - start
  TimeNs duration() const { return end - start; }
};

// The overview's step time breakdown: each instant of a step goes to the first category, in
// enum order, active then; Other is what none claims.
struct StepBreakdown {
  std::vector<StepTime> steps;
  std::array<TimeNs, kStepCategories> average{}; // per step, rounded toward zero
  TimeNs average_duration = 0;
  // Whether the trace has any event of the category (the plugin's has_* flags).
  bool has_runtime = false, has_kernel = false, has_memcpy_or_memset = false, has_communication = false;
};

StepBreakdown step_breakdown(const Trace& trace);

struct UtilizationBucket {
  TimeNs start = 0;
  double utilization = 0; // share of the bucket with a kernel running
};

struct SmEfficiencyRange {
  TimeNs start = 0, end = 0;
  double efficiency = 0; // sum of the running kernels' blocks per SM, at most 1
};

// The plugin's GPU metrics for one device, over the steps [first step start, last step end].
struct DeviceEfficiency {
  std::int64_t device = kNoValue; // ordinal
  std::string name;
  TimeNs steps_time = 0;          // last step end - first step start, gaps between steps included
  TimeNs busy = 0;                // at least one kernel running, within that span
  double gpu_utilization = 0;     // busy / steps_time
  // Time-weighted blocks per SM of the running kernels, capped at 1, over steps_time. Kineto
  // records each kernel's blocks per SM; for other traces it is blocks / SMs from the launch
  // configuration. None if no kernel in the steps has it.
  std::optional<double> sm_efficiency;
  // Kernel-time weighted est. achieved occupancy of the kernels in the steps, as a fraction
  // (Kineto records it in percent; for other traces our estimate from the launch).
  std::optional<double> achieved_occupancy;
  std::int64_t kernels_with_blocks_per_sm = 0; // kernels with a positive blocks per SM, in or out of steps
  std::int64_t kernels_with_occupancy = 0;
  // The GPU-utilization timeline over the whole trace in buckets of 10^k µs (at most 100 of
  // them, the last one longer), then a closing point at the trace's end with 0.
  TimeNs bucket = 0;
  std::vector<UtilizationBucket> utilization_timeline;
  std::vector<SmEfficiencyRange> sm_efficiency_ranges; // where efficiency > 0, all kernels
};

std::vector<DeviceEfficiency> gpu_efficiency(const Trace& trace);

// One row of the operator view: the calls of one operator (or one operator and input shape)
// summed. Only plain operators are listed (not ProfilerStep, DataLoader, Optimizer.*, modules).
struct OperatorStats {
  std::string name;
  std::string input_shape; // Python's str() of the first call's "Input Dims" ("[]" without)
  std::int64_t calls = 0;
  TimeNs host = 0;
  TimeNs self_host = 0;   // less nested operators and the operator's own runtime calls
  TimeNs device = 0;      // GPU ops its runtime calls and its nested operators' launched
  TimeNs self_device = 0; // GPU ops its own runtime calls launched
  bool tc_eligible = false; // a tensor-core operator, or one that contains one or launched a TC kernel
  double tc_self_ratio = 0, tc_total_ratio = 0; // tensor-core kernel time / self_device, / device
};

// One row of the kernel view: the launches of one kernel by one operator with one launch
// configuration. A field the trace did not record is empty.
struct KernelOpStats {
  std::string name;
  std::string op_name; // the operator whose runtime call launched it; "CallTreeRoot" for kernels with no call
  std::optional<std::array<std::int64_t, 3>> grid, block;
  std::optional<std::int64_t> registers_per_thread, shared_memory;
  std::int64_t calls = 0;
  TimeNs total = 0, min = 0, max = 0;
  double mean = 0;
  double blocks_per_sm = 0, occupancy_pct = 0; // kernel-time weighted, missing values as 0
  bool tc_used = false, op_tc_eligible = false;
};

// Every kernel of the trace by name, largest total first (the plugin's kernel_stat).
struct KernelNameTotals {
  std::string name;
  bool tc_used = false;
  std::int64_t count = 0;
  TimeNs sum = 0, min = 0, max = 0;
  double mean = 0;
  double blocks_per_sm = 0, occupancy_pct = 0; // kernel-time weighted, missing values as 0
};

struct DeviceTensorCores {
  std::int64_t device = kNoValue;
  double ratio = 0; // tensor-core kernel time / kernel time, of kernels operators launched
};

struct OperatorKernelViews {
  std::vector<OperatorStats> by_name;           // first-seen order
  std::vector<OperatorStats> by_name_and_shape; // first-seen order
  std::vector<KernelOpStats> kernels;           // by (name, operator, launch), first-seen order
  std::vector<KernelNameTotals> kernel_totals;
  std::vector<DeviceTensorCores> tensor_cores;  // empty when no operator launched a kernel
  double tc_eligible_ops_kernel_ratio = 0;      // kernel time of the innermost TC-eligible operators
  double tc_used_ratio = 0;                     // tensor-core kernels' share of all kernel time
};

// The plugin's operator and kernel views (its call trees per thread, runtime calls tied to
// operators by external id).
OperatorKernelViews operator_kernel_views(const Trace& trace);

// The plugin's distributed view over the traces of a job's workers: per step and worker, how
// computation and communication overlapped, and how much of the collectives' time was data
// transfer rather than waiting for the other workers (the shortest instance of each collective
// across workers is its transfer time); per worker, the collectives (`nccl:` and `gloo:`
// operators) by name.
struct StepOverlap {
  std::string step; // a step's name, or "all": the mean over the worker's steps
  TimeNs computation_only = 0, overlap = 0, communication_only = 0, other = 0;
};

struct StepWait {
  std::string step; // a step's name, "" for collectives in no step, or "all"
  TimeNs transfer = 0, synchronizing = 0;
};

struct CollectiveStats {
  std::string name;
  std::int64_t calls = 0;
  std::int64_t bytes = 0; // inputs' elements times their type's size
  TimeNs latency = 0;     // the collective's operators and kernels, merged
  TimeNs transfer = 0;    // of that, the data transfer time
};

struct DistributedWorker {
  std::string name;
  std::size_t collectives = 0;    // collective operators (the plugin's communication nodes)
  std::vector<StepOverlap> overlap; // steps in order, then "all"
  std::vector<StepWait> wait;       // steps in order of their first collective, then "all"
  std::vector<CollectiveStats> collective_ops;
};

struct DistributedView {
  // False when a worker has no communication or the workers' collectives do not pair up (the
  // plugin then shows no distributed view).
  bool available = false;
  std::vector<DistributedWorker> workers; // by name
};

DistributedView distributed_view(const std::vector<std::pair<std::string, const Trace*>>& workers);

// The plugin's module view: the nn.Module scopes of a Kineto trace (python_function events with
// a "Python module id") in the hierarchy their "Python id" and "Python parent id" give, and
// the time of their calls. Empty for traces without them.

// A module (name and module id) and the modules it calls, Python functions in between skipped,
// in the order the plugin's walk from the innermost functions meets them.
struct ModuleTree {
  std::string name; // as in the trace: "nn.Module: Linear"
  std::int64_t module_id = kNoValue;
  std::vector<ModuleTree> children;
  bool operator==(const ModuleTree&) const = default;
};

// The modules no module calls, identical trees once, by name.
std::vector<ModuleTree> module_hierarchy(const Trace& trace);

// One module of the hierarchy, summed over all its calls (in the call trees of
// operator_kernel_views), wherever it was called from.
struct ModuleStats {
  std::string name; // without "nn.Module: "
  std::int64_t module_id = kNoValue;
  std::int64_t occurrences = 0; // calls
  std::int64_t operators = 0;   // plain operators called directly from it, over its calls
  TimeNs host = 0;
  TimeNs self_host = 0;   // less what it called (operators, modules, Python scopes)
  TimeNs device = 0;      // GPU ops launched from inside it
  TimeNs self_device = 0; // those of the operators it calls directly (it launches nothing itself)
  double average = 0;     // device / occurrences, or host / occurrences without device time
  std::vector<ModuleStats> children; // as in the hierarchy
};

// The hierarchy's roots with their times, by name.
std::vector<ModuleStats> module_view(const Trace& trace);

// The plugin's memory page, from the allocations and releases PyTorch's profile_memory records
// (Trace::memory_events(), Kineto's "[memory]" events). Devices are named as the plugin names
// them: "CPU", "GPU0", "GPU1", ...; events of other device types are left out (docs/analyze.md).
// Sizes are in bytes, times in ns since the profiler's start (the first event the plugin reads).

// One row of the memory statistics: the calls of one operator summed, on one device.
struct OperatorMemory {
  std::string name;
  std::int64_t calls = 0;              // calls of the operator inside the window
  std::int64_t size_increase = 0;      // bytes allocated less bytes released, by it and the operators it calls
  std::int64_t self_size_increase = 0; // by it alone
  std::int64_t allocations = 0;        // allocations, by it and the operators it calls
  std::int64_t self_allocations = 0;
  std::int64_t allocation_size = 0;    // bytes allocated, releases not subtracted
  std::int64_t self_allocation_size = 0;
  bool operator==(const OperatorMemory&) const = default;
};

// One row of the memory events table: an allocation and its release (the next release of the
// same address), or one of them alone when the other is not in the window or not recorded.
struct MemoryBlock {
  std::string op_name; // the allocating operator; "<unknown>" if none; an aten::empty* one as
                       // "<its caller> (aten::empty)"
  std::int64_t size = 0;
  std::optional<TimeNs> allocated, released; // since the profiler's start
  std::optional<TimeNs> duration;            // released - allocated, when both are here
  bool operator==(const MemoryBlock&) const = default;
};

struct DeviceMemory {
  std::string device;                      // "CPU", "GPU0", ...
  std::vector<OperatorMemory> operators;   // by name; rows of all zeros are left out
  std::vector<MemoryBlock> blocks;         // pairs in order of release, then allocations never
                                           // released, then releases of nothing allocated
};

// Times of the trace (absolute ns), both included; unset: unbounded.
struct MemoryWindow {
  std::optional<TimeNs> begin, end;
};

struct MemoryView {
  bool available = false;     // the trace has memory events (the plugin shows its memory page)
  TimeNs profiler_start = 0;  // where the tables' times count from, in the trace's time
  std::string default_device; // the first GPU by name, else "CPU"
  std::vector<DeviceMemory> devices; // by name
};

// The plugin's memory statistics and memory events tables over the window: each allocation
// and release belongs to the innermost operator open on its thread at its time (in the call
// trees of operator_kernel_views); a release takes the operator of the allocation it pairs with.
MemoryView memory_view(const Trace& trace, const MemoryWindow& window = {});

struct MemoryCurvePoint {
  TimeNs time = 0;             // since the profiler's start
  std::int64_t allocated = 0;  // the allocator's totals then
  std::int64_t reserved = 0;
  bool operator==(const MemoryCurvePoint&) const = default;
};

struct DeviceMemoryCurve {
  std::string device;
  std::vector<MemoryCurvePoint> points;
  std::int64_t peak_allocated = 0;
  std::optional<std::int64_t> device_memory; // a GPU's total memory, where the trace says it
};

// The plugin's memory curve: per device, the allocator's totals after each memory event that
// has an address and both totals (PyTorch 1.10 on). As a step plot (the plugin's default),
// each point but the first is preceded by one at its time with the previous point's totals.
struct MemoryCurve {
  TimeNs profiler_start = 0;
  std::string default_device;
  std::vector<DeviceMemoryCurve> devices; // by name; none without memory events
};

MemoryCurve memory_curve(const Trace& trace, bool step_plot = true);

// The TensorBoard plugin's estimate for one kernel, and the CUDA occupancy limit it uses.
double estimated_sm_efficiency(const LaunchConfig& launch, std::int64_t sm_count);
double theoretical_occupancy(const LaunchConfig& launch, const DeviceInfo& device);
double estimated_achieved_occupancy(const LaunchConfig& launch, const DeviceInfo& device);

// ---- Data stalls and top kernels -----------------------------------------------------------

struct StepDataStall {
  std::string step;
  std::int64_t number = kNoValue; // step_number(); kNoValue for "(whole trace)"
  TimeNs start = 0, end = 0;
  TimeNs data_wait = 0; // the training thread waiting for its batch (exposed stall)
  TimeNs fetch = 0;     // fetch work for the batches consumed in this step
  TimeNs prep = 0;      // preprocessing work for those batches
  std::int64_t batches = 0;
  double stall_fraction() const {
    return end > start ? static_cast<double>(data_wait) / static_cast<double>(end - start) : 0.0;
  }
};

struct TimeSpan {
  TimeNs start = 0, end = 0;
  bool operator==(const TimeSpan&) const = default;
};

struct DataStalls {
  std::string source; // "dreamscope annotations", "DataLoader operators", or "none"
  std::vector<StepDataStall> steps;
  std::vector<TimeSpan> waits; // the waits the steps' data_wait adds up, in time order
  TimeNs total_wait = 0, total_time = 0;
};

DataStalls data_stalls(const Trace& trace);

struct KernelTotal {
  std::string name;
  std::int64_t count = 0;
  TimeNs total = 0, min = 0, max = 0;
  double share = 0; // of all kernel time
};

std::vector<KernelTotal> top_kernels(const Trace& trace, std::size_t limit = 20);

// ---- Critical path (replay simulator) ------------------------------------------------------

// What a stretch of the critical path was spent on.
enum class PathCategory : std::uint8_t {
  CpuWork,       // a task on a CPU thread (framework code, a CUDA API call, untraced work)
  GpuWork,       // a kernel, memcpy or memset on a GPU stream
  LaunchLatency, // from a launch call's start to its GPU task's start
  SyncWait,      // a blocking call or a stream woken after the GPU work it waited for ended
  DataFlowWait,  // a consumer woken after the producer of its batch ended
  CollectiveWait, // a rank in a collective until the last rank arrived (multi-rank jobs)
  Gap,           // idle time on a thread or stream that no dependency explains
};
inline constexpr std::size_t kPathCategories = 7;
std::string_view to_string(PathCategory c);

// Time on the path in one category, on one thread or stream for work and gaps.
struct CriticalPathPart {
  PathCategory category = PathCategory::CpuWork;
  std::string resource;   // "thread 1 MainThread", "GPU 0 stream 7"; "" for launches and waits
  TimeNs time = 0;
  std::int64_t hops = 0;  // path links of this kind (a sync crossed is a hop of 0 ns or more; gaps: those > 0)
  double share = 0;       // of the path's length
};

struct CriticalPathOperation {
  std::string name;       // kernel, API call or annotation name; "(cpu work)" for untraced CPU time
  std::string kind;       // "kernel", "memcpy", "memset", "cuda_api", "annotation", "cpu_work"
  std::int64_t count = 0; // times on the path
  TimeNs time = 0;        // its own time on the path
  double share = 0;       // of the path's length
};

struct CriticalPathSummary {
  std::string name;          // "(whole run)" or the step's name
  TimeNs begin = 0, end = 0; // replayed
  std::array<TimeNs, kPathCategories> by_category{}; // indexed by PathCategory; sums to length()
  std::vector<CriticalPathPart> split;              // largest first
  std::vector<CriticalPathOperation> operations;     // largest first, at most the asked number
  std::size_t tasks = 0;     // tasks on the path
  std::string ends_with;     // the path's last task: "cudaEventQuery on thread 7 worker"
  double share_of_run = 0;   // length / the replayed run's length
  std::size_t index = 0;     // a step's place among all steps, in time order (0 for the run)
  TimeNs length() const { return end - begin; }
};

struct CriticalPathReport {
  bool available = false;    // false: the trace has no tasks to replay (see note)
  std::string note;
  TimeNs measured_span = 0;  // the measured run: first task start to last task end
  TimeNs replayed_span = 0;  // the replay of the unmodified run, what the path adds up to
  std::size_t unscheduled = 0;
  CriticalPathSummary run;
  std::vector<CriticalPathSummary> steps; // per step (find_steps) summarized, in time order
  std::vector<TimeNs> step_lengths;       // every step's path length, in time order
};

// Replays the trace's dependency graph (no overhead correction: the run as measured) and walks
// the chain of binding constraints back from the last task to end, for the whole run and from
// each step's last task back to the step's start. Every step is summarized, or with a
// `step_limit` the steps report.h's listed_steps picks by their path lengths: a summary takes
// about 600 bytes, 60 MB for a trace of 10^5 steps whose report lists 1000.
CriticalPathReport critical_path_analysis(const Trace& trace, std::size_t top_operations = 20,
                                          std::size_t step_limit = static_cast<std::size_t>(-1));

} // namespace dreamscope::analyzers
