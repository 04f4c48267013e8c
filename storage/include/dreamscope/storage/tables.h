// One definition per table: the columns of every table of a Trace, each listed once.
//
// Everything that handles a table's columns is made from these lists: the record structs and
// the columnar event tables (trace.h), the builder's column work (adding, sorting, reserving),
// the copy (trace_copy.h), the trace.db schema, writer and reader (storage/src/tracedb), and the
// part log's records (storage/src/tracelog). columns.h turns each list into C++ values that
// code iterates; docs/design-notes.md, "One definition per table", says why and how.
//
// A table is a macro that calls X once per column, in the record's member order:
//
//   X(C++ type, member, default value, encoding, "SQLite column definition")
//
// The SQLite definition's first word is the column's name in trace.db. The encoding names how
// the value is stored (in trace.db and in the part log) and what a reader checks of it:
//
//   Track     a TrackId: an integer; readers refuse one that names no track, and a copy maps
//             it to the output's track (leaving the row out where the track is left out)
//   String    a StringId: an integer; readers refuse one that names no string, a copy maps it
//   Start     the row's time: an integer in trace.db; in the part log, the difference from the
//             start of the record before it (2-3 bytes where the time takes 8)
//   End       the row's end, stored as its duration from the row's `start`
//   Int       a signed integer (int64 or int32), stored as it is
//   Optional  an int64 that kNoValue marks absent: NULL in trace.db, 0 in the part log
//   Unsigned  a small unsigned integer
//   Enum      an enumeration; each reader checks its values (as each did before this header)
//   Process   a ProcessId, an index into Trace::processes(); kNoIndex (NULL) when there is none
//   Device    a DeviceId, an index into Trace::devices(); kNoIndex (NULL) when there is none
//   Text      a std::string
//   Real      a double
//   Cost      a double that a negative value marks absent (NULL in trace.db)
//   Launch    a kernel's LaunchConfig: a row of the `launch` table in trace.db, an index into
//             Trace::launch_configs() in the columnar table, the configuration itself at the
//             end of the part log's record
//
// Adding a column is one edit: append it to its table's list (appended, so that the part log's
// records keep their layout), then document it in docs/trace-format.md (a test compares the
// two). A trace.db or part log written before the column existed reads it as its default.
//
// Comments inside the lists are /* */: a // comment would swallow the line's continuation.
#pragma once

#include <cstdint>

namespace dreamscope::columns {

// The encodings above, as types.
struct Track {};
struct String {};
struct Start {};
struct End {};
struct Int {};
struct Optional {};
struct Unsigned {};
struct Enum {};
struct Process {};
struct Device {};
struct Text {};
struct Real {};
struct Cost {};
struct Launch {};

// What a columnar table (CudaApiTable, ...) holds of a column: the value, except a launch
// configuration, which it holds as an index into Trace::launch_configs().
template <class Encoding, class T>
struct Stored {
  using type = T;
};
template <class T>
struct Stored<Launch, T> {
  using type = std::uint32_t;
};

} // namespace dreamscope::columns

// The lists are tables, a column a line, which clang-format would not keep.
// clang-format off

// The columns a row on a track from `start` to `end` begins with, in the tables of such rows.
#define DREAMSCOPE_SPAN_COLUMNS(X)                      \
  X(TrackId, track, {}, Track, "track INTEGER NOT NULL") \
  X(TimeNs,  start, 0, Start, "start INTEGER NOT NULL") \
  X(TimeNs,  end,   0, End,   "dur INTEGER NOT NULL")

// ProcessInfo: the processes of the trace. In trace.db, the `process` table; what a process was
// in a distributed job is the second list, in `process_rank` (added after schema v1 was released:
// older files lack it), and in the part log it follows the first (version 4 appended it).
#define DREAMSCOPE_PROCESS_COLUMNS(X)                                                                 \
  X(std::int64_t, pid,         0,        Int,      "pid INTEGER NOT NULL")                            \
  X(std::int64_t, parent_pid,  kNoValue, Optional, "parent_pid INTEGER")                              \
  X(std::string,  name,        {},       Text,     "name TEXT")                                       \
  X(std::string,  command,     {},       Text,     "command TEXT")                                    \
  X(TimeNs,       start,       kNoValue, Optional, "start INTEGER")                                   \
  X(TimeNs,       end,         kNoValue, Optional, "end INTEGER")                                     \
  X(std::int64_t, exit_status, kNoValue, Optional, "exit_status INTEGER") /* code, or 128 + signal */

// Where the process stood in a distributed job (docs/multi-rank.md): its global rank, its rank on
// its machine and the job's size, as the launcher told it (RANK, LOCAL_RANK, WORLD_SIZE and their
// MPI and Slurm equivalents; Kineto's distributedInfo). kNoValue: not a rank (a single-process
// run, or the launcher itself). A rank's data-loader workers inherit its rank. `host`: the machine
// it ran on, "" when unknown. `clock_offset`: what was added to this process's timestamps to put
// them on the job's one clock when its ranks came from machines whose clocks differ (0: none).
#define DREAMSCOPE_PROCESS_RANK_COLUMNS(X)                                                     \
  X(std::int64_t, rank,         kNoValue, Optional, "rank INTEGER")                            \
  X(std::int64_t, local_rank,   kNoValue, Optional, "local_rank INTEGER")                      \
  X(std::int64_t, world_size,   kNoValue, Optional, "world_size INTEGER")                      \
  X(std::string,  host,         {},       Text,     "host TEXT")                               \
  X(TimeNs,       clock_offset, 0,        Int,      "clock_offset INTEGER NOT NULL DEFAULT 0")

// DeviceInfo: a GPU as cross-GPU prediction needs it (Habitat's wave scaling: bandwidth, clock,
// SMs). `ordinal`: the CUDA device index within its process; `process`: that process, if known.
#define DREAMSCOPE_DEVICE_COLUMNS(X)                                                                        \
  X(std::int64_t,  ordinal,                      0,        Int,     "ordinal INTEGER NOT NULL")             \
  X(ProcessId,     process,                      kNoIndex, Process, "process INTEGER REFERENCES process")   \
  X(std::string,   name,                         {},       Text,    "name TEXT")                            \
  X(std::int64_t,  sm_count,                     0,        Int,     "sm_count INTEGER")                     \
  X(std::int64_t,  core_clock_khz,               0,        Int,     "core_clock_khz INTEGER")               \
  X(std::int64_t,  memory_clock_khz,             0,        Int,     "memory_clock_khz INTEGER")             \
  X(std::int64_t,  memory_bus_width_bits,        0,        Int,     "memory_bus_width_bits INTEGER")        \
  X(std::int64_t,  memory_bandwidth_bytes_per_s, 0,        Int,     "memory_bandwidth_bytes_per_s INTEGER") \
  X(std::int64_t,  global_memory_bytes,          0,        Int,     "global_memory_bytes INTEGER")          \
  X(std::int64_t,  compute_capability_major,     0,        Int,     "compute_capability_major INTEGER")     \
  X(std::int64_t,  compute_capability_minor,     0,        Int,     "compute_capability_minor INTEGER")

// TrackInfo: a CPU thread (its process and OS thread id) or a GPU stream (its device and CUDA
// stream id): the rows of a timeline and the resources of the simulator.
#define DREAMSCOPE_TRACK_COLUMNS(X)                                                                                 \
  X(TrackKind,     kind,    TrackKind::CpuThread, Enum,     "kind INTEGER NOT NULL")                                \
  X(ProcessId,     process, kNoIndex,             Process,  "process INTEGER REFERENCES process") /* CPU threads */ \
  X(std::int64_t,  tid,     kNoValue,             Optional, "tid INTEGER") /* CPU threads */                        \
  X(DeviceId,      device,  kNoIndex,             Device,   "device INTEGER REFERENCES device") /* GPU streams */   \
  X(std::int64_t,  stream,  kNoValue,             Optional, "stream INTEGER") /* GPU streams */                     \
  X(std::string,   name,    {},                   Text,     "name TEXT")

// CudaApiRecord: one CUDA API call on a CPU thread. `external_id`: the enclosing operator (Kineto
// External id, CUPTI external correlation); `stream` and `event`: the call's CUDA stream and
// event arguments (record / wait / synchronize).
#define DREAMSCOPE_CUDA_API_COLUMNS(X)                                              \
  DREAMSCOPE_SPAN_COLUMNS(X)                                                        \
  X(StringId,     name,        0,                String,   "name INTEGER NOT NULL") \
  X(std::int32_t, cbid,        0,                Int,      "cbid INTEGER")          \
  X(ApiKind,      kind,        ApiKind::Runtime, Enum,     "kind INTEGER")          \
  X(std::int64_t, correlation, kNoValue,         Optional, "correlation INTEGER")   \
  X(std::int64_t, external_id, kNoValue,         Optional, "external_id INTEGER")   \
  X(std::int32_t, result,      0,                Int,      "result INTEGER")        \
  X(std::int64_t, stream,      kNoValue,         Optional, "stream INTEGER")        \
  X(std::int64_t, event,       kNoValue,         Optional, "event INTEGER")

// GpuOpRecord: work on a GPU stream. `subkind`: CopyKind for a memcpy, SyncKind for a sync;
// `launch`: a kernel's; `bytes`: a memcpy's or memset's; `event`: the CUDA event a sync waited for.
#define DREAMSCOPE_GPU_OP_COLUMNS(X)                                                                           \
  X(TrackId,      track,       {},                Track,    "track INTEGER NOT NULL") /* a GPU stream track */ \
  X(GpuOpKind,    kind,        GpuOpKind::Kernel, Enum,     "kind INTEGER NOT NULL")                           \
  X(std::uint8_t, subkind,     0,                 Unsigned, "subkind INTEGER")                                 \
  X(TimeNs,       start,       0,                 Start,    "start INTEGER NOT NULL")                          \
  X(TimeNs,       end,         0,                 End,      "dur INTEGER NOT NULL")                            \
  X(StringId,     name,        0,                 String,   "name INTEGER NOT NULL")                           \
  X(std::int64_t, correlation, kNoValue,          Optional, "correlation INTEGER")                             \
  X(LaunchConfig, launch,      {},                Launch,   "launch INTEGER REFERENCES launch")                \
  X(std::int64_t, bytes,       0,                 Int,      "bytes INTEGER")                                   \
  X(std::int64_t, event,       kNoValue,          Optional, "event INTEGER")

// AnnotationRecord: a range on a CPU thread, or on a GPU stream (Kineto's gpu_user_annotation).
// `domain`: "dreamscope", an NVTX domain, "pytorch", ...; `category`: "step", "operation", "fetch",
// "prep", "wait", "cpu_op", ...; `payload`: dreamscope's batch id or step number; `external_id`
// links operators to their CUDA API calls; `filled_from`: for a range the tracer did not record
// (inside a probe step, which counted its inner ranges), the start of the recorded step of the
// same thread whose range it was copied from (storage/src/tracelog/probe_step_fill.h).
#define DREAMSCOPE_ANNOTATION_COLUMNS(X)                                    \
  DREAMSCOPE_SPAN_COLUMNS(X)                                                \
  X(StringId,     name,        0,        String,   "name INTEGER NOT NULL") \
  X(StringId,     domain,      0,        String,   "domain INTEGER")        \
  X(StringId,     category,    0,        String,   "category INTEGER")      \
  X(std::int64_t, payload,     kNoValue, Optional, "payload INTEGER")       \
  X(std::int64_t, external_id, kNoValue, Optional, "external_id INTEGER") \
  X(TimeNs,       filled_from, kNoValue, Optional, "filled_from INTEGER")

// FlowRecord: a link between two points on two tracks (batch produced -> consumed, event record ->
// wait, launch -> kernel in imported traces).
#define DREAMSCOPE_FLOW_COLUMNS(X)                                               \
  X(StringId,     kind,       0,        String,   "kind INTEGER")                \
  X(TrackId,      from_track, {},       Track,    "from_track INTEGER NOT NULL") \
  X(TimeNs,       from_time,  0,        Int,      "from_time INTEGER NOT NULL")  \
  X(TrackId,      to_track,   {},       Track,    "to_track INTEGER NOT NULL")   \
  X(TimeNs,       to_time,    0,        Int,      "to_time INTEGER NOT NULL")    \
  X(std::int64_t, id,         kNoValue, Optional, "flow_id INTEGER")

// CalibrationRecord: what one recorded event of a kind ("nvtx_range", "nvtx_mark", "cuda_api",
// "kernel_record", ...) costs the traced process, and how that was measured.
#define DREAMSCOPE_CALIBRATION_COLUMNS(X)                              \
  X(std::string,  event_kind, {}, Text, "event_kind TEXT PRIMARY KEY") \
  X(double,       cost_ns,    0,  Real, "cost_ns REAL NOT NULL")       \
  X(std::int64_t, samples,    0,  Int,  "samples INTEGER")             \
  X(std::string,  method,     {}, Text, "method TEXT")

// OverheadRecord: time the profiler itself spent on a thread, `kind` naming which.
#define DREAMSCOPE_OVERHEAD_COLUMNS(X)         \
  DREAMSCOPE_SPAN_COLUMNS(X)                   \
  X(StringId, kind, 0, String, "kind INTEGER")

// ThreadLoadRecord (trace.h says what it is for): `cpu_ns` the CPU time the thread ran in the
// window, `runqueue_ns` the time it was runnable but waited for a core (kNoValue: unknown);
// `events` it recorded and `cost_samples` recording calls timed in the window; the mean cost of a
// range (push + pop, start + end) and of a mark (< 0: none timed); `probe_events` the second
// records a cost probe made in the window (0: a plain window; docs/trace-format.md).
#define DREAMSCOPE_THREAD_LOAD_COLUMNS(X)                                             \
  DREAMSCOPE_SPAN_COLUMNS(X)                                                          \
  X(TimeNs,       cpu_ns,        kNoValue, Optional, "cpu_ns INTEGER")                \
  X(TimeNs,       runqueue_ns,   kNoValue, Optional, "runqueue_ns INTEGER")           \
  X(std::int64_t, events,        0,        Int,      "events INTEGER NOT NULL")       \
  X(std::int64_t, cost_samples,  0,        Int,      "cost_samples INTEGER NOT NULL") \
  X(double,       range_cost_ns, -1,       Cost,     "range_cost_ns REAL")            \
  X(double,       mark_cost_ns,  -1,       Cost,     "mark_cost_ns REAL")            \
  X(std::int64_t, probe_events,  0,        Int,      "probe_events INTEGER NOT NULL DEFAULT 0")

// MemoryEventRecord (trace.h says what it is): the CPU thread that allocated or released, when,
// c10::DeviceType (0 CPU, 1 CUDA (ROCm's too), other accelerators), the device's index (-1 for
// the CPU), the block's address (an unsigned one as its bit pattern), the bytes (> 0: allocated,
// < 0: released), and the bytes in use on the device and held by the allocator after it.
#define DREAMSCOPE_MEMORY_EVENT_COLUMNS(X)                                        \
  X(TrackId,      track,           {},       Track,    "track INTEGER NOT NULL")  \
  X(TimeNs,       time,            0,        Start,    "time INTEGER NOT NULL")   \
  X(std::int64_t, device_type,     kNoValue, Optional, "device_type INTEGER")     \
  X(std::int64_t, device_id,       kNoValue, Optional, "device_id INTEGER")       \
  X(std::int64_t, addr,            kNoValue, Optional, "addr INTEGER")            \
  X(std::int64_t, bytes,           0,        Int,      "bytes INTEGER NOT NULL")  \
  X(std::int64_t, total_allocated, kNoValue, Optional, "total_allocated INTEGER") \
  X(std::int64_t, total_reserved,  kNoValue, Optional, "total_reserved INTEGER")

// clang-format on
