#include "dreamscope/dependency_graph.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>
#include <unordered_map>

namespace dreamscope {

std::string_view to_string(TaskKind k) {
  switch (k) {
    case TaskKind::CpuWork: return "cpu_work";
    case TaskKind::CudaApi: return "cuda_api";
    case TaskKind::Annotation: return "annotation";
    case TaskKind::Kernel: return "kernel";
    case TaskKind::Memcpy: return "memcpy";
    case TaskKind::Memset: return "memset";
    case TaskKind::Synthetic: return "synthetic";
  }
  return "unknown";
}

std::string_view to_string(EdgeKind k) {
  switch (k) {
    case EdgeKind::Launch: return "launch";
    case EdgeKind::Dependency: return "dependency";
    case EdgeKind::Sync: return "sync";
    case EdgeKind::Flow: return "flow";
    case EdgeKind::Handoff: return "handoff";
    case EdgeKind::Join: return "join";
  }
  return "unknown";
}

std::string_view to_string(SyncOp op) {
  switch (op) {
    case SyncOp::WaitStreams: return "wait_streams";
    case SyncOp::WaitEvent: return "wait_event";
    case SyncOp::RecordEvent: return "record_event";
    case SyncOp::StreamWaitEvent: return "stream_wait_event";
  }
  return "unknown";
}

std::int64_t GraphWarnings::total() const {
  return gpu_op_before_launch + sync_target_after_return + unknown_sync_stream + unresolved_event +
         gpu_ops_without_launch + sync_ops_skipped;
}

std::string GraphWarnings::describe() const {
  std::string out;
  auto add = [&](std::int64_t n, std::string_view what) {
    if (n <= 0) return;
    if (!out.empty()) out += "; ";
    out += std::to_string(n);
    out += ' ';
    out += what;
  };
  add(gpu_op_before_launch, "GPU ops start before their launch call (latency taken as 0)");
  add(sync_target_after_return, "waits whose target ends after the wait returned (not linked)");
  add(unknown_sync_stream, "stream syncs on an unknown stream (wait for every stream of the process)");
  add(unresolved_event, "event syncs or stream waits without an event id (not linked)");
  add(gpu_ops_without_launch, "GPU ops without a launch call (placed by their measured gap)");
  add(sync_ops_skipped, "GPU sync records (their waits are edges)");
  return out;
}

TimeNs DependencyGraph::scaled_duration(TaskId t) const {
  const double d = static_cast<double>(base_[t]) * ratio_[t] + static_cast<double>(add_[t]);
  return d > 0 ? static_cast<TimeNs>(d + 0.5) : 0;
}

TimeNs DependencyGraph::ready_duration(TaskId t) const {
  const TimeNs d = duration(t);
  auto it = std::lower_bound(ready_base_.begin(), ready_base_.end(), std::pair<TaskId, TimeNs>{t, INT64_MIN});
  if (it == ready_base_.end() || it->first != t) return d;
  const TimeNs ready = std::max<TimeNs>(0, static_cast<TimeNs>(std::llround(static_cast<double>(it->second) * ratio_[t])) + add_[t]);
  return std::min(d, ready);
}

void DependencyGraph::set_cpu_share(TaskId t, double share) {
  cpu_share_[t] = static_cast<float>(std::clamp(share, 0.0, 1.0));
}

void DependencyGraph::set_removed(TaskId t, bool removed) {
  if (removed) {
    flags_[t] |= kTaskRemoved;
  } else {
    flags_[t] &= static_cast<std::uint8_t>(~kTaskRemoved);
  }
}

namespace {

struct EdgeList {
  std::vector<std::pair<std::uint32_t, std::uint32_t>> ends;
  std::vector<EdgeInfo> info;
};

EdgeList edge_list(const EdgeGraph& g) {
  EdgeList out;
  out.ends.reserve(boost::num_edges(g));
  out.info.reserve(boost::num_edges(g));
  for (auto [e, end] = boost::edges(g); e != end; ++e) {
    out.ends.emplace_back(boost::source(*e, g), boost::target(*e, g));
    out.info.push_back(g[*e]);
  }
  return out;
}

} // namespace

void DependencyGraph::add_edges(std::span<const EdgeSpec> edges) {
  if (edges.empty()) return;
  EdgeList list = edge_list(edges_);
  for (const EdgeSpec& e : edges) {
    if (e.from >= task_count() || e.to >= task_count()) throw std::out_of_range("add_edges: no such task");
    list.ends.emplace_back(e.from, e.to);
    list.info.push_back({e.delay, e.kind});
    if (edge_gates_completion(e.kind)) {
      ++completion_in_[e.to];
      flags_[e.to] |= kTaskBlocking;
    } else {
      ++start_in_[e.to];
    }
  }
  edges_ = EdgeGraph(boost::edges_are_unsorted_multi_pass, list.ends.begin(), list.ends.end(), list.info.begin(),
                     static_cast<std::uint32_t>(task_count()));
}

std::size_t DependencyGraph::remove_edges(TaskId from, TaskId to) {
  EdgeList list = edge_list(edges_);
  EdgeList kept;
  std::size_t removed = 0;
  for (std::size_t k = 0; k < list.ends.size(); ++k) {
    if (list.ends[k].first == from && list.ends[k].second == to) {
      --(edge_gates_completion(list.info[k].kind) ? completion_in_ : start_in_)[to];
      ++removed;
      continue;
    }
    kept.ends.push_back(list.ends[k]);
    kept.info.push_back(list.info[k]);
  }
  if (removed > 0) {
    edges_ = EdgeGraph(boost::edges_are_unsorted_multi_pass, kept.ends.begin(), kept.ends.end(), kept.info.begin(),
                       static_cast<std::uint32_t>(task_count()));
  }
  return removed;
}

std::span<const SyncAction> DependencyGraph::sync_actions_of(TaskId t) const {
  auto lo = std::lower_bound(sync_actions_.begin(), sync_actions_.end(), t,
                             [](const SyncAction& a, TaskId v) { return a.task < v; });
  auto hi = lo;
  while (hi != sync_actions_.end() && hi->task == t) ++hi;
  return {lo, hi};
}

std::size_t DependencyGraph::memory_bytes() const {
  auto bytes = [](const auto& v) { return v.capacity() * sizeof(v[0]); };
  std::size_t n = bytes(resource_begin_) + bytes(resource_is_stream_) + bytes(resource_) + bytes(kind_) +
                  bytes(flags_) + bytes(cpu_share_) + bytes(ready_base_) + bytes(source_row_) + bytes(measured_start_) + bytes(measured_end_) + bytes(base_) +
                  bytes(gap_) + bytes(add_) + bytes(ratio_) + bytes(start_in_) + bytes(completion_in_) +
                  bytes(sync_actions_) + bytes(api_first_) + bytes(api_last_) + bytes(annotation_first_) +
                  bytes(annotation_last_) + bytes(gpu_task_);
  n += edges_.m_forward.m_rowstart.capacity() * sizeof(std::uint32_t);
  n += edges_.m_forward.m_column.capacity() * sizeof(std::uint32_t);
  n += edge_count() * sizeof(EdgeInfo);
  return n;
}

// Builds the graph in passes over the Trace's columns: CPU segments per thread, GPU tasks
// per stream, launch edges, synchronization, data flows, then the CSR of edges.
class DependencyGraphBuilder {
 public:
  explicit DependencyGraphBuilder(const Trace& trace) : trace_(trace) {}

  DependencyGraph build() {
    const auto& tracks = trace_.tracks();
    g_.run_begin_ = trace_.begin_time();
    g_.run_end_ = trace_.end_time();
    const std::size_t estimate = 2 * trace_.cuda_api().size() + 2 * trace_.annotations().size() +
                                 trace_.gpu_ops().size() + 2 * tracks.size();
    reserve(estimate);
    g_.api_first_.assign(trace_.cuda_api().size(), kNoTask);
    g_.api_last_.assign(trace_.cuda_api().size(), kNoTask);
    g_.annotation_first_.assign(trace_.annotations().size(), kNoTask);
    g_.annotation_last_.assign(trace_.annotations().size(), kNoTask);
    g_.gpu_task_.assign(trace_.gpu_ops().size(), kNoTask);
    g_.resource_begin_.reserve(tracks.size() + 1);
    for (TrackId r = 0; r < tracks.size(); ++r) {
      g_.resource_begin_.push_back(static_cast<TaskId>(g_.resource_.size()));
      const bool stream = tracks[r].kind == TrackKind::GpuStream;
      g_.resource_is_stream_.push_back(stream ? 1 : 0);
      if (stream) {
        add_gpu_tasks(r);
      } else {
        add_cpu_segments(r);
      }
    }
    g_.resource_begin_.push_back(static_cast<TaskId>(g_.resource_.size()));
    const std::size_t n = g_.resource_.size();
    g_.ratio_.assign(n, 1.0f);
    g_.add_.assign(n, 0);
    g_.gap_.assign(n, 0);
    wait_end_.assign(n, kNoValue);

    barrier_end_.assign(n, kNoValue);
    find_launchers();
    add_synchronization();
    set_launch_latencies();
    add_data_flows();
    add_queue_waits();
    add_thread_handoffs();
    set_cpu_shares();
    set_blocking_residuals();
    finish_edges();
    return std::move(g_);
  }

 private:
  void reserve(std::size_t n) {
    g_.resource_.reserve(n);
    g_.kind_.reserve(n);
    g_.flags_.reserve(n);
    g_.cpu_share_.reserve(n);
    g_.source_row_.reserve(n);
    g_.measured_start_.reserve(n);
    g_.measured_end_.reserve(n);
    g_.base_.reserve(n);
  }

  TaskId add_task(ResourceId r, TaskKind kind, EventIndex row, TimeNs start, TimeNs end) {
    const auto t = static_cast<TaskId>(g_.resource_.size());
    g_.resource_.push_back(r);
    g_.kind_.push_back(kind);
    g_.flags_.push_back(0);
    g_.cpu_share_.push_back(1.0f);
    g_.source_row_.push_back(row);
    g_.measured_start_.push_back(start);
    g_.measured_end_.push_back(end);
    g_.base_.push_back(end - start);
    return t;
  }

  // A thread's timeline cut at every start and end of its API calls and annotations: each
  // piece belongs to the innermost event open over it (the one opened last), or is CPU work
  // between events. The pieces tile the thread from its first event to its last, so replay
  // reproduces every gap between events, and each event's start and end are task boundaries.
  void add_cpu_segments(ResourceId r) {
    const auto& api = trace_.cuda_api();
    const auto& ann = trace_.annotations();
    const EventRange ar = trace_.cuda_api_on(r);
    const EventRange nr = trace_.annotations_on(r);
    struct Open {
      TimeNs end;
      bool is_api;
      EventIndex row;
    };
    std::vector<Open> open;
    EventIndex i = ar.begin, j = nr.begin;
    constexpr TimeNs kNever = std::numeric_limits<TimeNs>::max();
    auto next_is_annotation = [&]() {
      if (j == nr.end) return false;
      if (i == ar.end) return true;
      if (ann.start[j] != api.start[i]) return ann.start[j] < api.start[i];
      // Same start: the longer one encloses the other; on a full tie the API call is innermost.
      return ann.end[j] >= api.end[i];
    };
    TimeNs now = kNever;
    bool first = true;
    while (true) {
      TimeNs next_start = kNever;
      if (i < ar.end) next_start = api.start[i];
      if (j < nr.end) next_start = std::min(next_start, ann.start[j]);
      TimeNs next_end = kNever;
      for (const auto& o : open) next_end = std::min(next_end, o.end);
      const TimeNs t = std::min(next_start, next_end);
      if (t == kNever) break;
      if (first) {
        now = t;
        first = false;
      }
      if (t > now) {
        if (open.empty()) {
          add_task(r, TaskKind::CpuWork, kNoIndex, now, t);
        } else {
          const Open& o = open.back();
          add_task(r, o.is_api ? TaskKind::CudaApi : TaskKind::Annotation, o.row, now, t);
        }
        now = t;
      }
      const auto last = static_cast<TaskId>(g_.resource_.size() - 1);
      std::erase_if(open, [&](const Open& o) {
        if (o.end != t) return false;
        (o.is_api ? g_.api_last_ : g_.annotation_last_)[o.row] = last;
        return true;
      });
      while (i < ar.end || j < nr.end) {
        const bool is_annotation = next_is_annotation();
        const EventIndex row = is_annotation ? j : i;
        const TimeNs s = is_annotation ? ann.start[row] : api.start[row];
        if (s != t) break;
        const TimeNs e = std::max(s, is_annotation ? ann.end[row] : api.end[row]);
        auto& first_of = is_annotation ? g_.annotation_first_ : g_.api_first_;
        auto& last_of = is_annotation ? g_.annotation_last_ : g_.api_last_;
        first_of[row] = static_cast<TaskId>(g_.resource_.size());
        if (e == s) {
          last_of[row] = add_task(r, is_annotation ? TaskKind::Annotation : TaskKind::CudaApi, row, s, s);
        } else {
          open.push_back({e, !is_annotation, row});
        }
        (is_annotation ? j : i)++;
      }
    }
  }

  void add_gpu_tasks(ResourceId r) {
    const auto& ops = trace_.gpu_ops();
    const EventRange range = trace_.gpu_ops_on(r);
    for (EventIndex row = range.begin; row < range.end; ++row) {
      TaskKind kind;
      switch (ops.kind[row]) {
        case GpuOpKind::Kernel: kind = TaskKind::Kernel; break;
        case GpuOpKind::Memcpy: kind = TaskKind::Memcpy; break;
        case GpuOpKind::Memset: kind = TaskKind::Memset; break;
        default: ++g_.warnings_.sync_ops_skipped; continue;
      }
      g_.gpu_task_[row] = add_task(r, kind, row, ops.start[row], std::max(ops.start[row], ops.end[row]));
    }
  }

  void add_edge(TaskId from, TaskId to, EdgeKind kind, TimeNs delay) {
    edge_ends_.emplace_back(from, to);
    edge_info_.push_back({delay, kind});
  }

  // The API call that launched each GPU task (by correlation id), and when each GPU task was
  // issued: its launch call's start, or its own start when no call is known.
  void find_launchers() {
    const auto& ops = trace_.gpu_ops();
    const auto& api = trace_.cuda_api();
    const std::size_t n = g_.resource_.size();
    launcher_.assign(n, kNoTask);
    issue_time_.assign(n, kNoValue);
    // Correlation ids are usually a dense counter: a direct table beats one binary search
    // per GPU op (the top cost of the build at 1 M tasks). Sparse ids use the Trace's index.
    std::int64_t lo = std::numeric_limits<std::int64_t>::max(), hi = std::numeric_limits<std::int64_t>::min();
    std::size_t with_id = 0;
    for (std::size_t row = 0; row < api.size(); ++row) {
      if (api.correlation[row] == kNoValue) continue;
      lo = std::min(lo, api.correlation[row]);
      hi = std::max(hi, api.correlation[row]);
      ++with_id;
    }
    std::vector<EventIndex> call_by_id;
    const bool dense = with_id > 0 && hi - lo < static_cast<std::int64_t>(4 * with_id + 1024);
    if (dense) {
      call_by_id.assign(static_cast<std::size_t>(hi - lo + 1), kNoIndex);
      for (std::size_t row = 0; row < api.size(); ++row) {
        if (api.correlation[row] == kNoValue) continue;
        auto& slot = call_by_id[static_cast<std::size_t>(api.correlation[row] - lo)];
        if (slot == kNoIndex) slot = static_cast<EventIndex>(row); // the first row, as the Trace's lookup
      }
    }
    auto call_of = [&](std::int64_t corr) -> EventIndex {
      if (!dense) return trace_.cuda_api_with_correlation(corr).value_or(kNoIndex);
      if (corr < lo || corr > hi) return kNoIndex;
      return call_by_id[static_cast<std::size_t>(corr - lo)];
    };
    for (ResourceId r = 0; r < g_.resource_count(); ++r) {
      if (!g_.is_stream(r)) continue;
      for (TaskId t = g_.resource_first(r); t < g_.resource_end(r); ++t) {
        issue_time_[t] = g_.measured_start_[t];
        const std::int64_t corr = ops.correlation[g_.source_row_[t]];
        if (corr == kNoValue) continue;
        if (const EventIndex call = call_of(corr); call != kNoIndex && g_.api_first_[call] != kNoTask) {
          launcher_[t] = g_.api_first_[call];
          issue_time_[t] = g_.measured_start_[launcher_[t]];
        }
      }
    }
  }

  // Launch edges, and the gap that, with the launch latency, puts each GPU task where it was.
  // A task launched onto a clear stream waited for its launch: latency = start - call start,
  // no gap. A task launched behind work (the previous task on its stream, or an event it was
  // told to wait for) waited for that: gap = start - the later of the two, and the latency is
  // the run's typical one, so that once the work ahead gets faster the task still cannot
  // start before a launch reaches the GPU.
  void set_launch_latencies() {
    auto blocker = [&](TaskId t, TimeNs prev_end) {
      return barrier_end_[t] == kNoValue ? prev_end : std::max(prev_end, barrier_end_[t]);
    };
    std::vector<TimeNs> clear_latencies;
    for (ResourceId r = 0; r < g_.resource_count(); ++r) {
      if (!g_.is_stream(r)) continue;
      TimeNs prev_end = g_.run_begin_;
      for (TaskId t = g_.resource_first(r); t < g_.resource_end(r); ++t) {
        if (launcher_[t] != kNoTask) {
          const TimeNs call_start = g_.measured_start_[launcher_[t]];
          if (blocker(t, prev_end) <= call_start && g_.measured_start_[t] >= call_start) {
            clear_latencies.push_back(g_.measured_start_[t] - call_start);
          }
        }
        prev_end = std::max(prev_end, g_.measured_end_[t]);
      }
    }
    TimeNs typical = 0;
    if (!clear_latencies.empty()) {
      auto mid = clear_latencies.begin() + static_cast<std::ptrdiff_t>(clear_latencies.size() / 2);
      std::nth_element(clear_latencies.begin(), mid, clear_latencies.end());
      typical = *mid;
    }
    for (ResourceId r = 0; r < g_.resource_count(); ++r) {
      if (!g_.is_stream(r)) continue;
      TimeNs prev_end = g_.run_begin_;
      for (TaskId t = g_.resource_first(r); t < g_.resource_end(r); ++t) {
        const TimeNs start = g_.measured_start_[t];
        const TimeNs waited_for = blocker(t, prev_end);
        const TimeNs stream_gap = std::max<TimeNs>(0, start - waited_for);
        if (launcher_[t] != kNoTask) {
          const TimeNs call_start = g_.measured_start_[launcher_[t]];
          TimeNs latency = start - call_start;
          if (latency < 0) {
            ++g_.warnings_.gpu_op_before_launch;
            latency = 0;
          }
          if (waited_for <= call_start) {
            g_.gap_[t] = 0;
          } else {
            g_.gap_[t] = stream_gap;
            latency = std::min(latency, typical);
          }
          add_edge(launcher_[t], t, EdgeKind::Launch, latency);
          g_.flags_[t] |= kTaskIssuedByEdge;
        } else {
          ++g_.warnings_.gpu_ops_without_launch;
          g_.gap_[t] = stream_gap;
        }
        prev_end = std::max(prev_end, g_.measured_end_[t]);
      }
    }
    for (ResourceId r = 0; r < g_.resource_count(); ++r) {
      if (g_.is_stream(r) || g_.resource_first(r) == g_.resource_end(r)) continue;
      const TaskId t = g_.resource_first(r);
      g_.gap_[t] = std::max<TimeNs>(0, g_.measured_start_[t] - g_.run_begin_);
    }
  }

  // Per stream: tasks in order of issue (launch call start), with the highest FIFO position
  // issued so far. "The last task issued to S before time x" is then one binary search.
  struct IssueOrder {
    std::vector<TimeNs> time;
    std::vector<std::uint32_t> max_position;
  };

  void index_issue_order() {
    issue_order_.assign(g_.resource_count(), {});
    for (ResourceId r = 0; r < g_.resource_count(); ++r) {
      if (!g_.is_stream(r)) continue;
      const TaskId first = g_.resource_first(r), end = g_.resource_end(r);
      std::vector<std::pair<TimeNs, std::uint32_t>> order;
      order.reserve(end - first);
      for (TaskId t = first; t < end; ++t) order.emplace_back(issue_time_[t], t - first);
      std::sort(order.begin(), order.end());
      auto& io = issue_order_[r];
      io.time.reserve(order.size());
      io.max_position.reserve(order.size());
      std::uint32_t highest = 0;
      for (std::size_t k = 0; k < order.size(); ++k) {
        highest = k == 0 ? order[k].second : std::max(highest, order[k].second);
        io.time.push_back(order[k].first);
        io.max_position.push_back(highest);
      }
    }
  }

  // The last task issued to stream r strictly before `time`, as measured.
  TaskId issued_before(ResourceId r, TimeNs time) const {
    const auto& io = issue_order_[r];
    auto it = std::lower_bound(io.time.begin(), io.time.end(), time);
    if (it == io.time.begin()) return kNoTask;
    return g_.resource_first(r) + io.max_position[static_cast<std::size_t>(it - io.time.begin()) - 1];
  }

  // The first task issued to stream r at or after `time`.
  TaskId issued_from(ResourceId r, TimeNs time) const {
    const auto& io = issue_order_[r];
    auto it = std::lower_bound(io.time.begin(), io.time.end(), time);
    if (it == io.time.end()) return kNoTask;
    // Tasks issued from `time` on: the first of them in FIFO order is the lowest position
    // not issued before, i.e. one past the highest position issued before.
    const std::size_t k = static_cast<std::size_t>(it - io.time.begin());
    const std::uint32_t pos = k == 0 ? 0 : io.max_position[k - 1] + 1;
    const TaskId t = g_.resource_first(r) + pos;
    return t < g_.resource_end(r) ? t : kNoTask;
  }

  enum class CallRole : std::uint8_t { Plain, DeviceSync, StreamSync, EventSync, EventRecord, StreamWaitEvent, BlockingCopy };

  static CallRole classify(std::string_view name) {
    std::string_view rest = name;
    for (std::string_view prefix : {"cuda", "hip", "cu"}) {
      if (rest.starts_with(prefix)) {
        rest.remove_prefix(prefix.size());
        break;
      }
    }
    if (rest.size() == name.size()) return CallRole::Plain;
    if (rest.starts_with("DeviceSynchronize") || rest.starts_with("CtxSynchronize") ||
        rest.starts_with("ThreadSynchronize")) {
      return CallRole::DeviceSync;
    }
    if (rest.starts_with("StreamSynchronize")) return CallRole::StreamSync;
    if (rest.starts_with("EventSynchronize")) return CallRole::EventSync;
    if (rest.starts_with("EventRecord")) return CallRole::EventRecord;
    if (rest.starts_with("StreamWaitEvent")) return CallRole::StreamWaitEvent;
    if (rest.starts_with("Memcpy") && rest.find("Async") == std::string_view::npos) return CallRole::BlockingCopy;
    return CallRole::Plain;
  }

  std::uint32_t process_of(ResourceId r) const {
    const auto& tr = trace_.tracks()[r];
    if (tr.kind == TrackKind::CpuThread) return tr.process;
    if (tr.device < trace_.devices().size()) return trace_.devices()[tr.device].process;
    return kNoIndex;
  }

  // Streams a call on thread `thread` may mean: those of its own process, or of devices
  // whose process is unknown (imported single-process traces).
  std::vector<ResourceId> streams_of_process(ResourceId thread) const {
    std::vector<ResourceId> out;
    const std::uint32_t p = process_of(thread);
    for (ResourceId r = 0; r < g_.resource_count(); ++r) {
      if (!g_.is_stream(r)) continue;
      const std::uint32_t sp = process_of(r);
      if (sp == p || sp == kNoIndex || p == kNoIndex) out.push_back(r);
    }
    return out;
  }

  ResourceId find_stream(ResourceId thread, std::int64_t stream_id) const {
    if (stream_id == kNoValue) return kNoIndex;
    for (ResourceId r : streams_of_process(thread)) {
      if (trace_.tracks()[r].stream == stream_id) return r;
    }
    return kNoIndex;
  }

  // The stream a sync call waited on when the call itself does not say: the GPU sync record
  // with the same correlation (Kineto's cuda_sync events) names it.
  ResourceId stream_from_sync_record(std::int64_t correlation) const {
    if (correlation == kNoValue) return kNoIndex;
    for (EventIndex op : trace_.gpu_ops_with_correlation(correlation)) {
      if (trace_.gpu_ops().kind[op] != GpuOpKind::Sync) continue;
      const auto& tr = trace_.tracks()[trace_.gpu_ops().track[op]];
      // Kineto puts context-wide syncs on a pseudo stream with the id 2^32 - 1.
      if (tr.stream == 4294967295LL) return kNoIndex;
      return trace_.gpu_ops().track[op];
    }
    return kNoIndex;
  }

  void note_wait(TaskId t, TimeNs target_end) {
    wait_end_[t] = std::max(wait_end_[t], target_end);
    g_.flags_[t] |= kTaskBlocking;
  }

  std::uint32_t stream_group(std::vector<ResourceId> streams) {
    auto [it, inserted] = group_ids_.try_emplace(streams, static_cast<std::uint32_t>(g_.stream_groups_.size()));
    if (inserted) g_.stream_groups_.push_back(std::move(streams));
    return it->second;
  }

  std::uint32_t event_index(std::uint32_t process, std::int64_t event) {
    auto [it, inserted] = event_ids_.try_emplace({process, event}, g_.event_count_);
    if (inserted) ++g_.event_count_;
    return it->second;
  }

  // From Kineto's GPU sync records (cuda_sync events): for each wait, the correlation id of
  // the cudaEventRecord it waits on and the stream it waits on; for each such record, the
  // stream it recorded on.
  struct KinetoWait {
    std::int64_t correlation;        // of the call: the wait, or the record
    std::int64_t record_correlation; // the record waited on
    ResourceId stream;               // wait: the waiting stream; record: the recorded stream
    bool operator<(const KinetoWait& o) const { return correlation < o.correlation; }
  };
  static constexpr std::uint32_t kKinetoRecordKey = kNoIndex - 1;

  static const KinetoWait* find_kineto(const std::vector<KinetoWait>& v, std::int64_t correlation) {
    auto it = std::lower_bound(v.begin(), v.end(), KinetoWait{correlation, 0, 0});
    return it != v.end() && it->correlation == correlation ? &*it : nullptr;
  }

  void index_kineto_event_waits() {
    const auto& ops = trace_.gpu_ops();
    if (trace_.arg_count() == 0) return;
    for (EventIndex op = 0; op < ops.size(); ++op) {
      if (ops.kind[op] != GpuOpKind::Sync || ops.correlation[op] == kNoValue) continue;
      const auto record = trace_.arg_int(EventTable::GpuOp, op, "wait_on_cuda_event_record_corr_id");
      const auto on_stream = trace_.arg_int(EventTable::GpuOp, op, "wait_on_stream");
      if (!record || *record < 0 || !on_stream || *on_stream < 0) continue;
      const TrackId track = ops.track[op];
      const std::int64_t waiting = trace_.tracks()[track].stream;
      const ResourceId waiting_stream = waiting >= 0 && waiting != 4294967295LL ? track : kNoIndex;
      kineto_waits_.push_back({ops.correlation[op], *record, waiting_stream});
      const auto call = trace_.cuda_api_with_correlation(*record);
      if (!call) continue;
      recorded_stream_.push_back({*record, *record, find_stream(trace_.cuda_api().track[*call], *on_stream)});
    }
    std::sort(kineto_waits_.begin(), kineto_waits_.end());
    std::sort(recorded_stream_.begin(), recorded_stream_.end());
  }

  // Every sync call becomes a SyncAction; the targets it would resolve to in the measured
  // run are checked against its measured return, and a wait that cannot have happened (the
  // target ended after the call returned) is left out rather than bend the replay.
  void add_synchronization() {
    index_issue_order();
    const auto& api = trace_.cuda_api();
    std::vector<CallRole> role_of_name(trace_.strings().size(), CallRole::Plain);
    for (StringId s = 0; s < trace_.strings().size(); ++s) role_of_name[s] = classify(trace_.str(s));

    std::vector<EventIndex> calls;
    for (EventIndex row = 0; row < api.size(); ++row) {
      if (role_of_name[api.name[row]] != CallRole::Plain && g_.api_first_[row] != kNoTask) calls.push_back(row);
    }
    std::sort(calls.begin(), calls.end(), [&](EventIndex a, EventIndex b) { return api.start[a] < api.start[b]; });

    index_kineto_event_waits();
    std::vector<TaskId> event_target; // as measured, by dense event index
    for (EventIndex row : calls) {
      const ResourceId thread = api.track[row];
      const TaskId first = g_.api_first_[row], last = g_.api_last_[row];
      const TimeNs start = api.start[row], end = g_.measured_end_[last];
      // Waits act in the call's last piece, records and stream waits in its first.
      const std::uint32_t process = process_of(thread);
      const auto role = role_of_name[api.name[row]];
      // Kineto traces name no event on the calls: a record is identified by its own
      // correlation id, which the GPU sync record of each wait on it refers to.
      const KinetoWait* kineto = nullptr;
      if (api.event[row] == kNoValue && api.correlation[row] != kNoValue) {
        if (role == CallRole::EventRecord) {
          kineto = find_kineto(recorded_stream_, api.correlation[row]);
        } else {
          kineto = find_kineto(kineto_waits_, api.correlation[row]);
        }
      }
      auto event_of = [&]() -> std::optional<std::uint32_t> {
        std::uint32_t e;
        if (api.event[row] != kNoValue) {
          e = event_index(process, api.event[row]);
        } else if (kineto) {
          e = event_index(kKinetoRecordKey, kineto->record_correlation);
        } else {
          // A record no known wait refers to changes nothing; a wait without its event does.
          if (role != CallRole::EventRecord) ++g_.warnings_.unresolved_event;
          return std::nullopt;
        }
        if (e >= event_target.size()) event_target.resize(e + 1, kNoTask);
        return e;
      };
      switch (role) {
        case CallRole::Plain: break;
        case CallRole::DeviceSync:
        case CallRole::StreamSync: {
          std::vector<ResourceId> streams;
          if (role == CallRole::StreamSync) {
            ResourceId s = find_stream(thread, api.stream[row]);
            if (s == kNoIndex) s = stream_from_sync_record(api.correlation[row]);
            if (s != kNoIndex) {
              streams.push_back(s);
            } else {
              ++g_.warnings_.unknown_sync_stream;
            }
          }
          if (streams.empty()) streams = streams_of_process(thread);
          std::vector<ResourceId> kept;
          for (ResourceId s : streams) {
            const TaskId target = issued_before(s, g_.measured_start_[last]);
            if (target != kNoTask && g_.measured_end_[target] > end) {
              ++g_.warnings_.sync_target_after_return;
              continue;
            }
            if (target != kNoTask) note_wait(last, g_.measured_end_[target]);
            kept.push_back(s);
          }
          if (kept.empty()) break;
          g_.flags_[last] |= kTaskBlocking;
          g_.sync_actions_.push_back({.task = last, .op = SyncOp::WaitStreams, .streams = stream_group(std::move(kept))});
          break;
        }
        case CallRole::EventSync: {
          auto e = event_of();
          if (!e) break;
          const TaskId target = event_target[*e];
          if (target != kNoTask && g_.measured_end_[target] > end) {
            ++g_.warnings_.sync_target_after_return;
            break;
          }
          if (target != kNoTask) note_wait(last, g_.measured_end_[target]);
          g_.flags_[last] |= kTaskBlocking;
          g_.sync_actions_.push_back({.task = last, .op = SyncOp::WaitEvent, .event = *e});
          break;
        }
        case CallRole::EventRecord: {
          auto e = event_of();
          ResourceId s = find_stream(thread, api.stream[row]);
          if (s == kNoIndex && kineto) s = kineto->stream;
          if (!e) break;
          if (s == kNoIndex) {
            ++g_.warnings_.unknown_sync_stream;
            break;
          }
          event_target[*e] = issued_before(s, start);
          g_.sync_actions_.push_back({.task = first, .op = SyncOp::RecordEvent, .stream = s, .event = *e});
          break;
        }
        case CallRole::StreamWaitEvent: {
          auto e = event_of();
          ResourceId s = find_stream(thread, api.stream[row]);
          if (s == kNoIndex && kineto) s = kineto->stream;
          if (!e) break;
          if (s == kNoIndex) {
            ++g_.warnings_.unknown_sync_stream;
            break;
          }
          const TaskId target = event_target[*e];
          const TaskId next = issued_from(s, start);
          if (target != kNoTask && next != kNoTask) {
            if (g_.measured_start_[next] < g_.measured_end_[target]) {
              ++g_.warnings_.sync_target_after_return;
              break;
            }
            barrier_end_[next] = std::max(barrier_end_[next], g_.measured_end_[target]);
          }
          g_.sync_actions_.push_back({.task = first, .op = SyncOp::StreamWaitEvent, .stream = s, .event = *e});
          break;
        }
        case CallRole::BlockingCopy: {
          if (api.correlation[row] == kNoValue) break;
          for (EventIndex op : trace_.gpu_ops_with_correlation(api.correlation[row])) {
            const TaskId copy = g_.gpu_task_[op];
            if (copy == kNoTask) continue;
            if (g_.measured_end_[copy] > end) {
              ++g_.warnings_.sync_target_after_return;
              continue;
            }
            add_edge(copy, last, EdgeKind::Sync, 0);
            note_wait(last, g_.measured_end_[copy]);
          }
          break;
        }
      }
    }
    for (const auto& a : g_.sync_actions_) g_.flags_[a.task] |= kTaskHasSync;
    std::stable_sort(g_.sync_actions_.begin(), g_.sync_actions_.end(),
                     [](const SyncAction& a, const SyncAction& b) { return a.task < b.task; });
  }

  // Data-pipeline flows: batch b prepared (or fetched) on one thread → the wait for batch b
  // on another. With batch ids reused across epochs, the producer is the latest one that
  // finished before the wait did.
  void add_data_flows() {
    const auto& ann = trace_.annotations();
    auto id = [&](std::string_view s) { return trace_.find_string(s).value_or(kNoIndex); };
    const StringId prep = id("prep"), fetch = id("fetch"), wait = id("wait");
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
      if (ann.payload[row] == kNoValue || g_.annotation_last_[row] == kNoTask) continue;
      const StringId c = ann.category[row];
      if (c == prep || c == fetch) produced.push_back({ann.payload[row], ann.end[row], row});
      if (c == wait) waits.push_back(row);
    }
    std::sort(produced.begin(), produced.end());
    for (EventIndex w : waits) {
      const TaskId consumer = g_.annotation_last_[w];
      const TimeNs end = g_.measured_end_[consumer];
      auto it = std::upper_bound(produced.begin(), produced.end(),
                                 Produced{ann.payload[w], end, std::numeric_limits<EventIndex>::max()});
      if (it == produced.begin() || std::prev(it)->batch != ann.payload[w]) continue;
      const Produced& p = *std::prev(it);
      if (ann.track[p.row] == ann.track[w]) continue;
      const TaskId producer = g_.annotation_last_[p.row];
      add_edge(producer, consumer, EdgeKind::Flow, 0);
      note_wait(consumer, g_.measured_end_[producer]);
    }
  }

  // A launch (or async copy, or any call that should return at once) that took far longer
  // than a launch takes and returned moments after a GPU op of its process ended waited for
  // that op: the device's work queue was full, and the op's end freed the slot the call
  // needed (or the call synchronizes implicitly, as cudaFree does). In a GPU-bound run most
  // launches block this way, so their time is the GPU's, and a what-if that speeds the GPU
  // up must let them return sooner: each becomes a sync on that op.
  void add_queue_waits() {
    constexpr TimeNs kSlowCall = 50'000; // launches take a few µs
    constexpr TimeNs kWake = 20'000;     // a blocked call returns within µs of the slot freeing
    const auto& api = trace_.cuda_api();
    std::map<std::vector<ResourceId>, std::vector<TaskId>> ops_by_end; // streams → their tasks by end
    for (EventIndex row = 0; row < api.size(); ++row) {
      const TaskId last = g_.api_last_[row];
      if (last == kNoTask || (g_.flags_[last] & kTaskBlocking)) continue;
      const TimeNs start = api.start[row], end = api.end[row];
      if (end - start < kSlowCall) continue;
      auto [it, fresh] = ops_by_end.try_emplace(streams_of_process(g_.resource_[last]));
      std::vector<TaskId>& ops = it->second;
      if (fresh) {
        for (ResourceId s : it->first) {
          for (TaskId t = g_.resource_first(s); t < g_.resource_end(s); ++t) ops.push_back(t);
        }
        std::sort(ops.begin(), ops.end(), [&](TaskId a, TaskId b) { return g_.measured_end_[a] < g_.measured_end_[b]; });
      }
      auto after = std::upper_bound(ops.begin(), ops.end(), end,
                                    [&](TimeNs t, TaskId op) { return t < g_.measured_end_[op]; });
      if (after == ops.begin()) continue;
      const TaskId op = *std::prev(after);
      const TimeNs op_end = g_.measured_end_[op];
      if (op_end <= start || end - op_end > kWake) continue;
      add_edge(op, last, EdgeKind::Sync, 0);
      note_wait(last, op_end);
    }
  }

  // A thread that sits in one event for a long time while another thread of its process,
  // idle before and after, runs a burst of events that ends just before the first thread
  // goes on, was waiting for that burst: PyTorch's backward() on the training thread while
  // the autograd engine's device thread runs the backward operators and their launches. A
  // replay that kept the wait as fixed CPU time would not move when the burst gets faster
  // (a faster GPU, mixed precision). The burst's first task starts a measured delay after
  // the wait starts (Handoff; the idle piece before it no longer holds it back), and the
  // wait ends a measured delay after the burst's last task (Join).
  void add_thread_handoffs() {
    constexpr TimeNs kMinWait = 500'000;   // shorter waits are not worth the risk of a false match
    constexpr TimeNs kMinResume = 200'000; // how soon after the burst the waiter resumes, at least...
    constexpr double kResumeShare = 0.02;  // ... or this share of the wait
    std::vector<ResourceId> threads;
    for (ResourceId r = 0; r < g_.resource_count(); ++r) {
      if (!g_.resource_is_stream_[r] && g_.resource_first(r) != g_.resource_end(r)) threads.push_back(r);
    }
    if (threads.size() < 2) return;
    auto is_event = [&](TaskId t) { return g_.kind_[t] != TaskKind::CpuWork; };
    for (ResourceId a : threads) {
      for (TaskId p = g_.resource_first(a); p < g_.resource_end(a); ++p) {
        const TimeNs ps = g_.measured_start_[p], pe = g_.measured_end_[p];
        if (pe - ps < kMinWait || (g_.flags_[p] & kTaskBlocking) || !(is_event(p) || g_.kind_[p] == TaskKind::CpuWork)) {
          continue;
        }
        const TimeNs slack = std::max<TimeNs>(kMinResume, static_cast<TimeNs>(kResumeShare * static_cast<double>(pe - ps)));
        TaskId best_first = kNoTask, best_last = kNoTask;
        TimeNs best_resume = slack + 1;
        for (ResourceId b : threads) {
          if (b == a || process_of(b) != process_of(a)) continue;
          const TaskId begin = g_.resource_first(b), end = g_.resource_end(b);
          // The first event of b that starts at or after the wait's start.
          TaskId first = static_cast<TaskId>(
              std::lower_bound(g_.measured_start_.begin() + begin, g_.measured_start_.begin() + end, ps) -
              g_.measured_start_.begin());
          while (first < end && !is_event(first)) ++first;
          if (first == end || g_.measured_start_[first] >= pe) continue;
          // Idle from before the wait began: the piece before the burst is b's idle time.
          if (first > begin && (is_event(first - 1) || g_.measured_start_[first - 1] > ps)) continue;
          // The burst's last event, and b idle from its end until after the waiter resumed.
          TaskId last = static_cast<TaskId>(
              std::lower_bound(g_.measured_start_.begin() + first, g_.measured_start_.begin() + end, pe) -
              g_.measured_start_.begin());
          if (last < end && is_event(last) && g_.measured_start_[last] <= pe) continue;
          do {
            --last;
          } while (last > first && !is_event(last));
          if (g_.measured_end_[last] > pe) continue;
          if (last + 1 < end && g_.measured_end_[last + 1] < pe) continue; // b idle, then busy again before p ended
          const TimeNs resume = pe - g_.measured_end_[last];
          if (resume < best_resume) {
            best_resume = resume;
            best_first = first;
            best_last = last;
          }
        }
        if (best_first == kNoTask) continue;
        add_edge(p, best_first, EdgeKind::Handoff, g_.measured_start_[best_first] - ps);
        // What held the burst back is the handoff, not the idle time before it on its thread
        // (the piece before it, or the gap before a thread's first task).
        if (best_first > g_.resource_first(g_.resource_[best_first])) {
          g_.base_[best_first - 1] = 0;
        } else {
          g_.gap_[best_first] = 0;
        }
        add_edge(best_last, p, EdgeKind::Join, 0);
        note_wait(p, g_.measured_end_[best_last]);
      }
    }
  }

  // The CPU share of annotation pieces: none for waits, the measured share for fetch and
  // prep ranges with a `cpu` mark (the CPU time their thread spent in them), none for a
  // fetch without one (storage I/O).
  void set_cpu_shares() {
    const auto& ann = trace_.annotations();
    const auto wait = trace_.find_string("wait"), fetch = trace_.find_string("fetch");
    const auto prep = trace_.find_string("prep"), cpu = trace_.find_string("cpu");
    if (!wait && !fetch && !cpu) return;
    std::vector<float> measured(cpu ? ann.size() : 0, -1.0f);
    if (cpu && (fetch || prep)) {
      // A mark belongs to the innermost fetch or prep open on its thread where it lies.
      for (TrackId track = 0; track < trace_.tracks().size(); ++track) {
        const EventRange range = trace_.annotations_on(track);
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
    for (TaskId t = 0; t < g_.resource_.size(); ++t) {
      if (g_.kind_[t] != TaskKind::Annotation) continue;
      const EventIndex row = g_.source_row_[t];
      if (!measured.empty() && measured[row] >= 0) {
        g_.set_cpu_share(t, measured[row]);
      } else if ((wait && ann.category[row] == *wait) || (fetch && ann.category[row] == *fetch)) {
        g_.set_cpu_share(t, 0);
      }
    }
  }

  // A blocking task's measured time is part waiting, part its own work after the wait: only
  // the latter is its duration; the wait comes back in replay from its edges and syncs.
  void set_blocking_residuals() {
    // Blocking tasks by thread and name: what those that did not wait took, and the
    // shortest residual of those that did, for ready_duration().
    struct Group {
      std::vector<TimeNs> ready;
      TimeNs shortest_residual = std::numeric_limits<TimeNs>::max();
    };
    std::map<std::tuple<ResourceId, TaskKind, StringId>, Group> groups;
    auto key = [&](TaskId t) {
      const EventIndex row = g_.source_row_[t];
      StringId name = kNoIndex;
      if (row != kNoIndex && g_.kind_[t] == TaskKind::Annotation) name = trace_.annotations().name[row];
      if (row != kNoIndex && g_.kind_[t] == TaskKind::CudaApi) name = trace_.cuda_api().name[row];
      return std::make_tuple(g_.resource_[t], g_.kind_[t], name);
    };
    std::vector<TaskId> waited;
    for (TaskId t = 0; t < g_.resource_.size(); ++t) {
      if (wait_end_[t] == kNoValue) continue;
      const TimeNs woke = std::max(g_.measured_start_[t], wait_end_[t]);
      g_.base_[t] = std::max<TimeNs>(0, g_.measured_end_[t] - woke);
      Group& group = groups[key(t)];
      if (wait_end_[t] > g_.measured_start_[t]) {
        waited.push_back(t);
        group.shortest_residual = std::min(group.shortest_residual, g_.base_[t]);
      } else {
        group.ready.push_back(g_.base_[t]);
      }
    }
    for (auto& [k, group] : groups) {
      if (group.ready.empty()) continue;
      auto mid = group.ready.begin() + static_cast<std::ptrdiff_t>(group.ready.size() / 2);
      std::nth_element(group.ready.begin(), mid, group.ready.end());
      group.shortest_residual = *mid;
    }
    for (TaskId t : waited) {
      const TimeNs ready = groups[key(t)].shortest_residual;
      if (ready < g_.base_[t]) g_.ready_base_.emplace_back(t, ready);
    }
  }

  void finish_edges() {
    const std::size_t n = g_.resource_.size();
    g_.start_in_.assign(n, 0);
    g_.completion_in_.assign(n, 0);
    for (std::size_t k = 0; k < edge_ends_.size(); ++k) {
      (edge_gates_completion(edge_info_[k].kind) ? g_.completion_in_ : g_.start_in_)[edge_ends_[k].second]++;
    }
    g_.edges_ = EdgeGraph(boost::edges_are_unsorted_multi_pass, edge_ends_.begin(), edge_ends_.end(),
                          edge_info_.begin(), static_cast<std::uint32_t>(n));
  }

  const Trace& trace_;
  DependencyGraph g_;
  std::vector<TimeNs> issue_time_, wait_end_, barrier_end_;
  std::vector<TaskId> launcher_;
  std::vector<KinetoWait> kineto_waits_, recorded_stream_;
  std::vector<IssueOrder> issue_order_;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> edge_ends_;
  std::vector<EdgeInfo> edge_info_;
  std::map<std::vector<ResourceId>, std::uint32_t> group_ids_;
  std::map<std::pair<std::uint32_t, std::int64_t>, std::uint32_t> event_ids_;
};

DependencyGraph build_dependency_graph(const Trace& trace) { return DependencyGraphBuilder(trace).build(); }

} // namespace dreamscope
