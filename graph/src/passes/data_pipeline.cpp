// Pass 5, data pipeline: what the annotation library's data-pipeline categories say
// (docs/annotations.md): batch flows from the thread that fetched or prepared a batch to the
// wait for it, and how much of each fetch, prep and wait piece needs a core.
//
// Reads: TaskTable (annotation_last, measured_end, kind, source_row); the Trace's annotations
//   of categories `fetch`, `prep`, `wait` and `cpu` with their payloads.
// Writes: flow edges; wait_end and kTaskBlocking of each wait fed by a flow (note_wait);
//   cpu_share of annotation pieces.
#include "passes.h"

#include <dreamscope/steps.h>

#include <algorithm>
#include <limits>

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
  set_cpu_shares(s);
}

} // namespace dreamscope::graph_build
