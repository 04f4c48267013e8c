// The primitives that change the graph's structure: move, insert, add_edge, remove_edge.
#include <dreamscope/whatif/transforms.h>

#include <boost/range/iterator_range.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <unordered_map>

namespace dreamscope::whatif {

namespace {

std::string prefix(const std::string& where) { return where.empty() ? std::string() : where + ": "; }

std::vector<TaskId> by_measured_start(const DependencyGraph& graph, std::vector<TaskId> tasks) {
  std::stable_sort(tasks.begin(), tasks.end(),
                   [&](TaskId a, TaskId b) { return graph.measured_start(a) < graph.measured_start(b); });
  return tasks;
}

TimeNs summed(const DependencyGraph& graph, const std::vector<TaskId>& tasks) {
  TimeNs sum = 0;
  for (TaskId t : tasks) sum += graph.duration(t);
  return sum;
}

// What a moved task's thread did next still waits for it (a training loop that loaded a
// batch inline goes on once it is loaded): an edge from the end of each run of moved tasks
// to the first task after it that stays; ids before the edit, mapped by `renumber`.
std::vector<std::pair<TaskId, TaskId>> continuations(const DependencyGraph& graph, const std::set<TaskId>& moved) {
  std::vector<std::pair<TaskId, TaskId>> pairs;
  for (TaskId t : moved) {
    if (moved.count(t + 1) || t + 1 >= graph.resource_end(graph.resource(t))) continue;
    pairs.emplace_back(t, t + 1);
  }
  return pairs;
}

std::vector<EdgeSpec> renumber(const std::vector<std::pair<TaskId, TaskId>>& pairs, const EditResult& result) {
  std::vector<EdgeSpec> edges;
  for (const auto& [from, to] : pairs) {
    edges.push_back({result.old_to_new[from], result.old_to_new[to], EdgeKind::Dependency, 0});
  }
  return edges;
}

} // namespace

void AppliedScenario::renumbered(const EditResult& edit) {
  if (current.empty()) {
    current = edit.old_to_new;
    return;
  }
  for (TaskId& t : current) {
    if (t != kNoTask) t = edit.old_to_new[t];
  }
}

std::vector<TaskId> AppliedScenario::original_ids(std::size_t task_count) const {
  std::vector<TaskId> original(task_count, kNoTask);
  if (current.empty()) {
    for (std::size_t t = 0; t < task_count; ++t) original[t] = static_cast<TaskId>(t);
    return original;
  }
  for (std::size_t t = 0; t < current.size(); ++t) {
    if (current[t] != kNoTask && current[t] < task_count) original[current[t]] = static_cast<TaskId>(t);
  }
  return original;
}

bool has_cycle(const DependencyGraph& graph, std::span<const EdgeSpec> extra) {
  // Kahn's algorithm over each task's start (node 2t) and end (2t + 1), since edges leave and
  // enter tasks at either: a launch goes from the call's start to the kernel's start, a sync
  // or flow from a task's end to a blocking task's end, anything else from end to start. A
  // blocking cudaMemcpy that launches its copy and waits for it is no cycle; a task's
  // resource successor is an edge like any other, since FIFO order constrains the replay
  // exactly as an edge does.
  const std::size_t n = graph.task_count();
  const EdgeGraph& edges = graph.edges();
  auto source = [](TaskId t, EdgeKind k) { return 2 * t + (edge_from_start(k) ? 0 : 1); };
  auto target = [](TaskId t, EdgeKind k) { return 2 * t + (edge_gates_completion(k) ? 1 : 0); };
  // A collective (DependencyGraph::collective) is a chain of nodes, one per prefix of its
  // members by arrival, node k after node k - 1 and the start of member k's arrival; a member's
  // end waits for the node of its `peers`. That also makes its end wait for its own arrival's
  // start, which its thread's order (arrival, then completion) already does: it adds no cycle,
  // and a collective of R ranks is O(R) here, not an edge per pair. A member with unlinked
  // peers (remove_edge) waits for each other peer's arrival alone, as its edges would.
  const std::span<const CollectiveMember> members = graph.collective_members();
  const std::size_t nodes = 2 * n + members.size();
  std::vector<std::uint32_t> in(nodes, 0);
  std::vector<std::uint32_t> feeds_begin, feeds;       // per task: the prefix nodes its start feeds
  std::vector<std::uint32_t> next_prefix, waits_begin, waits; // per prefix node: the next, the ends it gates
  std::vector<std::pair<std::uint32_t, std::uint32_t>> unlinked_arcs; // a peer's arrival start → a member's end
  if (!members.empty()) {
    feeds_begin.assign(n + 1, 0);
    waits_begin.assign(members.size() + 1, 0);
    next_prefix.assign(members.size(), kNoIndex);
    for (std::size_t i = 0; i < graph.collective_count(); ++i) {
      const auto begin = static_cast<std::uint32_t>(graph.collective(i).data() - members.data());
      const std::span<const CollectiveMember> instance = graph.collective(i);
      for (std::uint32_t pos = 0; pos < instance.size(); ++pos) {
        ++feeds_begin[instance[pos].arrival + 1];
        ++in[2 * n + begin + pos];
        if (pos + 1 < instance.size()) {
          next_prefix[begin + pos] = begin + pos + 1;
          ++in[2 * n + begin + pos + 1];
        }
        const CollectiveMember& m = instance[pos];
        if (!graph.unlinked_peers(begin + pos).empty()) {
          const std::span<const UnlinkedPeer> cut = graph.unlinked_peers(begin + pos);
          for (std::uint32_t p = 0; p < m.peers; ++p) {
            if (p == pos || std::binary_search(cut.begin(), cut.end(), UnlinkedPeer{begin + pos, p})) continue;
            unlinked_arcs.emplace_back(2 * instance[p].arrival, 2 * m.completion + 1);
            ++in[2 * m.completion + 1];
          }
        } else if (m.peers > (pos < m.peers ? 1u : 0u)) {
          ++waits_begin[begin + m.peers - 1 + 1];
          ++in[2 * m.completion + 1];
        }
      }
    }
    for (std::size_t t = 0; t < n; ++t) feeds_begin[t + 1] += feeds_begin[t];
    for (std::size_t k = 0; k < members.size(); ++k) waits_begin[k + 1] += waits_begin[k];
    feeds.resize(feeds_begin[n]);
    waits.resize(waits_begin[members.size()]);
    std::vector<std::uint32_t> feed_at(feeds_begin.begin(), feeds_begin.end() - 1);
    std::vector<std::uint32_t> wait_at(waits_begin.begin(), waits_begin.end() - 1);
    for (std::size_t i = 0; i < graph.collective_count(); ++i) {
      const auto begin = static_cast<std::uint32_t>(graph.collective(i).data() - members.data());
      const std::span<const CollectiveMember> instance = graph.collective(i);
      for (std::uint32_t pos = 0; pos < instance.size(); ++pos) {
        const CollectiveMember& m = instance[pos];
        feeds[feed_at[m.arrival]++] = begin + pos;
        if (graph.unlinked_peers(begin + pos).empty() && m.peers > (pos < m.peers ? 1u : 0u)) {
          waits[wait_at[begin + m.peers - 1]++] = 2 * m.completion + 1;
        }
      }
    }
  }
  std::vector<std::vector<std::uint32_t>> extra_out(extra.empty() && unlinked_arcs.empty() ? 0 : 2 * n);
  for (const auto& [from, to] : unlinked_arcs) extra_out[from].push_back(to);
  for (TaskId t = 0; t < n; ++t) {
    ++in[2 * t + 1];
    if (t + 1 < graph.resource_end(graph.resource(t))) ++in[2 * (t + 1)];
    for (auto e : boost::make_iterator_range(boost::out_edges(t, edges))) {
      ++in[target(boost::target(e, edges), edges[e].kind)];
    }
  }
  for (const EdgeSpec& e : extra) {
    extra_out[source(e.from, e.kind)].push_back(target(e.to, e.kind));
    ++in[target(e.to, e.kind)];
  }
  std::vector<std::uint32_t> ready;
  for (std::uint32_t v = 0; v < nodes; ++v) {
    if (in[v] == 0) ready.push_back(v);
  }
  std::size_t done = 0;
  auto release = [&](std::uint32_t v) {
    if (--in[v] == 0) ready.push_back(v);
  };
  while (!ready.empty()) {
    const std::uint32_t v = ready.back();
    ready.pop_back();
    ++done;
    if (v >= 2 * n) {
      const std::uint32_t k = v - static_cast<std::uint32_t>(2 * n);
      if (next_prefix[k] != kNoIndex) release(static_cast<std::uint32_t>(2 * n) + next_prefix[k]);
      for (std::uint32_t j = waits_begin[k]; j < waits_begin[k + 1]; ++j) release(waits[j]);
      continue;
    }
    const TaskId t = v / 2;
    if (v % 2 == 0 && !feeds_begin.empty()) {
      for (std::uint32_t j = feeds_begin[t]; j < feeds_begin[t + 1]; ++j) release(static_cast<std::uint32_t>(2 * n) + feeds[j]);
    }
    if (v % 2 == 0) {
      release(v + 1);
    } else if (t + 1 < graph.resource_end(graph.resource(t))) {
      release(2 * (t + 1));
    }
    for (auto e : boost::make_iterator_range(boost::out_edges(t, edges))) {
      if (source(t, edges[e].kind) == v) release(target(boost::target(e, edges), edges[e].kind));
    }
    if (!extra_out.empty()) {
      for (std::uint32_t w : extra_out[v]) release(w);
    }
  }
  return done != nodes;
}

TransformEffect move(DependencyGraph& graph, const std::vector<TaskId>& tasks, ResourceId resource,
                     EditResult& result) {
  TransformEffect e;
  GraphEdit edit;
  std::set<TaskId> moved;
  for (TaskId t : tasks) {
    if (graph.resource(t) == resource) continue;
    edit.move(t, resource);
    moved.insert(t);
    ++e.tasks;
  }
  e.time_before = e.time_after = summed(graph, tasks);
  // A task moved to another thread still needs what its thread did before it (its inputs),
  // but the thread no longer waits for it: who consumes its result is an add_edge away.
  std::vector<std::pair<TaskId, TaskId>> previous;
  for (TaskId t : moved) {
    if (t > graph.resource_first(graph.resource(t)) && !moved.count(t - 1)) previous.emplace_back(t - 1, t);
  }
  result = graph.apply(edit);
  auto edges = renumber(previous, result);
  if (has_cycle(graph, edges)) throw TransformError("move: the moved tasks would wait for work that waits for them");
  graph.add_edges(edges);
  e.detail = fmt::format("to resource {}", resource);
  return e;
}

TransformEffect move_to_pool(DependencyGraph& graph, const std::vector<std::vector<TaskId>>& groups,
                             std::size_t workers, const TrackInfo& like, EditResult& result, std::size_t ahead) {
  TransformEffect e;
  if (workers == 0) throw TransformError("move: a pool needs at least one worker");
  // Groups in the order they ran, so that worker g mod k gets what a FIFO queue of work items
  // would hand it when every item takes about as long.
  std::vector<std::vector<TaskId>> ordered;
  for (const auto& g : groups) {
    if (!g.empty()) ordered.push_back(by_measured_start(graph, g));
  }
  std::stable_sort(ordered.begin(), ordered.end(), [&](const auto& a, const auto& b) {
    return graph.measured_start(a.front()) < graph.measured_start(b.front());
  });
  // Workers beyond the number of groups would never get an item: the pool is only as large as
  // the work there is, so a pool of a billion costs what a pool of the groups costs.
  const std::size_t busy = std::min(workers, std::max<std::size_t>(ordered.size(), 1));
  GraphEdit edit;
  std::vector<ResourceId> pool(busy);
  for (std::size_t w = 0; w < busy; ++w) {
    TrackInfo track = like;
    track.name = fmt::format("{}{}", like.name, w);
    track.tid = kNoValue;
    pool[w] = edit.add_resource(std::move(track));
  }
  std::set<TaskId> moved;
  for (std::size_t g = 0; g < ordered.size(); ++g) {
    for (TaskId t : ordered[g]) {
      edit.move(t, pool[g % busy]);
      moved.insert(t);
      ++e.tasks;
      e.time_before += graph.duration(t);
    }
  }
  e.time_after = e.time_before;
  const auto next = continuations(graph, moved);
  // The window: item g is handed out only once item g − ahead has been received. An item is
  // received where it is consumed: by the task that followed it on its old thread (a loop
  // that loaded inline), when that task starts; or by the wait a flow from it ends (a loader
  // thread's batch), when that wait ends. The earliest such, as measured, counts; an item
  // that nothing consumed (the last of a run) bounds nothing.
  struct Receipt {
    TaskId task = kNoTask;
    EdgeKind edge = EdgeKind::Dependency;
    TimeNs at = 0;
  };
  std::vector<EdgeSpec> window;
  if (ahead > 0 && ordered.size() > ahead) {
    std::unordered_map<TaskId, std::size_t> item_of;
    for (std::size_t g = 0; g < ordered.size(); ++g) {
      for (TaskId t : ordered[g]) item_of.emplace(t, g);
    }
    std::vector<Receipt> receipt(ordered.size());
    auto offer = [&](std::size_t g, Receipt r) {
      if (receipt[g].task == kNoTask || r.at < receipt[g].at) receipt[g] = r;
    };
    for (const auto& [from, to] : next) offer(item_of.at(from), {to, EdgeKind::Handoff, graph.measured_start(to)});
    const EdgeGraph& edges = graph.edges();
    for (std::size_t g = 0; g + ahead < ordered.size(); ++g) {
      for (TaskId t : ordered[g]) {
        for (auto e : boost::make_iterator_range(boost::out_edges(t, edges))) {
          const TaskId to = boost::target(e, edges);
          if (edges[e].kind == EdgeKind::Flow && !moved.count(to)) {
            offer(g, {to, EdgeKind::Dependency, graph.measured_end(to)});
          }
        }
      }
    }
    for (std::size_t g = ahead; g < ordered.size(); ++g) {
      const Receipt& r = receipt[g - ahead];
      if (r.task != kNoTask) window.push_back({r.task, ordered[g].front(), r.edge, 0});
    }
  }
  result = graph.apply(edit);
  std::vector<EdgeSpec> hand_over = renumber(next, result);
  for (const EdgeSpec& w : window) hand_over.push_back({result.old_to_new[w.from], result.old_to_new[w.to], w.kind, 0});
  // Hand-over edges point forward in measured order, as each worker's own order does, so a
  // cycle means a group waited for a later one in the trace (a flow between items).
  if (has_cycle(graph, hand_over)) {
    throw TransformError("move: the pool's order would make an item wait for work that waits for it");
  }
  graph.add_edges(hand_over);
  e.detail = fmt::format("{} groups over {} workers", ordered.size(), workers);
  if (ahead > 0) e.detail += fmt::format(", at most {} handed out ahead", ahead);
  if (busy < workers) e.detail += fmt::format(" ({} of them would have nothing to do)", workers - busy);
  return e;
}

TransformEffect add_edge(DependencyGraph& graph, const std::vector<TaskId>& from, const std::vector<TaskId>& to,
                         TimeNs delay, const std::string& where) {
  TransformEffect e;
  const auto f = by_measured_start(graph, from);
  const auto t = by_measured_start(graph, to);
  if (f.empty() || t.empty()) {
    e.detail = "no edge: nothing selected";
    return e;
  }
  std::vector<EdgeSpec> specs;
  if (f.size() == t.size()) {
    for (std::size_t i = 0; i < f.size(); ++i) specs.push_back({f[i], t[i], EdgeKind::Dependency, delay});
  } else if (f.size() == 1) {
    for (TaskId v : t) specs.push_back({f[0], v, EdgeKind::Dependency, delay});
  } else if (t.size() == 1) {
    for (TaskId u : f) specs.push_back({u, t[0], EdgeKind::Dependency, delay});
  } else {
    throw TransformError(fmt::format("{}add_edge: {} 'from' tasks and {} 'to' tasks cannot be paired (same count, "
                                     "or one on either side)",
                                     prefix(where), f.size(), t.size()));
  }
  for (const EdgeSpec& s : specs) {
    if (s.from == s.to) throw TransformError(fmt::format("{}add_edge: a task cannot wait for itself", prefix(where)));
  }
  if (has_cycle(graph, specs)) {
    throw TransformError(fmt::format("{}add_edge: the edges would close a cycle (a task would wait for work that "
                                     "waits for it)",
                                     prefix(where)));
  }
  graph.add_edges(specs);
  e.tasks = specs.size();
  e.detail = fmt::format("{} edges", specs.size());
  return e;
}

TransformEffect remove_edge(DependencyGraph& graph, const std::vector<TaskId>& from, const std::vector<TaskId>& to) {
  TransformEffect e;
  const std::set<TaskId> sources(from.begin(), from.end()), targets(to.begin(), to.end());
  const EdgeGraph& edges = graph.edges();
  std::set<std::pair<TaskId, TaskId>> pairs;
  for (TaskId u : from) {
    for (auto edge : boost::make_iterator_range(boost::out_edges(u, edges))) {
      const TaskId v = boost::target(edge, edges);
      if (targets.count(v)) pairs.emplace(u, v);
    }
  }
  // A collective's links are no edges: each named pair of its members is one.
  std::vector<std::uint32_t> named; // positions of an instance whose arrival is a source, ascending
  for (std::size_t i = 0; i < graph.collective_count(); ++i) {
    const std::span<const CollectiveMember> instance = graph.collective(i);
    named.clear();
    for (std::uint32_t pos = 0; pos < instance.size(); ++pos) {
      if (sources.count(instance[pos].arrival)) named.push_back(pos);
    }
    if (named.empty()) continue;
    for (std::uint32_t w = 0; w < instance.size(); ++w) {
      if (!targets.count(instance[w].completion)) continue;
      for (std::uint32_t p : named) {
        if (p >= instance[w].peers) break;
        if (p != w) pairs.emplace(instance[p].arrival, instance[w].completion);
      }
    }
  }
  std::size_t removed = 0;
  for (const auto& [u, v] : pairs) removed += graph.remove_edges(u, v);
  e.tasks = removed;
  e.detail = fmt::format("{} edges", removed);
  return e;
}

TransformEffect insert(DependencyGraph& graph, ResourceId resource, std::optional<TrackInfo> new_resource,
                       const std::string& name, const std::vector<std::vector<TaskId>>& groups,
                       const std::vector<TaskId>& before, const std::vector<TimeNs>& durations, EditResult& result,
                       const std::string& where) {
  TransformEffect e;
  if (durations.size() != groups.size()) {
    throw TransformError(fmt::format("{}insert: one duration per group", prefix(where)));
  }
  // A group ends with its last task to end; groups go onto the resource in that order.
  std::vector<std::pair<TaskId, TimeNs>> last_of; // (task, duration)
  for (std::size_t g = 0; g < groups.size(); ++g) {
    if (groups[g].empty()) continue;
    const TaskId last = *std::max_element(groups[g].begin(), groups[g].end(), [&](TaskId x, TaskId y) {
      return graph.measured_end(x) < graph.measured_end(y);
    });
    last_of.emplace_back(last, durations[g]);
  }
  if (last_of.empty()) {
    e.detail = "nothing inserted: no 'after' task selected";
    return e;
  }
  std::stable_sort(last_of.begin(), last_of.end(), [&](const auto& x, const auto& y) {
    return graph.measured_end(x.first) < graph.measured_end(y.first);
  });

  GraphEdit edit;
  ResourceId r = resource;
  if (new_resource) r = edit.add_resource(*new_resource);
  std::vector<std::uint32_t> index;
  for (const auto& [last, duration] : last_of) {
    TaskId pos = kNoTask;
    if (!new_resource) {
      // After the last task of the resource that had ended when the group did.
      for (TaskId t = graph.resource_first(r); t < graph.resource_end(r); ++t) {
        if (graph.measured_end(t) <= graph.measured_end(last)) pos = t;
      }
    }
    index.push_back(edit.insert(r, pos, TaskKind::Synthetic, name, duration));
    e.time_after += duration;
  }
  result = graph.apply(edit);
  std::vector<TaskId> b;
  for (TaskId t : before) b.push_back(result.old_to_new[t]);
  b = by_measured_start(graph, std::move(b));
  std::vector<EdgeSpec> specs;
  for (std::size_t g = 0; g < last_of.size(); ++g) {
    const TaskId inserted = result.inserted[index[g]];
    const TaskId group_end = result.old_to_new[last_of[g].first];
    specs.push_back({group_end, inserted, EdgeKind::Dependency, 0});
    const auto next = std::find_if(b.begin(), b.end(), [&](TaskId t) {
      return graph.measured_start(t) >= graph.measured_end(group_end);
    });
    if (next != b.end()) specs.push_back({inserted, *next, EdgeKind::Dependency, 0});
  }
  if (has_cycle(graph, specs)) {
    throw TransformError(fmt::format("{}insert: the inserted task's edges would close a cycle", prefix(where)));
  }
  graph.add_edges(specs);
  e.tasks = last_of.size();
  e.detail = fmt::format("{} tasks '{}'", last_of.size(), name);
  return e;
}

} // namespace dreamscope::whatif
