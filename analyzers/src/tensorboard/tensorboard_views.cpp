// The TensorBoard plugin's operator and kernel views (its op_agg.py, kernel_parser.py and
// tensor_cores_parser.py): operators and the kernels their runtime calls launched, collected
// from the call trees, and every kernel of the trace by name.
#include "tensorboard/tensorboard_tree.h"

#include "dreamscope/storage/limits.h"

#include <algorithm>
#include <limits>
#include <map>
#include <unordered_map>

namespace dreamscope::analyzers {

namespace {

using tb::CallTrees;
using tb::DeviceOp;
using tb::Model;
using tb::Node;

std::string input_shape_of(const Trace& trace, AnnotationIndex row) {
  for (std::string_view key : {"Input Dims", "Input dims"}) {
    if (const EventArg* a = trace.find_arg(row, key)) {
      if (a->type == ArgType::Json || a->type == ArgType::String) return tb::python_repr(trace.str(a->text));
    }
  }
  return "[]";
}

// What the plugin collects from the trees: each thread's operators and kernels, children's
// before their parent's, a node's kernels by its runtime calls in time order.
struct Collected {
  std::vector<std::uint32_t> operators; // nodes
  std::vector<std::uint32_t> kernels;   // Model::device_ops
};

Collected collect(const Model& m, const CallTrees& t) {
  Collected out;
  for (std::uint32_t root : t.roots) {
    std::vector<std::pair<std::uint32_t, std::size_t>> stack{{root, 0}};
    while (!stack.empty()) {
      auto& [id, next_child] = stack.back();
      const Node& node = t.nodes[id];
      if (next_child < node.children.size()) {
        const std::uint32_t child = node.children[next_child++];
        stack.push_back({child, 0}); // `id` and `next_child` dangle from here
        continue;
      }
      for (std::uint32_t r : node.runtimes) {
        for (std::uint32_t op : tb::launched_by(m, r)) {
          if (m.device_ops[op].kind == GpuOpKind::Kernel) out.kernels.push_back(op);
        }
      }
      if (node.plain_operator) out.operators.push_back(id);
      stack.pop_back();
    }
  }
  return out;
}

void add_call(OperatorStats& row, const Node& n) {
  ++row.calls;
  row.host = limits::add_ns(row.host, n.end - n.start);
  row.self_host = limits::add_ns(row.self_host, n.self_host);
  row.device = limits::add_ns(row.device, n.device);
  row.self_device = limits::add_ns(row.self_device, n.self_device);
}

std::vector<OperatorStats> aggregate_operators(const Model& m, const CallTrees& t,
                                               const std::vector<std::uint32_t>& ops, bool by_shape) {
  struct Sums {
    OperatorStats row;
    TimeNs tc_self = 0, tc_total = 0;
  };
  std::vector<Sums> rows;
  std::unordered_map<std::string, std::size_t> index;
  for (std::uint32_t id : ops) {
    const Node& n = t.nodes[id];
    std::string shape = input_shape_of(*m.trace, m.host[n.host].row);
    std::string key(n.name);
    if (by_shape) key += "###" + shape;
    auto [it, inserted] = index.try_emplace(std::move(key), rows.size());
    if (inserted) {
      rows.push_back({});
      rows.back().row.name = std::string(n.name);
      rows.back().row.input_shape = std::move(shape);
      rows.back().row.tc_eligible = n.tc_eligible;
    }
    Sums& s = rows[it->second];
    add_call(s.row, n);
    s.tc_self = limits::add_ns(s.tc_self, n.tc_self);
    s.tc_total = limits::add_ns(s.tc_total, n.tc_total);
  }
  std::vector<OperatorStats> out;
  out.reserve(rows.size());
  for (Sums& s : rows) {
    if (s.row.self_device > 0)
      s.row.tc_self_ratio = static_cast<double>(s.tc_self) / static_cast<double>(s.row.self_device);
    if (s.row.device > 0) s.row.tc_total_ratio = static_cast<double>(s.tc_total) / static_cast<double>(s.row.device);
    out.push_back(std::move(s.row));
  }
  return out;
}

// The launch fields as the kernel event recorded them; zero is what our launch configurations
// hold for a field the event did not have (no real kernel has a zero grid, block or register
// count). Shared memory 0 and unrecorded are the same to us (docs/analyze.md).
struct LaunchFields {
  std::optional<std::array<std::int64_t, 3>> grid, block;
  std::optional<std::int64_t> registers, shared_memory;
};

LaunchFields launch_fields(const Trace& trace, GpuOpIndex row) {
  LaunchFields f;
  const std::uint32_t launch = trace.gpu_ops().launch[row];
  if (launch == 0) return f;
  const LaunchConfig& l = trace.launch_configs()[launch];
  if (l.grid[0] > 0) f.grid = std::array<std::int64_t, 3>{l.grid[0], l.grid[1], l.grid[2]};
  if (l.block[0] > 0) f.block = std::array<std::int64_t, 3>{l.block[0], l.block[1], l.block[2]};
  if (l.registers_per_thread > 0) f.registers = l.registers_per_thread;
  if (l.shared_memory_recorded()) f.shared_memory = l.shared_memory();
  return f;
}

std::string dim3_text(const std::optional<std::array<std::int64_t, 3>>& d) {
  if (!d) return "None";
  return "[" + std::to_string((*d)[0]) + ", " + std::to_string((*d)[1]) + ", " + std::to_string((*d)[2]) + "]";
}

std::vector<KernelOpStats> aggregate_kernels(const Model& m, const CallTrees& t,
                                             const std::vector<std::uint32_t>& kernels) {
  const Trace& trace = *m.trace;
  struct Sums {
    KernelOpStats row;
    double blocks_weighted = 0, occupancy_weighted = 0;
  };
  std::vector<Sums> rows;
  std::unordered_map<std::string, std::size_t> index;
  for (std::uint32_t k : kernels) {
    const DeviceOp& d = m.device_ops[k];
    const std::string_view name = trace.str(trace.gpu_ops().name[d.row]);
    const std::string_view op_name = t.launcher[k] == kNoIndex ? std::string_view("N/A") : t.nodes[t.launcher[k]].name;
    const LaunchFields f = launch_fields(trace, d.row);
    // The plugin's key: a field that is missing or 0 counts as '0' for registers and shared memory.
    const std::string key = std::string(name) + "###" + std::string(op_name) + "###" + dim3_text(f.grid) + "###" +
                            dim3_text(f.block) + "###" + std::to_string(f.registers.value_or(0)) + "###" +
                            std::to_string(f.shared_memory.value_or(0));
    auto [it, inserted] = index.try_emplace(key, rows.size());
    if (inserted) {
      Sums s;
      s.row.name = std::string(name);
      s.row.op_name = std::string(op_name);
      s.row.grid = f.grid;
      s.row.block = f.block;
      s.row.registers_per_thread = f.registers;
      s.row.shared_memory = f.shared_memory;
      s.row.min = std::numeric_limits<TimeNs>::max();
      s.row.tc_used = tb::uses_tensor_cores(name);
      s.row.op_tc_eligible = t.launcher[k] != kNoIndex && t.launcher_tc_eligible[k];
      rows.push_back(std::move(s));
    }
    Sums& s = rows[it->second];
    const TimeNs dur = d.end - d.start;
    ++s.row.calls;
    s.row.total = limits::add_ns(s.row.total, dur);
    s.row.min = std::min(s.row.min, dur);
    s.row.max = std::max(s.row.max, dur);
    s.blocks_weighted += tb::blocks_per_sm(m, d).value_or(0) * static_cast<double>(dur);
    s.occupancy_weighted += tb::occupancy_pct(m, d).value_or(0) * static_cast<double>(dur);
  }
  std::vector<KernelOpStats> out;
  out.reserve(rows.size());
  for (Sums& s : rows) {
    s.row.mean = static_cast<double>(s.row.total) / static_cast<double>(s.row.calls);
    if (s.row.total > 0) {
      s.row.blocks_per_sm = s.blocks_weighted / static_cast<double>(s.row.total);
      s.row.occupancy_pct = s.occupancy_weighted / static_cast<double>(s.row.total);
    }
    out.push_back(std::move(s.row));
  }
  return out;
}

// Every kernel event, launched or not, grouped by name.
std::vector<KernelNameTotals> kernel_totals(const Model& m, double& tc_used_ratio) {
  const Trace& trace = *m.trace;
  struct Sums {
    KernelNameTotals row;
    double blocks_weighted = 0, occupancy_weighted = 0;
  };
  std::map<std::string_view, Sums> by_name; // by name first, as pandas' groupby
  for (const DeviceOp& d : m.device_ops) {
    if (d.kind != GpuOpKind::Kernel) continue;
    const std::string_view name = trace.str(trace.gpu_ops().name[d.row]);
    Sums& s = by_name[name];
    const TimeNs dur = d.end - d.start;
    if (s.row.count == 0) {
      s.row.name = std::string(name);
      s.row.tc_used = tb::uses_tensor_cores(name);
      s.row.min = dur;
    }
    ++s.row.count;
    s.row.sum = limits::add_ns(s.row.sum, dur);
    s.row.min = std::min(s.row.min, dur);
    s.row.max = std::max(s.row.max, dur);
    s.blocks_weighted += tb::blocks_per_sm(m, d).value_or(0) * static_cast<double>(dur);
    s.occupancy_weighted += tb::occupancy_pct(m, d).value_or(0) * static_cast<double>(dur);
  }
  std::vector<KernelNameTotals> out;
  TimeNs all = 0, tc = 0;
  for (auto& [name, s] : by_name) {
    s.row.mean = static_cast<double>(s.row.sum) / static_cast<double>(s.row.count);
    if (s.row.sum > 0) {
      s.row.blocks_per_sm = s.blocks_weighted / static_cast<double>(s.row.sum);
      s.row.occupancy_pct = s.occupancy_weighted / static_cast<double>(s.row.sum);
    }
    all = limits::add_ns(all, s.row.sum);
    if (s.row.tc_used) tc = limits::add_ns(tc, s.row.sum);
    out.push_back(std::move(s.row));
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const KernelNameTotals& a, const KernelNameTotals& b) { return a.sum > b.sum; });
  tc_used_ratio = all > 0 ? static_cast<double>(tc) / static_cast<double>(all) : 0.0;
  return out;
}

// Kernel time launched by the nodes' own runtime calls (the orphan stand-in excluded).
TimeNs own_kernel_time(const Model& m, const CallTrees& t, const std::vector<std::uint32_t>& nodes) {
  TimeNs sum = 0;
  for (std::uint32_t id : nodes) {
    for (std::uint32_t r : t.nodes[id].runtimes) {
      if (r == tb::kOrphanLaunch) continue;
      for (std::uint32_t op : tb::launched_by(m, r)) {
        if (m.device_ops[op].kind == GpuOpKind::Kernel)
          sum = limits::add_ns(sum, m.device_ops[op].end - m.device_ops[op].start);
      }
    }
  }
  return sum;
}

// Tensor-core eligible nodes with no eligible node beneath them.
std::vector<std::uint32_t> innermost_eligible(const CallTrees& t) {
  std::vector<std::uint32_t> out;
  std::vector<std::size_t> found_below; // per open node: entries of `out` when it was entered
  std::vector<std::pair<std::uint32_t, std::size_t>> stack;
  for (std::uint32_t root : t.roots) {
    stack.push_back({root, 0});
    found_below.push_back(out.size());
    while (!stack.empty()) {
      auto& [id, next_child] = stack.back();
      const Node& node = t.nodes[id];
      if (next_child < node.children.size()) {
        const std::uint32_t child = node.children[next_child++];
        stack.push_back({child, 0}); // `id` and `next_child` dangle from here
        found_below.push_back(out.size());
        continue;
      }
      if (node.tc_eligible && out.size() == found_below.back()) out.push_back(id);
      stack.pop_back();
      found_below.pop_back();
    }
  }
  return out;
}

} // namespace

OperatorKernelViews operator_kernel_views(const Trace& trace) {
  const Model m = tb::build_model(trace);
  const CallTrees t = tb::build_call_trees(m);
  const Collected c = collect(m, t);
  OperatorKernelViews out;
  out.by_name = aggregate_operators(m, t, c.operators, false);
  out.by_name_and_shape = aggregate_operators(m, t, c.operators, true);
  out.kernels = aggregate_kernels(m, t, c.kernels);
  if (m.role_events[static_cast<std::size_t>(StepCategory::Kernel)] > 0) {
    out.kernel_totals = kernel_totals(m, out.tc_used_ratio);
  }

  // Tensor-core share per device, of the kernels operators launched; every device with
  // kernels gets a figure once any operator launched one.
  std::map<std::int64_t, std::pair<TimeNs, TimeNs>> per_device; // tc, all
  for (const DeviceOp& d : m.device_ops) {
    if (d.kind == GpuOpKind::Kernel) per_device.try_emplace(d.device, 0, 0);
  }
  bool launched = false;
  for (std::uint32_t id : c.operators) {
    for (std::uint32_t r : t.nodes[id].runtimes) {
      for (std::uint32_t op : tb::launched_by(m, r)) {
        const DeviceOp& d = m.device_ops[op];
        if (d.kind != GpuOpKind::Kernel) continue;
        launched = true;
        auto& [tc, all] = per_device[d.device];
        all = limits::add_ns(all, d.end - d.start);
        if (tb::uses_tensor_cores(trace.str(trace.gpu_ops().name[d.row]))) tc = limits::add_ns(tc, d.end - d.start);
      }
    }
  }
  if (launched) {
    for (const auto& [device, times] : per_device) {
      const auto& [tc, all] = times;
      out.tensor_cores.push_back({device, all > 0 ? static_cast<double>(tc) / static_cast<double>(all) : 0.0});
    }
  }
  const TimeNs ops_kernel_time = own_kernel_time(m, t, c.operators);
  if (ops_kernel_time > 0) {
    out.tc_eligible_ops_kernel_ratio =
        static_cast<double>(own_kernel_time(m, t, innermost_eligible(t))) / static_cast<double>(ops_kernel_time);
  }
  return out;
}

} // namespace dreamscope::analyzers
