// The TensorBoard plugin's call trees (its op_tree.py and node.py): nesting by time on each
// thread, runtime calls tied to operators by external id, nested duplicates collapsed, and the
// host, device and tensor-core times of every node.
#include "tensorboard/tensorboard_tree.h"

#include "dreamscope/storage/limits.h"

#include "dreamscope/storage/steps.h"

#include <algorithm>
#include <limits>
#include <unordered_map>

namespace dreamscope::analyzers::tb {

namespace {

// The host events the plugin makes nodes of: all but user annotations other than
// collectives (and data loaders and optimizer steps, which have node classes of their own).
bool makes_node(const Model& m, const HostEvent& e) {
  if (e.on_gpu_track) return false;
  if (!m.kineto || e.kind != HostKind::UserAnnotation) return true;
  return is_data_loader_name(e.name) || e.name.starts_with("Optimizer.step") || is_collective_operator(e.name);
}

NodeType type_of(HostKind kind) {
  switch (kind) {
    case HostKind::Operator: return NodeType::Operator;
    case HostKind::Python: return NodeType::Python;
    case HostKind::UserAnnotation: return NodeType::UserAnnotation;
    case HostKind::ProfilerStep: return NodeType::ProfilerStep;
    case HostKind::Module: return NodeType::Module;
  }
  return NodeType::Operator;
}

// The operator view's operators: plain operators, not data loading, optimizer steps or the
// data-parallel wrappers' forward.
bool is_plain_operator(NodeType type, std::string_view name) {
  return type == NodeType::Operator && !is_data_loader_name(name) && !name.starts_with("Optimizer.") &&
         name != "DataParallel.forward" && name != "DistributedDataParallel.forward";
}

const std::vector<std::uint32_t> kNoOps;

} // namespace

const std::vector<std::uint32_t>& launched_by(const Model& m, std::uint32_t runtime) {
  if (runtime == kOrphanLaunch) return m.orphan_kernels;
  return runtime < m.runtimes.size() ? m.runtimes[runtime].device_ops : kNoOps;
}

CallTrees build_call_trees(const Model& m) {
  CallTrees t;
  t.launcher.assign(m.device_ops.size(), kNoIndex);
  t.launcher_tc_eligible.assign(m.device_ops.size(), 0);

  // Nodes per thread, threads in the order of their first node, nodes in time order.
  std::vector<std::int64_t> threads;
  std::unordered_map<std::int64_t, std::vector<std::uint32_t>> nodes_of_thread;
  for (std::uint32_t h = 0; h < m.host.size(); ++h) {
    const HostEvent& e = m.host[h];
    if (!makes_node(m, e)) continue;
    Node n{.host = h, .name = e.name, .start = e.start, .end = e.end, .type = type_of(e.kind)};
    n.plain_operator = is_plain_operator(n.type, n.name);
    n.tc_eligible = is_tensor_core_operator(n.name);
    auto [it, inserted] = nodes_of_thread.try_emplace(e.thread);
    if (inserted) threads.push_back(e.thread);
    it->second.push_back(static_cast<std::uint32_t>(t.nodes.size()));
    t.nodes.push_back(n);
  }

  // Runtime calls go to the first node (threads in order, nodes in time order) with their
  // external id, wherever and whenever they ran. Calls with external id 0 also go to the root
  // of their thread.
  std::unordered_map<std::int64_t, std::vector<std::uint32_t>> runtimes_of_id;
  std::unordered_map<std::int64_t, std::vector<std::uint32_t>> unowned_of_thread;
  for (std::uint32_t r = 0; r < m.runtimes.size(); ++r) {
    const RuntimeCall& call = m.runtimes[r];
    if (call.external_id == kNoValue) continue;
    runtimes_of_id[call.external_id].push_back(r);
    if (call.external_id == 0) unowned_of_thread[call.thread].push_back(r);
  }
  for (std::int64_t thread : threads) {
    for (std::uint32_t n : nodes_of_thread[thread]) {
      const HostEvent& e = m.host[t.nodes[n].host];
      if (e.external_id == kNoValue) continue;
      auto it = runtimes_of_id.find(e.external_id);
      if (it == runtimes_of_id.end()) continue;
      t.nodes[n].runtimes = std::move(it->second);
      runtimes_of_id.erase(it);
    }
  }

  for (std::int64_t thread : threads) {
    std::vector<std::uint32_t> list = nodes_of_thread[thread];
    std::stable_sort(list.begin(), list.end(), [&](std::uint32_t a, std::uint32_t b) {
      const Node &x = t.nodes[a], &y = t.nodes[b];
      return x.start != y.start ? x.start < y.start : x.end > y.end;
    });
    const auto root = static_cast<std::uint32_t>(t.nodes.size());
    Node r{.name = "CallTreeRoot",
           .start = std::numeric_limits<TimeNs>::min(),
           .end = std::numeric_limits<TimeNs>::max(),
           .type = NodeType::Root};
    if (auto it = unowned_of_thread.find(thread); it != unowned_of_thread.end()) r.runtimes = it->second;
    const bool has_steps = std::any_of(
        list.begin(), list.end(), [&](std::uint32_t n) { return t.nodes[n].name.starts_with(kProfilerStepPrefix); });
    if (has_steps && !m.orphan_kernels.empty()) r.runtimes.push_back(kOrphanLaunch);
    t.nodes.push_back(std::move(r));
    t.roots.push_back(root);
    t.root_threads.push_back(thread);
    if (has_steps) t.step_root = root;

    // Nesting: a node starting before the innermost open one ends is its child if it also
    // ends by then; one that would straddle its end is dropped, as the plugin drops it.
    std::vector<std::uint32_t> open{root};
    for (std::uint32_t n : list) {
      while (open.size() > 1 && t.nodes[n].start >= t.nodes[open.back()].end) open.pop_back();
      if (t.nodes[n].end <= t.nodes[open.back()].end) {
        t.nodes[open.back()].children.push_back(n);
        open.push_back(n);
      }
    }

    // An operator whose one child is an operator of the same name is one call: it takes the
    // child's children and runtime calls (and loses its own calls, as autograd's profiler does).
    std::vector<std::uint32_t> todo{root};
    while (!todo.empty()) {
      Node& node = t.nodes[todo.back()];
      todo.pop_back();
      while (node.children.size() == 1) {
        Node& child = t.nodes[node.children[0]];
        if (node.name != child.name || node.type != NodeType::Operator || child.type != NodeType::Operator) break;
        std::vector<std::uint32_t> grandchildren = std::move(child.children);
        node.runtimes = std::move(child.runtimes);
        node.children = std::move(grandchildren);
      }
      for (std::uint32_t c : node.children) todo.push_back(c);
    }

    // Times, children before parents. The plugin sorts calls by (start, longer first) and
    // puts those without a time (its stand-in for orphan kernels, and calls at time 0) last.
    // A node's span, saturated: the root's is the whole time axis until its children set it.
    auto span_of = [](const Node& n) {
      TimeNs d = 0;
      if (__builtin_sub_overflow(n.end, n.start, &d)) return limits::kMaxAbsTimestampNs;
      return std::clamp(d, -limits::kMaxAbsTimestampNs, limits::kMaxAbsTimestampNs);
    };
    auto rank_of = [&](std::uint32_t r) {
      if (r == kOrphanLaunch || m.runtimes[r].start == 0 || m.runtimes[r].end == 0) {
        return std::pair{std::numeric_limits<TimeNs>::max(), std::numeric_limits<TimeNs>::max()};
      }
      return std::pair{m.runtimes[r].start, -m.runtimes[r].end};
    };
    std::vector<std::pair<std::uint32_t, bool>> stack{{root, false}};
    while (!stack.empty()) {
      auto [id, expanded] = stack.back();
      stack.pop_back();
      if (!expanded) {
        stack.push_back({id, true});
        for (std::uint32_t c : t.nodes[id].children) stack.push_back({c, false});
        continue;
      }
      Node& node = t.nodes[id];
      std::stable_sort(node.runtimes.begin(), node.runtimes.end(),
                       [&](std::uint32_t a, std::uint32_t b) { return rank_of(a) < rank_of(b); });
      node.self_host = span_of(node);
      bool child_eligible = false;
      for (std::uint32_t c : node.children) {
        const Node& child = t.nodes[c];
        node.device = limits::add_ns(node.device, child.device);
        node.self_host = limits::add_ns(node.self_host, -span_of(child));
        node.tc_total = limits::add_ns(node.tc_total, child.tc_total);
        child_eligible = child_eligible || child.tc_eligible;
      }
      bool launched_tc = false;
      for (std::uint32_t r : node.runtimes) {
        TimeNs device = 0, tc = 0;
        for (std::uint32_t op : launched_by(m, r)) {
          const DeviceOp& d = m.device_ops[op];
          t.launcher[op] = id;
          t.launcher_tc_eligible[op] = node.tc_eligible;
          device = limits::add_ns(device, d.end - d.start);
          if (d.kind == GpuOpKind::Kernel && uses_tensor_cores(m.trace->str(m.trace->gpu_ops().name[d.row]))) {
            tc = limits::add_ns(tc, d.end - d.start);
          }
        }
        if (r != kOrphanLaunch)
          node.self_host = limits::add_ns(node.self_host, m.runtimes[r].start - m.runtimes[r].end);
        node.device = limits::add_ns(node.device, device);
        node.self_device = limits::add_ns(node.self_device, device);
        node.tc_self = limits::add_ns(node.tc_self, tc);
        node.tc_total = limits::add_ns(node.tc_total, tc);
        launched_tc = launched_tc || tc > 0;
      }
      if (node.type == NodeType::Operator && (child_eligible || launched_tc)) node.tc_eligible = true;
      // A module launches nothing itself; the plugin's module view counts the device time of
      // the operators it calls directly as its own.
      if (node.type == NodeType::Module) {
        for (std::uint32_t c : node.children) {
          if (t.nodes[c].plain_operator) node.self_device = limits::add_ns(node.self_device, t.nodes[c].device);
        }
      }
    }
    // A root then spans its first child's start to its last child's end.
    Node& tree = t.nodes[root];
    if (!tree.children.empty()) {
      tree.start = t.nodes[tree.children.front()].start;
      tree.end = t.nodes[tree.children.back()].end;
    }
  }
  if (!m.forward_backward.empty()) attach_backward_to_modules(m, t);
  return t;
}

} // namespace dreamscope::analyzers::tb
