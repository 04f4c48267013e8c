#include "dreamscope/whatif/replay.h"

#include <dreamscope/storage/trace_copy.h>

#include <algorithm>

namespace dreamscope::whatif {

TimeNs predicted_instant(const DependencyGraph& graph, const SimulationResult& result, ResourceId r, TimeNs measured) {
  const TaskId first = graph.resource_first(r), end = graph.resource_end(r);
  if (first == end) return measured;
  TaskId lo = first, hi = end;
  while (lo < hi) { // first task that starts after `measured`
    const TaskId mid = lo + (hi - lo) / 2;
    if (graph.measured_start(mid) <= measured) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (lo == first) {
    if (result.start[first] == kNoValue) return measured;
    return measured + (result.start[first] - graph.measured_start(first));
  }
  const TaskId k = lo - 1;
  if (result.start[k] == kNoValue) return measured;
  // Begun and never done (a blocking task whose wait a cycle held back): it keeps its pace.
  if (result.end[k] == kNoValue) return result.start[k] + (measured - graph.measured_start(k));
  if (measured <= graph.measured_end(k)) {
    return result.start[k] + std::min(measured - graph.measured_start(k), result.end[k] - result.start[k]);
  }
  return result.end[k] + (measured - graph.measured_end(k));
}

Trace make_predicted_trace(const Trace& measured, const DependencyGraph& graph, const SimulationResult& result,
                           bool overhead_corrected) {
  TraceBuilder b;
  b.set_source(TraceSource::Simulator);
  b.set_origin("the predicted trace");
  for (const auto& [key, value] : measured.meta()) {
    if (key != "source" && key != "complete") b.set_meta(key, value);
  }
  b.set_meta("predicted_from", std::string(to_string(measured.source())));
  b.set_meta("prediction", overhead_corrected ? "replay, tracer overhead removed" : "replay");
  // Ids stay as they are: the builder starts empty, so the copy numbers them as `measured`.
  const TraceIdMap ids = append_trace_ids(b, measured);
  // Threads and streams a what-if added (a pool of loader workers, a link).
  for (const auto& t : graph.added_resources()) b.add_track(t);
  const auto& api = measured.cuda_api();
  const auto& ops = measured.gpu_ops();
  const auto& ann = measured.annotations();
  b.reserve(api.size(), ops.size(), ann.size());

  // Begun and done: a task a cycle held back has no place in the predicted run.
  auto scheduled = [&](TaskId t) {
    return t != kNoTask && result.start[t] != kNoValue && result.end[t] != kNoValue && !graph.removed(t);
  };
  auto instant = [&](TrackId track, TimeNs x) { return predicted_instant(graph, result, track, x); };

  // Each row moves to where its tasks were scheduled (a what-if may also have moved it to
  // another resource); a row without tasks moves with the time around it on its track.
  TraceCopyEdits edits;
  edits.cuda_api = [&](CudaApiIndex row, CudaApiRecord& r) {
    const TaskId first = graph.api_first(row), last = graph.api_last(row);
    if (first != kNoTask) {
      if (!scheduled(first) || result.end[last] == kNoValue) return false;
      r.track = TrackId{graph.resource(first)};
      r.start = result.start[first];
      r.end = result.end[last];
    } else {
      r.start = instant(r.track, r.start);
      r.end = std::max(r.start, instant(r.track, r.end));
    }
    return true;
  };
  edits.annotation = [&](AnnotationIndex row, AnnotationRecord& r) {
    const TaskId first = graph.annotation_first(row), last = graph.annotation_last(row);
    if (first != kNoTask) {
      if (result.start[first] == kNoValue || result.end[last] == kNoValue) return false;
      r.track = TrackId{graph.resource(first)};
      r.start = result.start[first];
      r.end = std::max(r.start, result.end[last]);
    } else {
      r.start = instant(r.track, r.start);
      r.end = std::max(r.start, instant(r.track, r.end));
    }
    return true;
  };
  edits.gpu_op = [&](GpuOpIndex row, GpuOpRecord& r) {
    if (const TaskId t = graph.gpu_task(row); t != kNoTask) {
      if (!scheduled(t)) return false;
      r.track = TrackId{graph.resource(t)};
      r.start = result.start[t];
      r.end = result.end[t];
      return true;
    }
    // A GPU sync record shows a wait: it moves with the end of the call that waited.
    if (r.correlation != kNoValue) {
      if (auto call = measured.cuda_api_with_correlation(r.correlation); call) {
        const TaskId last = graph.api_last(*call);
        if (scheduled(last)) {
          const TimeNs shift = result.end[last] - graph.measured_end(last);
          r.start += shift;
          r.end += shift;
          return true;
        }
      }
    }
    const TimeNs end = r.end;
    r.start = instant(r.track, r.start);
    r.end = std::max(r.start, instant(r.track, end));
    return true;
  };
  edits.flow = [&](FlowRecord& f) {
    f.from_time = instant(f.from_track, f.from_time);
    f.to_time = instant(f.to_track, f.to_time);
    return true;
  };
  edits.overhead = [&](OverheadRecord& o) {
    if (overhead_corrected) return false; // the tracer's own time is what was removed
    o.start = instant(o.track, o.start);
    o.end = std::max(o.start, instant(o.track, o.end));
    return true;
  };
  // What the tracer measured of a thread: gone with the tracer's cost where that was
  // removed, else its window moves with the thread's time like an overhead row.
  edits.thread_load = [&](ThreadLoadRecord& l) {
    if (overhead_corrected) return false;
    l.start = instant(l.track, l.start);
    l.end = std::max(l.start, instant(l.track, l.end));
    return l.start >= 0; // a window the prediction moved before the clock's zero has no place
  };
  // An allocation or release moves with the time of the thread that made it, as a flow's end.
  edits.memory_event = [&](MemoryEventRecord& m) {
    m.time = instant(m.track, m.time);
    return true;
  };
  append_trace_rows(b, measured, ids, edits);
  // Tasks a what-if inserted: GPU work on streams, annotated CPU work on threads.
  const StringId synthetic = b.intern("synthetic"), dreamscope = b.intern("dreamscope");
  for (TaskId t = 0; t < graph.task_count(); ++t) {
    if (graph.source_row(t) != kNoIndex || graph.kind(t) == TaskKind::CpuWork || !scheduled(t)) continue;
    const StringId name = b.intern(graph.synthetic_name(t).empty() ? "synthetic" : graph.synthetic_name(t));
    if (graph.is_stream(graph.resource(t))) {
      GpuOpRecord r;
      r.track = TrackId{graph.resource(t)};
      r.kind = graph.kind(t) == TaskKind::Memcpy   ? GpuOpKind::Memcpy
               : graph.kind(t) == TaskKind::Memset ? GpuOpKind::Memset
                                                   : GpuOpKind::Kernel;
      r.name = name;
      r.start = result.start[t];
      r.end = result.end[t];
      b.add(r);
    } else {
      AnnotationRecord r;
      r.track = TrackId{graph.resource(t)};
      r.name = name;
      r.domain = dreamscope;
      r.category = synthetic;
      r.start = result.start[t];
      r.end = result.end[t];
      b.add(r);
    }
  }
  for (const auto& c : measured.calibration()) b.add(c);
  return std::move(b).build();
}

} // namespace dreamscope::whatif
