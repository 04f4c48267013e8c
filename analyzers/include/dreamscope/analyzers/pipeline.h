// pipeline: where the time of the run's pipeline went, from the host to the GPU.
//
// - cross_stack_breakdown: RL-Scope's per-operation split into CPU only (framework / CUDA
//   API), GPU only and CPU+GPU overlap, from one sweep over all intervals.
// - data_stalls: per step, how long the training loop waited for its input batches, and the
//   fetch and preprocessing work behind them.
// - top_kernels: the kernels with the most GPU time, by name.
#pragma once

#include "dreamscope/storage/trace.h"

#include <cstddef>
#include <cstdint>
#include <string>
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

} // namespace dreamscope::analyzers
