// storage: the trace of one run, on disk and in memory.
//
// - trace.h: `Trace`, the immutable columnar model every other module reads, and
//   `TraceBuilder`, which importers and the simulator use to make one.
// - trace_file.h: the SQLite trace file (`TraceWriter`, `read_trace`, `write_trace`),
//   schema v1, documented in docs/trace-format.md.
// - trace_summary.h: the facts `dreamscope info` prints, computed from a Trace.
#pragma once

#include "dreamscope/trace.h"
#include "dreamscope/trace_file.h"
#include "dreamscope/trace_summary.h"
