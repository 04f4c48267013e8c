// The graph's own methods; build_dependency_graph is in graph_builder.cpp and passes/.
#include "dreamscope/graph/dependency_graph.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

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
    case EdgeKind::Collective: return "collective";
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
         gpu_ops_without_launch + sync_ops_skipped + collective_peer_after_return;
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
  add(collective_peer_after_return,
      "collective peers that arrived after a rank's call returned (clocks apart, or calls matched wrongly: not linked)");
  return out;
}

TimeNs DependencyGraph::scaled_duration(TaskId t) const {
  const double d = static_cast<double>(base_[t]) * ratio_[t] + static_cast<double>(add_[t]);
  return std::max<TimeNs>(0, limits::saturated_ns(d));
}

TimeNs DependencyGraph::ready_duration(TaskId t) const {
  const TimeNs d = duration(t);
  auto it = std::lower_bound(ready_base_.begin(), ready_base_.end(), std::pair<TaskId, TimeNs>{t, INT64_MIN});
  if (it == ready_base_.end() || it->first != t) return d;
  const TimeNs ready =
      std::max<TimeNs>(0, limits::add_ns(limits::saturated_ns(static_cast<double>(it->second) * ratio_[t]), add_[t]));
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

template <class F>
bool DependencyGraph::each_collective_link(TaskId from, TaskId to, F&& f) const {
  for (std::size_t i = 0; i < collective_count(); ++i) {
    const std::span<const CollectiveMember> members = collective(i);
    const auto begin = static_cast<std::uint32_t>(members.data() - collective_members_.data());
    for (std::uint32_t w = 0; w < members.size(); ++w) {
      if (members[w].completion != to) continue;
      for (std::uint32_t p = 0; p < members[w].peers; ++p) {
        if (p == w || members[p].arrival != from) continue;
        const UnlinkedPeer link{begin + w, p};
        if (std::binary_search(unlinked_peers_.begin(), unlinked_peers_.end(), link)) continue;
        if (!f(link)) return false;
      }
    }
  }
  return true;
}

std::size_t DependencyGraph::remove_edges(TaskId from, TaskId to) {
  // A collective's link is no edge: expanding every collective to remove one cost an edge per
  // pair of ranks (R² for R ranks: coll_unlink in bench/complexity.py). The member keeps its
  // instance and leaves the peer out.
  std::vector<UnlinkedPeer> cuts;
  each_collective_link(from, to, [&](const UnlinkedPeer& link) {
    cuts.push_back(link);
    return true;
  });
  for (const UnlinkedPeer& cut : cuts) {
    unlinked_peers_.insert(std::lower_bound(unlinked_peers_.begin(), unlinked_peers_.end(), cut), cut);
    --collective_links_;
  }
  const std::size_t removed = cuts.size();
  if (from >= task_count()) return removed;
  const auto [first, last] = boost::out_edges(from, edges_);
  if (std::none_of(first, last, [&](auto e) { return boost::target(e, edges_) == to; })) return removed;
  EdgeList list = edge_list(edges_);
  EdgeList kept;
  std::size_t removed_edges = 0;
  for (std::size_t k = 0; k < list.ends.size(); ++k) {
    if (list.ends[k].first == from && list.ends[k].second == to) {
      --(edge_gates_completion(list.info[k].kind) ? completion_in_ : start_in_)[to];
      ++removed_edges;
      continue;
    }
    kept.ends.push_back(list.ends[k]);
    kept.info.push_back(list.info[k]);
  }
  if (removed_edges > 0) {
    edges_ = EdgeGraph(boost::edges_are_unsorted_multi_pass, kept.ends.begin(), kept.ends.end(), kept.info.begin(),
                       static_cast<std::uint32_t>(task_count()));
  }
  return removed + removed_edges;
}

std::span<const UnlinkedPeer> DependencyGraph::unlinked_peers(std::uint32_t member) const {
  auto lo = std::lower_bound(unlinked_peers_.begin(), unlinked_peers_.end(), UnlinkedPeer{member, 0});
  auto hi = std::lower_bound(lo, unlinked_peers_.end(), UnlinkedPeer{member + 1, 0});
  return {lo, hi};
}

bool DependencyGraph::collective_link(TaskId from, TaskId to) const {
  return !each_collective_link(from, to, [](const UnlinkedPeer&) { return false; });
}

void DependencyGraph::expand_collectives() {
  if (collective_count() == 0) return;
  EdgeList list = edge_list(edges_);
  std::vector<std::uint32_t> by_call; // positions in the instance, in call order
  for (std::size_t i = 0; i < collective_count(); ++i) {
    const std::span<const CollectiveMember> members = collective(i);
    const auto begin = static_cast<std::uint32_t>(members.data() - collective_members_.data());
    by_call.assign(members.size(), 0);
    for (std::uint32_t pos = 0; pos < members.size(); ++pos) by_call[members[pos].call] = pos;
    // The builder's order before instances were kept whole: member by member, its peers in
    // call order; the simulator finishes the members a peer's arrival releases in that order.
    for (std::uint32_t w : by_call) {
      const std::span<const UnlinkedPeer> cut = unlinked_peers(begin + w);
      for (std::uint32_t p : by_call) {
        if (p == w || p >= members[w].peers) continue;
        if (std::binary_search(cut.begin(), cut.end(), UnlinkedPeer{begin + w, p})) continue;
        list.ends.emplace_back(members[p].arrival, members[w].completion);
        list.info.push_back({0, EdgeKind::Collective});
        ++completion_in_[members[w].completion];
      }
    }
  }
  collective_members_.clear();
  collective_begin_.clear();
  collective_links_ = 0;
  unlinked_peers_.clear();
  edges_ = EdgeGraph(boost::edges_are_unsorted_multi_pass, list.ends.begin(), list.ends.end(), list.info.begin(),
                     static_cast<std::uint32_t>(task_count()));
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
                  bytes(annotation_last_) + bytes(gpu_task_) + bytes(collective_members_) + bytes(collective_begin_) + bytes(unlinked_peers_);
  n += edges_.m_forward.m_rowstart.capacity() * sizeof(std::uint32_t);
  n += edges_.m_forward.m_column.capacity() * sizeof(std::uint32_t);
  n += edge_count() * sizeof(EdgeInfo);
  return n;
}

} // namespace dreamscope
