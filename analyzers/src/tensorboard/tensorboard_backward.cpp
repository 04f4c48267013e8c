// The TensorBoard plugin's backward modules (its op_tree.py, after the trees are built): when
// the trace has nn.Module scopes and forward-backward flows, the autograd engine's backward
// operators are taken off their thread and put under a "<module>.backward" node for each
// module, which goes into the main thread's tree at the time its backward operators ran.
// Backward operators no forward operator of a module points at are left out, as the plugin
// leaves them out; a group that two operators starting at the same time point at is listed
// under both, as in the plugin.
#include "tensorboard/tensorboard_tree.h"

#include "dreamscope/storage/limits.h"

#include <algorithm>
#include <tuple>
#include <unordered_map>

namespace dreamscope::analyzers::tb {

namespace {

constexpr std::string_view kAccumulateGrad = "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad";

bool is_backward_root(const Node& n) { return n.name.starts_with(kBackwardRootPrefix); }

// The plugin's main thread: the one with ProfilerSteps, else the only one, else the longest
// one that is not the backward thread.
std::uint32_t main_root(const CallTrees& t) {
  if (t.step_root != kNoIndex) return t.step_root;
  if (t.roots.size() == 1) return t.roots[0];
  std::int64_t backward_thread = kNoValue;
  bool found = false;
  for (std::size_t i = 0; i < t.roots.size() && !found; ++i) {
    for (std::uint32_t c : t.nodes[t.roots[i]].children) {
      if (is_backward_root(t.nodes[c])) {
        backward_thread = t.root_threads[i];
        found = true;
        break;
      }
    }
  }
  std::uint32_t best = kNoIndex;
  TimeNs longest = 0;
  for (std::size_t i = 0; i < t.roots.size(); ++i) {
    if (found && t.root_threads[i] == backward_thread) continue;
    const Node& r = t.nodes[t.roots[i]];
    if (best == kNoIndex || r.end - r.start > longest) {
      best = t.roots[i];
      longest = r.end - r.start;
    }
  }
  return best;
}

// A backward node spans its children and sums their times.
void fill_backward(CallTrees& t, std::uint32_t id) {
  Node& n = t.nodes[id];
  std::stable_sort(n.children.begin(), n.children.end(), [&](std::uint32_t a, std::uint32_t b) {
    const Node &x = t.nodes[a], &y = t.nodes[b];
    return x.start != y.start ? x.start < y.start : x.end > y.end;
  });
  n.start = t.nodes[n.children.front()].start;
  n.end = t.nodes[n.children.back()].end;
  n.self_host = n.end - n.start;
  for (std::uint32_t c : n.children) {
    const Node& child = t.nodes[c];
    n.device = limits::add_ns(n.device, child.device);
    n.self_host = limits::add_ns(n.self_host, child.start - child.end);
    n.tc_total = limits::add_ns(n.tc_total, child.tc_total);
    n.tc_eligible = n.tc_eligible || child.tc_eligible;
  }
}

struct Builder {
  CallTrees& t;
  const std::unordered_map<TimeNs, std::vector<std::uint32_t>>& groups_of_forward;
  std::vector<std::uint32_t> top; // backward nodes of modules inside no other module

  void build(std::uint32_t id, std::uint32_t parent) {
    if (t.nodes[id].type == NodeType::Module) {
      const std::string_view name = t.names.emplace_back(std::string(t.nodes[id].name) + ".backward");
      Node b{.name = name, .start = t.nodes[id].start, .end = t.nodes[id].end, .type = NodeType::Backward};
      const auto backward = static_cast<std::uint32_t>(t.nodes.size());
      t.nodes.push_back(std::move(b));
      if (parent == kNoIndex) top.push_back(backward);
      else t.nodes[parent].children.push_back(backward);
      parent = backward;
    }
    const std::vector<std::uint32_t> children = t.nodes[id].children;
    for (std::uint32_t c : children) {
      if (parent != kNoIndex && t.nodes[c].plain_operator) {
        if (auto it = groups_of_forward.find(t.nodes[c].start); it != groups_of_forward.end()) {
          auto& list = t.nodes[parent].children;
          list.insert(list.end(), it->second.begin(), it->second.end());
        }
      }
      build(c, parent);
    }
    if (t.nodes[id].type == NodeType::Module && parent != kNoIndex && !t.nodes[parent].children.empty()) {
      fill_backward(t, parent);
    }
  }
};

// Puts each backward node, in time order, under the deepest node of the tree whose span holds
// it, before the first child that starts after it ends (the plugin's walk, with its
// comparisons).
void insert_by_time(CallTrees& t, std::uint32_t root, std::vector<std::uint32_t> modules) {
  std::stable_sort(modules.begin(), modules.end(), [&](std::uint32_t a, std::uint32_t b) {
    const Node &x = t.nodes[a], &y = t.nodes[b];
    return x.start != y.start ? x.start < y.start : x.end > y.end;
  });
  std::vector<std::pair<std::uint32_t, std::size_t>> stack;
  std::uint32_t current = root;
  std::size_t child = 0;
  for (std::size_t i = 0; i < modules.size();) {
    const Node& module = t.nodes[modules[i]];
    if (current == kNoIndex || module.end < t.nodes[current].start) {
      ++i; // before the node it would go into: the plugin leaves it out
      continue;
    }
    if (module.start > t.nodes[current].end) {
      if (stack.empty()) {
        current = kNoIndex;
      } else {
        std::tie(current, child) = stack.back();
        stack.pop_back();
        ++child;
      }
      continue;
    }
    while (child < t.nodes[current].children.size()) {
      const Node& next = t.nodes[t.nodes[current].children[child]];
      if (module.end < next.start) break;
      if (module.start >= next.end) {
        ++child;
      } else {
        stack.emplace_back(current, child);
        current = t.nodes[current].children[child];
        child = 0;
      }
    }
    auto& list = t.nodes[current].children;
    list.insert(list.begin() + static_cast<std::ptrdiff_t>(child), modules[i]);
    ++child;
    ++i;
  }
}

// Threads left without nodes have no tree.
void drop_empty_roots(CallTrees& t) {
  std::vector<std::uint32_t> roots;
  std::vector<std::int64_t> threads;
  for (std::size_t i = 0; i < t.roots.size(); ++i) {
    if (t.nodes[t.roots[i]].children.empty()) continue;
    roots.push_back(t.roots[i]);
    threads.push_back(t.root_threads[i]);
  }
  t.roots = std::move(roots);
  t.root_threads = std::move(threads);
}

} // namespace

void attach_backward_to_modules(const Model& m, CallTrees& t) {
  const std::uint32_t main = main_root(t);

  // Modules at the top of each tree (or of a ProfilerStep), and the backward operators there.
  std::vector<std::uint32_t> modules;
  std::vector<std::uint32_t> parents; // of backward operators, in first-seen order
  std::unordered_map<std::uint32_t, std::vector<std::uint32_t>> backward_of_parent;
  auto visit = [&](auto& self, std::uint32_t parent, std::uint32_t id) -> void {
    const Node& n = t.nodes[id];
    if (n.type == NodeType::Module) {
      modules.push_back(id);
    } else if (n.type == NodeType::ProfilerStep) {
      for (std::uint32_t c : n.children) self(self, id, c);
    } else if (is_backward_root(n)) {
      auto [it, inserted] = backward_of_parent.try_emplace(parent);
      if (inserted) parents.push_back(parent);
      it->second.push_back(id);
    }
  };
  for (std::uint32_t root : t.roots) {
    for (std::uint32_t c : t.nodes[root].children) visit(visit, root, c);
  }
  if (modules.empty()) return;
  std::vector<std::uint32_t> backward;
  for (std::uint32_t p : parents) {
    const auto& taken = backward_of_parent[p];
    auto& children = t.nodes[p].children;
    std::erase_if(children, [&](std::uint32_t c) { return std::find(taken.begin(), taken.end(), c) != taken.end(); });
    backward.insert(backward.end(), taken.begin(), taken.end());
  }
  if (backward.empty()) return;

  // Each node below a backward operator, by start time, to its parent: the first one met
  // depth first wins.
  std::unordered_map<TimeNs, std::uint32_t> parent_at;
  for (std::uint32_t top : backward) {
    std::vector<std::pair<std::uint32_t, std::size_t>> stack{{top, 0}};
    while (!stack.empty()) {
      auto& [id, next] = stack.back();
      const auto& children = t.nodes[id].children;
      if (next == children.size()) {
        stack.pop_back();
        continue;
      }
      const std::uint32_t parent = id, child = children[next++];
      parent_at.try_emplace(t.nodes[child].start, parent);
      stack.emplace_back(child, 0); // `id` and `next` dangle from here
    }
  }
  // AccumulateGrad joins the backward operator before it.
  std::unordered_map<std::uint32_t, std::vector<std::uint32_t>> group_of_head;
  std::uint32_t head = kNoIndex;
  for (std::uint32_t id : backward) {
    if (t.nodes[id].name != kAccumulateGrad || head == kNoIndex) head = id;
    group_of_head[head].push_back(id);
  }
  // A forward operator's flow points into its backward operator; the group above that is its.
  std::unordered_map<TimeNs, std::vector<std::uint32_t>> groups_of_forward;
  for (const auto& [forward, to] : m.forward_backward) {
    auto it = parent_at.find(to);
    while (it != parent_at.end() && !is_backward_root(t.nodes[it->second]))
      it = parent_at.find(t.nodes[it->second].start);
    if (it == parent_at.end()) continue;
    auto group = group_of_head.find(it->second);
    if (group == group_of_head.end()) continue; // the plugin would fail on this trace
    groups_of_forward[forward] = std::move(group->second);
    group_of_head.erase(group);
  }

  // Without any, the plugin builds no backward nodes (and the backward operators stay out).
  if (groups_of_forward.empty()) return drop_empty_roots(t);
  Builder b{t, groups_of_forward, {}};
  for (std::uint32_t module : modules) b.build(module, kNoIndex);
  if (main != kNoIndex) insert_by_time(t, main, std::move(b.top));
  drop_empty_roots(t);
}

} // namespace dreamscope::analyzers::tb
