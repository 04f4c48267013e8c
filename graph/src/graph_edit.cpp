#include "dreamscope/graph/dependency_graph.h"

#include <algorithm>
#include <map>
#include <stdexcept>

namespace dreamscope {

ResourceId GraphEdit::add_resource(TrackInfo track) {
  resources_.push_back(std::move(track));
  return kNoIndex - static_cast<ResourceId>(resources_.size()); // resolved against the graph in apply()
}

std::uint32_t GraphEdit::insert(ResourceId resource, TaskId after, TaskKind kind, std::string name, TimeNs duration,
                                TimeNs gap) {
  inserts_.push_back({resource, after, kind, std::move(name), duration, gap});
  return static_cast<std::uint32_t>(inserts_.size() - 1);
}

void GraphEdit::move(TaskId task, ResourceId resource) { moves_.emplace_back(task, resource); }

std::string_view DependencyGraph::synthetic_name(TaskId t) const {
  auto it = std::lower_bound(synthetic_names_.begin(), synthetic_names_.end(), t,
                             [](const auto& p, TaskId v) { return p.first < v; });
  return it != synthetic_names_.end() && it->first == t ? std::string_view(it->second) : std::string_view();
}

EditResult DependencyGraph::apply(const GraphEdit& edit) {
  const std::size_t old_tasks = task_count();
  const std::size_t old_resources = resource_count();
  const std::size_t resources = old_resources + edit.resources_.size();
  // GraphEdit hands out ids for new resources before it knows the graph; map them here.
  auto resource_of = [&](ResourceId r) -> ResourceId {
    if (r < old_resources) return r;
    const ResourceId k = kNoIndex - r; // 1-based index into edit.resources_
    if (k >= 1 && k <= edit.resources_.size()) return static_cast<ResourceId>(old_resources + k - 1);
    throw std::out_of_range("GraphEdit: no such resource");
  };

  // Where each existing task goes.
  std::vector<ResourceId> target(old_tasks);
  for (TaskId t = 0; t < old_tasks; ++t) target[t] = resource_[t];
  std::vector<std::vector<TaskId>> moved_in(resources);
  for (const auto& [t, r] : edit.moves_) {
    if (t >= old_tasks) throw std::out_of_range("GraphEdit::move: no such task");
    target[t] = resource_of(r);
  }
  for (const auto& [t, r] : edit.moves_) moved_in[target[t]].push_back(t);
  // Inserted tasks follow their `after` task, in insert() order, or open their resource.
  std::vector<std::vector<std::uint32_t>> after_task(old_tasks), first_on(resources);
  std::vector<std::pair<TaskId, std::uint32_t>> follows;
  for (std::uint32_t i = 0; i < edit.inserts_.size(); ++i) {
    const auto& ins = edit.inserts_[i];
    if (ins.after == kNoTask) {
      first_on[resource_of(ins.resource)].push_back(i);
    } else if (ins.after < old_tasks) {
      follows.emplace_back(ins.after, i);
    } else {
      throw std::out_of_range("GraphEdit::insert: no such task to insert after");
    }
  }
  std::stable_sort(follows.begin(), follows.end(), [](const auto& a, const auto& b) { return a.first < b.first; });

  // The new order: per resource, its remaining tasks merged with those moved in (by measured
  // start), each followed by what was inserted after it.
  constexpr std::uint32_t kInserted = 0x80000000u;
  std::vector<std::uint32_t> order; // old task id, or kInserted | insert index
  order.reserve(old_tasks + edit.inserts_.size());
  std::vector<TaskId> new_begin(resources + 1);
  auto emit_followers = [&](TaskId t) {
    auto it = std::lower_bound(follows.begin(), follows.end(), t, [](const auto& p, TaskId v) { return p.first < v; });
    for (; it != follows.end() && it->first == t; ++it) order.push_back(kInserted | it->second);
  };
  for (ResourceId r = 0; r < resources; ++r) {
    new_begin[r] = static_cast<TaskId>(order.size());
    for (std::uint32_t i : first_on[r]) order.push_back(kInserted | i);
    auto& incoming = moved_in[r];
    std::stable_sort(incoming.begin(), incoming.end(),
                     [&](TaskId a, TaskId b) { return measured_start_[a] < measured_start_[b]; });
    std::size_t k = 0;
    if (r < old_resources) {
      for (TaskId t = resource_first(r); t < resource_end(r); ++t) {
        if (target[t] != r) continue;
        while (k < incoming.size() && measured_start_[incoming[k]] < measured_start_[t]) {
          order.push_back(incoming[k]);
          emit_followers(incoming[k++]);
        }
        order.push_back(t);
        emit_followers(t);
      }
    }
    for (; k < incoming.size(); ++k) {
      order.push_back(incoming[k]);
      emit_followers(incoming[k]);
    }
  }
  new_begin[resources] = static_cast<TaskId>(order.size());

  EditResult result;
  result.old_to_new.assign(old_tasks, kNoTask);
  result.inserted.assign(edit.inserts_.size(), kNoTask);
  const std::size_t n = order.size();
  DependencyGraph g;
  g.resource_begin_ = new_begin;
  g.resource_is_stream_ = resource_is_stream_;
  for (const auto& tr : edit.resources_) g.resource_is_stream_.push_back(tr.kind == TrackKind::GpuStream ? 1 : 0);
  g.resource_.resize(n);
  g.kind_.resize(n);
  g.flags_.resize(n);
  g.cpu_share_.resize(n);
  g.source_row_.resize(n);
  g.measured_start_.resize(n);
  g.measured_end_.resize(n);
  g.base_.resize(n);
  g.gap_.resize(n);
  g.add_.resize(n);
  g.ratio_.resize(n);
  g.start_in_.resize(n);
  g.completion_in_.resize(n);
  g.synthetic_names_.reserve(synthetic_names_.size() + edit.inserts_.size());
  for (ResourceId r = 0; r < resources; ++r) {
    TimeNs previous_end = run_begin_;
    for (TaskId nt = new_begin[r]; nt < new_begin[r + 1]; ++nt) {
      const std::uint32_t item = order[nt];
      g.resource_[nt] = r;
      if (item & kInserted) {
        const auto& ins = edit.inserts_[item & ~kInserted];
        result.inserted[item & ~kInserted] = nt;
        g.kind_[nt] = ins.kind;
        g.flags_[nt] = 0;
        g.cpu_share_[nt] = 1.0f;
        g.source_row_[nt] = kNoIndex;
        // It did not happen: a zero-length "measurement" where it goes keeps each resource's
        // tasks sorted by measured start.
        g.measured_start_[nt] = g.measured_end_[nt] = previous_end;
        g.base_[nt] = std::max<TimeNs>(0, ins.duration);
        g.gap_[nt] = std::max<TimeNs>(0, ins.gap);
        g.add_[nt] = 0;
        g.ratio_[nt] = 1.0f;
        g.start_in_[nt] = g.completion_in_[nt] = 0;
        g.synthetic_names_.emplace_back(nt, ins.name);
        continue;
      }
      const TaskId t = item;
      result.old_to_new[t] = nt;
      g.kind_[nt] = kind_[t];
      g.flags_[nt] = flags_[t];
      g.cpu_share_[nt] = cpu_share_[t];
      g.source_row_[nt] = source_row_[t];
      g.measured_start_[nt] = measured_start_[t];
      g.measured_end_[nt] = measured_end_[t];
      g.base_[nt] = base_[t];
      g.gap_[nt] = gap_[t];
      g.add_[nt] = add_[t];
      g.ratio_[nt] = ratio_[t];
      g.start_in_[nt] = start_in_[t];
      g.completion_in_[nt] = completion_in_[t];
      previous_end = std::max(previous_end, measured_end_[t]);
    }
  }
  const auto& map = result.old_to_new;
  for (const auto& [t, name] : synthetic_names_) g.synthetic_names_.emplace_back(map[t], name);
  std::sort(g.synthetic_names_.begin(), g.synthetic_names_.end());
  g.ready_base_.reserve(ready_base_.size());
  for (const auto& [t, d] : ready_base_) g.ready_base_.emplace_back(map[t], d);
  std::sort(g.ready_base_.begin(), g.ready_base_.end());

  std::vector<std::pair<std::uint32_t, std::uint32_t>> ends;
  std::vector<EdgeInfo> info;
  ends.reserve(edge_count());
  info.reserve(edge_count());
  for (auto [e, end] = boost::edges(edges_); e != end; ++e) {
    ends.emplace_back(map[boost::source(*e, edges_)], map[boost::target(*e, edges_)]);
    info.push_back(edges_[*e]);
  }
  g.edges_ = EdgeGraph(boost::edges_are_unsorted_multi_pass, ends.begin(), ends.end(), info.begin(),
                       static_cast<std::uint32_t>(n));
  g.sync_actions_ = sync_actions_;
  for (auto& a : g.sync_actions_) a.task = map[a.task];
  std::stable_sort(g.sync_actions_.begin(), g.sync_actions_.end(),
                   [](const SyncAction& a, const SyncAction& b) { return a.task < b.task; });
  g.stream_groups_ = stream_groups_;
  g.collective_members_ = collective_members_;
  for (CollectiveMember& m : g.collective_members_) {
    m.arrival = map[m.arrival];
    m.completion = map[m.completion];
  }
  g.collective_begin_ = collective_begin_;
  g.collective_links_ = collective_links_;
  g.unlinked_peers_ = unlinked_peers_;
  g.event_count_ = event_count_;
  auto remap = [&](const std::vector<TaskId>& v) {
    std::vector<TaskId> out(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) out[i] = v[i] == kNoTask ? kNoTask : map[v[i]];
    return out;
  };
  g.api_first_ = remap(api_first_);
  g.api_last_ = remap(api_last_);
  g.annotation_first_ = remap(annotation_first_);
  g.annotation_last_ = remap(annotation_last_);
  g.gpu_task_ = remap(gpu_task_);
  g.run_begin_ = run_begin_;
  g.run_end_ = run_end_;
  g.warnings_ = warnings_;
  g.added_resources_ = added_resources_;
  for (std::size_t k = 0; k < edit.resources_.size(); ++k) {
    g.added_resources_.push_back(edit.resources_[k]);
    result.resources.push_back(static_cast<ResourceId>(old_resources + k));
  }
  *this = std::move(g);
  return result;
}

void DependencyGraph::expand_stream_exclusions() {
  std::map<std::vector<ResourceId>, std::uint32_t> ids;
  for (std::uint32_t g = 0; g < stream_groups_.size(); ++g) ids.try_emplace(stream_groups_[g], g);
  for (SyncAction& a : sync_actions_) {
    if (a.op != SyncOp::WaitStreams || a.except == kNoIndex) continue;
    std::vector<ResourceId> out = stream_groups_[a.except], kept;
    std::sort(out.begin(), out.end());
    for (ResourceId s : stream_groups_[a.streams]) {
      if (!std::binary_search(out.begin(), out.end(), s)) kept.push_back(s);
    }
    auto [it, fresh] = ids.try_emplace(kept, static_cast<std::uint32_t>(stream_groups_.size()));
    if (fresh) stream_groups_.push_back(std::move(kept));
    a.streams = it->second;
    a.except = kNoIndex;
  }
}

} // namespace dreamscope
