// hta: Holistic Trace Analysis's numbers for one trace, with HTA's own parsing rules (its
// ProfilerStep filter, its kernel regexes, Kineto's µs as float64), in HTA's unit (µs):
// temporal breakdown, idle time per stream, kernel types and kernels, communication and
// computation overlap, kernel launches, queue length, CPU and GPU user annotations, what the
// straggler analysis reads of a rank, and kernels with their GPU user annotation.
// hta_analyze computes them all; each hta_* function one of them.
// tests/analyzers/hta_conformance_test.cpp checks them against what HTA itself reports.
#pragma once

#include "dreamscope/storage/trace.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dreamscope::analyzers {

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
  // Keep each idle gap (StreamIdleTime::intervals), for HTA's show_idle_interval_stats; off
  // by default because the rank summaries of a job keep their idle time and need only the sums.
  bool idle_intervals = false;
};

struct TemporalBreakdown {
  TimeUs idle = 0, compute = 0, non_compute = 0, kernel_time = 0;
  double idle_pct = 0, compute_pct = 0, non_compute_pct = 0; // rounded to 2 decimals
};

// HTA's IdleTimeType, in its order (its statistics list the categories in this order).
enum class IdleCategory : std::uint8_t { HostWait, KernelWait, Other };

// The gap before one kernel (its start less the previous kernel's end on the stream), and
// what HTA calls it.
struct IdleInterval {
  TimeUs gap = 0;
  IdleCategory category = IdleCategory::Other;
};

struct StreamIdleTime {
  std::int64_t device = kNoValue; // device ordinal
  std::int64_t stream = kNoValue;
  TimeUs host_wait = 0, kernel_wait = 0, other = 0;
  double host_wait_ratio = 0, kernel_wait_ratio = 0, other_ratio = 0; // rounded to 2 decimals
  // With HtaOptions::idle_intervals: the gap before each kernel but the first, in start order.
  std::vector<IdleInterval> intervals;
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

// The user annotations HTA's get_gpu_user_annotation_breakdown groups, one entry per range:
// names[name_index[i]] took dur[i] µs. Per range rather than per name, so that Python's
// statistics over them are pandas' own (HTA's groupby).
struct AnnotationDurations {
  std::vector<std::string> names;
  std::vector<std::uint32_t> name_index;
  std::vector<TimeUs> dur;
};

// HTA's iteration of an event: the number N of the ProfilerStep#N whose [ts, ts + dur) holds
// the start of a CPU event (a call, an annotation, a GPU op with no stream), and for a GPU op
// on a stream the iteration of its launch call; kNoIteration for neither.
inline constexpr std::int64_t kNoIteration = -1;

// The earliest start and the latest end (µs) of the events HTA puts in one iteration.
struct IterationSpan {
  std::int64_t iteration = kNoIteration;
  TimeUs start = 0, end = 0;
};

// What HTA's straggler analysis (get_potential_stragglers) reads of one rank: each
// iteration's span, and its communication kernels (names starting "ncclKernel", on a stream
// > 0, in an iteration > 0), one entry per kernel, in start order. The cross-rank part (the
// duration threshold, the kernel chosen, the ranking) is Python's, over all ranks at once.
struct StragglerEvents {
  std::vector<IterationSpan> iterations; // by iteration
  std::vector<std::string> names;
  std::vector<std::uint32_t> name_index;
  std::vector<std::int64_t> stream, iteration;
  std::vector<TimeUs> ts, dur;
};

// HTA's get_gpu_kernels_with_user_annotations for one rank, as columns: the GPU ops HTA's
// GPUKernelFilter keeps (on a stream with a correlation, or named "Event Sync" or "Context
// Sync"), by start then stream, each with the GPU user annotation HTA gives it: of those on
// its stream that overlap it ([ts, end) intervals), the shortest (HTA paints them longest
// first, each over the last). names[] holds every name and annotation; annotation is -1 for
// none.
struct AnnotatedKernels {
  bool has_gpu_annotations = false; // the trace has gpu_user_annotation events at all
  std::vector<std::string> names;
  std::vector<std::uint32_t> name;
  std::vector<std::int32_t> annotation;
  std::vector<GpuOpKind> kind;
  std::vector<std::int64_t> device, stream, correlation, external_id, bytes, iteration;
  std::vector<TimeUs> ts, dur;
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
AnnotationDurations hta_annotation_durations(const Trace& trace, bool gpu_side, const HtaOptions& options = {});
// The start (µs) of the trace's earliest event, which HTA subtracts from every time of a job
// (the earliest over its ranks) before it hands out events; none for an empty trace.
std::optional<TimeUs> hta_trace_start(const Trace& trace);
StragglerEvents hta_straggler_events(const Trace& trace, const HtaOptions& options = {});
AnnotatedKernels hta_kernels_with_annotations(const Trace& trace, const HtaOptions& options = {});

} // namespace dreamscope::analyzers
