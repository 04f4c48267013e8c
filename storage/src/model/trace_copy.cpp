#include "dreamscope/storage/trace_copy.h"

#include "dreamscope/storage/columns.h"

#include <algorithm>
#include <string>

namespace dreamscope {

namespace {

// TraceBuilder and TraceSink differ only in what an added row returns (its typed row, or its
// event id) and in how an arg names its event; the copy is written once for both.
template <class Out>
TraceIdMap append_ids(Out& out, const Trace& in, const TraceCopyEdits& edits) {
  TraceIdMap ids;
  ids.strings.assign(in.strings().size(), 0);
  for (StringId s = 1; s < in.strings().size(); ++s) ids.strings[s] = out.intern(in.strings()[s]);
  ProcessId first_kept = kNoIndex;
  for (ProcessId i{0}; i < in.processes().size(); ++i) {
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
  auto copy_args = [&](EventRow row, auto added) {
    for (EventArg arg : in.args_of(row)) {
      arg.key = ids.strings[arg.key];
      arg.text = ids.strings[arg.text];
      add_arg(added, arg);
    }
  };
  // A row's tracks and strings in the output's ids (columns.h: its Track and String columns);
  // false where one of its tracks is left out, and the row with it.
  auto to_output = [&]<class Record>(Record& r) {
    bool keep = true;
    columns::for_each<Record>([&](const auto& c) {
      if constexpr (columns::is<decltype(c), columns::Track>) keep = keep && kept(r.*c.member);
    });
    if (!keep) return false;
    columns::for_each<Record>([&](const auto& c) {
      if constexpr (columns::is<decltype(c), columns::Track>) r.*c.member = track(r.*c.member);
      if constexpr (columns::is<decltype(c), columns::String>) r.*c.member = ids.strings[r.*c.member];
    });
    return true;
  };
  auto copy_events = [&]<class Record>(std::type_identity<Record>, auto row, const auto& edit) {
    const std::size_t rows = (in.*columns::Definition<Record>::in)().size();
    for (typename columns::Definition<Record>::Index i{0}; i < rows; ++i) {
      Record r = row(i);
      if (!to_output(r)) continue;
      if (edit && !edit(i, r)) continue;
      copy_args(i, out.add(r));
    }
  };
  copy_events(
      std::type_identity<CudaApiRecord>{}, [&](CudaApiIndex i) { return in.cuda_api().row(i); }, edits.cuda_api);
  copy_events(
      std::type_identity<GpuOpRecord>{}, [&](GpuOpIndex i) { return in.gpu_ops().row(i, in.launch_configs()); },
      edits.gpu_op);
  copy_events(
      std::type_identity<AnnotationRecord>{}, [&](AnnotationIndex i) { return in.annotations().row(i); },
      edits.annotation);
  auto copy_rows = [&]<class Record>(const std::vector<Record>& rows, const std::function<bool(Record&)>& edit) {
    for (Record r : rows) {
      if (!to_output(r)) continue;
      if (edit && !edit(r)) continue;
      out.add(r);
    }
  };
  copy_rows(in.flows(), edits.flow);
  copy_rows(in.overheads(), edits.overhead);
  copy_rows(in.thread_loads(), edits.thread_load);
  copy_rows(in.memory_events(), edits.memory_event);
}

} // namespace

std::int64_t CorrelationSpace::shift_for(const Trace& in) {
  std::int64_t lo = std::numeric_limits<std::int64_t>::max(), hi = std::numeric_limits<std::int64_t>::min();
  const std::vector<std::int64_t>* correlations[] = {&in.cuda_api().correlation, &in.gpu_ops().correlation};
  for (const auto* ids : correlations) {
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
  append_rows(out, in, ids, edits, [&](EventRow row, const EventArg& arg) { out.add_arg(row, arg); });
}

void append_trace_rows(TraceSink& out, const Trace& in, const TraceIdMap& ids, const TraceCopyEdits& edits) {
  append_rows(out, in, ids, edits, [&](std::int64_t event, const EventArg& arg) { out.add_arg(event, arg); });
}

} // namespace dreamscope
