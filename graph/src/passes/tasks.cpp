// Pass 1, tasks: cuts every thread and stream of the Trace into tasks.
//
// Reads: the Trace's tracks, CUDA API calls, annotations and GPU ops.
// Writes: TaskTable, all of it (resources in track order, each resource's tasks consecutive
//   in FIFO order; base = measured duration, cpu_share = 1, no flags; gap = the idle time
//   before a thread's first task since the run's begin, 0 elsewhere; the event → task maps),
//   wait_end (sized, no waits), warnings.sync_ops_skipped.
#include "passes.h"

#include <queue>

namespace dreamscope::graph_build {
namespace {

void reserve(TaskTable& t, std::size_t n) {
  t.resource.reserve(n);
  t.kind.reserve(n);
  t.flags.reserve(n);
  t.cpu_share.reserve(n);
  t.source_row.reserve(n);
  t.measured_start.reserve(n);
  t.measured_end.reserve(n);
  t.base.reserve(n);
}

TaskId add_task(TaskTable& t, ResourceId r, TaskKind kind, std::uint32_t row, TimeNs start, TimeNs end) {
  const auto id = static_cast<TaskId>(t.resource.size());
  t.resource.push_back(r);
  t.kind.push_back(kind);
  t.flags.push_back(0);
  t.cpu_share.push_back(1.0f);
  t.source_row.push_back(row);
  t.measured_start.push_back(start);
  t.measured_end.push_back(end);
  t.base.push_back(end - start);
  return id;
}

// A thread's timeline cut at every start and end of its API calls and annotations: each
// piece belongs to the innermost event open over it (the one opened last), or is CPU work
// between events. The pieces tile the thread from its first event to its last, so replay
// reproduces every gap between events, and each event's start and end are task boundaries.
// The loop ends when every event has been opened and closed, never at a time value: an
// event may end at any time a TimeNs holds, INT64_MAX included.
// Open events sit on a stack in the order they opened, and in a heap by end: a thread's
// events may nest or overlap without limit (a chain of 100 k nested ranges), so neither
// the next end nor the innermost event may cost a scan of all that are open.
void cut_thread(const Trace& trace, TaskTable& tasks, ResourceId r) {
  const auto& api = trace.cuda_api();
  const auto& ann = trace.annotations();
  const CudaApiRange ar = trace.cuda_api_on(TrackId{r});
  const AnnotationRange nr = trace.annotations_on(TrackId{r});
  struct Open {
    bool is_api;
    bool closed;
    std::uint32_t row; // of the API calls or the annotations, as is_api says
  };
  // An event leaves the stack only once closed and nothing opened after it is still open,
  // so an open event keeps its place and the heap may name it by that place.
  std::vector<Open> open;
  using EndAt = std::pair<TimeNs, std::size_t>; // an open event's end, its place on the stack
  std::priority_queue<EndAt, std::vector<EndAt>, std::greater<>> ends;
  CudaApiIndex i = ar.begin;
  AnnotationIndex j = nr.begin;
  auto next_is_annotation = [&]() {
    if (j == nr.end) return false;
    if (i == ar.end) return true;
    if (ann.start[j] != api.start[i]) return ann.start[j] < api.start[i];
    // Same start: the longer one encloses the other; on a full tie the API call is innermost.
    return ann.end[j] >= api.end[i];
  };
  TimeNs now = 0;
  bool first = true;
  while (i < ar.end || j < nr.end || !ends.empty()) {
    // The next boundary: the earliest start not yet reached or end of an open event.
    TimeNs t = i < ar.end ? api.start[i] : j < nr.end ? ann.start[j] : ends.top().first;
    if (j < nr.end) t = std::min(t, ann.start[j]);
    if (!ends.empty()) t = std::min(t, ends.top().first);
    if (first) {
      now = t;
      first = false;
    }
    if (t > now) {
      if (open.empty()) {
        add_task(tasks, r, TaskKind::CpuWork, kNoIndex, now, t);
      } else {
        const Open& o = open.back();
        add_task(tasks, r, o.is_api ? TaskKind::CudaApi : TaskKind::Annotation, o.row, now, t);
      }
      now = t;
    }
    const auto last = static_cast<TaskId>(tasks.size() - 1);
    for (; !ends.empty() && ends.top().first == t; ends.pop()) {
      Open& o = open[ends.top().second];
      o.closed = true;
      (o.is_api ? tasks.api_last : tasks.annotation_last)[o.row] = last;
    }
    while (!open.empty() && open.back().closed) open.pop_back();
    while (i < ar.end || j < nr.end) {
      const bool is_annotation = next_is_annotation();
      const std::uint32_t row = is_annotation ? j.value() : i.value();
      const TimeNs s = is_annotation ? ann.start[row] : api.start[row];
      if (s != t) break;
      const TimeNs e = std::max(s, is_annotation ? ann.end[row] : api.end[row]);
      auto& first_of = is_annotation ? tasks.annotation_first : tasks.api_first;
      auto& last_of = is_annotation ? tasks.annotation_last : tasks.api_last;
      first_of[row] = static_cast<TaskId>(tasks.size());
      if (e == s) {
        last_of[row] = add_task(tasks, r, is_annotation ? TaskKind::Annotation : TaskKind::CudaApi, row, s, s);
      } else {
        ends.emplace(e, open.size());
        open.push_back({!is_annotation, false, row});
      }
      if (is_annotation) {
        ++j;
      } else {
        ++i;
      }
    }
  }
}

// A stream's GPU ops in FIFO order. GPU sync records are not work: the waits they show are
// the CUDA-synchronization pass's edges and syncs.
void cut_stream(const Trace& trace, TaskTable& tasks, GraphWarnings& warnings, ResourceId r) {
  const auto& ops = trace.gpu_ops();
  const GpuOpRange range = trace.gpu_ops_on(TrackId{r});
  for (auto row = range.begin; row < range.end; ++row) {
    TaskKind kind;
    switch (ops.kind[row]) {
      case GpuOpKind::Kernel: kind = TaskKind::Kernel; break;
      case GpuOpKind::Memcpy: kind = TaskKind::Memcpy; break;
      case GpuOpKind::Memset: kind = TaskKind::Memset; break;
      default: ++warnings.sync_ops_skipped; continue;
    }
    tasks.gpu_task[row] = add_task(tasks, r, kind, row, ops.start[row], std::max(ops.start[row], ops.end[row]));
  }
}

} // namespace

void cut_tasks(GraphBuildState& s) {
  const Trace& trace = s.trace;
  TaskTable& tasks = s.tasks;
  const auto& tracks = trace.tracks();
  reserve(tasks, 2 * trace.cuda_api().size() + 2 * trace.annotations().size() + trace.gpu_ops().size() +
                     2 * tracks.size());
  tasks.api_first.assign(trace.cuda_api().size(), kNoTask);
  tasks.api_last.assign(trace.cuda_api().size(), kNoTask);
  tasks.annotation_first.assign(trace.annotations().size(), kNoTask);
  tasks.annotation_last.assign(trace.annotations().size(), kNoTask);
  tasks.gpu_task.assign(trace.gpu_ops().size(), kNoTask);
  tasks.resource_begin.reserve(tracks.size() + 1);
  for (TrackId r{0}; r < tracks.size(); ++r) {
    tasks.resource_begin.push_back(static_cast<TaskId>(tasks.size()));
    const bool stream = tracks[r].kind == TrackKind::GpuStream;
    tasks.resource_is_stream.push_back(stream ? 1 : 0);
    if (stream) {
      cut_stream(trace, tasks, s.warnings, r);
    } else {
      cut_thread(trace, tasks, r);
    }
  }
  tasks.resource_begin.push_back(static_cast<TaskId>(tasks.size()));
  tasks.gap.assign(tasks.size(), 0);
  for (ResourceId r = 0; r < tasks.resource_count(); ++r) {
    if (tasks.is_stream(r) || tasks.first(r) == tasks.end(r)) continue;
    const TaskId t = tasks.first(r);
    tasks.gap[t] = std::max<TimeNs>(0, tasks.measured_start[t] - trace.begin_time());
  }
  s.wait_end.assign(tasks.size(), kNoValue);
}

} // namespace dreamscope::graph_build
