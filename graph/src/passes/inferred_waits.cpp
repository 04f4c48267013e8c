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
#include <limits>
#include <map>
#include <optional>
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
  for (EventIndex row = 0; row < api.size(); ++row) {
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

BurstFound burst_in(const TaskTable& tasks, ResourceId b, TimeNs ps, TimeNs pe, TimeNs slack) {
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
  return {first, last};
}

// Max over slots that start empty, with a search for the first slot of a range holding at
// least a bound: O(log n) a set, O(log n) a search.
class MaxTree {
 public:
  explicit MaxTree(std::size_t n) {
    while (size_ < n) size_ *= 2;
    max_.assign(2 * size_, std::numeric_limits<TimeNs>::min());
  }
  void set(std::size_t slot, TimeNs value) {
    std::size_t i = slot + size_;
    max_[i] = value;
    for (i /= 2; i > 0; i /= 2) max_[i] = std::max(max_[2 * i], max_[2 * i + 1]);
  }
  // The first slot in [lo, hi) holding at least `bound`; hi if none.
  std::size_t first_at_least(std::size_t lo, std::size_t hi, TimeNs bound) const {
    if (lo >= hi) return hi;
    if (max_[size_ + lo] >= bound) return lo; // a run of slots that all hold enough: O(1) each
    return find(1, 0, size_, lo, hi, bound);
  }

 private:
  std::size_t find(std::size_t node, std::size_t node_lo, std::size_t node_hi, std::size_t lo, std::size_t hi,
                   TimeNs bound) const {
    if (node_hi <= lo || hi <= node_lo || max_[node] < bound) return hi;
    if (node_hi - node_lo == 1) return node_lo;
    const std::size_t mid = node_lo + (node_hi - node_lo) / 2;
    const std::size_t left = find(2 * node, node_lo, mid, lo, hi, bound);
    return left != hi ? left : find(2 * node + 1, mid, node_hi, lo, hi, bound);
  }

  std::size_t size_ = 1;
  std::vector<TimeNs> max_;
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
// wait's end, among equals the one of the lowest thread. Trying every other thread for every
// long wait cost threads² (waiting_threads in bench/complexity.py), and so did trying the
// events that start inside each wait once the waits all overlap (overlap_waits: 16 000
// threads whose 1 ms operators all overlap took replay 0.81 CPU-s, 37x the time of 2000).
// So the candidates come from an index. A burst's last event ends a run of its thread's
// consecutive events: a burst end, with the run's start S, its end R, and the thread idle
// from R until E (E infinite after the thread's last task). For a wait [ps, pe) it must have
// R in [pe - slack, pe], E >= pe, and S >= ps (the thread was idle at ps, so the run began
// after it). Only burst ends with R near some wait's end are indexed, sorted by R
// descending, then thread: the nearest fit first. The waits of a process are visited by
// end, latest first; each burst end enters a max-tree over S once pe has come down to its
// E; the first entry of the wait's R range with S >= ps is one search, and the first that
// burst_in confirms (with that burst end as its last event) is the best fit. A wait costs
// O(log n) per candidate tried. A candidate that passes the index but not burst_in is its
// own thread's burst end, or a thread busy at ps in an earlier run of a burst of several
// runs: a trace can make many such pairs (many threads, each running short runs across
// many waits' starts and ends), none of the bench's shapes does.
//
// The matching itself runs in the order of the old loop (threads, then their tasks), as an
// earlier match may rule a candidate out (serves). The sweep keeps the first kept_per_wait
// candidates of each wait and where it stopped. Only a candidate whose first or last task
// spans the wait exactly can be ruled out, so more are seldom needed; when they are, the
// wait goes on scanning its R range from there.
void add_thread_handoffs(GraphBuildState& s, std::size_t kept_per_wait) {
  constexpr TimeNs kMinWait = 500'000;   // shorter waits are not worth the risk of a false match
  constexpr TimeNs kMinResume = 200'000; // how soon after the burst the waiter resumes, at least...
  constexpr double kResumeShare = 0.02;  // ... or this share of the wait
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

  struct Wait {
    TaskId task;
    ResourceId thread;
    TimeNs start, end, slack;
  };
  struct BurstEnd {
    TimeNs end, idle_until, run_start;
    ResourceId thread;
    TaskId task;
  };
  struct Process {
    std::vector<BurstEnd> burst_ends; // by end descending, then thread
    std::vector<std::uint32_t> waits;
    std::vector<std::pair<TimeNs, TimeNs>> windows; // where its waits' bursts may end, merged, by time
    // The positions of burst_ends whose end lies in a wait's range [pe - slack, pe].
    std::pair<std::size_t, std::size_t> range(const Wait& w) const {
      auto lo = std::partition_point(burst_ends.begin(), burst_ends.end(), [&](const BurstEnd& e) { return e.end > w.end; });
      auto hi = std::partition_point(lo, burst_ends.end(), [&](const BurstEnd& e) { return e.end >= w.end - w.slack; });
      return {static_cast<std::size_t>(lo - burst_ends.begin()), static_cast<std::size_t>(hi - burst_ends.begin())};
    }
    bool in_a_window(TimeNs t) const {
      auto it = std::upper_bound(windows.begin(), windows.end(), std::make_pair(t, std::numeric_limits<TimeNs>::max()));
      return it != windows.begin() && t <= std::prev(it)->second;
    }
  };
  std::vector<Wait> waits; // in the order they are matched
  std::vector<Process*> process_of_wait;
  std::map<std::uint32_t, Process> processes;
  for (ResourceId b : threads) {
    Process& process = processes[process_of(trace, b)];
    for (TaskId t = tasks.first(b); t < tasks.end(b); ++t) {
      const TimeNs ps = starts[t], pe = ends[t];
      if (pe - ps < kMinWait || (tasks.flags[t] & kTaskBlocking)) continue;
      const TimeNs slack = std::max<TimeNs>(kMinResume, static_cast<TimeNs>(kResumeShare * static_cast<double>(pe - ps)));
      process.waits.push_back(static_cast<std::uint32_t>(waits.size()));
      waits.push_back({t, b, ps, pe, slack});
      process_of_wait.push_back(&process);
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
    TimeNs run_start = 0;
    for (TaskId t = tasks.first(b); t < tasks.end(b); ++t) {
      if (!is_event(t)) continue;
      if (t == tasks.first(b) || !is_event(t - 1)) run_start = starts[t];
      TimeNs idle_until;
      if (t + 1 == tasks.end(b)) {
        idle_until = std::numeric_limits<TimeNs>::max();
      } else if (!is_event(t + 1)) {
        idle_until = ends[t + 1];
      } else if (starts[t + 1] > ends[t]) {
        idle_until = starts[t + 1]; // not in a table the task pass cut (its pieces tile), but as burst_in reads it
      } else {
        continue;
      }
      if (process.in_a_window(ends[t])) process.burst_ends.push_back({ends[t], idle_until, run_start, b, t});
    }
  }

  struct Candidate {
    ResourceId thread;
    TaskId first, last;
  };
  // A wait's candidate at position `pos` of its process's burst ends, if burst_in confirms it.
  auto candidate_at = [&](const Process& process, std::size_t pos, const Wait& w) -> std::optional<Candidate> {
    const BurstEnd& e = process.burst_ends[pos];
    if (e.thread == w.thread) return std::nullopt;
    const BurstFound found = burst_in(tasks, e.thread, w.start, w.end, w.slack);
    if (found.last != e.task) return std::nullopt;
    return Candidate{e.thread, found.first, found.last};
  };
  struct Kept {
    std::uint32_t begin = 0, count = 0; // in `candidates`
    std::size_t next = 0;               // where the sweep stopped, if `more`
    bool more = false;
  };
  std::vector<Candidate> candidates;
  std::vector<Kept> kept(waits.size());
  for (auto& [id, process] : processes) {
    if (process.waits.empty()) continue;
    std::vector<BurstEnd>& burst_ends = process.burst_ends;
    std::sort(burst_ends.begin(), burst_ends.end(), [](const BurstEnd& x, const BurstEnd& y) {
      if (x.end != y.end) return x.end > y.end;
      return x.thread != y.thread ? x.thread < y.thread : x.task < y.task;
    });
    std::vector<std::uint32_t> by_idle(burst_ends.size());
    for (std::uint32_t i = 0; i < by_idle.size(); ++i) by_idle[i] = i;
    std::sort(by_idle.begin(), by_idle.end(), [&](std::uint32_t x, std::uint32_t y) {
      return burst_ends[x].idle_until > burst_ends[y].idle_until;
    });
    std::vector<std::uint32_t> by_end = process.waits;
    std::sort(by_end.begin(), by_end.end(), [&](std::uint32_t x, std::uint32_t y) { return waits[x].end > waits[y].end; });
    MaxTree run_starts(burst_ends.size()); // of the burst ends idle until the current wait's end
    std::size_t entered = 0;
    for (std::uint32_t q : by_end) {
      const Wait& w = waits[q];
      for (; entered < by_idle.size() && burst_ends[by_idle[entered]].idle_until >= w.end; ++entered) {
        run_starts.set(by_idle[entered], burst_ends[by_idle[entered]].run_start);
      }
      const auto [lo, hi] = process.range(w);
      Kept& k = kept[q];
      k.begin = static_cast<std::uint32_t>(candidates.size());
      for (std::size_t pos = run_starts.first_at_least(lo, hi, w.start); pos != hi;
           pos = run_starts.first_at_least(pos + 1, hi, w.start)) {
        if (k.count == kept_per_wait) {
          k.more = true;
          k.next = pos;
          break;
        }
        if (auto c = candidate_at(process, pos, w)) {
          candidates.push_back(*c);
          ++k.count;
        }
      }
    }
  }

  // The burst each wait was handed to, so that no burst is matched to a wait inside a burst
  // it was itself handed: two threads each running one 1 ms operator from the same moment
  // were each other's handoff and join, a cycle that left every task unscheduled.
  struct Burst {
    ResourceId thread = 0;
    TaskId first = kNoTask, last = kNoTask;
  };
  std::unordered_map<TaskId, Burst> burst_of;
  const auto serves = [&](TaskId waiter, ResourceId thread, TaskId task) {
    const auto it = burst_of.find(waiter);
    return it != burst_of.end() && it->second.thread == thread && it->second.first <= task && task <= it->second.last;
  };
  for (std::uint32_t q = 0; q < waits.size(); ++q) {
    const Wait& w = waits[q];
    const TaskId p = w.task;
    const ResourceId a = w.thread;
    const auto usable = [&](const Candidate& c) { return !serves(c.first, a, p) && !serves(c.last, a, p); };
    std::optional<Candidate> best;
    const Kept& k = kept[q];
    for (std::uint32_t i = k.begin; i < k.begin + k.count && !best; ++i) {
      if (usable(candidates[i])) best = candidates[i];
    }
    if (!best && k.more) {
      const Process& process = *process_of_wait[q];
      const std::size_t hi = process.range(w).second;
      for (std::size_t pos = k.next; pos < hi && !best; ++pos) {
        const BurstEnd& e = process.burst_ends[pos];
        if (e.idle_until < w.end || e.run_start < w.start) continue;
        if (auto c = candidate_at(process, pos, w); c && usable(*c)) best = c;
      }
    }
    if (!best) continue;
    burst_of[p] = Burst{best->thread, best->first, best->last};
    s.edges.add(p, best->first, EdgeKind::Handoff, starts[best->first] - w.start);
    // What held the burst back is the handoff, not the idle time before it on its thread
    // (the piece before it, or the gap before a thread's first task).
    if (best->first > tasks.first(best->thread)) {
      tasks.base[best->first - 1] = 0;
    } else {
      tasks.gap[best->first] = 0;
    }
    s.edges.add(best->last, p, EdgeKind::Join, 0);
    s.note_wait(p, ends[best->last]);
  }
}

void add_inferred_waits(GraphBuildState& s) {
  add_queue_waits(s);
  add_thread_handoffs(s, 2);
}

} // namespace dreamscope::graph_build
