// The facts about a trace that `dreamscope info` prints: where it came from, its time
// span, who ran (processes, threads, devices, streams), how many events of each kind,
// the top kernels, and whether it is complete.
#pragma once

#include "dreamscope/storage/import_issues.h"
#include "dreamscope/storage/trace.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dreamscope {

struct KernelTotal {
  std::string name;
  std::int64_t count = 0;
  TimeNs total = 0;
};

struct ThreadSummary {
  std::int64_t tid = 0;
  std::string name;
  std::size_t events = 0;
  // What its thread_load rows say it ran and waited for a core, summed (kNoValue: no rows with
  // them). A thread with CPU time and no events worked without recording anything (an OpenMP
  // or BLAS pool, PyTorch's autograd thread).
  std::int64_t cpu_ns = kNoValue;
  std::int64_t runqueue_ns = kNoValue;
};

struct ProcessSummary {
  std::int64_t pid = 0;
  std::string name;
  std::string command;
  std::int64_t exit_status = kNoValue;
  std::int64_t rank = kNoValue, local_rank = kNoValue, world_size = kNoValue; // ProcessInfo's
  std::string host;
  TimeNs clock_offset = 0;
  std::vector<ThreadSummary> threads;
};

// The ranks of a distributed job in one trace (none for a single-process run).
struct RankSummary {
  std::size_t ranks = 0;         // distinct ranks with a process in the trace
  std::int64_t world_size = kNoValue; // as the ranks said (the largest claim)
  std::size_t hosts = 0;         // distinct hosts named among them (0: none known)
  std::size_t clock_aligned = 0; // ranks whose timestamps were shifted onto the job's clock
  TimeNs largest_clock_offset = 0; // of those, the largest shift (absolute)
};

struct StreamSummary {
  std::int64_t device_ordinal = 0;
  std::int64_t stream = 0;
  std::string name;
  std::size_t events = 0;
};

struct EventCounts {
  std::size_t runtime_api = 0, driver_api = 0;
  std::size_t kernels = 0, memcpys = 0, memsets = 0, syncs = 0;
  std::size_t annotations = 0, flows = 0, overheads = 0, thread_loads = 0, memory_events = 0;
  std::size_t total() const {
    return runtime_api + driver_api + kernels + memcpys + memsets + syncs + annotations + flows + overheads +
           thread_loads + memory_events;
  }
};

struct TraceSummary {
  std::string source;
  std::string command;
  std::string host;
  std::string cpu_cores; // of the traced machine, as the job saw them; empty when unknown
  // CPU time of the tracer's writer threads, all processes together (kNoValue: not known):
  // what the tracer took from the machine beside its cost on the traced threads.
  std::int64_t tracer_writer_cpu_ns = kNoValue;
  // Pauses of recording the traced program asked for (ds_tracing_pause; meta recording_paused):
  // how many, and how long in all. Steps then missing from the trace were never recorded.
  std::size_t recording_pauses = 0;
  std::int64_t recording_paused_ns = 0;
  // What recording cost in the run against start-up (calibration rows and thread loads, the
  // basis of overhead correction; docs/simulation.md): a range's calibrated cost, what the
  // hot path's own timing of a range read at start-up and, on average, in the run, and what a
  // range cost work around it at start-up (-1: not measured); how long the traced threads ran
  // and waited for a core in the windows in which they recorded events (kNoValue: unknown).
  double range_cost_ns = -1;
  double range_timed_at_start_ns = -1;
  double range_in_work_at_start_ns = -1;
  double range_timed_in_run_ns = -1;
  double clock_read_ns = -1; // two back-to-back reads of the tracer's clock, at start-up
  std::int64_t threads_cpu_ns = kNoValue;
  std::int64_t threads_runqueue_ns = kNoValue;
  std::string schema_version;
  std::string dreamscope_version;
  // False when the tracer did not close the trace cleanly, and for an imported trace that
  // lost events on import (import_events_dropped says how many, import_issues why).
  bool complete = false;
  bool closed_cleanly = false; // the recording itself was complete (meta complete)
  std::int64_t dropped_events = 0;
  std::int64_t import_events_read = 0;    // imported traces: events in the input file
  std::int64_t import_events_dropped = 0; // of those, events that are not in the trace
  std::vector<RecordedImportIssue> import_issues; // by stable id, most frequent first
  std::string warnings;
  TimeNs begin = 0, end = 0;
  // Processes with events on their threads; an imported trace's others (Nsight Systems
  // lists every process its system sampler saw) are only counted.
  std::vector<ProcessSummary> processes;
  std::size_t processes_without_events = 0;
  RankSummary ranks;
  std::string job_notes; // what loading a job from several files inferred (meta.job_notes), one per line
  std::vector<DeviceInfo> devices;
  std::vector<StreamSummary> streams;
  EventCounts counts;
  std::vector<KernelTotal> top_kernels; // by total time, longest first
  // Why the trace holds nothing to analyze (empty_trace_problem); empty when it holds something.
  std::string nothing_to_analyze;
};

TraceSummary summarize(const Trace& trace, std::size_t top_kernels = 5);

// A pause of recording the program asked for (ds_tracing_pause): nothing of the process's NVTX
// was recorded from start to end.
struct RecordingPause {
  std::int64_t pid = 0;
  TimeNs start = 0, end = 0;
};
// The pauses in the trace's meta recording_paused ("pid start end; ..."); malformed ones left out.
std::vector<RecordingPause> recording_pauses(const Trace& trace);

// Whether a trace holds no event on the CPU or the GPU side: no annotation (NVTX range or
// mark, operator), CUDA API call, GPU operation, memory event, nor operator an import counted
// without keeping (summarized_event_count). Process, thread, device, calibration, overhead,
// thread-load and flow rows alone are nothing to analyze.
bool holds_no_events(const Trace& trace);

// Why a trace is not fit to analyze, in one line; empty when it is. The one decision every
// command makes before it analyzes, replays, compares or exports a trace (docs/limits.md):
// an imported trace, as empty_import_problem says; any other (a recording, a prediction) when
// it holds no events (holds_no_events), with what the recording said about why (meta
// no_events, written by merge_part_logs).
std::string empty_trace_problem(const Trace& trace);
// How empty_trace_problem and `dreamscope trace` say it, before the why.
inline constexpr const char* kNoEventsText = "the trace holds no events (no NVTX range or mark, CUDA API call or GPU work)";

// Why an imported trace is not fit to analyze: it kept none of its events, or none of the
// CPU or of the GPU events the file holds. One line with the counts and the main reasons;
// empty when the trace is usable or was not imported.
std::string empty_import_problem(const Trace& trace);

} // namespace dreamscope
