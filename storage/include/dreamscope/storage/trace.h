// The in-memory trace: what the CPU threads and the GPU did during one run.
//
// A `Trace` is immutable and columnar. Events live in three tables (CUDA API calls, GPU
// operations, annotations), each sorted by (track, start), so a track's events are one
// contiguous, time-sorted range and a time window is two binary searches. Names are
// interned. Traces come from the reader (a trace.db), from importers, or from the
// simulator through `TraceBuilder`; all are the same type, so every analysis works on
// measured and predicted runs alike.
#pragma once

#include "dreamscope/storage/strong_index.h"
#include "dreamscope/storage/tables.h"

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace dreamscope {

// Rows of the event tables, tracks, processes and devices are numbered by kinds of their own
// (strong_index.h: CudaApiIndex, GpuOpIndex, AnnotationIndex, TrackId, ProcessId, DeviceId;
// kNoIndex for none), so that one cannot be passed for another.
using TimeNs = std::int64_t;    // nanoseconds on the trace's one clock
using StringId = std::uint32_t; // index into Trace::strings(); 0 is the empty string

inline constexpr std::int64_t kNoValue = std::numeric_limits<std::int64_t>::min();

// Input that cannot be used: the message names the file (or the trace's origin) and the problem.
class TraceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Where the trace came from; stored in meta.source.
enum class TraceSource : std::uint8_t { Tracer, Kineto, Nsys, Simulator };
std::string_view to_string(TraceSource s);
std::optional<TraceSource> trace_source_from_string(std::string_view s);

enum class TrackKind : std::uint8_t { CpuThread = 0, GpuStream = 1 };

enum class ApiKind : std::uint8_t { Runtime = 0, Driver = 1 };

enum class GpuOpKind : std::uint8_t { Kernel = 0, Memcpy = 1, Memset = 2, Sync = 3 };
std::string_view to_string(GpuOpKind k);

// GpuOp::subkind for memcpy: the direction (values follow CUpti_ActivityMemcpyKind).
enum class CopyKind : std::uint8_t {
  Unknown = 0, HtoD = 1, DtoH = 2, HtoA = 3, AtoH = 4, AtoA = 5, AtoD = 6, DtoA = 7,
  DtoD = 8, HtoH = 9, PtoP = 10
};
std::string_view to_string(CopyKind k);

// GpuOp::subkind for sync: what was waited for (values follow CUpti_ActivitySynchronizationType).
enum class SyncKind : std::uint8_t {
  Unknown = 0, EventSynchronize = 1, StreamWaitEvent = 2, StreamSynchronize = 3,
  ContextSynchronize = 4
};
std::string_view to_string(SyncKind k);

// The stream id of a GPU sync record that waited for no one stream (a context-wide sync):
// CUPTI's CUPTI_SYNCHRONIZATION_INVALID_VALUE read as an unsigned 32-bit id, which PyTorch
// profiler traces, Nsight Systems exports and the tracer all keep as the record's stream.
inline constexpr std::int64_t kContextWideStream = 4294967295;

// The records below are made from the tables' definitions (tables.h), which say what each
// member is: one member per column, in the order listed there, with its default.
#define DREAMSCOPE_RECORD_MEMBER(type, member, value, encoding, sql) type member = value;
#define DREAMSCOPE_RECORD(Record, COLUMNS)           \
  struct Record {                                    \
    COLUMNS(DREAMSCOPE_RECORD_MEMBER)                \
    bool operator==(const Record&) const = default; \
  }

// A process of the trace: its pid, parent, name, command line, lifetime and wait status decoded
// (code, or 128 + signal), then where it stood in a distributed job (`info` shows it).
struct ProcessInfo {
  DREAMSCOPE_PROCESS_COLUMNS(DREAMSCOPE_RECORD_MEMBER)
  DREAMSCOPE_PROCESS_RANK_COLUMNS(DREAMSCOPE_RECORD_MEMBER)

  bool is_rank() const { return rank != kNoValue; }
  bool operator==(const ProcessInfo&) const = default;
};

// A GPU as cross-GPU prediction needs it (Habitat's wave scaling: bandwidth, clock, SMs).
DREAMSCOPE_RECORD(DeviceInfo, DREAMSCOPE_DEVICE_COLUMNS);

// A CPU thread or a GPU stream: the rows of a timeline and the resources of the simulator.
DREAMSCOPE_RECORD(TrackInfo, DREAMSCOPE_TRACK_COLUMNS);

// One CUDA API call as written by a producer (tracer, importer, simulator).
DREAMSCOPE_RECORD(CudaApiRecord, DREAMSCOPE_CUDA_API_COLUMNS);

// A kernel's launch configuration; shared by every launch with the same one. A grid, block or
// register count of 0 was not recorded (no kernel runs with none); shared memory may really be
// 0, so a producer that did not say how much (a Kineto event without "shared memory") writes
// kNotRecorded (any negative value reads so).
struct LaunchConfig {
  static constexpr std::int32_t kNotRecorded = -1;
  std::int32_t grid[3] = {0, 0, 0};
  std::int32_t block[3] = {0, 0, 0};
  std::int32_t registers_per_thread = 0;
  std::int32_t shared_memory_static = 0;
  std::int32_t shared_memory_dynamic = 0;

  bool operator==(const LaunchConfig&) const = default;
  bool shared_memory_recorded() const { return shared_memory_static >= 0; }
  // Static and dynamic shared memory per block in bytes; 0 when not recorded.
  std::int64_t shared_memory() const {
    return std::int64_t{std::max(shared_memory_static, 0)} + std::max(shared_memory_dynamic, 0);
  }
};

// One operation on a GPU stream: a kernel, a copy, a memset or a sync.
DREAMSCOPE_RECORD(GpuOpRecord, DREAMSCOPE_GPU_OP_COLUMNS);

// What a CUDA API call waited for or recorded, where the input says it apart from the call
// (PyTorch profiler traces say it on the GPU sync record of a wait): see
// TraceBuilder::set_call_targets.
struct CallTarget {
  std::int64_t correlation = kNoValue; // of the call
  std::int64_t stream = kNoValue;      // as CudaApiRecord::stream
  std::int64_t event = kNoValue;       // as CudaApiRecord::event
};

// A range on a CPU thread (an NVTX range, an annotation, an operator) or a GPU stream.
DREAMSCOPE_RECORD(AnnotationRecord, DREAMSCOPE_ANNOTATION_COLUMNS);

// A link between two points on two tracks: batch produced -> consumed, event record -> wait,
// launch -> kernel in imported traces.
DREAMSCOPE_RECORD(FlowRecord, DREAMSCOPE_FLOW_COLUMNS);

// What one recorded event costs the traced process (measured at tracer start, or by
// `dreamscope calibrate`); the basis of overhead correction.
DREAMSCOPE_RECORD(CalibrationRecord, DREAMSCOPE_CALIBRATION_COLUMNS);

// Time the profiler itself spent on a thread (CUPTI's OVERHEAD records, buffer flushes).
DREAMSCOPE_RECORD(OverheadRecord, DREAMSCOPE_OVERHEAD_COLUMNS);

// What the tracer saw of one traced thread over a window of the run [start, end): the CPU it
// got and the time it sat runnable without a core (the kernel's per-thread schedstat, read
// by the writer thread), and what recording its events cost it, timed in the hot path on a
// sampled fraction of its calls. The basis of overhead correction in the run's own state,
// where start-up calibration (CalibrationRecord) measured another.
DREAMSCOPE_RECORD(ThreadLoadRecord, DREAMSCOPE_THREAD_LOAD_COLUMNS);

// One allocation or release as the PyTorch profiler records it (Kineto's "[memory]" instant
// events): on which thread and when, on which device, at which address, how many bytes
// (negative: a release), and the allocator's totals after it. What the input did not say is
// kNoValue (PyTorch before 1.10 wrote no address and no totals).
DREAMSCOPE_RECORD(MemoryEventRecord, DREAMSCOPE_MEMORY_EVENT_COLUMNS);
#undef DREAMSCOPE_RECORD_MEMBER
#undef DREAMSCOPE_RECORD

// The event tables, for what refers to a row of any of them (event args).
enum class EventTable : std::uint8_t { CudaApi = 0, GpuOp = 1, Annotation = 2 };
std::string_view to_string(EventTable t);

// A row of any of the event tables (what an event arg belongs to). Made from a typed row, which
// says its table, so that the two cannot disagree; or, in code that handles every table alike,
// from a table and a plain row number, spelled out at the call.
struct EventRow {
  EventTable table = EventTable::CudaApi;
  std::uint32_t row = 0;

  constexpr EventRow() = default;
  constexpr EventRow(CudaApiIndex i) : table(EventTable::CudaApi), row(i) {}
  constexpr EventRow(GpuOpIndex i) : table(EventTable::GpuOp), row(i) {}
  constexpr EventRow(AnnotationIndex i) : table(EventTable::Annotation), row(i) {}
  constexpr EventRow(EventTable t, std::uint32_t r) : table(t), row(r) {}
  // A typed row says its own table: EventRow(i), not EventRow(table, i).
  template <class Tag>
  EventRow(EventTable, StrongIndex<Tag>) = delete;

  bool operator==(const EventRow&) const = default;
};

// One argument of an event that the tables have no column for: what importers find in
// their input beyond the schema (Kineto's NCCL collective metadata, `kernel_backend`,
// CUPTI range-profiler counters, input shapes). Rare fields live here, in a side table,
// so the event rows stay packed.
enum class ArgType : std::uint8_t { Int = 0, Double = 1, String = 2, Json = 3 };
struct EventArg {
  StringId key = 0;
  ArgType type = ArgType::String;
  std::int64_t int_value = 0; // Int
  double double_value = 0;    // Double
  StringId text = 0;          // String: the text; Json: the value's JSON (array, object, bool, null)

  bool operator==(const EventArg&) const = default;
};

// Columnar tables, one vector per column of the record (tables.h), of the same name, indexed by
// the table's rows (`Index`: another table's row does not index it); a GPU op's `launch` is an
// index into Trace::launch_configs() (0 = none). Within each table, rows are sorted by (track,
// start, longer first).
#define DREAMSCOPE_TABLE_COLUMN(T, member, value, encoding, sql) \
  IndexedVector<Index, columns::Stored<columns::encoding, T>::type> member;

struct CudaApiTable {
  using Index = CudaApiIndex;
  DREAMSCOPE_CUDA_API_COLUMNS(DREAMSCOPE_TABLE_COLUMN)

  std::size_t size() const { return start.size(); }
  CudaApiRecord row(CudaApiIndex i) const;
};

struct GpuOpTable {
  using Index = GpuOpIndex;
  DREAMSCOPE_GPU_OP_COLUMNS(DREAMSCOPE_TABLE_COLUMN)

  std::size_t size() const { return start.size(); }
  // The row with its launch configuration resolved (`launch_configs`: Trace::launch_configs()).
  GpuOpRecord row(GpuOpIndex i, const std::vector<LaunchConfig>& launch_configs) const;
};

struct AnnotationTable {
  using Index = AnnotationIndex;
  DREAMSCOPE_ANNOTATION_COLUMNS(DREAMSCOPE_TABLE_COLUMN)
  // Derived on build: nesting on the track (ranges that do not nest properly are
  // treated as siblings of what they overlap).
  IndexedVector<Index, AnnotationIndex> parent; // kNoIndex at the top level
  IndexedVector<Index, std::uint16_t> depth;

  std::size_t size() const { return start.size(); }
  AnnotationRecord row(AnnotationIndex i) const;
};
#undef DREAMSCOPE_TABLE_COLUMN

// [begin, end) of a track's rows in one table; Index is that table's row (GpuOpIndex, ...).
template <class Index>
struct EventRange {
  Index begin{};
  Index end{};
  std::size_t size() const { return end - begin; }
  bool empty() const { return begin == end; }
  bool operator==(const EventRange&) const = default;
};
using CudaApiRange = EventRange<CudaApiIndex>;
using GpuOpRange = EventRange<GpuOpIndex>;
using AnnotationRange = EventRange<AnnotationIndex>;

class TraceBuilder;

class Trace {
 public:
  Trace();

  // meta: source, command, host, start/end, complete, dropped_events, warnings, ...
  const std::map<std::string, std::string>& meta() const { return meta_; }
  std::string meta_value(const std::string& key, std::string fallback = {}) const;
  // The cores the traced job could run on (meta cpu_cores, written by `dreamscope trace`): a
  // whole number from 1 to 2^20, or 0 when the trace does not say or says something else.
  std::int64_t cpu_cores() const;
  TraceSource source() const { return source_; }
  bool complete() const { return complete_; }
  std::int64_t dropped_events() const { return dropped_events_; }
  // CPU time of the tracer's writer threads (meta tracer_writer_cpu_ns), kNoValue when the
  // trace does not say: what the tracer took from the machine beside the traced threads.
  std::int64_t tracer_writer_cpu_ns() const { return tracer_writer_cpu_ns_; }
  // Earliest start and latest end over all events (0, 0 for an empty trace).
  TimeNs begin_time() const { return begin_time_; }
  TimeNs end_time() const { return end_time_; }

  std::string_view str(StringId id) const { return strings_[id]; }
  const std::vector<std::string>& strings() const { return strings_; }
  // The id of an interned string, if the trace has it.
  std::optional<StringId> find_string(std::string_view s) const;

  const std::vector<ProcessInfo>& processes() const { return processes_; }
  const std::vector<DeviceInfo>& devices() const { return devices_; }
  const std::vector<TrackInfo>& tracks() const { return tracks_; }
  const std::vector<LaunchConfig>& launch_configs() const { return launch_configs_; }

  const CudaApiTable& cuda_api() const { return cuda_api_; }
  const GpuOpTable& gpu_ops() const { return gpu_ops_; }
  const AnnotationTable& annotations() const { return annotations_; }
  const std::vector<FlowRecord>& flows() const { return flows_; }
  const std::vector<CalibrationRecord>& calibration() const { return calibration_; }
  const std::vector<OverheadRecord>& overheads() const { return overheads_; }
  // Sorted by track, then start.
  const std::vector<ThreadLoadRecord>& thread_loads() const { return thread_loads_; }
  // Sorted by time; events of one time keep the order they were added in (the profiler's).
  const std::vector<MemoryEventRecord>& memory_events() const { return memory_events_; }

  // A track's rows in each table.
  CudaApiRange cuda_api_on(TrackId t) const { return cuda_api_ranges_[t]; }
  GpuOpRange gpu_ops_on(TrackId t) const { return gpu_op_ranges_[t]; }
  AnnotationRange annotations_on(TrackId t) const { return annotation_ranges_[t]; }

  // Rows of a track that may overlap [from, to): binary search on start, widened by the
  // track's longest event so that long events that began before `from` are included.
  // The range can hold events that end before `from`; callers test `end > from`.
  CudaApiRange cuda_api_in(TrackId t, TimeNs from, TimeNs to) const;
  GpuOpRange gpu_ops_in(TrackId t, TimeNs from, TimeNs to) const;
  AnnotationRange annotations_in(TrackId t, TimeNs from, TimeNs to) const;

  // Children of an annotation, in time order.
  std::vector<AnnotationIndex> annotation_children(AnnotationIndex a) const;
  // The innermost annotation on a track that contains time t: of the ranges enclosing the last
  // one to start at or before t, the deepest that has not ended. O(log n) however deep the
  // nesting or long the ranges.
  std::optional<AnnotationIndex> innermost_annotation_at(TrackId t, TimeNs time) const;

  // The args of one event row, in the order the producer added them; empty if none.
  std::span<const EventArg> args_of(EventRow row) const;
  // The arg named `key` of one event row, if it has one.
  const EventArg* find_arg(EventRow row, std::string_view key) const;
  // The arg as a number (Int, or Double truncated toward zero) or as text (String and Json
  // as stored, numbers formatted), if the event has it.
  std::optional<std::int64_t> arg_int(EventRow row, std::string_view key) const;
  std::optional<std::string> arg_text(EventRow row, std::string_view key) const;
  std::size_t arg_count() const;

  // Lookup by correlation id: the GPU ops a CUDA API call launched, and the reverse.
  std::vector<GpuOpIndex> gpu_ops_with_correlation(std::int64_t correlation) const;
  std::optional<CudaApiIndex> cuda_api_with_correlation(std::int64_t correlation) const;

  std::size_t event_count() const {
    return cuda_api_.size() + gpu_ops_.size() + annotations_.size();
  }
  // Bytes held by this Trace's tables and strings (for the memory benchmark).
  std::size_t memory_bytes() const;

 private:
  friend class TraceBuilder;

  std::map<std::string, std::string> meta_;
  TraceSource source_ = TraceSource::Tracer;
  bool complete_ = false;
  std::int64_t dropped_events_ = 0;
  std::int64_t tracer_writer_cpu_ns_ = kNoValue;
  TimeNs begin_time_ = 0;
  TimeNs end_time_ = 0;

  std::vector<std::string> strings_;
  std::vector<StringId> strings_sorted_; // string ids in the order of their text
  std::vector<ProcessInfo> processes_;
  std::vector<DeviceInfo> devices_;
  std::vector<TrackInfo> tracks_;
  std::vector<LaunchConfig> launch_configs_;

  // A cache line each: the trace reader fills the three tables from three threads at once,
  // and a push_back writes its column's end pointer; tables that shared a line made it bounce.
  alignas(64) CudaApiTable cuda_api_;
  alignas(64) GpuOpTable gpu_ops_;
  alignas(64) AnnotationTable annotations_;
  std::vector<FlowRecord> flows_;
  std::vector<CalibrationRecord> calibration_;
  std::vector<OverheadRecord> overheads_;
  std::vector<ThreadLoadRecord> thread_loads_;
  std::vector<MemoryEventRecord> memory_events_;

  // Per event table: args sorted by row (stable), and each arg's row (of that table).
  struct ArgColumn {
    std::vector<std::uint32_t> row;
    std::vector<EventArg> arg;
  };
  ArgColumn args_[3];

  std::vector<CudaApiRange> cuda_api_ranges_;
  std::vector<GpuOpRange> gpu_op_ranges_;
  std::vector<AnnotationRange> annotation_ranges_;
  // Per annotation, an ancestor to jump to (skew-binary jump pointers): with the parent, the
  // first ancestor still open at a time is found in O(log depth) steps, as ancestors' ends
  // never decrease going up.
  std::vector<AnnotationIndex> annotation_jump_;
  std::vector<TimeNs> cuda_api_max_dur_, gpu_op_max_dur_, annotation_max_dur_;
  // Rows with a correlation id, ordered by it (4 bytes a row, not 16 for (id, row) pairs).
  std::vector<GpuOpIndex> gpu_by_correlation_;
  std::vector<CudaApiIndex> api_by_correlation_;
};

// Builds a Trace in memory: the reader, the importers and the simulator all use it.
// Add events in any order; build() sorts, indexes and derives annotation nesting.
class TraceBuilder {
 public:
  TraceBuilder();

  StringId intern(std::string_view s);
  void set_meta(const std::string& key, std::string value);
  void set_source(TraceSource s);

  ProcessId add_process(ProcessInfo p);
  DeviceId add_device(DeviceInfo d);
  TrackId add_track(TrackInfo t);
  // The track of (process, tid) or (device, stream), created if new.
  TrackId thread_track(ProcessId process, std::int64_t tid, std::string_view name = {});
  TrackId stream_track(DeviceId device, std::int64_t stream, std::string_view name = {});

  // Each returns the row's index in insertion order, which add_arg() takes. The three event
  // tables' adds touch only their own table (the GPU ops' also the launch configurations), so
  // three threads may each add to one of them at once, once reserve() has run; the trace
  // reader does. Everything else on the builder is for one thread at a time.
  CudaApiIndex add(const CudaApiRecord& r);
  GpuOpIndex add(const GpuOpRecord& r);
  AnnotationIndex add(const AnnotationRecord& r);
  // A GPU op whose launch configuration intern_launch() gave `launch` for (r.launch is not
  // read): a reader that meets each configuration once by its own id interns it once, not
  // once per kernel. Of the GPU ops' table, as add(const GpuOpRecord&) is.
  GpuOpIndex add(const GpuOpRecord& r, std::uint32_t launch);
  // The index of a launch configuration in Trace::launch_configs(), added if new; 0 for none.
  std::uint32_t intern_launch(const LaunchConfig& c);
  // An arg of the row that add() returned `row` for; build() moves it along with its row.
  void add_arg(EventRow row, const EventArg& arg);
  void add_arg(EventRow row, std::string_view key, std::int64_t value);
  void add_arg(EventRow row, std::string_view key, std::string_view text);
  // Gives each CUDA API row whose correlation id a target has that target's stream and
  // event, where the row has none: the calls then say what they waited for or recorded, as
  // the tracer's rows do, whatever order the input gave calls and sync records in.
  void set_call_targets(std::vector<CallTarget> targets);
  void add(const FlowRecord& r) { trace_.flows_.push_back(r); }
  void add(const CalibrationRecord& r) { trace_.calibration_.push_back(r); }
  void add(const OverheadRecord& r) { trace_.overheads_.push_back(r); }
  void add(const ThreadLoadRecord& r) { trace_.thread_loads_.push_back(r); }
  void add(const MemoryEventRecord& r) { trace_.memory_events_.push_back(r); }
  // An event an import counted without keeping it (ImportDetail::WithoutOperators): the trace's
  // span covers it, and meta import_events_summarized counts it (summarized_event_count).
  void add_summarized(TimeNs start, TimeNs end);

  // Room for that many rows (and `args` args per table), so that an importer that can guess
  // its size does not copy and fault in each column again every time it doubles.
  void reserve(std::size_t api, std::size_t gpu_ops, std::size_t annotations, std::size_t args = 0);
  std::size_t track_count() const { return trace_.tracks_.size(); }
  const std::vector<TrackInfo>& tracks() const { return trace_.tracks_; }
  const std::vector<ProcessInfo>& processes() const { return trace_.processes_; }
  const std::vector<DeviceInfo>& devices() const { return trace_.devices_; }
  std::string_view str(StringId id) const { return trace_.strings_[id]; }
  // Importers learn names (Kineto's metadata events) after the tracks' first events.
  TrackInfo& track(TrackId id) { return trace_.tracks_[id]; }
  ProcessInfo& process(ProcessId id) { return trace_.processes_[id]; }
  DeviceInfo& device(DeviceId id) { return trace_.devices_[id]; }
  std::size_t row_count(EventTable table) const;

  // What the trace is read from (a file's path, "predicted trace"): build() names it in errors.
  void set_origin(std::string origin) { origin_ = std::move(origin); }

  // Checks the invariants below, then sorts, indexes and derives annotation nesting. Rows
  // already in (track, start, longer-first) order skip the sort: the reader's case.
  //
  // Every Trace that leaves build() holds, whatever file it came from (limits.h has the bounds):
  // - every event, flow, overhead, thread-load and memory-event row names an existing track,
  //   and every string id exists;
  // - timestamps are within +-limits::kMaxAbsTimestampNs and end >= start, so durations are
  //   finite, non-negative, and start + duration cannot overflow;
  // - a thread load starts at or after 0; its CPU and run-queue times are kNoValue or in
  //   [0, limits::kMaxAbsTimestampNs], its counts non-negative, its costs finite and at most
  //   limits::kMaxCalibrationCostNs (negative: none timed);
  // - a memory event's byte count is within +-limits::kMaxAbsBytes, its totals kNoValue or
  //   within it too, so that sums of them saturate rather than overflow;
  // - tracks name existing processes and devices; args name existing rows;
  // - event names are at most limits::kMaxNameBytes long;
  // - calibration costs are finite and non-negative;
  // - strings are valid UTF-8 (ill-formed sequences are replaced by U+FFFD, not refused).
  // A row that breaks one throws TraceError: "<origin>: <N> <table> rows <problem>; first: ...".
  Trace build() &&;

 private:
  // The invariants build() promises (trace_invariants.cpp), checked on the rows as added.
  void check_invariants() const;
  void repair_strings();

  Trace trace_;
  // Interned strings, by open addressing over their ids: slot i holds an id + 1 (0: empty),
  // the slots a power of two, each string's hash kept by its id. An importer interns every
  // name, category, arg key and arg text (1.4 M lookups for the MTIA trace's 7 k strings);
  // std::unordered_map spent a division, two pointer chases and a copy of each string on it.
  std::vector<StringId> string_slots_;
  std::vector<std::uint64_t> string_hashes_;
  void grow_string_slots();
  // Launch configurations by value. Kernels repeat one configuration in runs (a trace.db's
  // gpu_op rows come a stream at a time), so the last one interned is checked first.
  struct LaunchHash {
    std::size_t operator()(const LaunchConfig& c) const noexcept;
  };
  std::unordered_map<LaunchConfig, std::uint32_t, LaunchHash> launch_ids_;
  LaunchConfig last_launch_;
  std::uint32_t last_launch_id_ = 0;
  std::map<std::pair<ProcessId, std::int64_t>, TrackId> thread_tracks_;
  std::map<std::pair<DeviceId, std::int64_t>, TrackId> stream_tracks_;
  std::string origin_ = "trace";
  std::int64_t summarized_ = 0;
  TimeNs summarized_start_ = 0, summarized_end_ = 0;
};

// Events an import counted without keeping them (TraceBuilder::add_summarized): 0 for a
// trace that kept every event it read.
std::int64_t summarized_event_count(const Trace& trace);

} // namespace dreamscope
