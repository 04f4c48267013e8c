// Copying one Trace into another with its ids remapped: what merging part logs, writing a
// Trace to a file and building a predicted trace from a measured one all do.
//
// `append_trace_ids()` adds a Trace's strings, processes, devices and tracks to the output
// and says where each went; `append_trace_rows()` then adds its event rows (with their
// args), flows, overheads, thread loads and memory events through that map. The caller may
// edit each row on the way, in the output's ids, or leave it out (the simulator moves rows in
// time; the merge notes where batches ended). Meta and calibration are the caller's: what to
// keep of them differs.
// The output is a TraceBuilder, or a TraceSink (a trace.db or trace log being written).
#pragma once

#include "dreamscope/storage/trace.h"
#include "dreamscope/storage/trace_file.h"

#include <functional>
#include <limits>
#include <vector>

namespace dreamscope {

// Where each id of the copied Trace went in the output; ids out of range map to kNoIndex.
struct TraceIdMap {
  std::vector<StringId> strings;
  std::vector<ProcessId> processes;
  std::vector<DeviceId> devices;
  std::vector<TrackId> tracks;

  ProcessId process(ProcessId p) const { return p < processes.size() ? processes[p] : ProcessId{kNoIndex}; }
  DeviceId device(DeviceId d) const { return d < devices.size() ? devices[d] : DeviceId{kNoIndex}; }
};

// Optional edits, called with the row's index in the copied Trace and the row already in the
// output's ids; an event, flow, overhead, thread-load or memory-event edit returns false to
// leave the row out.
struct TraceCopyEdits {
  // Which processes to copy, by index in the copied Trace (all when unset). The threads of a
  // process left out, its devices' streams and every row on them are left out too (a flow
  // when either end is), and their ids map to kNoIndex: cutting one rank out of a job.
  // A device whose process is unknown is copied with the first process kept.
  std::function<bool(ProcessId)> keep_process;
  std::function<void(ProcessInfo&)> process;
  std::function<bool(CudaApiIndex, CudaApiRecord&)> cuda_api;
  std::function<bool(GpuOpIndex, GpuOpRecord&)> gpu_op;
  std::function<bool(AnnotationIndex, AnnotationRecord&)> annotation;
  std::function<bool(FlowRecord&)> flow;
  std::function<bool(OverheadRecord&)> overhead;
  std::function<bool(ThreadLoadRecord&)> thread_load;
  std::function<bool(MemoryEventRecord&)> memory_event;
};

// Correlation ids are a per-process counter: two processes' traces copied into one would
// link one's launches to the other's kernels. `CorrelationSpace` gives each copied trace the
// shift (added to every correlation id of its calls and GPU operations) that keeps its ids
// apart from those of the traces copied before it; the first keeps its own ids.
class CorrelationSpace {
 public:
  std::int64_t shift_for(const Trace& in);

 private:
  std::int64_t next_free_ = std::numeric_limits<std::int64_t>::min();
};

TraceIdMap append_trace_ids(TraceBuilder& out, const Trace& in, const TraceCopyEdits& edits = {});
TraceIdMap append_trace_ids(TraceSink& out, const Trace& in, const TraceCopyEdits& edits = {});

// Every event row of `in` with its args, then its flows, overheads, thread loads and memory
// events (in their order in `in`); a row whose track is not in `ids` is an error of the
// caller's map (TraceError), one whose track maps to kNoIndex (a process left out) is left out.
void append_trace_rows(TraceBuilder& out, const Trace& in, const TraceIdMap& ids, const TraceCopyEdits& edits = {});
void append_trace_rows(TraceSink& out, const Trace& in, const TraceIdMap& ids, const TraceCopyEdits& edits = {});

} // namespace dreamscope
