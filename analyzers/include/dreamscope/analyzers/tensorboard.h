// tensorboard: the views of PyTorch's TensorBoard profiler plugin (torch_tb_profiler), computed
// as the plugin computes them from a PyTorch profiler (Kineto) trace and tested against the
// plugin's own test suite (tests/analyzers/tb_plugin_conformance_test.cpp): the overview's step
// time breakdown (step_breakdown), GPU metrics (gpu_efficiency), the operator and kernel views
// (operator_kernel_views), the distributed view across workers (distributed_view), the module
// view (module_hierarchy, module_view) and the memory page (memory_view, memory_curve), with the
// plugin's per-kernel SM efficiency and occupancy estimates. Traces from other sources get the
// nearest equivalents; docs/analyze.md lists both and the few places we differ on purpose.
#pragma once

#include "dreamscope/storage/trace.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dreamscope::analyzers {

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

} // namespace dreamscope::analyzers
