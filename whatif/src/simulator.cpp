#include "dreamscope/whatif/simulator.h"

#include "dreamscope/storage/limits.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <queue>
#include <span>

namespace dreamscope::whatif {

std::string_view to_string(Constraint c) {
  switch (c) {
    case Constraint::RunStart: return "run_start";
    case Constraint::ResourceOrder: return "resource_order";
    case Constraint::Launch: return "launch";
    case Constraint::Dependency: return "dependency";
    case Constraint::EventWait: return "event_wait";
    case Constraint::Duration: return "duration";
    case Constraint::Sync: return "sync";
    case Constraint::Flow: return "flow";
    case Constraint::Handoff: return "handoff";
    case Constraint::Collective: return "collective";
  }
  return "unknown";
}

namespace {

std::uint64_t measured_order_key(const DependencyGraph& graph, TaskId t) {
  // Offset so that negative times still order correctly as unsigned keys.
  return static_cast<std::uint64_t>(graph.measured_start(t)) ^ (std::uint64_t{1} << 63);
}

} // namespace

std::uint64_t MeasuredOrderPolicy::key(const DependencyGraph& graph, TaskId t) const {
  return measured_order_key(graph, t);
}

std::uint64_t GpuFirstPolicy::key(const DependencyGraph& graph, TaskId t) const {
  const std::uint64_t cpu = is_gpu_task(graph.kind(t)) ? 0 : 1;
  return (cpu << 63) | (measured_order_key(graph, t) >> 1);
}

namespace {

class Simulation {
 public:
  Simulation(const DependencyGraph& g, const SimulationOptions& options)
      : g_(g), policy_(options.policy ? options.policy : &default_policy_), bindings_(options.record_bindings),
        cores_(options.cpu_cores), pool_of_(options.cpu_pool), background_(options.cpu_background),
        index_groups_(options.index_stream_groups) {
    std::size_t pools = std::max<std::size_t>(1, background_.size());
    for (std::uint32_t p : pool_of_) pools = std::max<std::size_t>(pools, p + 1);
    pools_.resize(pools);
    for (const auto& steps : background_) has_background_ |= !steps.empty();
  }

  SimulationResult run() {
    const std::size_t n = g_.task_count();
    r_.begin = g_.run_begin();
    r_.start.assign(n, kNoValue);
    r_.end.assign(n, kNoValue);
    if (bindings_) r_.binding.assign(n, TaskBinding{});
    ready_.assign(n, kNoValue);
    wait_ready_.assign(n, kNoValue);
    pending_.resize(n);
    wait_pending_.resize(n);
    for (TaskId t = 0; t < n; ++t) {
      pending_[t] = g_.start_in_degree(t) + 1;
      wait_pending_[t] = g_.completion_in_degree(t);
    }
    waiter_head_.assign(n, kNoTask);
    last_issued_.assign(g_.resource_count(), kNoTask);
    issued_.assign(n, 0);
    barriers_.assign(g_.resource_count(), {});
    event_target_.assign(g_.event_count(), kNoTask);
    wait_seq_.assign(n, 0);
    if (g_.collective_count() > 0) init_collectives();

    for (ResourceId r = 0; r < g_.resource_count(); ++r) {
      const TaskId first = g_.resource_first(r);
      if (first != g_.resource_end(r)) offer_start(first, later(r_.begin, gap(first)), Constraint::RunStart, kNoTask);
    }
    while (!heap_.empty() || !active_.empty()) {
      if (!active_.empty()) {
        const TimeNs next_start = heap_.empty() ? kNever : heap_.top().start;
        const CpuEnd first = first_cpu_end();
        // The background load changes first: the rates change with it.
        if (const TimeNs change = next_load_change(); change < first.at && change < next_start) {
          advance_sharing(change);
          continue;
        }
        // A CPU task that finishes before the next start goes first: it may free its thread.
        if (first.at <= next_start) {
          end_cpu_task(first);
          continue;
        }
      }
      const Candidate c = heap_.top();
      heap_.pop();
      advance_sharing(c.start);
      begin_task(c.task, c.start);
    }
    r_.end_time = r_.begin;
    for (TaskId t = 0; t < n; ++t) {
      if (r_.end[t] == kNoValue) {
        ++r_.unscheduled;
      } else if (!g_.removed(t)) {
        r_.end_time = std::max(r_.end_time, r_.end[t]);
      }
    }
    return std::move(r_);
  }

 private:
  // Work in fixed point, 2^-64 ns of work the unit: a pool's clock adds up each interval's
  // progress without rounding (below 2^-64 ns), however long the pool stays busy. Instants
  // lie within +-2^62 ns (limits.h), so a busy period's work is under 2^63 ns and a finish
  // under 2^63 + 2^62: the 128 bits hold them; the clamp only keeps a conversion defined.
  using Work = unsigned __int128;
  static Work to_work(double ns) { return ns > 0 ? static_cast<Work>(std::ldexp(std::min(ns, 0x1p63), 64)) : 0; }
  static double from_work(Work w) { return std::ldexp(static_cast<double>(w), -64); }

  // A CPU task sharing its pool's cores: done when the pool's virtual clock reaches `finish`.
  struct Sharing {
    Work finish;
    TaskId task;
    // Earliest finish first, then the earliest in task order.
    bool operator>(const Sharing& o) const { return finish != o.finish ? finish > o.finish : task > o.task; }
  };

  // Processor sharing with a virtual clock per pool: all the CPU tasks of a pool progress at
  // the same rate, so `done` (ns of work each of them did since the pool was last idle) tells
  // every one's progress at once, and a task that joins at `done` = d with w ns of work is
  // done at d + w. Advancing time advances `done` alone, and the next task to be done is the
  // least `finish`: each start, end or change of rate is O(log n) in the running tasks, not
  // O(n) as updating each one's remaining work was. The tasks whose `finish` the clock has
  // reached wait in `due`, in task order: they have no time left, and the earliest in task
  // order goes first, as among any tasks left the same time.
  //
  // Rounding: each interval's progress is the double it was (elapsed × rate), and the clock
  // and the finishes are exact sums of them and of the works, so a task's remaining work,
  // `finish - done`, is rounded once where subtracting each interval's progress from it
  // rounded at each step. Where all is whole ns (rates of 1, works of whole ns) both are
  // exact; else the two may differ by a few ulps of the remaining work, and the end, that
  // time rounded up to a whole ns, by 1 ns where the exact end is within them of a whole ns.
  struct Pool {
    Work done = 0;
    std::size_t running = 0;     // tasks in `ahead` and `due`
    double load = 0;             // background load at sharing_time_
    std::size_t next_step = 0;   // its first background step after sharing_time_
    std::size_t active_slot = 0; // its place in active_ while it has running tasks
    std::vector<Sharing> ahead;  // min-heap: finish > done
    std::vector<TaskId> due;     // min-heap: finish <= done
  };

  // The CPU task whose work is done first (the earliest in task order on a tie), and when.
  struct CpuEnd {
    TimeNs at = kNever;
    std::uint32_t pool = 0;
    TaskId task = kNoTask;
    bool due = false;
  };

  struct Candidate {
    TimeNs start;
    std::uint64_t key;
    TaskId task;
    bool operator>(const Candidate& o) const {
      if (start != o.start) return start > o.start;
      if (key != o.key) return key > o.key;
      return task > o.task;
    }
  };

  // A wait registered while simulating: `task` waits for the end of the task whose list
  // holds it, for its completion (a sync) or its start (an event wait on its stream).
  struct Waiter {
    TaskId task;
    TaskId next;
    bool for_start;
  };

  TimeNs gap(TaskId t) const { return g_.removed(t) ? 0 : g_.gap(t); }
  // A scenario may make durations as long as a trace may be (2^62 ns), and a chain of them
  // longer: instants saturate there, and the engine refuses a prediction that reached it.
  static TimeNs later(TimeNs at, TimeNs by) { return limits::add_ns(at, by); }

  void offer_start(TaskId t, TimeNs time, Constraint why, TaskId by) {
    if (time > ready_[t]) {
      ready_[t] = time;
      if (bindings_) {
        r_.binding[t].start = why;
        r_.binding[t].start_by = by;
      }
    }
    if (--pending_[t] == 0) {
      // The default policy is inlined: a virtual call per task is a tenth of the replay.
      const std::uint64_t key = policy_ == &default_policy_ ? measured_order_key(g_, t) : policy_->key(g_, t);
      heap_.push({ready_[t], key, t});
    }
  }

  void offer_completion(TaskId t, TimeNs time, Constraint why, TaskId by) {
    const std::uint64_t seq = ++offer_seq_;
    if (time > wait_ready_[t]) {
      wait_ready_[t] = time;
      wait_seq_[t] = seq;
      if (bindings_) {
        r_.binding[t].end = why;
        r_.binding[t].end_by = by;
      }
    }
  }

  void wait_for(TaskId t, TaskId target, bool for_start) {
    if (r_.end[target] != kNoValue) {
      if (for_start) {
        ++pending_[t];
        offer_start(t, later(r_.end[target], gap(t)), Constraint::EventWait, target);
      } else {
        offer_completion(t, r_.end[target], Constraint::Sync, target);
      }
      return;
    }
    if (for_start) {
      ++pending_[t];
    } else {
      ++wait_pending_[t];
    }
    waiters_.push_back({t, waiter_head_[target], for_start});
    waiter_head_[target] = static_cast<TaskId>(waiters_.size() - 1);
  }

  // A GPU task joins its stream's queue: later syncs on the stream wait for it, and it
  // waits for the events its stream was told to wait for since the last task issued.
  // What a sync or an event record sees as the stream's last task is the end of the run of
  // tasks issued in stream order: when threads launch onto one stream, a prediction can
  // issue a later task before an earlier one (PyTorch's autograd thread and its main
  // thread, once overhead correction shortened one of them), and a sync that waited for the
  // later one would wait for a task that runs only after the sync's own thread launches the
  // earlier one: a deadlock.
  void issue(TaskId t) {
    const ResourceId s = g_.resource(t);
    issued_[t] = 1;
    const TaskId before = last_issued_[s];
    TaskId next = last_issued_[s] == kNoTask ? g_.resource_first(s) : last_issued_[s] + 1;
    while (next < g_.resource_end(s) && issued_[next]) last_issued_[s] = next++;
    if (last_issued_[s] != before && !memberships_.empty()) update_memberships(s);
    auto& pending = barriers_[s];
    if (pending.empty()) return;
    for (TaskId target : pending) wait_for(t, target, true);
    pending.clear();
  }

  void run_sync_actions(TaskId t) {
    for (const SyncAction& a : g_.sync_actions_of(t)) {
      switch (a.op) {
        case SyncOp::WaitStreams: {
          if (GroupWait* group = group_wait(a.streams)) {
            wait_for_group(t, a.streams, *group, a.except);
            break;
          }
          const std::vector<ResourceId>& streams = g_.stream_groups()[a.streams];
          if (a.except != kNoIndex) {
            if (left_out_.empty()) left_out_.resize(g_.resource_count());
            for (ResourceId s : g_.stream_groups()[a.except]) left_out_[s] = 1;
          }
          for (ResourceId s : streams) {
            if (last_issued_[s] != kNoTask && (a.except == kNoIndex || !left_out_[s])) wait_for(t, last_issued_[s], false);
          }
          if (a.except != kNoIndex) {
            for (ResourceId s : g_.stream_groups()[a.except]) left_out_[s] = 0;
          }
          break;
        }
        case SyncOp::WaitEvent:
          if (event_target_[a.event] != kNoTask) wait_for(t, event_target_[a.event], false);
          break;
        case SyncOp::RecordEvent:
          event_target_[a.event] = last_issued_[a.stream];
          break;
        case SyncOp::StreamWaitEvent:
          if (event_target_[a.event] != kNoTask) barriers_[a.stream].push_back(event_target_[a.event]);
          break;
      }
    }
  }

  void begin_task(TaskId t, TimeNs start) {
    r_.start[t] = start;
    if (g_.is_stream(g_.resource(t)) && !(g_.flags(t) & kTaskIssuedByEdge)) issue(t);
    const auto& edges = g_.edges();
    for (auto [e, e_end] = boost::out_edges(t, edges); e != e_end; ++e) {
      const EdgeInfo& info = edges[*e];
      if (!edge_from_start(info.kind)) continue;
      const TaskId u = boost::target(*e, edges);
      if (info.kind == EdgeKind::Launch) {
        issue(u);
        offer_start(u, later(start, info.delay), Constraint::Launch, t);
      } else if (info.kind == EdgeKind::Collective) {
        // A peer arrived: the peers that were already in and waited only for it may finish.
        offer_completion(u, later(start, info.delay), Constraint::Collective, t);
        complete_wait(u);
      } else {
        offer_start(u, later(start, info.delay), Constraint::Handoff, t);
      }
    }
    if (!arrivals_.empty() && has_arrival_[t]) arrive(t);
    if (!finishing_.empty()) {
      const TaskId first = finishing_.back();
      finishing_.pop_back();
      finish(first);
    }
    if (g_.flags(t) & kTaskHasSync) run_sync_actions(t);
    if (wait_pending_[t] != 0) return;
    if (cores_ > 0 && g_.uses_cpu(t) && g_.duration(t) > 0) {
      // The CPU part first, then what the task waited off the CPU (a fetch's storage wait
      // after its reads): an approximation of where in the task the waiting fell.
      const double duration = static_cast<double>(g_.duration(t));
      const double work = duration * g_.cpu_share(t);
      if (off_cpu_.empty()) off_cpu_.resize(g_.task_count());
      off_cpu_[t] = static_cast<TimeNs>(std::llround(duration - work));
      join_sharing(pool_of(t), t, work);
      return;
    }
    finish(t);
  }

  // Processor sharing: the CPU tasks of a pool running at `sharing_time_` each progress at
  // min(1, cores / (running in the pool + its background load)) ns of work per ns.
  std::uint32_t pool_of(TaskId t) const { return pool_of_.empty() ? 0 : pool_of_[g_.resource(t)]; }
  double sharing_rate(const Pool& pool) const {
    const double running = static_cast<double>(pool.running) + pool.load;
    const double cores = static_cast<double>(cores_);
    return running <= cores ? 1.0 : cores / running;
  }
  void join_sharing(std::uint32_t p, TaskId t, double work) {
    Pool& pool = pools_[p];
    if (pool.running++ == 0) {
      pool.done = 0;
      pool.active_slot = active_.size();
      active_.push_back(p);
    }
    pool.ahead.push_back({pool.done + to_work(work), t});
    std::push_heap(pool.ahead.begin(), pool.ahead.end(), std::greater<>{});
    settle(pool);
  }
  // Moves the tasks whose work the pool's clock has reached from `ahead` to `due`.
  static void settle(Pool& pool) {
    while (!pool.ahead.empty() && pool.ahead.front().finish <= pool.done) {
      pool.due.push_back(pool.ahead.front().task);
      std::push_heap(pool.due.begin(), pool.due.end(), std::greater<>{});
      std::pop_heap(pool.ahead.begin(), pool.ahead.end(), std::greater<>{});
      pool.ahead.pop_back();
    }
  }
  // The rates hold between changes of the background load: time advances from one to the next.
  void advance_sharing(TimeNs to) {
    while (to > sharing_time_) {
      const TimeNs at = std::min(to, next_load_change());
      const double elapsed = static_cast<double>(at) - static_cast<double>(sharing_time_);
      for (std::uint32_t p : active_) {
        Pool& pool = pools_[p];
        pool.done += to_work(elapsed * sharing_rate(pool));
        settle(pool);
      }
      sharing_time_ = at;
      if (!has_background_) break;
      for (std::size_t p = 0; p < background_.size(); ++p) {
        Pool& pool = pools_[p];
        for (; pool.next_step < background_[p].size() && background_[p][pool.next_step].time <= sharing_time_; ++pool.next_step) {
          pool.load = background_[p][pool.next_step].threads;
        }
      }
    }
  }
  // The next change of any pool's background load after `sharing_time_` (kNever: none).
  TimeNs next_load_change() const {
    TimeNs next = kNever;
    if (!has_background_) return next;
    for (std::size_t p = 0; p < background_.size(); ++p) {
      if (pools_[p].next_step < background_[p].size()) next = std::min(next, background_[p][pools_[p].next_step].time);
    }
    return next;
  }
  // Over the pools with running tasks: the first of each is its first due task (no time left),
  // else the least `finish`; the first over all is the one with the least time left (the
  // earliest in task order on a tie).
  CpuEnd first_cpu_end() const {
    CpuEnd first;
    double least = 0;
    for (std::uint32_t p : active_) {
      const Pool& pool = pools_[p];
      const bool due = !pool.due.empty();
      const TaskId task = due ? pool.due.front() : pool.ahead.front().task;
      const double left = due ? 0.0 : from_work(pool.ahead.front().finish - pool.done) / sharing_rate(pool);
      if (first.task == kNoTask || left < least || (left == least && task < first.task)) {
        first = {kNever, p, task, due};
        least = left;
      }
    }
    first.at = later(sharing_time_, limits::saturated_ns(std::ceil(least)));
    return first;
  }
  void end_cpu_task(const CpuEnd& first) {
    Pool& pool = pools_[first.pool];
    // Out of the heaps first: advancing may settle it into `due` behind tasks earlier in task order.
    if (first.due) {
      std::pop_heap(pool.due.begin(), pool.due.end(), std::greater<>{});
      pool.due.pop_back();
    } else {
      std::pop_heap(pool.ahead.begin(), pool.ahead.end(), std::greater<>{});
      pool.ahead.pop_back();
    }
    // It shares the cores until `at`.
    advance_sharing(first.at);
    if (--pool.running == 0) {
      const std::uint32_t moved = active_.back();
      active_[pool.active_slot] = moved;
      pools_[moved].active_slot = pool.active_slot;
      active_.pop_back();
    }
    const TaskId t = first.task;
    const TimeNs end = later(first.at, off_cpu_[t]);
    r_.cpu_contention =
        later(r_.cpu_contention, std::max<TimeNs>(0, later(later(end, -r_.start[t]), -g_.duration(t))));
    finish(t, end);
  }

  // Ends t and everything whose end was only waiting for it (chains of blocking tasks).
  // `first_end`: when t ends, if not at its start (or wake-up) plus its duration.
  void finish(TaskId first, TimeNs first_end = kNoValue) {
    finishing_.push_back(first);
    while (!finishing_.empty()) {
      const TaskId t = finishing_.back();
      finishing_.pop_back();
      const TimeNs woke = std::max(r_.start[t], wait_ready_[t]);
      if (bindings_ && wait_ready_[t] <= r_.start[t]) r_.binding[t].end = Constraint::Duration;
      // A blocking task that finds what it waits for done pays no wake-up.
      const bool waited = wait_ready_[t] > r_.start[t];
      const TimeNs own = waited || !g_.blocking(t) ? g_.duration(t) : g_.ready_duration(t);
      const TimeNs end = t == first && first_end != kNoValue ? first_end : later(woke, own);
      r_.end[t] = end;
      if (!memberships_.empty() && last_issued_[g_.resource(t)] == t) update_memberships(g_.resource(t));
      if (t + 1 < g_.resource_end(g_.resource(t))) offer_start(t + 1, later(end, gap(t + 1)), Constraint::ResourceOrder, t);
      const auto& edges = g_.edges();
      for (auto [e, e_end] = boost::out_edges(t, edges); e != e_end; ++e) {
        const EdgeInfo& info = edges[*e];
        if (edge_from_start(info.kind)) continue;
        const TaskId u = boost::target(*e, edges);
        if (edge_gates_completion(info.kind)) {
          offer_completion(u, later(end, info.delay), info.kind == EdgeKind::Flow ? Constraint::Flow : Constraint::Sync, t);
          complete_wait(u);
        } else {
          offer_start(u, later(end, info.delay), Constraint::Dependency, t);
        }
      }
      if (!release_head_.empty() && release_head_[t] != kNoRelease) release_group_waits(t, end);
      std::size_t next_release = 0;
      for (TaskId w = waiter_head_[t]; w != kNoTask;) {
        // The syncs of indexed groups that t lets go come where their own waits on t would
        // have been among these (the latest registered first): the order of the pushes is
        // the order in which they finish, which decides between their equal offers downstream.
        for (; next_release < let_go_.size() && let_go_[next_release].stamp > w; ++next_release) {
          complete_group_wait(let_go_[next_release]);
        }
        const Waiter waiter = waiters_[w];
        if (waiter.for_start) {
          offer_start(waiter.task, later(end, gap(waiter.task)), Constraint::EventWait, t);
        } else {
          offer_completion(waiter.task, end, Constraint::Sync, t);
          complete_wait(waiter.task);
        }
        w = waiter.next;
      }
      for (; next_release < let_go_.size(); ++next_release) complete_group_wait(let_go_[next_release]);
      let_go_.clear();
      waiter_head_[t] = kNoTask;
    }
  }

  void complete_wait(TaskId u) {
    if (--wait_pending_[u] == 0 && r_.start[u] != kNoValue) finishing_.push_back(u);
  }

  // An end offered to a sync's completion: `time`, by task `by`, as offer `seq` (offer_seq_).
  struct Offer {
    TimeNs time = kNoValue;
    std::uint64_t seq = 0;
    TaskId by = kNoTask;
  };
  // The offer a completion keeps of two: the later, the earlier offered on a tie.
  static const Offer& kept_offer(const Offer& a, const Offer& b) {
    if (a.by == kNoTask || b.by == kNoTask) return a.by == kNoTask ? b : a;
    if (a.time != b.time) return a.time > b.time ? a : b;
    return a.seq <= b.seq ? a : b;
  }
  // A sync of an indexed group that the end of the last task it waited for lets go: `stamp`
  // (waiters_.size() when it waited) and `order` place it among the plain waits of that task.
  struct GroupRelease {
    TaskId task;
    std::size_t stamp;
    std::uint64_t order;
    Offer offer;
  };

  // A group of streams that device-wide syncs wait for, indexed once a second sync waits for
  // it: N syncs over N streams cost N² when each looked at every stream (device_syncs in
  // bench/complexity.py), and N syncs that each found N streams' last tasks still running cost
  // N² waits, one per sync and task (running_syncs). Per position in the group: the end of
  // its stream's last issued task once known (a max-tree, the lowest position among equals),
  // or that task while it runs (`target`). The syncs that find tasks running are logged in
  // order, so that the syncs waiting for a running task are a range of the log: those logged
  // while it was its position's target (`since` to when it stopped being). As it ends, the
  // range is released in one step: a segment tree over the log keeps how many tasks each sync
  // still waits for (the least below each node) and the latest end offered to each (the best
  // offer of each node's whole range), and gives up the syncs whose count reaches 0.
  struct GroupWait {
    static constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();
    static constexpr std::int64_t kIdle = std::int64_t{1} << 62; // a leaf that waits for nothing
    std::size_t size = 1;
    std::vector<TimeNs> end;          // per position; kNoValue: no task, or still running
    std::vector<std::uint32_t> best;  // per node: the position of its latest end, kNone if none
    std::vector<TaskId> target;       // per position: its last issued task while that runs, else kNoTask
    std::vector<std::uint32_t> since; // per position with a target: the first logged sync waiting for it
    std::size_t running = 0;          // positions with a target

    struct Logged {
      TaskId task;
      std::size_t stamp;
      std::uint64_t order;
    };
    std::vector<Logged> log;
    std::size_t leaves = 1;
    std::vector<std::int64_t> least; // per node: the least count below it, its own `add` in
    std::vector<std::int64_t> add;   // per inner node: what its whole range was decremented by
    std::vector<Offer> offer;        // per node: the best offer to its whole range

    // The streams a sync leaves out (SyncAction::except), while it runs: their positions, in
    // order, and a mark per position.
    std::vector<std::pair<ResourceId, std::uint32_t>> by_stream; // (stream, position), sorted
    std::vector<std::uint32_t> out;
    std::vector<std::uint8_t> is_out;

    // `syncs`: how many WaitStreams actions name the group, the most the log may hold.
    GroupWait(const std::vector<ResourceId>& streams, std::size_t syncs) {
      const std::size_t n = streams.size();
      while (size < n) size *= 2;
      end.assign(size, kNoValue);
      best.assign(2 * size, kNone);
      target.assign(n, kNoTask);
      since.assign(n, 0);
      is_out.assign(n, 0);
      for (std::uint32_t pos = 0; pos < n; ++pos) by_stream.emplace_back(streams[pos], pos);
      std::sort(by_stream.begin(), by_stream.end());
      while (leaves < syncs) leaves *= 2;
      least.assign(2 * leaves, kIdle);
      add.assign(leaves, 0);
      offer.assign(2 * leaves, Offer{});
    }
    void leave_out(std::span<const ResourceId> streams) {
      for (ResourceId s : streams) {
        auto it = std::lower_bound(by_stream.begin(), by_stream.end(), std::pair<ResourceId, std::uint32_t>{s, 0});
        for (; it != by_stream.end() && it->first == s; ++it) {
          if (!is_out[it->second]) out.push_back(it->second);
          is_out[it->second] = 1;
        }
      }
      std::sort(out.begin(), out.end());
    }
    void clear_left_out() {
      for (std::uint32_t pos : out) is_out[pos] = 0;
      out.clear();
    }
    // Of positions a and b, the one whose end a sync keeps: the later, the lower on a tie.
    std::uint32_t later_of(std::uint32_t a, std::uint32_t b) const {
      if (a == kNone || b == kNone) return a == kNone ? b : a;
      if (end[a] != end[b]) return end[a] > end[b] ? a : b;
      return std::min(a, b);
    }
    std::uint32_t latest_between(std::uint32_t lo, std::uint32_t hi) const {
      std::uint32_t found = kNone;
      for (std::size_t l = lo + size, h = hi + size; l < h; l /= 2, h /= 2) {
        if (l & 1) found = later_of(found, best[l++]);
        if (h & 1) found = later_of(found, best[--h]);
      }
      return found;
    }
    // The latest end known among the positions not left out (kNone: none).
    std::uint32_t latest_kept() const {
      if (out.empty()) return best[1];
      std::uint32_t found = kNone, from = 0;
      for (std::uint32_t pos : out) {
        found = later_of(found, latest_between(from, pos));
        from = pos + 1;
      }
      return later_of(found, latest_between(from, static_cast<std::uint32_t>(target.size())));
    }
    void set_end(std::uint32_t pos, TimeNs value) {
      end[pos] = value;
      std::size_t i = size + pos;
      best[i] = value == kNoValue ? kNone : pos;
      for (i /= 2; i > 0; i /= 2) best[i] = later_of(best[2 * i], best[2 * i + 1]);
    }
    // Logs a sync that waits for `count` running tasks.
    void log_sync(const Logged& sync, std::int64_t count) {
      std::size_t i = leaves + log.size();
      log.push_back(sync);
      least[i] = count;
      for (i /= 2; i > 0; i /= 2) least[i] = std::min(least[2 * i], least[2 * i + 1]) + add[i];
    }
    // A task that the logged syncs [from, to) waited for ended, offering `o`.
    void release(std::uint32_t from, std::uint32_t to, const Offer& o, std::vector<GroupRelease>& released) {
      release(1, 0, leaves, from, to, o, 0, Offer{}, released);
    }

   private:
    bool leaf(std::size_t node) const { return node >= leaves; }
    // `above`: what the node's ancestors' ranges were decremented by; `inherited`: their best offer.
    void release(std::size_t node, std::size_t lo, std::size_t hi, std::size_t from, std::size_t to, const Offer& o,
                 std::int64_t above, const Offer& inherited, std::vector<GroupRelease>& released) {
      if (to <= lo || hi <= from) return;
      if (from <= lo && hi <= to) {
        --least[node];
        if (!leaf(node)) --add[node];
        offer[node] = kept_offer(offer[node], o);
        let_go(node, above, inherited, released);
        return;
      }
      const std::size_t mid = (lo + hi) / 2;
      const Offer here = kept_offer(inherited, offer[node]);
      release(2 * node, lo, mid, from, to, o, above + add[node], here, released);
      release(2 * node + 1, mid, hi, from, to, o, above + add[node], here, released);
      least[node] = std::min(least[2 * node], least[2 * node + 1]) + add[node];
    }
    // Gives up the syncs below `node` that wait for nothing more.
    void let_go(std::size_t node, std::int64_t above, const Offer& inherited, std::vector<GroupRelease>& released) {
      if (least[node] + above > 0) return;
      const Offer here = kept_offer(inherited, offer[node]);
      if (leaf(node)) {
        const Logged& sync = log[node - leaves];
        released.push_back({sync.task, sync.stamp, sync.order, here});
        least[node] = kIdle;
        return;
      }
      let_go(2 * node, above + add[node], here, released);
      let_go(2 * node + 1, above + add[node], here, released);
      least[node] = std::min(least[2 * node], least[2 * node + 1]) + add[node];
    }
  };
  // The index of group g, made on the second sync that waits for it; nullptr before.
  GroupWait* group_wait(std::uint32_t g) {
    if (group_uses_.empty()) {
      group_uses_.assign(g_.stream_groups().size(), 0);
      group_syncs_.assign(g_.stream_groups().size(), 0);
      for (const SyncAction& a : g_.sync_actions()) {
        if (a.op == SyncOp::WaitStreams) ++group_syncs_[a.streams];
      }
      group_waits_.resize(g_.stream_groups().size());
    }
    if (group_waits_[g]) return group_waits_[g].get();
    const std::vector<ResourceId>& streams = g_.stream_groups()[g];
    if (!index_groups_ || streams.size() < 2 || ++group_uses_[g] < 2) return nullptr;
    if (memberships_.empty()) memberships_.resize(g_.resource_count());
    group_waits_[g] = std::make_unique<GroupWait>(streams, group_syncs_[g]);
    for (std::uint32_t pos = 0; pos < streams.size(); ++pos) {
      memberships_[streams[pos]].push_back({g, pos});
      update_membership(streams[pos], g, pos);
    }
    return group_waits_[g].get();
  }
  // What sync t, on indexed group g, waits for: as the plain loop over the group's streams but
  // those left out, in O(log n) per stream left out, however many tasks still run.
  void wait_for_group(TaskId t, std::uint32_t g, GroupWait& group, std::uint32_t except) {
    const std::vector<ResourceId>& streams = g_.stream_groups()[g];
    group.leave_out(except == kNoIndex ? std::span<const ResourceId>{} : g_.stream_groups()[except]);
    // Of the targets whose end is known, the latest: the first in the group's order among
    // equals, which the loop's offers would have kept.
    if (const std::uint32_t pos = group.latest_kept(); pos != GroupWait::kNone) {
      offer_completion(t, r_.end[last_issued_[streams[pos]]], Constraint::Sync, last_issued_[streams[pos]]);
    }
    std::int64_t count = static_cast<std::int64_t>(group.running);
    for (std::uint32_t pos : group.out) count -= group.target[pos] != kNoTask;
    if (count > 0) {
      // A running task left out is waited for by the syncs logged before this one and by
      // those after, not by this one: its range is cut in two around it.
      const auto at = static_cast<std::uint32_t>(group.log.size());
      for (std::uint32_t pos : group.out) {
        if (group.target[pos] == kNoTask) continue;
        close_target(g, group, pos, at);
        group.since[pos] = at + 1;
      }
      group.log_sync({t, waiters_.size(), ++group_order_}, count);
      ++wait_pending_[t];
    }
    group.clear_left_out();
  }
  // The syncs logged from since[pos] to `to` wait for the target of pos: released as it ends.
  void close_target(std::uint32_t g, GroupWait& group, std::uint32_t pos, std::uint32_t to) {
    if (group.since[pos] >= to) return;
    if (release_head_.empty()) release_head_.assign(g_.task_count(), kNoRelease);
    const TaskId target = group.target[pos];
    pending_releases_.push_back({g, group.since[pos], to, release_head_[target]});
    release_head_[target] = static_cast<std::uint32_t>(pending_releases_.size() - 1);
  }
  void update_membership(ResourceId s, std::uint32_t g, std::uint32_t pos) {
    GroupWait& group = *group_waits_[g];
    const TaskId last = last_issued_[s];
    const bool is_running = last != kNoTask && r_.end[last] == kNoValue;
    if (group.target[pos] != kNoTask && (!is_running || group.target[pos] != last)) {
      close_target(g, group, pos, static_cast<std::uint32_t>(group.log.size()));
      group.target[pos] = kNoTask;
      --group.running;
    }
    if (is_running && group.target[pos] == kNoTask) {
      group.target[pos] = last;
      group.since[pos] = static_cast<std::uint32_t>(group.log.size());
      ++group.running;
    }
    group.set_end(pos, last == kNoTask || is_running ? kNoValue : r_.end[last]);
  }
  void update_memberships(ResourceId s) {
    for (const auto& [g, pos] : memberships_[s]) update_membership(s, g, pos);
  }
  // Task t, which indexed groups' syncs waited for, ended at `end`: the syncs it was the last
  // wait of, latest registered first, as t's plain waiters are gone through.
  void release_group_waits(TaskId t, TimeNs end) {
    const Offer o{end, ++offer_seq_, t};
    for (std::uint32_t r = release_head_[t]; r != kNoRelease; r = pending_releases_[r].next) {
      group_waits_[pending_releases_[r].group]->release(pending_releases_[r].from, pending_releases_[r].to, o, let_go_);
    }
    release_head_[t] = kNoRelease;
    std::sort(let_go_.begin(), let_go_.end(), [](const GroupRelease& a, const GroupRelease& b) {
      return a.stamp != b.stamp ? a.stamp > b.stamp : a.order > b.order;
    });
  }
  // The best offer of its waits, made when they were but merged only now: it takes the place
  // of an equal one made after it (offer_seq_), as the plain loop's offers keep the first.
  void complete_group_wait(const GroupRelease& r) {
    const TaskId u = r.task;
    if (r.offer.time > wait_ready_[u] || (r.offer.time == wait_ready_[u] && r.offer.seq < wait_seq_[u])) {
      wait_ready_[u] = r.offer.time;
      wait_seq_[u] = r.offer.seq;
      if (bindings_) {
        r_.binding[u].end = Constraint::Sync;
        r_.binding[u].end_by = r.offer.by;
      }
    }
    complete_wait(u);
  }

  // Collectives (DependencyGraph::collective). A member's completion waits for the arrival of
  // each peer among the first `peers` members (sorted by measured arrival), itself skipped:
  // with `first` and `second` the two lowest positions not arrived yet, that is when `first`
  // reaches `peers`, or `first` is the member itself and `second` reaches `peers`. Both only
  // grow, so a sweep over the members by `peers` releases each once: O(R log R) an instance,
  // where a `collective` edge per pair was R² offers. What it is offered is what the edges'
  // offers would have left: the latest arrival among its peers, the earliest offered among
  // equals (a max-tree per instance), placed among the task's other offers by `offer_seq_`.
  // A member a what-if unlinked from some of its peers (DependencyGraph::unlinked_peers)
  // takes each other peer's arrival as its edge would (an offer and a wait each), in its
  // place among the members that arrival lets go: O(R) per such member and arrival, where
  // expanding the instance into its edges for it was R² for all.
  struct Arrival {
    TaskId task;
    std::uint32_t instance, position;
    auto operator<=>(const Arrival&) const = default;
  };
  struct InstanceWait {
    std::uint32_t begin = 0, size = 0; // its members: collective_members_[begin, begin + size)
    std::uint32_t first = 0, second = 0;
    std::uint32_t swept = 0;           // members of by_peers_ released by `first`
    std::uint32_t leaves = 1;          // the max-tree's width: tree_[2 * begin ...] holds 2 * leaves
    std::uint32_t tree = 0;            // its max-tree's offset in tree_
  };
  static constexpr std::uint32_t kNoMember = std::numeric_limits<std::uint32_t>::max();

  void init_collectives() {
    const std::size_t count = g_.collective_count();
    instances_.resize(count);
    has_arrival_.assign(g_.task_count(), 0);
    std::uint32_t flat = 0, tree = 0;
    for (std::uint32_t i = 0; i < count; ++i) {
      const std::span<const CollectiveMember> members = g_.collective(i);
      InstanceWait& w = instances_[i];
      w.begin = flat;
      w.size = static_cast<std::uint32_t>(members.size());
      w.second = 1;
      while (w.leaves < w.size) w.leaves *= 2;
      w.tree = tree;
      tree += 2 * w.leaves;
      const std::size_t sorted = by_peers_.size();
      for (std::uint32_t pos = 0; pos < w.size; ++pos) {
        const CollectiveMember& m = members[pos];
        arrivals_.push_back({m.arrival, i, pos});
        has_arrival_[m.arrival] = 1;
        if (!g_.unlinked_peers(flat + pos).empty()) {
          for (std::uint32_t p = 0; p < m.peers; ++p) wait_pending_[m.completion] += waits_for(flat + pos, pos, p) ? 1 : 0;
          unlinked_members_.push_back(flat + pos);
        } else if (m.peers > (pos < m.peers ? 1u : 0u)) {
          ++wait_pending_[m.completion];
          by_peers_.push_back(flat + pos);
        }
      }
      std::stable_sort(by_peers_.begin() + static_cast<std::ptrdiff_t>(sorted), by_peers_.end(),
                       [&](std::uint32_t a, std::uint32_t b) { return member(a).peers < member(b).peers; });
      peers_end_.push_back(static_cast<std::uint32_t>(by_peers_.size()));
      unlinked_end_.push_back(static_cast<std::uint32_t>(unlinked_members_.size()));
      flat += w.size;
    }
    std::sort(arrivals_.begin(), arrivals_.end());
    arrived_.assign(flat, 0);
    released_.assign(flat, 0);
    unlinked_.assign(flat, 0);
    // The instance never lets them go as a whole: their peers do, one by one.
    for (std::uint32_t f : unlinked_members_) released_[f] = unlinked_[f] = 1;
    arrival_seq_.assign(flat, 0);
    tree_.assign(tree, kNoMember);
  }
  const CollectiveMember& member(std::uint32_t flat) const { return g_.collective_members()[flat]; }
  // Whether the member at `pos` of its instance waits for the arrival of the one at `peer`.
  bool waits_for(std::uint32_t flat, std::uint32_t pos, std::uint32_t peer) const {
    if (peer == pos || peer >= member(flat).peers) return false;
    const std::span<const UnlinkedPeer> cut = g_.unlinked_peers(flat);
    return !std::binary_search(cut.begin(), cut.end(), UnlinkedPeer{flat, peer});
  }
  // The member whose arrival a completion would keep: the later, the earlier offered on a tie.
  std::uint32_t better(std::uint32_t a, std::uint32_t b) const {
    if (a == kNoMember) return b;
    if (b == kNoMember) return a;
    const TimeNs ta = r_.start[member(a).arrival], tb = r_.start[member(b).arrival];
    if (ta != tb) return ta > tb ? a : b;
    return arrival_seq_[a] <= arrival_seq_[b] ? a : b;
  }
  // The best arrival among positions [lo, hi) of instance w.
  std::uint32_t best_between(const InstanceWait& w, std::uint32_t lo, std::uint32_t hi) const {
    std::uint32_t best = kNoMember;
    for (lo += w.leaves, hi += w.leaves; lo < hi; lo /= 2, hi /= 2) {
      if (lo & 1) best = better(best, tree_[w.tree + lo++]);
      if (hi & 1) best = better(best, tree_[w.tree + --hi]);
    }
    return best;
  }

  // Task t started: the members it is the arrival of are in; the completions this lets go get
  // their offer, in instance order and then in call order (the order of the edges' offers).
  void arrive(TaskId t) {
    const std::uint64_t seq = ++offer_seq_;
    auto it = std::lower_bound(arrivals_.begin(), arrivals_.end(), Arrival{t, 0, 0});
    while (it != arrivals_.end() && it->task == t) {
      const std::uint32_t i = it->instance;
      InstanceWait& w = instances_[i];
      ready_members_.clear();
      for (; it != arrivals_.end() && it->task == t && it->instance == i; ++it) {
        const std::uint32_t flat = w.begin + it->position;
        arrived_[flat] = 1;
        arrival_seq_[flat] = seq;
        std::uint32_t node = w.leaves + it->position;
        tree_[w.tree + node] = flat;
        for (node /= 2; node > 0; node /= 2) {
          tree_[w.tree + node] = better(tree_[w.tree + 2 * node], tree_[w.tree + 2 * node + 1]);
        }
        while (w.first < w.size && arrived_[w.begin + w.first]) ++w.first;
        w.second = std::max(w.second, w.first + 1);
        while (w.second < w.size && arrived_[w.begin + w.second]) ++w.second;
        const std::uint32_t sorted = i == 0 ? 0 : peers_end_[i - 1];
        for (; sorted + w.swept < peers_end_[i] && member(by_peers_[sorted + w.swept]).peers <= w.first; ++w.swept) {
          release(by_peers_[sorted + w.swept]);
        }
        if (w.first < w.size && w.second >= member(w.begin + w.first).peers) {
          const std::uint32_t flat_first = w.begin + w.first;
          const CollectiveMember& m = member(flat_first);
          if (m.peers > (w.first < m.peers ? 1u : 0u)) release(flat_first);
        }
        const std::uint32_t unlinked_from = i == 0 ? 0 : unlinked_end_[i - 1];
        for (std::uint32_t k = unlinked_from; k < unlinked_end_[i]; ++k) {
          const std::uint32_t f = unlinked_members_[k];
          if (waits_for(f, f - w.begin, it->position)) ready_members_.push_back(f);
        }
      }
      std::sort(ready_members_.begin(), ready_members_.end(),
                [&](std::uint32_t a, std::uint32_t b) { return member(a).call < member(b).call; });
      for (std::uint32_t flat : ready_members_) {
        const CollectiveMember& m = member(flat);
        if (unlinked_[flat]) {
          offer_completion(m.completion, r_.start[t], Constraint::Collective, t);
          complete_wait(m.completion);
          continue;
        }
        const std::uint32_t pos = flat - w.begin;
        const std::uint32_t best =
            pos < m.peers ? better(best_between(w, 0, pos), best_between(w, pos + 1, m.peers)) : best_between(w, 0, m.peers);
        const TaskId by = member(best).arrival;
        const TimeNs time = r_.start[by];
        // As the first of the equal offers would have: before any later offer of the same time.
        if (time > wait_ready_[m.completion] || (time == wait_ready_[m.completion] && arrival_seq_[best] < wait_seq_[m.completion])) {
          wait_ready_[m.completion] = time;
          wait_seq_[m.completion] = arrival_seq_[best];
          if (bindings_) {
            r_.binding[m.completion].end = Constraint::Collective;
            r_.binding[m.completion].end_by = by;
          }
        }
        complete_wait(m.completion);
      }
    }
  }
  void release(std::uint32_t flat) {
    if (released_[flat]) return;
    released_[flat] = 1;
    ready_members_.push_back(flat);
  }

  std::vector<Arrival> arrivals_;          // sorted by task, instance, position
  std::vector<std::uint8_t> has_arrival_;  // per task: the arrival of some member
  std::vector<InstanceWait> instances_;
  std::vector<std::uint32_t> by_peers_;    // per instance, its waiting members by `peers`
  std::vector<std::uint32_t> peers_end_;   // per instance: the end of its part of by_peers_
  std::vector<std::uint8_t> arrived_, released_;
  std::vector<std::uint64_t> arrival_seq_; // per member: the offer_seq_ of its arrival
  std::vector<std::uint32_t> tree_;        // per instance, a max-tree of members (kNoMember: none yet)
  std::vector<std::uint32_t> ready_members_;
  std::vector<std::uint32_t> unlinked_members_; // per instance, its members with unlinked peers
  std::vector<std::uint32_t> unlinked_end_;     // per instance: the end of its part of unlinked_members_
  std::vector<std::uint8_t> unlinked_;          // per member: in unlinked_members_
  std::uint64_t offer_seq_ = 0;            // counts offers of completion, in the order they are made
  std::vector<std::uint64_t> wait_seq_;    // per task: the offer_seq_ of what set wait_ready_

  std::vector<std::uint32_t> group_uses_;
  std::vector<std::size_t> group_syncs_; // per group: the WaitStreams actions that name it
  std::vector<std::unique_ptr<GroupWait>> group_waits_;
  // The ranges of indexed groups' logs that wait for a task, released as it ends: a list per task.
  struct PendingRelease {
    std::uint32_t group, from, to;
    std::uint32_t next;
  };
  static constexpr std::uint32_t kNoRelease = std::numeric_limits<std::uint32_t>::max();
  std::vector<PendingRelease> pending_releases_;
  std::vector<std::uint32_t> release_head_; // per task; empty until a range waits
  std::vector<GroupRelease> let_go_;        // while a task ends: the syncs it lets go
  std::uint64_t group_order_ = 0;           // counts the syncs logged, over all groups
  std::vector<std::vector<std::pair<std::uint32_t, std::uint32_t>>> memberships_; // per stream: (group, position)
  std::vector<std::uint8_t> left_out_; // per resource, while a sync not indexed runs: one it leaves out

  const DependencyGraph& g_;
  MeasuredOrderPolicy default_policy_;
  const TiePolicy* policy_;
  bool bindings_;
  static constexpr TimeNs kNever = std::numeric_limits<TimeNs>::max();
  std::size_t cores_;
  const std::vector<std::uint32_t>& pool_of_;
  const std::vector<std::vector<CpuLoadStep>>& background_;
  bool index_groups_;
  bool has_background_ = false;
  std::vector<Pool> pools_;
  std::vector<std::uint32_t> active_; // the pools with running tasks
  std::vector<TimeNs> off_cpu_;       // per CPU task: how long it is off the CPU after its work
  TimeNs sharing_time_ = std::numeric_limits<TimeNs>::min();
  SimulationResult r_;
  std::vector<TimeNs> ready_, wait_ready_;
  std::vector<std::uint32_t> pending_, wait_pending_;
  std::vector<TaskId> waiter_head_;
  std::vector<Waiter> waiters_;
  std::vector<TaskId> last_issued_, event_target_, finishing_;
  std::vector<std::uint8_t> issued_; // GPU tasks: issued to their stream
  std::vector<std::vector<TaskId>> barriers_;
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap_;
};

} // namespace

SimulationResult simulate(const DependencyGraph& graph, const SimulationOptions& options) {
  return Simulation(graph, options).run();
}

std::optional<CriticalPathLink> critical_path_link(const SimulationResult& result, CriticalPathPoint p) {
  const TaskBinding& b = result.binding[p.task];
  CriticalPathLink link;
  if (p.at_end && end_set_by_task(b.end) && b.end_by != kNoTask) {
    link = {{b.end_by, !end_from_start(b.end)}, b.end};
  } else {
    // Through a launch or a handoff the path goes on from the start of the task that
    // launched the work or handed it over: that task's own duration is not on the path.
    link = {{b.start == Constraint::RunStart ? kNoTask : b.start_by, !from_start(b.start)}, b.start};
  }
  if (link.to.task == kNoTask) return std::nullopt;
  return link;
}

std::vector<CriticalPathStep> critical_path(const DependencyGraph& graph, const SimulationResult& result) {
  std::vector<CriticalPathStep> path;
  if (result.binding.empty()) return path;
  TaskId last = kNoTask;
  for (TaskId t = 0; t < graph.task_count(); ++t) {
    if (result.end[t] == kNoValue || graph.removed(t)) continue;
    if (last == kNoTask || result.end[t] > result.end[last]) last = t;
  }
  if (last == kNoTask) return path;
  CriticalPathPoint p{last, true};
  Constraint via = Constraint::Duration;
  while (true) {
    path.push_back({p.task, via, !p.at_end});
    const std::optional<CriticalPathLink> link = critical_path_link(result, p);
    if (!link) break;
    p = link->to;
    via = link->via;
  }
  return path;
}

} // namespace dreamscope::whatif
