// The TensorBoard plugin's memory page (its memory_parser.py, and run.py's memory stats, events
// and curve): each allocation and release of PyTorch's profile_memory put in the operator open
// on its thread at its time, summed per operator and device; allocations paired with their
// releases by address; the allocator's totals over time.
#include "tensorboard/tensorboard_tree.h"

#include "hta/kineto_time.h"

#include "dreamscope/storage/limits.h"

#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <optional>
#include <unordered_map>

namespace dreamscope::analyzers {

namespace {

using tb::CallTrees;
using tb::lower;
using tb::Model;
using tb::Node;

// Memory sums saturate at the bound a memory event's bytes keep to (limits.h), never overflow.
std::int64_t add_bytes(std::int64_t a, std::int64_t b) {
  std::int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) return a > 0 ? limits::kMaxAbsBytes : -limits::kMaxAbsBytes;
  return std::clamp(sum, -limits::kMaxAbsBytes, limits::kMaxAbsBytes);
}

// A time as the plugin holds it: Kineto's µs in float64 (tensorboard_model.cpp says why).
TimeNs plugin_time(const Model& m, TimeNs t) { return m.kineto ? detail::ns_of_us(detail::us_as_parsed(t)) : t; }

// The plugin's device names: "CPU", "GPU<id>" (its "GPUNone" for a CUDA event without an id);
// "" for the device types it does not know, whose events it leaves out of its statistics.
std::string device_name(const MemoryEventRecord& e) {
  if (e.device_type == 0) return "CPU";
  if (e.device_type == 1) return "GPU" + (e.device_id == kNoValue ? std::string("None") : std::to_string(e.device_id));
  return {};
}

// One memory event as the plugin's MemoryRecord: where it happened, and the operator it is
// put on (allocations by the call trees, releases by the allocation they pair with).
struct Record {
  const MemoryEventRecord* event = nullptr;
  TimeNs time = 0;
  std::string device;
  std::uint32_t op = kNoIndex;     // node of the operator, kNoIndex: none
  std::uint32_t caller = kNoIndex; // node of that operator's caller, kNoIndex: none
};

// The first event the plugin reads: it counts time from there. Its events are the host events
// of the categories it knows (GPU-side annotations included), runtime calls, kernels, copies
// and memsets, its profiler span and the memory events.
TimeNs profiler_start(const Model& m, const std::vector<Record>& records) {
  const Trace& trace = *m.trace;
  TimeNs start = std::numeric_limits<TimeNs>::max();
  const auto& ann = trace.annotations();
  for (AnnotationIndex i{0}; i < ann.size(); ++i) {
    if (m.kineto) {
      const std::string category = lower(trace.str(ann.category[i]));
      if (category != "cpu_op" && category != "operator" && category != "python" && category != "python_function" &&
          category != "user_annotation" && category != "gpu_user_annotation") {
        continue;
      }
    }
    start = std::min(start, plugin_time(m, ann.start[i]));
  }
  for (const tb::RuntimeCall& r : m.runtimes) start = std::min(start, r.start);
  for (const tb::DeviceOp& d : m.device_ops) start = std::min(start, d.start);
  const std::string span = trace.meta_value("kineto.profiler_span_ns");
  if (m.kineto && !span.empty()) {
    try {
      start = std::min(start, plugin_time(m, std::stoll(span)));
    } catch (const std::exception&) {
      // A damaged meta value: the span is not known.
    }
  }
  for (const Record& r : records) start = std::min(start, r.time);
  return start == std::numeric_limits<TimeNs>::max() ? 0 : start;
}

// The plugin's walk (MemoryParser.find_memory_nodes): per thread, records in time order go
// down the thread's call tree from where the last one was found, each to the innermost node
// whose [start, end) holds its time. Only operators keep records; an allocation takes the
// operator's name and its caller's. Returns the records of each node, and marks the nodes the
// walk entered (the statistics skip what lies under a node it never entered).
struct Placement {
  std::vector<std::vector<std::uint32_t>> records_of_node;
  std::vector<char> entered;
};

Placement place_records(const CallTrees& t, const Trace& trace, std::vector<Record>& records) {
  Placement p;
  p.records_of_node.resize(t.nodes.size());
  p.entered.assign(t.nodes.size(), 0);
  std::unordered_map<std::int64_t, std::uint32_t> root_of_thread;
  for (std::size_t i = 0; i < t.roots.size(); ++i) root_of_thread.try_emplace(t.root_threads[i], t.roots[i]);

  std::unordered_map<std::int64_t, std::vector<std::uint32_t>> records_of_thread;
  for (std::uint32_t i = 0; i < records.size(); ++i) {
    records_of_thread[trace.tracks()[records[i].event->track].tid].push_back(i);
  }
  for (const auto& [thread, list] : records_of_thread) {
    std::uint32_t current = kNoIndex;
    if (auto it = root_of_thread.find(thread); it != root_of_thread.end()) {
      current = it->second;
      p.entered[current] = 1;
      // A thread whose tree holds nothing has no time span: the plugin places none of its records.
      if (t.nodes[current].children.empty()) current = kNoIndex;
    }
    std::vector<std::pair<std::uint32_t, std::size_t>> stack; // (parent, index of the child entered)
    std::size_t child = 0;
    for (std::size_t k = 0; k < list.size();) {
      Record& r = records[list[k]];
      if (current == kNoIndex || r.time < t.nodes[current].start) {
        ++k; // no node of the thread holds it
        continue;
      }
      if (r.time >= t.nodes[current].end) {
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
        const std::uint32_t c = t.nodes[current].children[child];
        if (r.time < t.nodes[c].start) break;
        if (r.time >= t.nodes[c].end) {
          ++child;
        } else {
          p.entered[c] = 1;
          stack.emplace_back(current, child);
          current = c;
          child = 0;
        }
      }
      if (t.nodes[current].plain_operator) {
        p.records_of_node[current].push_back(list[k]);
        if (r.event->bytes > 0) {
          r.op = current;
          r.caller = stack.back().first; // an operator is never a root
        }
      }
      ++k;
    }
  }
  return p;
}

// A release takes the operator of the allocation it pairs with: the last one before it at the
// same address not yet released (MemoryParser.get_preprocessed_records).
void name_releases(std::vector<Record>& records) {
  std::unordered_map<std::int64_t, std::uint32_t> allocation_at;
  for (std::uint32_t i = 0; i < records.size(); ++i) {
    Record& r = records[i];
    if (r.event->addr == kNoValue) continue;
    if (r.event->bytes > 0) {
      allocation_at[r.event->addr] = i;
    } else if (auto it = allocation_at.find(r.event->addr); it != allocation_at.end()) {
      r.op = records[it->second].op;
      r.caller = records[it->second].caller;
      allocation_at.erase(it);
    }
  }
}

std::vector<Record> read_records(const Model& m) {
  std::vector<Record> records;
  records.reserve(m.trace->memory_events().size());
  for (const MemoryEventRecord& e : m.trace->memory_events()) {
    records.push_back(Record{.event = &e, .time = plugin_time(m, e.time), .device = device_name(e)});
  }
  // In time order as the plugin holds times; equal times keep the trace's order.
  std::stable_sort(records.begin(), records.end(), [](const Record& a, const Record& b) { return a.time < b.time; });
  return records;
}

bool in_window(const MemoryWindow& w, TimeNs t) { return (!w.begin || t >= *w.begin) && (!w.end || t <= *w.end); }

// The six sums of a node or an operator name on one device, in the plugin's MemoryMetrics order:
// self increase, self allocation size, self allocations, then the same with what it calls.
using Metrics = std::array<std::int64_t, 6>;
using DeviceMetrics = std::map<std::string, Metrics>;

// MemorySnapshot.get_memory_statistics: each operator's own records, then summed up its tree.
std::map<std::string, std::map<std::string, OperatorMemory>> operator_memory(const CallTrees& t,
                                                                             const Placement& p,
                                                                             const std::vector<Record>& records,
                                                                             const MemoryWindow& window) {
  std::vector<DeviceMetrics> of_node(t.nodes.size());
  std::map<std::string, std::int64_t, std::less<>> calls;
  // Depth first, children after their parent and summed into it once done; a root's own
  // records and totals are not the statistics', only its children's trees.
  std::vector<std::pair<std::uint32_t, bool>> todo;
  for (std::uint32_t root : t.roots) {
    const auto& children = t.nodes[root].children;
    for (auto c = children.rbegin(); c != children.rend(); ++c) todo.emplace_back(*c, false);
  }
  // Each node's parent in this walk, for summing a finished node into it.
  std::vector<std::uint32_t> parent(t.nodes.size(), kNoIndex);
  while (!todo.empty()) {
    auto [id, done] = todo.back();
    todo.pop_back();
    const Node& n = t.nodes[id];
    if (done) {
      if (parent[id] == kNoIndex) continue;
      for (const auto& [device, m] : of_node[id]) {
        Metrics& into = of_node[parent[id]][device];
        for (std::size_t i = 3; i < 6; ++i) into[i] = add_bytes(into[i], m[i]);
      }
      continue;
    }
    if ((window.begin && n.end < *window.begin) || (window.end && n.start > *window.end)) continue;
    if (n.plain_operator) ++calls[std::string(n.name)];
    if (!p.entered[id]) continue; // nothing of it or under it was placed
    if (n.plain_operator) {
      DeviceMetrics own;
      for (std::uint32_t r : p.records_of_node[id]) {
        const Record& rec = records[r];
        if (!in_window(window, rec.time) || rec.device.empty()) continue;
        Metrics& m = own[rec.device];
        m[0] = add_bytes(m[0], rec.event->bytes);
        if (rec.event->bytes > 0) {
          m[1] = add_bytes(m[1], rec.event->bytes);
          m[2] = add_bytes(m[2], 1);
        }
      }
      for (const auto& [device, m] : own) {
        Metrics& into = of_node[id][device];
        for (std::size_t i = 0; i < 3; ++i) {
          into[i] = m[i];
          into[i + 3] = add_bytes(into[i + 3], m[i]);
        }
      }
    }
    todo.emplace_back(id, true);
    for (auto c = n.children.rbegin(); c != n.children.rend(); ++c) {
      parent[*c] = id;
      todo.emplace_back(*c, false);
    }
  }

  std::map<std::string, std::map<std::string, Metrics>> by_name; // device, then operator
  for (std::uint32_t id = 0; id < t.nodes.size(); ++id) {
    if (!t.nodes[id].plain_operator) continue;
    for (const auto& [device, m] : of_node[id]) {
      Metrics& into = by_name[device][std::string(t.nodes[id].name)];
      for (std::size_t i = 0; i < 6; ++i) into[i] = add_bytes(into[i], m[i]);
    }
  }
  std::map<std::string, std::map<std::string, OperatorMemory>> out;
  for (const auto& [device, ops] : by_name) {
    for (const auto& [name, m] : ops) {
      if (std::all_of(m.begin(), m.end(), [](std::int64_t v) { return v == 0; })) continue;
      const auto c = calls.find(name);
      out[device][name] = OperatorMemory{.name = name,
                                         .calls = c == calls.end() ? 0 : c->second,
                                         .size_increase = m[3],
                                         .self_size_increase = m[0],
                                         .allocations = m[5],
                                         .self_allocations = m[2],
                                         .allocation_size = m[4],
                                         .self_allocation_size = m[1]};
    }
  }
  return out;
}

// The operator the events table names: aten::empty is PyTorch's malloc, so its caller is said too.
std::string block_op_name(const CallTrees& t, const Record& r) {
  std::string name = r.op == kNoIndex ? std::string("<unknown>") : std::string(t.nodes[r.op].name);
  if (name.starts_with("aten::empty") && r.caller != kNoIndex && !t.nodes[r.caller].name.empty()) {
    name = std::string(t.nodes[r.caller].name) + " (" + name + ")";
  }
  return name;
}

// Python's dict from address to record, whose order the events table keeps: a key assigned
// again keeps its place, one taken out and assigned again goes last.
class BlocksInOrder {
 public:
  void assign(std::int64_t key, std::uint32_t value) {
    if (auto it = place_.find(key); it != place_.end()) {
      slots_[it->second].second = value;
      return;
    }
    place_.emplace(key, slots_.size());
    slots_.emplace_back(true, value);
  }
  std::optional<std::uint32_t> take(std::int64_t key) {
    auto it = place_.find(key);
    if (it == place_.end()) return std::nullopt;
    auto& slot = slots_[it->second];
    place_.erase(it);
    slot.first = false;
    return slot.second;
  }
  std::vector<std::uint32_t> values() const {
    std::vector<std::uint32_t> out;
    for (const auto& [live, value] : slots_) {
      if (live) out.push_back(value);
    }
    return out;
  }

 private:
  std::vector<std::pair<bool, std::uint32_t>> slots_; // (still there, value), in order of insertion
  std::unordered_map<std::int64_t, std::size_t> place_;
};

// RunProfile.get_memory_events: allocations paired with the next release of their address in
// the window. An address allocated again before its release loses the earlier allocation, and
// of several releases of an unallocated address the last stands, as in the plugin.
std::map<std::string, std::vector<MemoryBlock>> memory_blocks(const CallTrees& t, const std::vector<Record>& records,
                                                              const MemoryWindow& window, TimeNs start) {
  std::map<std::string, std::vector<MemoryBlock>> out;
  auto add = [&](const Record& r, MemoryBlock b) {
    if (!r.device.empty()) out[r.device].push_back(std::move(b));
  };
  BlocksInOrder allocated, released;
  for (std::uint32_t i = 0; i < records.size(); ++i) {
    const Record& r = records[i];
    if (!in_window(window, r.time) || r.event->addr == kNoValue) continue;
    const std::int64_t addr = r.event->addr;
    if (r.event->bytes > 0) {
      allocated.assign(addr, i);
    } else if (const std::optional<std::uint32_t> j = allocated.take(addr)) {
      const Record& a = records[*j];
      add(a, MemoryBlock{.op_name = block_op_name(t, a),
                         .size = -r.event->bytes,
                         .allocated = a.time - start,
                         .released = r.time - start,
                         .duration = r.time - a.time});
    } else {
      released.assign(addr, i);
    }
  }
  for (std::uint32_t i : allocated.values()) {
    const Record& a = records[i];
    add(a, MemoryBlock{.op_name = block_op_name(t, a), .size = a.event->bytes, .allocated = a.time - start});
  }
  for (std::uint32_t i : released.values()) {
    const Record& r = records[i];
    add(r, MemoryBlock{.op_name = block_op_name(t, r), .size = -r.event->bytes, .released = r.time - start});
  }
  return out;
}

std::string default_device(const std::vector<std::string>& sorted_devices) {
  for (const std::string& d : sorted_devices) {
    if (d.starts_with("GPU")) return d;
  }
  return "CPU";
}

} // namespace

MemoryView memory_view(const Trace& trace, const MemoryWindow& window) {
  MemoryView view;
  if (trace.memory_events().empty()) return view;
  view.available = true;
  const Model m = tb::build_model(trace);
  const CallTrees t = tb::build_call_trees(m);
  std::vector<Record> records = read_records(m);
  view.profiler_start = profiler_start(m, records);
  const Placement placed = place_records(t, trace, records);
  name_releases(records);
  // A window in the trace's time, as the plugin's (which its times count from 0).
  MemoryWindow w;
  if (window.begin) w.begin = plugin_time(m, *window.begin);
  if (window.end) w.end = plugin_time(m, *window.end);

  auto ops = operator_memory(t, placed, records, w);
  auto blocks = memory_blocks(t, records, w, view.profiler_start);
  std::map<std::string, DeviceMemory> devices;
  for (auto& [device, rows] : ops) {
    DeviceMemory& d = devices[device];
    d.device = device;
    for (auto& [name, row] : rows) d.operators.push_back(std::move(row));
  }
  for (auto& [device, list] : blocks) {
    DeviceMemory& d = devices[device];
    d.device = device;
    d.blocks = std::move(list);
  }
  std::vector<std::string> names;
  for (auto& [name, d] : devices) {
    names.push_back(name);
    view.devices.push_back(std::move(d));
  }
  view.default_device = default_device(names);
  return view;
}

MemoryCurve memory_curve(const Trace& trace, bool step_plot) {
  MemoryCurve curve;
  if (trace.memory_events().empty()) return curve;
  const Model m = tb::build_model(trace);
  const std::vector<Record> records = read_records(m);
  curve.profiler_start = profiler_start(m, records);
  std::map<std::string, DeviceMemoryCurve> devices;
  for (const Record& r : records) {
    const MemoryEventRecord& e = *r.event;
    if (e.addr == kNoValue || r.device.empty() || e.total_allocated == kNoValue || e.total_reserved == kNoValue) {
      continue;
    }
    DeviceMemoryCurve& d = devices[r.device];
    d.device = r.device;
    const MemoryCurvePoint point{.time = r.time - curve.profiler_start,
                                 .allocated = e.total_allocated,
                                 .reserved = e.total_reserved};
    if (step_plot && !d.points.empty()) {
      d.points.push_back({.time = point.time, .allocated = d.points.back().allocated,
                          .reserved = d.points.back().reserved});
    }
    d.points.push_back(point);
    d.peak_allocated = std::max(d.peak_allocated, e.total_allocated);
  }
  std::vector<std::string> names;
  for (auto& [name, d] : devices) {
    if (name.starts_with("GPU")) {
      for (const DeviceInfo& info : trace.devices()) {
        if ("GPU" + std::to_string(info.ordinal) == name && info.global_memory_bytes > 0) {
          d.device_memory = info.global_memory_bytes;
        }
      }
    }
    names.push_back(name);
    curve.devices.push_back(std::move(d));
  }
  curve.default_device = default_device(names);
  return curve;
}

} // namespace dreamscope::analyzers
