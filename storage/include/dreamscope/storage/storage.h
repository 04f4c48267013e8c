// storage: the trace of one run, on disk and in memory.
//
// - trace.h: `Trace`, the immutable columnar model every other module reads, and
//   `TraceBuilder`, which importers and the simulator use to make one.
// - trace_file.h: the SQLite trace file (`TraceWriter`, `read_trace`, `write_trace`),
//   schema v1, documented in docs/trace-format.md.
// - trace_copy.h: one Trace's rows appended to another with remapped ids.
// - job.h: the ranks of a distributed job, and the Trace of one rank.
// - trace_log.h: the tracer's part files (`TraceLogWriter`, `read_trace_log`); trace_merge.h
//   merges the parts of one job into a Trace; tracer_environment.h names the variables a
//   launcher sets for the tracer.
// - trace_summary.h: the facts `dreamscope info` prints, computed from a Trace.
// - importers.h: PyTorch profiler JSON and Nsight Systems SQLite into a Trace, and
//   `load_trace()`, which opens any of them or a trace.db by content.
// - exporters.h: a Trace as Chrome trace JSON (Perfetto UI, chrome://tracing).
#pragma once

#include "dreamscope/storage/trace.h"
#include "dreamscope/storage/trace_file.h"
#include "dreamscope/storage/trace_copy.h"
#include "dreamscope/storage/job.h"
#include "dreamscope/storage/trace_summary.h"
#include "dreamscope/storage/importers.h"
#include "dreamscope/storage/exporters.h"
