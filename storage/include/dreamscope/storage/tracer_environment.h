// The environment contract between a launcher (`dreamscope trace`, `dreamscope calibrate`)
// and the tracer it preloads: the variables the launcher sets and the tracer reads, in every
// process of the job (the tracer passes them on across exec, even to a program that execs
// with an environment of its own). docs/tracing.md lists them for users who preload the
// tracer themselves. Header-only: the CLI includes it without linking the tracer or CUPTI.
#pragma once

namespace dreamscope::tracer_environment {

// Where each process writes its part file (a trace log, `<pid>-<time>-<n>.dslog`). Unset:
// the first traced process makes `dreamscope-<pid>.d` and sets it for its children.
inline constexpr char kOutputDir[] = "DREAMSCOPE_OUTPUT_DIR";
// What to record: a list that holds "cuda", "nvtx" or both (default both).
inline constexpr char kSources[] = "DREAMSCOPE_TRACE";
// Which CUDA API calls CUPTI records: "used" (only those an analysis reads: launches, copies,
// memsets, syncs, events, allocations, graphs), "most" (all but the frequent ones that launch
// no GPU work: cudaGetDevice, cuKernelGetName...), "all". Unset or anything else: "used".
inline constexpr char kCudaApi[] = "DREAMSCOPE_CUDA_API";
// Memory, in MiB (1 to 2^20, default 512), for the events of all the threads of a process
// not yet written; past it events are dropped and counted.
inline constexpr char kBufferMb[] = "DREAMSCOPE_BUFFER_MB";
// The job's command line as the user typed it: meta.command of every part.
inline constexpr char kCommand[] = "DREAMSCOPE_COMMAND";
// The recording window, in ns of CLOCK_MONOTONIC: it opens DELAY_NS after JOB_START_NS and
// lasts DURATION_NS (-1 or unset: to the end). Without JOB_START_NS there is no window.
inline constexpr char kJobStartNs[] = "DREAMSCOPE_JOB_START_NS";
inline constexpr char kDelayNs[] = "DREAMSCOPE_DELAY_NS";
inline constexpr char kDurationNs[] = "DREAMSCOPE_DURATION_NS";
// How often, in ms, the tracer asks CUPTI for completed GPU records (default 100; 0: only
// when CUPTI's buffers fill and at exit). What a SIGKILL can lose of the GPU side.
inline constexpr char kCuptiFlushMs[] = "DREAMSCOPE_CUPTI_FLUSH_MS";
// Cost probes, "GAP_MS[:LENGTH_MS]": every GAP_MS on average (unset or 0: none; at least four
// probes' length), for LENGTH_MS (default 5), the pushes inside two open ranges are counted and
// not recorded, so that overhead correction can measure what recording costs the job where
// that cost lands (docs/tracing.md, "Cost probes").
inline constexpr char kCostProbe[] = "DREAMSCOPE_COST_PROBE";
// Probe steps, N: one outermost range in N on average (from N/2 to 3N/2 apart), on every
// thread, counts the pushes inside two open ranges instead of recording them, and ends with a
// mark `cost probe step` (domain dreamscope.tracer) whose payload is how many it counted (0:
// none; unset: kDefaultCostProbeSteps). Overhead correction compares each with its recorded
// neighbours in wall time (docs/simulation.md, "Probe steps"); the merge fills what each counted
// from a recorded neighbour (storage/src/tracelog/probe_step_fill.h).
inline constexpr char kCostProbeSteps[] = "DREAMSCOPE_COST_PROBE_STEPS";
inline constexpr int kDefaultCostProbeSteps = 20;
// The writer's slice, in µs: a drain gives way to the job's waiting threads (sched_yield) after
// each such stretch of its busy time (writer_thread.cpp, WriterPacing; 0: never). Default
// kDefaultWriterSliceUs.
inline constexpr char kWriterSliceUs[] = "DREAMSCOPE_WRITER_SLICE_US";
inline constexpr int kDefaultWriterSliceUs = 200;
// What a probe step leaves in the trace, written by the tracer and read by the merge's fill and
// by overhead correction: its mark, in the tracer's own domain, and the overhead row of the
// counted ranges timed right after it.
inline constexpr char kProbeStepMark[] = "cost probe step";
inline constexpr char kTracerDomain[] = "dreamscope.tracer";
inline constexpr char kCountedRangesTimed[] = "tracer_counted_ranges_timed";
// An overhead row of this kind on a thread: the tracer's writer thread was busy from its start
// to its end (a drain of the buffers and the write behind it, every 10 ms) while the thread
// recorded (32 events at least). Not the tracer's work on that thread: where the writer shares
// a core or its caches with the thread, the thread runs slower meanwhile, and overhead
// correction measures by how much (docs/simulation.md, "The writer's drains").
inline constexpr char kWriterBusy[] = "tracer_writer_busy";
// The annotation library (libdreamscope-annotate.so) for the Python module to load.
inline constexpr char kAnnotateLib[] = "DREAMSCOPE_ANNOTATE_LIB";

// dreamscope's Python instrumentation (annotations/python/dreamscope/pytorch.py), read by
// the Python side only: how deep into a model forward ranges go (0: the model only; -1: no
// module ranges), and "1" to record PyTorch's per-operator NVTX ranges where CUDA is.
inline constexpr char kPythonModules[] = "DREAMSCOPE_PYTHON_MODULES";
inline constexpr char kPythonOps[] = "DREAMSCOPE_PYTHON_OPS";

// Every variable of the contract starts with this: what the tracer keeps across exec.
inline constexpr char kPrefix[] = "DREAMSCOPE_";

} // namespace dreamscope::tracer_environment
