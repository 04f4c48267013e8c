// Pass 5, data pipeline: what the annotation library's data-pipeline categories say
// (docs/annotations.md): batch flows from the thread that fetched or prepared a batch to the
// wait for it, and how much of each fetch, prep and wait piece needs a core.
//
// Reads: TaskTable (annotation_first, annotation_last, measured times, kind, source_row); the
//   Trace's annotations of categories `fetch`, `prep`, `wait` and `cpu` with their payloads.
// Writes: flow edges (batch → its wait, and a consumed batch → the idle piece of a loader
//   that its consumption let go on); wait_end and kTaskBlocking of the tasks those flows
//   feed (note_wait); cpu_share of annotation pieces.
#include "passes.h"

#include <dreamscope/steps.h>

#include <algorithm>
#include <limits>
#include <map>

namespace dreamscope::graph_build {
namespace {

// Batch b prepared (or fetched) on one thread → the wait for batch b on another. With batch
// ids reused across epochs, the producer is the latest one that finished before the wait did.
void add_data_flows(GraphBuildState& s) {
  const Trace& trace = s.trace;
  const TaskTable& tasks = s.tasks;
  const auto& ann = trace.annotations();
  auto id = [&](std::string_view text) { return trace.find_string(text).value_or(kNoIndex); };
  namespace category = annotation_category;
  const StringId prep = id(category::kPrep), fetch = id(category::kFetch), wait = id(category::kWait);
  if (wait == kNoIndex || (prep == kNoIndex && fetch == kNoIndex)) return;
  struct Produced {
    std::int64_t batch;
    TimeNs end;
    EventIndex row;
    auto operator<=>(const Produced&) const = default;
  };
  std::vector<Produced> produced;
  std::vector<EventIndex> waits;
  for (EventIndex row = 0; row < ann.size(); ++row) {
    if (ann.payload[row] == kNoValue || tasks.annotation_last[row] == kNoTask) continue;
    const StringId c = ann.category[row];
    if (c == prep || c == fetch) produced.push_back({ann.payload[row], ann.end[row], row});
    if (c == wait) waits.push_back(row);
  }
  std::sort(produced.begin(), produced.end());
  for (EventIndex w : waits) {
    const TaskId consumer = tasks.annotation_last[w];
    const TimeNs end = tasks.measured_end[consumer];
    auto it = std::upper_bound(produced.begin(), produced.end(),
                               Produced{ann.payload[w], end, std::numeric_limits<EventIndex>::max()});
    if (it == produced.begin() || std::prev(it)->batch != ann.payload[w]) continue;
    const Produced& p = *std::prev(it);
    if (ann.track[p.row] == ann.track[w]) continue;
    const TaskId producer = tasks.annotation_last[p.row];
    s.edges.add(producer, consumer, EdgeKind::Flow, 0);
    s.note_wait(consumer, tasks.measured_end[producer]);
  }
}

// Backpressure: a loader may run only so many batches ahead of the consumer (PyTorch's
// prefetch_factor, a bounded queue), so a loader that sat idle and began its next batch moments
// after the consumer's wait for a batch ended was let go by that consumption. Without this
// flow its idle time would be fixed in replay, and a faster consumer (the tracer's cost
// removed, a what-if) would find its batches no sooner than in the measured run. The wake-up
// is the moment the wait ended plus a scheduler's latency: the nearest wait end before the
// batch's first range, if near enough, on another thread of the process.
void add_backpressure_flows(GraphBuildState& s) {
  constexpr TimeNs kWake = 200'000; // a woken loader runs within a scheduler slice, not later
  const Trace& trace = s.trace;
  TaskTable& tasks = s.tasks;
  const auto& ann = trace.annotations();
  namespace category = annotation_category;
  const auto wait = trace.find_string(category::kWait), fetch = trace.find_string(category::kFetch);
  const auto prep = trace.find_string(category::kPrep);
  if (!wait || (!fetch && !prep)) return;
  struct WaitEnd {
    TimeNs end;
    TaskId task;
    auto operator<=>(const WaitEnd&) const = default;
  };
  std::vector<WaitEnd> wait_ends;
  // The first range of each batch on each loader thread: its fetch, else its prep.
  std::map<std::pair<TrackId, std::int64_t>, EventIndex> first_range;
  for (EventIndex row = 0; row < ann.size(); ++row) {
    if (tasks.annotation_last[row] == kNoTask) continue;
    const StringId c = ann.category[row];
    if (c == *wait) wait_ends.push_back({ann.end[row], tasks.annotation_last[row]});
    if (ann.payload[row] == kNoValue || !((fetch && c == *fetch) || (prep && c == *prep))) continue;
    auto [it, fresh] = first_range.try_emplace({ann.track[row], ann.payload[row]}, row);
    if (!fresh && (ann.start[row] < ann.start[it->second] ||
                   (ann.start[row] == ann.start[it->second] && fetch && c == *fetch))) {
      it->second = row;
    }
  }
  std::sort(wait_ends.begin(), wait_ends.end());
  for (const auto& [key, row] : first_range) {
    const TaskId first = tasks.annotation_first[row];
    if (first == kNoTask || first == tasks.first(tasks.resource[first])) continue;
    const TaskId idle = first - 1;
    if (tasks.kind[idle] != TaskKind::CpuWork || (tasks.flags[idle] & kTaskBlocking)) continue;
    const TimeNs begin = tasks.measured_start[first];
    auto it = std::upper_bound(wait_ends.begin(), wait_ends.end(), WaitEnd{begin, kNoTask});
    // The latest wait that ended while the loader sat idle, on another thread of its process.
    while (it != wait_ends.begin()) {
      const WaitEnd& w = *std::prev(it);
      if (w.end < tasks.measured_start[idle] || begin - w.end > kWake) break;
      if (tasks.resource[w.task] != tasks.resource[idle] &&
          process_of(trace, tasks.resource[w.task]) == process_of(trace, tasks.resource[idle])) {
        s.edges.add(w.task, idle, EdgeKind::Flow, 0);
        s.note_wait(idle, w.end);
        break;
      }
      --it;
    }
  }
}

// The CPU share of annotation pieces: none for waits, the measured share for fetch and prep
// ranges with a `cpu` mark (the CPU time their thread spent in them), none for a fetch
// without one (storage I/O).
void set_cpu_shares(GraphBuildState& s) {
  const Trace& trace = s.trace;
  TaskTable& tasks = s.tasks;
  const auto& ann = trace.annotations();
  namespace category = annotation_category;
  const auto wait = trace.find_string(category::kWait), fetch = trace.find_string(category::kFetch);
  const auto prep = trace.find_string(category::kPrep), cpu = trace.find_string(category::kCpu);
  if (!wait && !fetch && !cpu) return;
  std::vector<float> measured(cpu ? ann.size() : 0, -1.0f);
  if (cpu && (fetch || prep)) {
    // A mark belongs to the innermost fetch or prep open on its thread where it lies.
    for (TrackId track = 0; track < trace.tracks().size(); ++track) {
      const EventRange range = trace.annotations_on(track);
      std::vector<EventIndex> open;
      for (EventIndex row = range.begin; row < range.end; ++row) {
        while (!open.empty() && ann.end[open.back()] < ann.start[row]) open.pop_back();
        const StringId c = ann.category[row];
        if (c == *cpu && ann.payload[row] != kNoValue && !open.empty()) {
          const EventIndex owner = open.back();
          const TimeNs dur = ann.end[owner] - ann.start[owner];
          measured[owner] = dur > 0 ? static_cast<float>(static_cast<double>(ann.payload[row]) / static_cast<double>(dur)) : 1.0f;
        } else if ((fetch && c == *fetch) || (prep && c == *prep)) {
          open.push_back(row);
        }
      }
    }
  }
  for (TaskId t = 0; t < tasks.size(); ++t) {
    if (tasks.kind[t] != TaskKind::Annotation) continue;
    const EventIndex row = tasks.source_row[t];
    if (!measured.empty() && measured[row] >= 0) {
      tasks.set_cpu_share(t, measured[row]);
    } else if ((wait && ann.category[row] == *wait) || (fetch && ann.category[row] == *fetch)) {
      tasks.set_cpu_share(t, 0);
    }
  }
}

} // namespace

void add_data_pipeline(GraphBuildState& s) {
  add_data_flows(s);
  add_backpressure_flows(s);
  set_cpu_shares(s);
}

} // namespace dreamscope::graph_build
