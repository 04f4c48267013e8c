#include "dreamscope/replay.h"

#include <algorithm>

namespace dreamscope {

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
  std::vector<StringId> string_id(measured.strings().size(), 0);
  for (StringId s = 0; s < measured.strings().size(); ++s) string_id[s] = b.intern(measured.str(s));
  for (const auto& p : measured.processes()) b.add_process(p);
  for (const auto& d : measured.devices()) b.add_device(d);
  for (const auto& t : measured.tracks()) b.add_track(t);
  // Threads and streams a what-if added (a pool of loader workers, a link).
  for (const auto& t : graph.added_resources()) b.add_track(t);
  const auto& api = measured.cuda_api();
  const auto& ops = measured.gpu_ops();
  const auto& ann = measured.annotations();
  b.reserve(api.size(), ops.size(), ann.size());

  auto scheduled = [&](TaskId t) { return t != kNoTask && result.start[t] != kNoValue && !graph.removed(t); };
  auto instant = [&](TrackId track, TimeNs x) { return predicted_instant(graph, result, track, x); };

  for (EventIndex row = 0; row < api.size(); ++row) {
    CudaApiRecord r = api.row(row);
    r.name = string_id[r.name];
    const TaskId first = graph.api_first(row), last = graph.api_last(row);
    if (first != kNoTask) {
      if (!scheduled(first) || result.end[last] == kNoValue) continue;
      r.track = graph.resource(first); // a what-if may have moved it
      r.start = result.start[first];
      r.end = result.end[last];
    } else {
      r.start = instant(r.track, r.start);
      r.end = std::max(r.start, instant(r.track, r.end));
    }
    b.add(r);
  }
  for (EventIndex row = 0; row < ann.size(); ++row) {
    AnnotationRecord r = ann.row(row);
    r.name = string_id[r.name];
    r.domain = string_id[r.domain];
    r.category = string_id[r.category];
    const TaskId first = graph.annotation_first(row), last = graph.annotation_last(row);
    if (first != kNoTask) {
      if (result.start[first] == kNoValue || result.end[last] == kNoValue) continue;
      r.track = graph.resource(first);
      r.start = result.start[first];
      r.end = std::max(r.start, result.end[last]);
    } else {
      r.start = instant(r.track, r.start);
      r.end = std::max(r.start, instant(r.track, r.end));
    }
    b.add(r);
  }
  for (EventIndex row = 0; row < ops.size(); ++row) {
    GpuOpRecord r;
    r.track = ops.track[row];
    r.kind = ops.kind[row];
    r.subkind = ops.subkind[row];
    r.name = string_id[ops.name[row]];
    r.correlation = ops.correlation[row];
    r.launch = measured.launch_configs()[ops.launch[row]];
    r.bytes = ops.bytes[row];
    r.event = ops.event[row];
    if (const TaskId t = graph.gpu_task(row); t != kNoTask) {
      if (!scheduled(t)) continue;
      r.track = graph.resource(t);
      r.start = result.start[t];
      r.end = result.end[t];
    } else {
      // A GPU sync record shows a wait: it moves with the end of the call that waited.
      TimeNs shift = 0;
      bool placed = false;
      if (r.correlation != kNoValue) {
        if (auto call = measured.cuda_api_with_correlation(r.correlation); call) {
          const TaskId last = graph.api_last(*call);
          if (scheduled(last)) {
            shift = result.end[last] - graph.measured_end(last);
            placed = true;
          }
        }
      }
      r.start = placed ? ops.start[row] + shift : instant(r.track, ops.start[row]);
      r.end = placed ? ops.end[row] + shift : std::max(r.start, instant(r.track, ops.end[row]));
    }
    b.add(r);
  }
  // Tasks a what-if inserted: GPU work on streams, annotated CPU work on threads.
  const StringId synthetic = b.intern("synthetic"), dreamscope = b.intern("dreamscope");
  for (TaskId t = 0; t < graph.task_count(); ++t) {
    if (graph.source_row(t) != kNoIndex || graph.kind(t) == TaskKind::CpuWork || !scheduled(t)) continue;
    const StringId name = b.intern(graph.synthetic_name(t).empty() ? "synthetic" : graph.synthetic_name(t));
    if (graph.is_stream(graph.resource(t))) {
      GpuOpRecord r;
      r.track = graph.resource(t);
      r.kind = graph.kind(t) == TaskKind::Memcpy   ? GpuOpKind::Memcpy
               : graph.kind(t) == TaskKind::Memset ? GpuOpKind::Memset
                                                   : GpuOpKind::Kernel;
      r.name = name;
      r.start = result.start[t];
      r.end = result.end[t];
      b.add(r);
    } else {
      AnnotationRecord r;
      r.track = graph.resource(t);
      r.name = name;
      r.domain = dreamscope;
      r.category = synthetic;
      r.start = result.start[t];
      r.end = result.end[t];
      b.add(r);
    }
  }
  for (FlowRecord f : measured.flows()) {
    f.kind = string_id[f.kind];
    f.from_time = instant(f.from_track, f.from_time);
    f.to_time = instant(f.to_track, f.to_time);
    b.add(f);
  }
  for (const auto& c : measured.calibration()) b.add(c);
  if (!overhead_corrected) {
    for (OverheadRecord o : measured.overheads()) {
      o.kind = string_id[o.kind];
      o.start = instant(o.track, o.start);
      o.end = std::max(o.start, instant(o.track, o.end));
      b.add(o);
    }
  }
  return std::move(b).build();
}

} // namespace dreamscope
