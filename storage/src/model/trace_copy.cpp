#include "dreamscope/storage/trace_copy.h"

#include <algorithm>
#include <string>

namespace dreamscope {

namespace {

// TraceBuilder and TraceSink differ only in what an added row returns (its row, or its
// event id) and in how an arg names its event; the copy is written once for both.
template <class Out>
TraceIdMap append_ids(Out& out, const Trace& in, const TraceCopyEdits& edits) {
  TraceIdMap ids;
  ids.strings.assign(in.strings().size(), 0);
  for (StringId s = 1; s < in.strings().size(); ++s) ids.strings[s] = out.intern(in.strings()[s]);
  std::uint32_t first_kept = kNoIndex;
  for (std::uint32_t i = 0; i < in.processes().size(); ++i) {
    if (edits.keep_process && !edits.keep_process(i)) {
      ids.processes.push_back(kNoIndex);
      continue;
    }
    ProcessInfo p = in.processes()[i];
    if (edits.process) edits.process(p);
    ids.processes.push_back(out.add_process(p));
    if (first_kept == kNoIndex) first_kept = ids.processes.back();
  }
  for (DeviceInfo d : in.devices()) {
    if (edits.keep_process && (d.process == kNoIndex ? first_kept == kNoIndex : ids.process(d.process) == kNoIndex)) {
      ids.devices.push_back(kNoIndex);
      continue;
    }
    d.process = d.process == kNoIndex && edits.keep_process ? first_kept : ids.process(d.process);
    ids.devices.push_back(out.add_device(d));
  }
  for (TrackInfo t : in.tracks()) {
    const bool dropped = t.kind == TrackKind::GpuStream ? (t.device != kNoIndex && ids.device(t.device) == kNoIndex)
                                                         : (t.process != kNoIndex && ids.process(t.process) == kNoIndex);
    if (edits.keep_process && dropped) {
      ids.tracks.push_back(kNoIndex);
      continue;
    }
    t.process = ids.process(t.process);
    t.device = ids.device(t.device);
    ids.tracks.push_back(out.add_track(t));
  }
  return ids;
}

template <class Out, class AddArg>
void append_rows(Out& out, const Trace& in, const TraceIdMap& ids, const TraceCopyEdits& edits, AddArg add_arg) {
  auto track = [&](TrackId t) {
    if (t >= ids.tracks.size()) throw TraceError("copying a trace: a row names track " + std::to_string(t) +
                                                 " of " + std::to_string(ids.tracks.size()));
    return ids.tracks[t];
  };
  // Rows on a track of a process left out (TraceCopyEdits::keep_process) are left out.
  auto kept = [&](TrackId t) { return t >= ids.tracks.size() || ids.tracks[t] != kNoIndex; };
  auto copy_args = [&](EventTable table, EventIndex row, auto added) {
    for (EventArg arg : in.args_of(table, row)) {
      arg.key = ids.strings[arg.key];
      arg.text = ids.strings[arg.text];
      add_arg(table, added, arg);
    }
  };
  const auto& api = in.cuda_api();
  for (EventIndex i = 0; i < api.size(); ++i) {
    CudaApiRecord r = api.row(i);
    if (!kept(r.track)) continue;
    r.track = track(r.track);
    r.name = ids.strings[r.name];
    if (edits.cuda_api && !edits.cuda_api(i, r)) continue;
    copy_args(EventTable::CudaApi, i, out.add(r));
  }
  const auto& ops = in.gpu_ops();
  for (EventIndex i = 0; i < ops.size(); ++i) {
    GpuOpRecord r = ops.row(i, in.launch_configs());
    if (!kept(r.track)) continue;
    r.track = track(r.track);
    r.name = ids.strings[r.name];
    if (edits.gpu_op && !edits.gpu_op(i, r)) continue;
    copy_args(EventTable::GpuOp, i, out.add(r));
  }
  const auto& ann = in.annotations();
  for (EventIndex i = 0; i < ann.size(); ++i) {
    AnnotationRecord r = ann.row(i);
    if (!kept(r.track)) continue;
    r.track = track(r.track);
    r.name = ids.strings[r.name];
    r.domain = ids.strings[r.domain];
    r.category = ids.strings[r.category];
    if (edits.annotation && !edits.annotation(i, r)) continue;
    copy_args(EventTable::Annotation, i, out.add(r));
  }
  for (FlowRecord f : in.flows()) {
    if (!kept(f.from_track) || !kept(f.to_track)) continue;
    f.kind = ids.strings[f.kind];
    f.from_track = track(f.from_track);
    f.to_track = track(f.to_track);
    if (edits.flow && !edits.flow(f)) continue;
    out.add(f);
  }
  for (OverheadRecord o : in.overheads()) {
    if (!kept(o.track)) continue;
    o.track = track(o.track);
    o.kind = ids.strings[o.kind];
    if (edits.overhead && !edits.overhead(o)) continue;
    out.add(o);
  }
  for (ThreadLoadRecord l : in.thread_loads()) {
    if (!kept(l.track)) continue;
    l.track = track(l.track);
    if (edits.thread_load && !edits.thread_load(l)) continue;
    out.add(l);
  }
  for (MemoryEventRecord m : in.memory_events()) {
    if (!kept(m.track)) continue;
    m.track = track(m.track);
    if (edits.memory_event && !edits.memory_event(m)) continue;
    out.add(m);
  }
}

} // namespace

std::int64_t CorrelationSpace::shift_for(const Trace& in) {
  std::int64_t lo = std::numeric_limits<std::int64_t>::max(), hi = std::numeric_limits<std::int64_t>::min();
  for (const auto* ids : {&in.cuda_api().correlation, &in.gpu_ops().correlation}) {
    for (std::int64_t c : *ids) {
      if (c == kNoValue) continue;
      lo = std::min(lo, c);
      hi = std::max(hi, c);
    }
  }
  if (lo > hi) return 0; // no correlation ids at all
  // Ids this far out are not a counter's; leave them as they are rather than overflow.
  constexpr std::int64_t kRoom = std::int64_t{1} << 61;
  if (lo < -kRoom || hi > kRoom || next_free_ > kRoom) return 0;
  const std::int64_t shift = lo >= next_free_ ? 0 : next_free_ - lo;
  next_free_ = hi + shift + 1;
  return shift;
}

TraceIdMap append_trace_ids(TraceBuilder& out, const Trace& in, const TraceCopyEdits& edits) {
  return append_ids(out, in, edits);
}

TraceIdMap append_trace_ids(TraceSink& out, const Trace& in, const TraceCopyEdits& edits) {
  return append_ids(out, in, edits);
}

void append_trace_rows(TraceBuilder& out, const Trace& in, const TraceIdMap& ids, const TraceCopyEdits& edits) {
  append_rows(out, in, ids, edits,
              [&](EventTable table, EventIndex row, const EventArg& arg) { out.add_arg(table, row, arg); });
}

void append_trace_rows(TraceSink& out, const Trace& in, const TraceIdMap& ids, const TraceCopyEdits& edits) {
  append_rows(out, in, ids, edits,
              [&](EventTable, std::int64_t event, const EventArg& arg) { out.add_arg(event, arg); });
}

} // namespace dreamscope
