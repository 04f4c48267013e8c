// Merging the part logs of one traced job into one Trace: what `dreamscope trace` does once
// the job has ended (docs/tracing.md), and where a merge over the ranks of a job will go.
//
// Each process of the job wrote its own part, a trace log (trace_log.h, `*.dslog`), into one
// folder. The parts are merged in the order their processes started. A part whose process
// was killed is still merged (it holds what the tracer flushed) and makes the result
// incomplete; a part that cannot be read is left out, with a warning, and makes it
// incomplete too. Each data-pipeline batch gets a flow from the end of the loader's `prep`
// that made it to the end of the `wait` that took it, whichever threads and processes
// they ran in.
#pragma once

#include "dreamscope/storage/trace.h"

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace dreamscope {

// What the launcher of the job knows and the parts do not.
struct JobFacts {
  std::string command;       // the job's command line (meta.command)
  std::int64_t root_pid = 0; // the process the launcher started
  // Its wait status decoded (exit code, or 128 + signal): an image that exec'ed into
  // another has none of its own, and one killed by a signal could not write it.
  std::int64_t root_exit_status = kNoValue;
  std::string root_program;  // what it was started as: names a root that left no part
  std::vector<std::string> warnings; // the launcher's own (no CUDA driver): meta.warnings
  std::int64_t cpu_cores = 0;        // cores the job could run on (meta.cpu_cores); 0: unknown
  // What was asked for and found: why a job that recorded nothing did (MergedJob::no_events).
  std::string sources = "cuda,nvtx"; // `dreamscope trace --trace`
  bool cuda_driver = true;           // libcuda.so.1 could be loaded
};

struct MergedJob {
  Trace trace;
  std::size_t parts = 0;     // parts merged
  std::size_t processes = 0; // processes in the trace
  std::size_t events = 0;    // events in the trace
  bool complete = true;      // every part was read and closed by its process
  // What the merge found (a part left out, a process that did not close its part), one
  // line each; they are in meta.warnings too, with the parts' and the launcher's.
  std::vector<std::string> warnings;
  // Empty when the job recorded an event (holds_no_events, trace_summary.h); else why none, as
  // well as the parts and the launcher can tell: what NVTX gave, then what CUDA gave
  // ("no process of the job made an NVTX call; no CUDA driver on this machine ..."). Also
  // meta.no_events, where every command that refuses the trace reads it.
  std::string no_events;
};

// Merges every `*.dslog` in `dir`. Never throws for a bad part (it is left out and named in
// the warnings); throws TraceError if `dir` cannot be listed.
MergedJob merge_part_logs(const std::filesystem::path& dir, const JobFacts& job);

} // namespace dreamscope
