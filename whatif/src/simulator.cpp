#include "dreamscope/whatif/simulator.h"

#include "dreamscope/storage/limits.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>

namespace dreamscope {

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
        cores_(options.cpu_cores), pool_of_(options.cpu_pool), background_(options.cpu_background) {
    std::size_t pools = std::max<std::size_t>(1, background_.size());
    for (std::uint32_t p : pool_of_) pools = std::max<std::size_t>(pools, p + 1);
    running_.assign(pools, 0);
    load_.assign(pools, 0.0);
    next_step_.assign(pools, 0);
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

    for (ResourceId r = 0; r < g_.resource_count(); ++r) {
      const TaskId first = g_.resource_first(r);
      if (first != g_.resource_end(r)) offer_start(first, later(r_.begin, gap(first)), Constraint::RunStart, kNoTask);
    }
    while (!heap_.empty() || !sharing_.empty()) {
      if (!sharing_.empty()) {
        const TimeNs next_start = heap_.empty() ? kNever : heap_.top().start;
        const TimeNs cpu_end = next_cpu_end();
        // The background load changes first: the rates change with it.
        if (const TimeNs change = next_load_change(); change < cpu_end && change < next_start) {
          advance_sharing(change);
          continue;
        }
        // A CPU task that finishes before the next start goes first: it may free its thread.
        if (cpu_end <= next_start) {
          end_cpu_task();
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
  struct Sharing {
    TaskId task;
    double remaining; // ns of work at full speed
    TimeNs off_cpu;   // then this long off the CPU
    std::uint32_t pool;
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
    if (time > wait_ready_[t]) {
      wait_ready_[t] = time;
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
    TaskId next = last_issued_[s] == kNoTask ? g_.resource_first(s) : last_issued_[s] + 1;
    while (next < g_.resource_end(s) && issued_[next]) last_issued_[s] = next++;
    auto& pending = barriers_[s];
    if (pending.empty()) return;
    for (TaskId target : pending) wait_for(t, target, true);
    pending.clear();
  }

  void run_sync_actions(TaskId t) {
    for (const SyncAction& a : g_.sync_actions_of(t)) {
      switch (a.op) {
        case SyncOp::WaitStreams:
          for (ResourceId s : g_.stream_groups()[a.streams]) {
            if (last_issued_[s] != kNoTask) wait_for(t, last_issued_[s], false);
          }
          break;
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
      const std::uint32_t pool = pool_of(t);
      sharing_.push_back({t, work, static_cast<TimeNs>(std::llround(duration - work)), pool});
      ++running_[pool];
      return;
    }
    finish(t);
  }

  // Processor sharing: the CPU tasks of a pool running at `sharing_time_` each progress at
  // min(1, cores / (running in the pool + its background load)) ns of work per ns.
  std::uint32_t pool_of(TaskId t) const { return pool_of_.empty() ? 0 : pool_of_[g_.resource(t)]; }
  double sharing_rate(std::uint32_t pool) const {
    const double running = static_cast<double>(running_[pool]) + load_[pool];
    const double cores = static_cast<double>(cores_);
    return running <= cores ? 1.0 : cores / running;
  }
  // Time from `sharing_time_` until s's work is done at the current rates.
  double time_left(const Sharing& s) const { return std::max(0.0, s.remaining) / sharing_rate(s.pool); }
  // The rates hold between changes of the background load: time advances from one to the next.
  void advance_sharing(TimeNs to) {
    while (to > sharing_time_) {
      const TimeNs at = std::min(to, next_load_change());
      const double elapsed = static_cast<double>(at) - static_cast<double>(sharing_time_);
      for (auto& s : sharing_) s.remaining -= elapsed * sharing_rate(s.pool);
      sharing_time_ = at;
      if (!has_background_) break;
      for (std::size_t p = 0; p < background_.size(); ++p) {
        for (; next_step_[p] < background_[p].size() && background_[p][next_step_[p]].time <= sharing_time_; ++next_step_[p]) {
          load_[p] = background_[p][next_step_[p]].threads;
        }
      }
    }
  }
  // The next change of any pool's background load after `sharing_time_` (kNever: none).
  TimeNs next_load_change() const {
    TimeNs next = kNever;
    if (!has_background_) return next;
    for (std::size_t p = 0; p < background_.size(); ++p) {
      if (next_step_[p] < background_[p].size()) next = std::min(next, background_[p][next_step_[p]].time);
    }
    return next;
  }
  // The CPU task whose work is done first (the earliest in task order on a tie).
  std::size_t first_cpu_end() const {
    std::size_t first = 0;
    double least = time_left(sharing_.front());
    for (std::size_t i = 1; i < sharing_.size(); ++i) {
      const double left = time_left(sharing_[i]);
      if (left < least || (left == least && sharing_[i].task < sharing_[first].task)) {
        first = i;
        least = left;
      }
    }
    return first;
  }
  TimeNs next_cpu_end() const {
    return later(sharing_time_, limits::saturated_ns(std::ceil(time_left(sharing_[first_cpu_end()]))));
  }
  void end_cpu_task() {
    const std::size_t first = first_cpu_end();
    const TimeNs at = later(sharing_time_, limits::saturated_ns(std::ceil(time_left(sharing_[first]))));
    advance_sharing(at);
    const TaskId t = sharing_[first].task;
    const TimeNs end = later(at, sharing_[first].off_cpu);
    --running_[sharing_[first].pool];
    sharing_.erase(sharing_.begin() + static_cast<std::ptrdiff_t>(first));
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
      for (TaskId w = waiter_head_[t]; w != kNoTask;) {
        const Waiter waiter = waiters_[w];
        if (waiter.for_start) {
          offer_start(waiter.task, later(end, gap(waiter.task)), Constraint::EventWait, t);
        } else {
          offer_completion(waiter.task, end, Constraint::Sync, t);
          complete_wait(waiter.task);
        }
        w = waiter.next;
      }
      waiter_head_[t] = kNoTask;
    }
  }

  void complete_wait(TaskId u) {
    if (--wait_pending_[u] == 0 && r_.start[u] != kNoValue) finishing_.push_back(u);
  }


  const DependencyGraph& g_;
  MeasuredOrderPolicy default_policy_;
  const TiePolicy* policy_;
  bool bindings_;
  static constexpr TimeNs kNever = std::numeric_limits<TimeNs>::max();
  std::size_t cores_;
  const std::vector<std::uint32_t>& pool_of_;
  const std::vector<std::vector<CpuLoadStep>>& background_;
  bool has_background_ = false;
  std::vector<std::size_t> next_step_; // per pool, its first background step after sharing_time_
  std::vector<double> load_;           // per pool, its background load at sharing_time_
  std::vector<std::size_t> running_; // per pool, the tasks in sharing_
  std::vector<Sharing> sharing_;
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

std::vector<CriticalPathStep> critical_path(const DependencyGraph& graph, const SimulationResult& result) {
  std::vector<CriticalPathStep> path;
  if (result.binding.empty()) return path;
  TaskId last = kNoTask;
  for (TaskId t = 0; t < graph.task_count(); ++t) {
    if (result.end[t] == kNoValue || graph.removed(t)) continue;
    if (last == kNoTask || result.end[t] > result.end[last]) last = t;
  }
  TaskId t = last;
  bool at_end = true;
  Constraint via = Constraint::Duration;
  while (t != kNoTask) {
    path.push_back({t, via, !at_end});
    const TaskBinding& b = result.binding[t];
    if (at_end && end_set_by_task(b.end) && b.end_by != kNoTask) {
      via = b.end;
      t = b.end_by;
      at_end = !end_from_start(b.end);
      continue;
    }
    via = b.start;
    switch (b.start) {
      case Constraint::RunStart: t = kNoTask; break;
      case Constraint::Launch:
      case Constraint::Handoff:
        // The path reaches the call's start: its own duration is not on the path.
        t = b.start_by;
        at_end = false;
        continue;
      default: t = b.start_by; break;
    }
    at_end = true;
  }
  return path;
}

} // namespace dreamscope
