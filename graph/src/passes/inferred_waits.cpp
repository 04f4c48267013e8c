// Pass 6, inferred waits: waits that no call or annotation names, inferred from timing alone.
// A call that took far longer than it should and returned moments after a GPU task ended
// waited for that task (a full launch queue); a thread that sat in one task while another
// thread of its process ran a burst of work, and went on moments after it, handed the work
// over and waited for it (PyTorch's backward()).
//
// Reads: TaskTable (tasks, measured times, api_last, kinds); kTaskBlocking, so it runs after
//   every pass that links a named wait (CUDA synchronization, data pipeline): a task already
//   known to wait for something is not given a guessed wait too.
// Writes: sync edges (queue waits), handoff and join edges; wait_end and kTaskBlocking
//   (note_wait); base of the piece before a burst that a handoff starts, or gap of a burst
//   that is its thread's first task, set to 0.
#include "passes.h"

#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <unordered_map>

namespace dreamscope::graph_build {
namespace {

// A launch (or async copy, or any call that should return at once) that took far longer
// than a launch takes and returned moments after a GPU op of its process ended waited for
// that op: the device's work queue was full, and the op's end freed the slot the call
// needed (or the call synchronizes implicitly, as cudaFree does). In a GPU-bound run most
// launches block this way, so their time is the GPU's, and a what-if that speeds the GPU
// up must let them return sooner: each becomes a sync on that op.
void add_queue_waits(GraphBuildState& s) {
  constexpr TimeNs kSlowCall = 50'000; // launches take a few µs
  constexpr TimeNs kWake = 20'000;     // a blocked call returns within µs of the slot freeing
  const Trace& trace = s.trace;
  const TaskTable& tasks = s.tasks;
  const auto& api = trace.cuda_api();
  // A process's streams (streams_of_process) → their tasks by end.
  std::unordered_map<std::uint32_t, std::vector<TaskId>> ops_by_end;
  for (CudaApiIndex row{0}; row < api.size(); ++row) {
    const TaskId last = tasks.api_last[row];
    if (last == kNoTask || (tasks.flags[last] & kTaskBlocking)) continue;
    const TimeNs start = api.start[row], end = api.end[row];
    if (end - start < kSlowCall) continue;
    auto [it, fresh] = ops_by_end.try_emplace(process_of(trace, tasks.resource[last]));
    std::vector<TaskId>& ops = it->second;
    if (fresh) {
      for (ResourceId st : streams_of_process(s, tasks.resource[last])) {
        for (TaskId t = tasks.first(st); t < tasks.end(st); ++t) ops.push_back(t);
      }
      std::sort(ops.begin(), ops.end(), [&](TaskId a, TaskId b) { return tasks.measured_end[a] < tasks.measured_end[b]; });
    }
    auto after = std::upper_bound(ops.begin(), ops.end(), end,
                                  [&](TimeNs t, TaskId op) { return t < tasks.measured_end[op]; });
    if (after == ops.begin()) continue;
    const TaskId op = *std::prev(after);
    const TimeNs op_end = tasks.measured_end[op];
    if (op_end <= start || end - op_end > kWake) continue;
    s.edges.add(op, last, EdgeKind::Sync, 0);
    s.note_wait(last, op_end);
  }
}

// The burst that thread b ran inside the wait [ps, pe) of another thread, as the pass accepts
// one: b idle from before the wait began (or not started yet), its first event at or after ps
// and before pe, its last event ending at most `slack` before pe, and b idle from then until
// after pe. {kNoTask, kNoTask} if b ran no such burst.
struct BurstFound {
  TaskId first = kNoTask, last = kNoTask;
};

// `held_before[t]`: how many idle pieces before task t (of every thread, in task order) are
// known to wait for something (pass 5: a loader that its consumer's take let go).
BurstFound burst_in(const TaskTable& tasks, const std::vector<std::uint32_t>& held_before, ResourceId b, TimeNs ps,
                    TimeNs pe, TimeNs slack) {
  const std::vector<TimeNs>& starts = tasks.measured_start;
  auto is_event = [&](TaskId t) { return tasks.kind[t] != TaskKind::CpuWork; };
  const TaskId begin = tasks.first(b), end = tasks.end(b);
  // A thread's tasks are in order of start: its first event at or after ps.
  TaskId first = static_cast<TaskId>(std::lower_bound(starts.begin() + begin, starts.begin() + end, ps) - starts.begin());
  while (first < end && !is_event(first)) ++first;
  if (first == end || starts[first] >= pe) return {};
  // Idle from before the wait began: the piece before the burst is b's idle time.
  if (first > begin && (is_event(first - 1) || starts[first - 1] > ps)) return {};
  // The burst's last event, and b idle from its end until after the waiter resumed.
  TaskId last = static_cast<TaskId>(std::lower_bound(starts.begin() + first, starts.begin() + end, pe) - starts.begin());
  if (last < end && is_event(last) && starts[last] <= pe) return {};
  do {
    --last;
  } while (last > first && !is_event(last));
  if (tasks.measured_end[last] > pe) return {};
  if (last + 1 < end && tasks.measured_end[last + 1] < pe) return {}; // b idle, then busy again before the wait ended
  if (pe - tasks.measured_end[last] > slack) return {};
  // No idle piece before the burst or inside it known to wait for something else (a loader that
  // its consumer's take let go, pass 5): what it let go was not handed over by this wait, and a
  // handoff too would close a cycle where this wait is that take, or waits for it (cpu_train
  // --workers 2 right after a resume of recording; a loader's runs inside another's long fetch).
  if (held_before[last] != held_before[first > begin ? first - 1 : first]) return {};
  return {first, last};
}

// Where a task's start and end lie in a strict total order of all the tasks' starts and ends
// that every edge of a thread's program order goes forward in: by time, and at one instant
// the ends of tasks that took time first, then the tasks of no duration (each one's start,
// then its end, in task order), then the starts of tasks that take time. A thread holds at
// most one task that takes time ending at an instant and one starting at it, so the order
// among those of different threads is free: starts by task, ends by task descending, so
// that two ranges of the same instants nest (the lower task's outside).
struct EventKey {
  TimeNs time = std::numeric_limits<TimeNs>::min();
  std::int64_t rank = std::numeric_limits<std::int64_t>::min();
  auto operator<=>(const EventKey&) const = default;
};
// Tasks of no duration rank 2t and 2t + 1 (below 2^33); ends of tasks that take time rank
// below them (-1 - t), starts above them (2^33 + t).
EventKey start_key(const TaskTable& tasks, TaskId t) {
  const TimeNs at = tasks.measured_start[t];
  const auto task = static_cast<std::int64_t>(t);
  return {at, tasks.measured_end[t] == at ? 2 * task : (std::int64_t{1} << 33) + task};
}
EventKey end_key(const TaskTable& tasks, TaskId t) {
  const TimeNs at = tasks.measured_end[t];
  const auto task = static_cast<std::int64_t>(t);
  return {at, tasks.measured_start[t] == at ? 2 * task + 1 : -1 - task};
}

// Max over slots that start empty, with a search for the first slot of a range holding at
// least a bound: O(log n) a set, O(log n) a search.
template <typename T>
class MaxTree {
 public:
  MaxTree(std::size_t n, T empty) {
    while (size_ < n) size_ *= 2;
    max_.assign(2 * size_, empty);
  }
  void set(std::size_t slot, T value) {
    std::size_t i = slot + size_;
    max_[i] = value;
    for (i /= 2; i > 0; i /= 2) max_[i] = std::max(max_[2 * i], max_[2 * i + 1]);
  }
  // The first slot in [lo, hi) holding at least `bound`; hi if none.
  std::size_t first_at_least(std::size_t lo, std::size_t hi, T bound) const {
    if (lo >= hi) return hi;
    if (max_[size_ + lo] >= bound) return lo; // a run of slots that all hold enough: O(1) each
    return find(1, 0, size_, lo, hi, bound);
  }

 private:
  std::size_t find(std::size_t node, std::size_t node_lo, std::size_t node_hi, std::size_t lo, std::size_t hi,
                   T bound) const {
    if (node_hi <= lo || hi <= node_lo || max_[node] < bound) return hi;
    if (node_hi - node_lo == 1) return node_lo;
    const std::size_t mid = node_lo + (node_hi - node_lo) / 2;
    const std::size_t left = find(2 * node, node_lo, mid, lo, hi, bound);
    return left != hi ? left : find(2 * node + 1, mid, node_hi, lo, hi, bound);
  }

  std::size_t size_ = 1;
  std::vector<T> max_;
};

} // namespace

// A thread that sits in one task for a long time while another thread of its process, idle
// before and after, runs a burst of events that ends just before the first thread goes on,
// was waiting for that burst: PyTorch's backward() on the training thread while the autograd
// engine's device thread runs the backward operators and their launches. The waiting task
// may be any task of a CPU thread: an API call, an annotation, or untraced CPU work (a wait
// in code nothing traced, as an inference server's request thread waiting for its worker).
// A replay that kept the wait as fixed CPU time would not move when the burst gets faster
// (a faster GPU, mixed precision). The burst's first task starts a measured delay after the
// wait starts (Handoff; the idle piece before it no longer holds it back), and the wait ends
// a measured delay after the burst's last task (Join).
//
// Of the bursts that fit a wait (burst_in), the pass takes the one whose end is nearest the
// wait's end, among equals the one of the lowest thread. A handoff must not close a cycle:
// two or more threads whose 1 ms ranges start at one instant each fit every other's wait, and
// once chained thread 1 to 2, 2 to 3 and 3 to 1 (each wait ending after the burst that ends
// with the next wait), so that the replay left every task unscheduled. So a wait takes a
// burst only if the handoff and the join both go forward in one strict order of all tasks'
// starts and ends that program order goes forward in too (EventKey): the wait's start before
// the burst's first start, the burst's last end before the wait's end. Every edge the pass
// adds and every step of a thread then goes forward in that order, which leaves no room for
// a cycle. Times decide where they differ; at one instant the order is by task, so that of
// ranges with the same start and end, a lower thread's may wait for a higher one's and not
// the other way round (thread 1 waits for 2, 2 for 3: a chain). Matches then rule nothing
// out for each other, and the first fitting candidate of a wait is its burst.
//
// Trying every other thread for every long wait cost threads² (waiting_threads in
// bench/complexity.py), and so did trying the events that start inside each wait once the
// waits all overlap (overlap_waits), and trying the threads whose run ends near each wait's
// end but that were busy when it began (busy_handoffs: replay 65.4x from 16 000 to 128 000). So
// the candidates come from an index. A thread's tasks tile its time from its first event to
// its last (cut_thread), CPU work pieces between runs of events, so a burst is the events from
// a run's first, F, to a later or the same run's last, L, and burst_in takes it for a wait
// [ps, pe) exactly when, on F's side, ps lies in the piece before F, up to F's start (from its
// start, or just after if the event before it is an instant; from any time if F is its
// thread's first task), and the wait's start comes before F's in the order; and on L's side,
// L ends in [pe - slack, pe] (at pe, a range of a later task than the wait's), and the piece
// after L lasts past pe (or L is its thread's last task). Every wait is longer than its slack,
// so the piece around ps is not the one after L: the two sides only share the thread.
// That leaves two kinds of candidates for L, each in a max-tree over the runs' last events
// that lie near some wait's end (sorted by end descending, then thread: the nearest fit first),
// holding the latest wait end that the piece after each one lasts past, in a sweep over the
// process's waits by their start in the order:
//   A, a burst of one run: L's own run starts with F, entered while the wait's start lies in
//     the piece before it (and its key before F's). Exact: a candidate found is a burst.
//   B, a burst of several runs: F before the run before L's, entered while the wait's start
//     comes before that run's first start. Such a thread may still have been busy at ps, in
//     an earlier run still: a candidate burst_in refuses.
// At one instant (L ending at pe), a run's last event of no duration never fits, and the piece
// after a range always lasts past pe: a third tree of those there are, A or B. The first
// candidate of the three searches, in the order of positions, that burst_in confirms (with
// that run's last event as its last event, its first start after the wait's) is the best fit.
// A wait costs O(log n) for the burst an A candidate is, and O(log n) per B candidate refused:
// a thread busy as the wait began that runs again at least twice before the wait's end, the
// last of those runs ending just before it. No index can answer B exactly in O(log n):
// whether a thread is idle both at a wait's start and just after its end is whether two sets
// of threads meet (those idle at the start, those that ended a run just before the end), and
// answering that for n waits, with sets of n threads in all, in near-linear time would find a
// triangle in a graph of n edges in near-linear time, which no known method does
// (docs/limits.md).
void add_thread_handoffs(GraphBuildState& s) {
  constexpr TimeNs kMinWait = 500'000;   // shorter waits are not worth the risk of a false match
  constexpr TimeNs kMinResume = 200'000; // how soon after the burst the waiter resumes, at least...
  constexpr double kResumeShare = 0.02;  // ... or this share of the wait
  // A burst handed over does much of what the wait waited for. A short one that ended just
  // before the wait did was something else: PyTorch's pin-memory thread polling events for
  // 12-21 µs as a batch arrived, 1.3 to 1.4 ms into the training thread's 1.3-1.6 ms backward()
  // wait (H200 traces; the autograd thread's burst covered 1.15 of its 1.33 ms, or was just past
  // the join's reach). Bursts covering less than a quarter of the wait are passed over (the
  // real ones covered 32 % and more of theirs: where the training thread does work of its own
  // before it hands the pass over, as with data loading in its process), up to this many a wait
  // (each costs a search; a wait with more gets no handoff).
  constexpr int kMaxShortBursts = 16;
  const Trace& trace = s.trace;
  TaskTable& tasks = s.tasks;
  std::vector<ResourceId> threads;
  for (ResourceId r = 0; r < tasks.resource_count(); ++r) {
    if (!tasks.is_stream(r) && tasks.first(r) != tasks.end(r)) threads.push_back(r);
  }
  if (threads.size() < 2) return;
  auto is_event = [&](TaskId t) { return tasks.kind[t] != TaskKind::CpuWork; };
  const std::vector<TimeNs>& starts = tasks.measured_start;
  const std::vector<TimeNs>& ends = tasks.measured_end;
  std::vector<std::uint32_t> held_before(tasks.size() + 1, 0);
  for (TaskId t = 0; t < tasks.size(); ++t) {
    held_before[t + 1] = held_before[t] + (!is_event(t) && (tasks.flags[t] & kTaskBlocking) ? 1 : 0);
  }

  struct Wait {
    TaskId task;
    ResourceId thread;
    TimeNs start, end, slack;
  };
  // A run's last event: a burst's last event, if some wait ends just after it.
  struct BurstEnd {
    TimeNs end;
    TimeNs idle_through; // the latest wait end before its thread's next event
    EventKey idle_from;  // A: the wait starts at which its run may be a whole burst, [idle_from, run_start)
    EventKey run_start;
    EventKey previous_run_start; // B: the wait starts before it (the least key: no run before)
    ResourceId thread;
    TaskId task;
  };
  struct Process {
    std::vector<BurstEnd> burst_ends; // by end descending, then thread (then task: task order)
    std::vector<std::uint32_t> waits;
    std::vector<std::pair<TimeNs, TimeNs>> windows; // where its waits' bursts may end, merged, by time
    // The positions of burst_ends whose end lies in a wait's range [pe - slack, pe]: from
    // those ending at pe after the wait's task in task order (a thread's ends at pe go by
    // task), to those ending before pe, to the end of the range.
    std::array<std::size_t, 3> range(const Wait& w) const {
      auto lo = std::partition_point(burst_ends.begin(), burst_ends.end(), [&](const BurstEnd& e) {
        return e.end > w.end || (e.end == w.end && e.task <= w.task);
      });
      auto before = std::partition_point(lo, burst_ends.end(), [&](const BurstEnd& e) { return e.end >= w.end; });
      auto hi = std::partition_point(before, burst_ends.end(), [&](const BurstEnd& e) { return e.end >= w.end - w.slack; });
      return {static_cast<std::size_t>(lo - burst_ends.begin()), static_cast<std::size_t>(before - burst_ends.begin()),
              static_cast<std::size_t>(hi - burst_ends.begin())};
    }
    bool in_a_window(TimeNs t) const {
      auto it = std::upper_bound(windows.begin(), windows.end(), std::make_pair(t, std::numeric_limits<TimeNs>::max()));
      return it != windows.begin() && t <= std::prev(it)->second;
    }
  };
  std::vector<Wait> waits; // in the order they are matched
  std::map<std::uint32_t, Process> processes;
  for (ResourceId b : threads) {
    Process& process = processes[process_of(trace, b)];
    for (TaskId t = tasks.first(b); t < tasks.end(b); ++t) {
      const TimeNs ps = starts[t], pe = ends[t];
      if (pe - ps < kMinWait || (tasks.flags[t] & kTaskBlocking)) continue;
      const TimeNs slack = std::max<TimeNs>(kMinResume, static_cast<TimeNs>(kResumeShare * static_cast<double>(pe - ps)));
      process.waits.push_back(static_cast<std::uint32_t>(waits.size()));
      waits.push_back({t, b, ps, pe, slack});
      process.windows.emplace_back(pe - slack, pe);
    }
  }
  for (auto& [id, process] : processes) {
    auto& windows = process.windows;
    std::sort(windows.begin(), windows.end());
    std::size_t merged = 0;
    for (const auto& window : windows) {
      if (merged > 0 && window.first <= windows[merged - 1].second) {
        windows[merged - 1].second = std::max(windows[merged - 1].second, window.second);
      } else {
        windows[merged++] = window;
      }
    }
    windows.resize(merged);
  }
  // The burst ends that some wait's burst may end at: a long trace has few.
  for (ResourceId b : threads) {
    Process& process = processes[process_of(trace, b)];
    if (process.waits.empty()) continue;
    EventKey idle_from, run_start, previous_run_start; // the least key: no run yet
    for (TaskId t = tasks.first(b); t < tasks.end(b); ++t) {
      if (!is_event(t)) continue;
      if (t == tasks.first(b) || !is_event(t - 1)) {
        previous_run_start = run_start;
        run_start = start_key(tasks, t);
        // burst_in takes this event as a burst's first for a wait that starts in the piece
        // before it (from any time before the thread's first task), and after the event
        // before that piece started: that piece's start, or just after if that event is an
        // instant (which would be the first event at or after the wait's start then).
        idle_from = EventKey{};
        if (t > tasks.first(b)) {
          const bool instant_before = t - 1 > tasks.first(b) && starts[t - 2] == ends[t - 2];
          idle_from.time = starts[t - 1] + (instant_before ? 1 : 0);
        }
      }
      if (t + 1 < tasks.end(b) && is_event(t + 1)) continue;
      // burst_in wants the thread idle until after the wait ends: its next event (the end of
      // the piece after t) must come after pe, not at it.
      const TimeNs idle_through = t + 1 == tasks.end(b) ? std::numeric_limits<TimeNs>::max() : ends[t + 1] - 1;
      if (process.in_a_window(ends[t])) {
        process.burst_ends.push_back({ends[t], idle_through, idle_from, run_start, previous_run_start, b, t});
      }
    }
  }

  // Each wait's burst, if any: the first candidate of its range that burst_in confirms and
  // that goes forward in the order of starts and ends.
  struct Match {
    TaskId first = kNoTask, last = kNoTask;
    ResourceId thread = 0;
  };
  std::vector<Match> match(waits.size());
  constexpr TimeNs kOff = std::numeric_limits<TimeNs>::min(); // below every wait's end
  for (auto& [id, process] : processes) {
    if (process.waits.empty()) continue;
    std::vector<BurstEnd>& burst_ends = process.burst_ends;
    std::sort(burst_ends.begin(), burst_ends.end(), [](const BurstEnd& x, const BurstEnd& y) {
      if (x.end != y.end) return x.end > y.end;
      return x.thread != y.thread ? x.thread < y.thread : x.task < y.task;
    });
    const std::size_t n = burst_ends.size();
    auto positions_by = [&](auto key) {
      std::vector<std::uint32_t> order(n);
      for (std::uint32_t i = 0; i < n; ++i) order[i] = i;
      std::sort(order.begin(), order.end(), [&](std::uint32_t x, std::uint32_t y) { return key(x) < key(y); });
      return order;
    };
    const std::vector<std::uint32_t> by_idle_from = positions_by([&](std::uint32_t i) { return burst_ends[i].idle_from; });
    const std::vector<std::uint32_t> by_run_start = positions_by([&](std::uint32_t i) { return burst_ends[i].run_start; });
    const std::vector<std::uint32_t> by_previous =
        positions_by([&](std::uint32_t i) { return burst_ends[i].previous_run_start; });
    std::vector<std::uint32_t> by_start = process.waits;
    std::sort(by_start.begin(), by_start.end(), [&](std::uint32_t x, std::uint32_t y) {
      return start_key(tasks, waits[x].task) < start_key(tasks, waits[y].task);
    });
    // Per position, what the trees hold while it is a candidate of kind A or B: the latest
    // wait end it fits (idle_through), and, for a wait ending where it ends, whether it is a
    // range (1) or an instant (0).
    MaxTree<TimeNs> single_run(n, kOff), several_runs(n, kOff);
    MaxTree<std::uint8_t> at_wait_end(n, 0);
    std::vector<std::uint8_t> is_a(n, 0), is_b(n, 0);
    auto update = [&](std::uint32_t i) {
      const BurstEnd& e = burst_ends[i];
      single_run.set(i, is_a[i] ? e.idle_through : kOff);
      several_runs.set(i, is_b[i] ? e.idle_through : kOff);
      at_wait_end.set(i, (is_a[i] || is_b[i]) && starts[e.task] < e.end ? 1 : 0);
    };
    for (std::uint32_t i = 0; i < n; ++i) {
      if (EventKey{} < burst_ends[i].previous_run_start) {
        is_b[i] = 1;
        update(i);
      }
    }
    std::size_t a_in = 0, a_out = 0, b_out = 0;
    for (std::uint32_t q : by_start) {
      const Wait& w = waits[q];
      const EventKey wait_start = start_key(tasks, w.task), wait_end = end_key(tasks, w.task);
      for (; a_in < n && !(wait_start < burst_ends[by_idle_from[a_in]].idle_from); ++a_in) {
        is_a[by_idle_from[a_in]] = 1;
        update(by_idle_from[a_in]);
      }
      for (; a_out < n && !(wait_start < burst_ends[by_run_start[a_out]].run_start); ++a_out) {
        is_a[by_run_start[a_out]] = 0;
        update(by_run_start[a_out]);
      }
      for (; b_out < n && !(wait_start < burst_ends[by_previous[b_out]].previous_run_start); ++b_out) {
        is_b[by_previous[b_out]] = 0;
        update(by_previous[b_out]);
      }
      // Named, not structured bindings: a lambda cannot capture those before clang 16.
      const auto candidates = process.range(w);
      const std::size_t lo = std::get<0>(candidates), before = std::get<1>(candidates), hi = std::get<2>(candidates);
      // The first candidate at or after `pos`, in the order of positions.
      auto next = [&](std::size_t pos) {
        if (pos < before) {
          const std::size_t at = at_wait_end.first_at_least(pos, before, 1);
          if (at != before) return at;
          pos = before;
        }
        return std::min(single_run.first_at_least(pos, hi, w.end), several_runs.first_at_least(pos, hi, w.end));
      };
      int short_bursts = 0;
      for (std::size_t pos = next(lo); pos != hi && short_bursts < kMaxShortBursts; pos = next(pos + 1)) {
        const BurstEnd& e = burst_ends[pos];
        if (e.thread == w.thread) continue;
        const BurstFound found = burst_in(tasks, held_before, e.thread, w.start, w.end, w.slack);
        if (found.last != e.task || !(wait_start < start_key(tasks, found.first)) ||
            !(end_key(tasks, found.last) < wait_end)) {
          continue;
        }
        if (4 * (ends[found.last] - starts[found.first]) < w.end - w.start) {
          ++short_bursts;
          continue;
        }
        match[q] = {found.first, found.last, e.thread};
        break;
      }
    }
  }

  // A burst is handed over by one waiter, the one that woke it: where several waits took the
  // same first event (PyTorch's pin-memory thread, idle for 5 ms around a 1.1 ms backward()
  // of the autograd thread that the training thread handed over 142 µs into its wait, took it
  // 1.7 ms into its own), the one that began nearest before it keeps it, and the others none.
  std::unordered_map<TaskId, std::uint32_t> woken_by;
  for (std::uint32_t q = 0; q < waits.size(); ++q) {
    if (match[q].first == kNoTask) continue;
    auto [it, fresh] = woken_by.try_emplace(match[q].first, q);
    if (!fresh && waits[q].start > waits[it->second].start) it->second = q;
  }
  for (std::uint32_t q = 0; q < waits.size(); ++q) {
    const Match& best = match[q];
    if (best.first == kNoTask || woken_by.at(best.first) != q) continue;
    const Wait& w = waits[q];
    const TaskId p = w.task;
    s.edges.add(p, best.first, EdgeKind::Handoff, starts[best.first] - w.start);
    // What held the burst back is the handoff, not the idle time before it on its thread
    // (the piece before it, or the gap before a thread's first task).
    if (best.first > tasks.first(best.thread)) {
      tasks.base[best.first - 1] = 0;
    } else {
      tasks.gap[best.first] = 0;
    }
    s.edges.add(best.last, p, EdgeKind::Join, 0);
    s.note_wait(p, ends[best.last]);
  }
}

void add_inferred_waits(GraphBuildState& s) {
  add_queue_waits(s);
  add_thread_handoffs(s);
}

} // namespace dreamscope::graph_build
