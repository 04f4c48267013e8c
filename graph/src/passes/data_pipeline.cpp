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

#include <dreamscope/storage/job.h>
#include <dreamscope/storage/steps.h>

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <unordered_set>

namespace dreamscope::graph_build {
namespace {

// Batch b prepared (or fetched) on one thread → the wait for batch b on another of the same
// rank (each rank of a job numbers its own batches). With batch ids reused across epochs, the
// producer is the latest one that finished before the wait did.
void add_data_flows(GraphBuildState& s) {
  const Trace& trace = s.trace;
  const TaskTable& tasks = s.tasks;
  const auto& ann = trace.annotations();
  auto id = [&](std::string_view text) { return trace.find_string(text).value_or(kNoIndex); };
  namespace category = annotation_category;
  const StringId prep = id(category::kPrep), fetch = id(category::kFetch), wait = id(category::kWait);
  if (wait == kNoIndex || (prep == kNoIndex && fetch == kNoIndex)) return;
  const std::vector<std::int64_t> rank = track_ranks(trace);
  struct Produced {
    std::int64_t rank;
    std::int64_t batch;
    TimeNs end;
    AnnotationIndex row;
    auto operator<=>(const Produced&) const = default;
  };
  std::vector<Produced> produced;
  std::vector<AnnotationIndex> waits;
  for (AnnotationIndex row{0}; row < ann.size(); ++row) {
    if (ann.payload[row] == kNoValue || tasks.annotation_last[row] == kNoTask) continue;
    const StringId c = ann.category[row];
    if (c == prep || c == fetch) produced.push_back({rank[ann.track[row]], ann.payload[row], ann.end[row], row});
    if (c == wait) waits.push_back(row);
  }
  std::sort(produced.begin(), produced.end());
  for (AnnotationIndex w : waits) {
    const TaskId consumer = tasks.annotation_last[w];
    const TimeNs end = tasks.measured_end[consumer];
    const std::int64_t r = rank[ann.track[w]];
    auto it = std::upper_bound(produced.begin(), produced.end(),
                               Produced{r, ann.payload[w], end, std::numeric_limits<AnnotationIndex>::max()});
    if (it == produced.begin() || std::prev(it)->rank != r || std::prev(it)->batch != ann.payload[w]) continue;
    const Produced& p = *std::prev(it);
    if (ann.track[p.row] == ann.track[w]) continue;
    const TaskId producer = tasks.annotation_last[p.row];
    s.edges.add(producer, consumer, EdgeKind::Flow, 0);
    s.note_wait(consumer, tasks.measured_end[producer]);
  }
}

// Backpressure: a loader may run only so many batches ahead of the consumer (PyTorch's
// prefetch_factor, a bounded queue), so a loader that sat idle and began batch b moments after
// the consumer's wait for batch b - D ended was let go by that consumption. Without this flow
// its idle time would be fixed in replay, and a faster consumer (the tracer's cost removed, a
// what-if) would find its batches no sooner than in the measured run.
//
// The window's depth D is found from timing: for each batch a loader began after sitting
// idle, the nearest wait end before it on another thread of the process, if near enough (a
// scheduler's wake-up); D is the batch distance most of those agree on. Then each such batch
// is linked to the wait for batch b - D by id: timing alone links the wrong wait when the
// consumer, preempted right after it released the slot, ended its wait range after the loader
// had begun (two busy loaders and a consumer on two cores do that every other batch). Without
// a D that most agree on, each batch keeps the wait its timing found.
//
// A wait that ended because this loader had just put its previous batch is the other way
// round (the consumer waited for the loader, not the loader for a slot) and is never taken:
// a loader always behind would otherwise be tied to the consumer's pace. Only a wait that
// began before that batch was put waited for it: one that found the batch there (a consumer
// slowed at start-up while its loader filled the queue and sat idle) released a slot.
void add_backpressure_flows(GraphBuildState& s) {
  constexpr TimeNs kWake = 200'000; // a woken loader runs within a scheduler slice, not later
  // A loader in a forked process learns of the free slot through a pipe (PyTorch's index
  // queue: the main process pickles the next index, the worker wakes and unpickles it): on the
  // H200 traces 0.1 to 0.7 ms passed between the take and the worker's next fetch.
  constexpr TimeNs kWakeForked = 1'000'000;
  // How long a loader that took its consumer's core may keep it: a fetch and prep of a batch.
  constexpr TimeNs kUnderWay = 2'000'000;
  const Trace& trace = s.trace;
  TaskTable& tasks = s.tasks;
  const auto& ann = trace.annotations();
  namespace category = annotation_category;
  const auto wait = trace.find_string(category::kWait), fetch = trace.find_string(category::kFetch);
  const auto prep = trace.find_string(category::kPrep);
  if (!wait || (!fetch && !prep)) return;
  struct WaitEnd {
    TimeNs end;
    AnnotationIndex row;
    auto operator<=>(const WaitEnd&) const = default;
  };
  std::vector<WaitEnd> wait_ends;
  const std::vector<std::int64_t> rank = track_ranks(trace);
  std::map<std::pair<std::int64_t, std::int64_t>, std::vector<AnnotationIndex>> waits_for_batch; // (rank, batch)
  // The first range of each batch on each loader thread: its fetch, else its prep.
  std::map<std::pair<TrackId, std::int64_t>, AnnotationIndex> first_range;
  // Per loader thread, its fetch and prep ranges by end: the batch it put before sitting idle.
  std::map<TrackId, std::vector<std::pair<TimeNs, std::int64_t>>> produced;
  struct Put {
    std::int64_t batch = kNoValue;
    TimeNs end = 0;
  };
  for (AnnotationIndex row{0}; row < ann.size(); ++row) {
    if (tasks.annotation_last[row] == kNoTask) continue;
    const StringId c = ann.category[row];
    if (c == *wait) {
      wait_ends.push_back({ann.end[row], row});
      if (ann.payload[row] != kNoValue) waits_for_batch[{rank[ann.track[row]], ann.payload[row]}].push_back(row);
    }
    if (ann.payload[row] == kNoValue || !((fetch && c == *fetch) || (prep && c == *prep))) continue;
    produced[ann.track[row]].emplace_back(ann.end[row], ann.payload[row]);
    auto [it, fresh] = first_range.try_emplace({ann.track[row], ann.payload[row]}, row);
    if (!fresh && (ann.start[row] < ann.start[it->second] ||
                   (ann.start[row] == ann.start[it->second] && fetch && c == *fetch))) {
      it->second = row;
    }
  }
  std::sort(wait_ends.begin(), wait_ends.end());
  for (auto& [track, ends] : produced) std::sort(ends.begin(), ends.end());
  for (auto& [batch, rows] : waits_for_batch) {
    std::sort(rows.begin(), rows.end(), [&](AnnotationIndex x, AnnotationIndex y) { return ann.end[x] < ann.end[y]; });
  }
  // The batch the loader's last fetch or prep before `at` was for, and when it ended.
  auto batch_put_before = [&](TrackId track, TimeNs at) {
    const auto& ends = produced[track];
    auto it = std::upper_bound(ends.begin(), ends.end(), std::make_pair(at, std::numeric_limits<std::int64_t>::max()));
    return it == ends.begin() ? Put{} : Put{std::prev(it)->second, std::prev(it)->first};
  };
  // The consumer's thread, and a loader on another thread of its process or in a process it
  // forked: PyTorch's DataLoader workers get each batch's indices from the main process, which
  // sends the next when it takes a batch (the index queue is the bound, across processes).
  const auto& processes = trace.processes();
  auto forked = [&](ProcessId child, ProcessId parent) {
    return child < processes.size() && parent < processes.size() && processes[child].parent_pid != kNoValue &&
           processes[child].parent_pid == processes[parent].pid;
  };
  // Which processes another process of the trace forked.
  std::vector<std::uint8_t> forked_from_trace(processes.size(), 0);
  {
    std::unordered_set<std::int64_t> pids;
    for (const ProcessInfo& p : processes) pids.insert(p.pid);
    for (std::size_t i = 0; i < processes.size(); ++i) {
      forked_from_trace[i] = processes[i].parent_pid != kNoValue && pids.contains(processes[i].parent_pid);
    }
  }
  auto other_thread_of_process = [&](AnnotationIndex wait_row, TaskId idle) {
    const ResourceId r = tasks.resource[tasks.annotation_last[wait_row]];
    if (r == tasks.resource[idle]) return false;
    const ProcessId consumer = process_of(trace, r), loader = process_of(trace, tasks.resource[idle]);
    return consumer == loader || forked(loader, consumer);
  };
  struct Candidate {
    TaskId idle;
    std::int64_t batch;
    TimeNs begin;
    Put put; // the batch the loader put before it sat idle
    TimeNs wake; // how long after a take the loader it let go may begin
    AnnotationIndex timed = kNoIndex; // the wait its timing found
  };
  // Whether wait `w` was for the batch the loader put before sitting idle, begun before it was
  // put: the consumer waited for that loader then, not the loader for a slot.
  auto waited_for_the_put = [&](AnnotationIndex w, const Candidate& c) {
    return c.put.batch != kNoValue && ann.payload[w] == c.put.batch && ann.start[w] < c.put.end;
  };
  std::vector<Candidate> candidates;
  std::map<std::int64_t, std::size_t> distances; // b - the timed wait's batch -> how many
  std::size_t timed = 0;
  for (const auto& [key, row] : first_range) {
    const TaskId first = tasks.annotation_first[row];
    if (first == kNoTask || first == tasks.first(tasks.resource[first])) continue;
    const TaskId idle = first - 1;
    if (tasks.kind[idle] != TaskKind::CpuWork || (tasks.flags[idle] & kTaskBlocking)) continue;
    const ProcessId loader_process = process_of(trace, tasks.resource[idle]);
    const TimeNs wake =
        loader_process < processes.size() && forked_from_trace[loader_process] ? kWakeForked : kWake;
    Candidate c{idle, key.second, tasks.measured_start[first], batch_put_before(key.first, tasks.measured_start[idle] + 1),
                wake};
    auto it = std::upper_bound(wait_ends.begin(), wait_ends.end(), WaitEnd{c.begin, kNoIndex});
    // The latest wait that ended while the loader sat idle, on another thread of its process (or
    // of the process that forked the loader's);
    // a consumer ends a few waits in a wake-up's time, not more than kLooked (a hostile trace
    // could end millions at once).
    constexpr int kLooked = 64;
    for (int looked = 0; it != wait_ends.begin() && looked < kLooked; ++looked) {
      const WaitEnd& w = *std::prev(it);
      if (w.end < tasks.measured_start[idle] || c.begin - w.end > c.wake) break;
      if (other_thread_of_process(w.row, idle) && !waited_for_the_put(w.row, c)) {
        c.timed = w.row;
        ++timed;
        if (ann.payload[w.row] != kNoValue) ++distances[c.batch - ann.payload[w.row]];
        break;
      }
      --it;
    }
    // Else a wait for an earlier batch that was under way when the loader began, on another
    // thread: the consumer took the slot and the loader took its core at once, so the wait's
    // range ends after the loader began, every batch alike where the cores are few (no wait
    // then ends within a wake-up before a loader begins, and the depth would go unfound).
    // Only an earlier batch's: a wait for this batch or a later one waits for the loader.
    if (c.timed == kNoIndex) {
      auto under_way = std::upper_bound(wait_ends.begin(), wait_ends.end(), WaitEnd{c.begin, kNoIndex});
      for (int looked = 0; under_way != wait_ends.end() && looked < kLooked; ++looked, ++under_way) {
        const AnnotationIndex w = under_way->row;
        if (under_way->end - c.begin > kUnderWay) break;
        if (ann.start[w] > c.begin || !other_thread_of_process(w, idle) || ann.payload[w] == kNoValue ||
            ann.payload[w] >= c.batch || waited_for_the_put(w, c)) {
          continue;
        }
        c.timed = w;
        ++timed;
        ++distances[c.batch - ann.payload[w]];
        break;
      }
    }
    candidates.push_back(c);
  }
  std::optional<std::int64_t> depth;
  for (const auto& [d, n] : distances) {
    if (d > 0 && 2 * n > timed && n >= 3) depth = d;
  }
  for (const Candidate& c : candidates) {
    AnnotationIndex linked = c.timed;
    if (depth) {
      linked = kNoIndex;
      // The wait for batch b - D that ended nearest the batch's start: while the loader sat
      // idle, or up to a wake-up after it began (the consumer preempted before its range ended).
      // Batch ids repeat across epochs: the waits for one id are sorted by end, and only the
      // two around the batch's start can be nearest.
      const auto found = waits_for_batch.find({rank[tasks.resource[c.idle]], c.batch - *depth});
      if (found != waits_for_batch.end()) {
        const std::vector<AnnotationIndex>& rows = found->second;
        auto after = std::lower_bound(rows.begin(), rows.end(), c.begin,
                                      [&](AnnotationIndex w, TimeNs t) { return ann.end[w] < t; });
        TimeNs nearest = std::numeric_limits<TimeNs>::max();
        for (auto w_it : {after, after == rows.begin() ? rows.end() : std::prev(after)}) {
          if (w_it == rows.end()) continue;
          const AnnotationIndex w = *w_it;
          const TimeNs end = ann.end[w];
          // Ended after a wake-up's time past the loader's start, the wait still let it go if it
          // had begun by then: the consumer took the slot and was preempted inside its range,
          // by this loader's own work where the cores are few (two loaders, a consumer and the
          // tracer's writer on two cores: waits ending 250 µs after the loader began).
          const bool inside = ann.start[w] <= c.begin && end > c.begin;
          if (end < tasks.measured_start[c.idle] || (end - c.begin > c.wake && !inside) ||
              !other_thread_of_process(w, c.idle) || waited_for_the_put(w, c)) {
            continue;
          }
          const TimeNs distance = end > c.begin ? end - c.begin : c.begin - end;
          if (distance < nearest) {
            nearest = distance;
            linked = w;
          }
        }
      }
    }
    if (linked == kNoIndex) continue;
    // A wait range that ended after the loader began (the consumer preempted between releasing
    // the slot and ending its range) lets the loader go that much before its end: a negative
    // delay, so that replay puts the loader where it was.
    const TimeNs released = std::min(ann.end[linked], c.begin);
    s.edges.add(tasks.annotation_last[linked], c.idle, EdgeKind::Flow, released - ann.end[linked]);
    s.note_wait(c.idle, released);
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
    for (TrackId track{0}; track < trace.tracks().size(); ++track) {
      const AnnotationRange range = trace.annotations_on(track);
      std::vector<AnnotationIndex> open;
      for (auto row = range.begin; row < range.end; ++row) {
        while (!open.empty() && ann.end[open.back()] < ann.start[row]) open.pop_back();
        const StringId c = ann.category[row];
        if (c == *cpu && ann.payload[row] != kNoValue && !open.empty()) {
          const AnnotationIndex owner = open.back();
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
    const AnnotationIndex row{tasks.source_row[t]};
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
