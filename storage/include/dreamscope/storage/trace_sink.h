// What records a run as it happens: TraceWriter (trace.db, trace_file.h) and TraceLogWriter
// (the tracer's part log, trace_log.h). The tracer's target and its CUPTI decoder write through
// TraceSink, so either file can sit behind them. This header needs nothing but the records:
// the tracer's part-log library includes it without SQLite or the rest of storage.
#pragma once

#include "dreamscope/storage/trace.h"

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

// The tables a sink takes a row of per add(), as X(what add returns, record, ...): an event
// table's add returns the event's id, which add_arg takes (ids count the events of all three
// event tables from 1, in the order added); memory events are numbered in the order added, at
// one time that order stands. A table added to tables.h that a producer writes is added here,
// and each writer then fails to compile until it writes it. `...` is passed on to X.
#define DREAMSCOPE_SINK_TABLES(X, ...)             \
  X(std::int64_t, CudaApiRecord, __VA_ARGS__)      \
  X(std::int64_t, GpuOpRecord, __VA_ARGS__)        \
  X(std::int64_t, AnnotationRecord, __VA_ARGS__)   \
  X(void, FlowRecord, __VA_ARGS__)                 \
  X(void, CalibrationRecord, __VA_ARGS__)          \
  X(void, OverheadRecord, __VA_ARGS__)             \
  X(void, ThreadLoadRecord, __VA_ARGS__)           \
  X(void, MemoryEventRecord, __VA_ARGS__)

#define DREAMSCOPE_SINK_ADD(Returns, Record, VIRTUAL, SPECIFIER) VIRTUAL Returns add(const Record& r) SPECIFIER;

// Every method of a sink, listed once: TraceSink declares them `virtual ... = 0`, each writer
// `override` (DREAMSCOPE_TRACE_SINK_OVERRIDES), so that the interface and its two writers cannot
// drift apart. Ids are the writer's own:
//   intern         a string's id (0 for ""), each distinct string written once
//   add_process, add_device, add_track
//                  the row's index, from 0, in the order added
//   rename_track   a thread named after its track was written (nvtxNameOsThread)
//   add_arg        an arg of the event `event` (an id add() returned); key and text are this
//                  writer's string ids (from intern())
//   flush          commits what was added: after it returns, a killed process loses none of it
//   close          sets meta.complete (1 unless told the data is incomplete), makes the file
//                  durable and closes it
#define DREAMSCOPE_TRACE_SINK_METHODS(VIRTUAL, SPECIFIER)                                   \
  VIRTUAL const std::filesystem::path& path() const SPECIFIER;                              \
  VIRTUAL StringId intern(std::string_view s) SPECIFIER;                                    \
  VIRTUAL void set_meta(const std::string& key, const std::string& value) SPECIFIER;        \
  VIRTUAL ProcessId add_process(const ProcessInfo& p) SPECIFIER;                            \
  VIRTUAL void update_process(ProcessId id, const ProcessInfo& p) SPECIFIER;                \
  VIRTUAL DeviceId add_device(const DeviceInfo& d) SPECIFIER;                               \
  VIRTUAL TrackId add_track(const TrackInfo& t) SPECIFIER;                                  \
  VIRTUAL void rename_track(TrackId id, std::string_view name) SPECIFIER;                   \
  DREAMSCOPE_SINK_TABLES(DREAMSCOPE_SINK_ADD, VIRTUAL, SPECIFIER)                           \
  VIRTUAL void add_arg(std::int64_t event, const EventArg& arg) SPECIFIER;                  \
  VIRTUAL void flush() SPECIFIER;                                                           \
  VIRTUAL void close(bool complete = true) SPECIFIER;

// In a writer's class: its declarations of every method of TraceSink.
#define DREAMSCOPE_TRACE_SINK_OVERRIDES DREAMSCOPE_TRACE_SINK_METHODS(, override)

namespace dreamscope {

class TraceSink {
 public:
  virtual ~TraceSink() = default;
  DREAMSCOPE_TRACE_SINK_METHODS(virtual, = 0)
};

} // namespace dreamscope
