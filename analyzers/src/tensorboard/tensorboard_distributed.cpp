// The TensorBoard plugin's distributed view (its communication.py, loader.py and
// run_generator.py): each worker's collectives ("communication nodes"), paired across workers
// by their order in time to tell data transfer from waiting, and each step's overlap of
// computation and communication.
#include "tensorboard/tensorboard_model.h"

#include "dreamscope/storage/limits.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <limits>
#include <map>
#include <unordered_map>

namespace dreamscope::analyzers {

namespace {

using tb::Interval;

struct Collective {
  std::string_view name;
  TimeNs start = 0, end = 0;
  std::vector<Interval> kernels; // the operator's own span, then (NCCL) its kernels'
  std::vector<Interval> transfer;
  std::string step;
  std::int64_t bytes = 0;
};

struct Worker {
  std::string name;
  bool has_communication = false;
  std::vector<Collective> collectives; // by (start, longer first)
  std::vector<StepOverlap> overlap;
};

// Byte counts of absurd shapes stop at the int64 bounds rather than overflow.
std::int64_t saturating_add(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (!__builtin_add_overflow(a, b, &r)) return r;
  return b > 0 ? std::numeric_limits<std::int64_t>::max() : std::numeric_limits<std::int64_t>::min();
}
std::int64_t saturating_mul(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (!__builtin_mul_overflow(a, b, &r)) return r;
  return (a > 0) == (b > 0) ? std::numeric_limits<std::int64_t>::max() : std::numeric_limits<std::int64_t>::min();
}

// Bytes of a collective's inputs: elements times the size of their type, for the types the
// plugin knows (others count 0).
std::int64_t input_bytes(const Trace& trace, AnnotationIndex row) {
  const auto dims = trace.arg_text(row, "Input Dims");
  const auto types = trace.arg_text(row, "Input type");
  if (!dims || !types) return 0;
  const auto shapes = nlohmann::json::parse(*dims, nullptr, false);
  const auto names = nlohmann::json::parse(*types, nullptr, false);
  if (!shapes.is_array() || !names.is_array()) return 0;
  std::int64_t bytes = 0;
  for (std::size_t i = 0; i < shapes.size() && i < names.size(); ++i) {
    const std::string type = names[i].is_string() ? names[i].get<std::string>() : "";
    std::int64_t size = 0;
    if (type == "long int") size = 8;
    else if (type == "float" || type == "int") size = 4;
    else if (type == "c10::Half" || type == "c10::BFloat16") size = 2;
    else if (type == "unsigned char") size = 1;
    std::int64_t elements = 1;
    if (shapes[i].is_array()) {
      for (const auto& d : shapes[i])
        elements = saturating_mul(elements, d.is_number_integer() ? d.get<std::int64_t>() : 0);
    }
    bytes = saturating_add(bytes, saturating_mul(elements, size));
  }
  return bytes;
}

std::vector<Interval> sorted_by_start_longer_first(std::vector<Interval> v) {
  std::stable_sort(v.begin(), v.end(), [](const Interval& a, const Interval& b) {
    return a.start != b.start ? a.start < b.start : a.end > b.end;
  });
  return v;
}

Worker read_worker(const std::string& name, const Trace& trace) {
  const tb::Model m = tb::build_model(trace);
  const tb::Steps steps = tb::device_steps(m);
  Worker w;
  w.name = name;
  w.has_communication = m.role_events[static_cast<std::size_t>(StepCategory::Communication)] > 0;

  // One collective per external id (a later operator with the same id replaces the earlier).
  std::vector<std::int64_t> ids;
  std::unordered_map<std::int64_t, Collective> by_id;
  bool nccl = false, gloo = false;
  for (const tb::HostEvent& e : m.host) {
    if (!tb::is_collective_operator(e.name)) continue;
    nccl = nccl || e.name.starts_with("nccl:");
    gloo = gloo || e.name.starts_with("gloo:");
    Collective c{.name = e.name, .start = e.start, .end = e.end, .kernels = {{e.start, e.end}}};
    c.bytes = input_bytes(trace, e.row);
    auto [it, inserted] = by_id.try_emplace(e.external_id);
    if (inserted) ids.push_back(e.external_id);
    it->second = std::move(c);
  }
  // NCCL's kernels carry their operator's external id; Gloo runs on the CPU.
  if (nccl) {
    for (const tb::DeviceOp& d : m.device_ops) {
      if (d.kind != GpuOpKind::Kernel) continue;
      const auto id = trace.arg_int(d.row, "external id");
      if (!id) continue;
      if (auto it = by_id.find(*id); it != by_id.end()) it->second.kernels.push_back({d.start, d.end});
    }
  }
  if (!(nccl && gloo)) { // both at once: the plugin shows no distributed view
    for (std::int64_t id : ids) w.collectives.push_back(std::move(by_id[id]));
  }
  std::stable_sort(w.collectives.begin(), w.collectives.end(), [](const Collective& a, const Collective& b) {
    return a.start != b.start ? a.start < b.start : a.end > b.end;
  });

  // A collective belongs to the first step that holds it; the steps are walked once, and a
  // collective past the last step ends the walk.
  for (Collective& c : w.collectives) c.kernels = sorted_by_start_longer_first(std::move(c.kernels));
  std::size_t s = 0;
  for (Collective& c : w.collectives) {
    while (s < steps.steps.size()) {
      const StepTime& step = steps.steps[s];
      if (c.start >= step.start && c.end <= step.end) {
        c.step = step.name;
        break;
      }
      if (c.start < step.end) break; // straddles the step: in none
      ++s;
    }
    if (s >= steps.steps.size()) break;
  }

  // Computation (kernels, or CPU operators where there are none) against communication.
  const auto& kernel = m.roles[static_cast<std::size_t>(StepCategory::Kernel)];
  const auto& computation = kernel.empty() ? m.roles[static_cast<std::size_t>(StepCategory::CpuExec)] : kernel;
  const auto& communication = m.roles[static_cast<std::size_t>(StepCategory::Communication)];
  std::vector<Interval> spans;
  for (const StepTime& step : steps.steps) spans.push_back({step.start, step.end});
  const std::vector<TimeNs> both = detail::OverlapIndex(detail::intersect_intervals(computation, communication)).overlaps(spans);
  const std::vector<TimeNs> comp = detail::OverlapIndex(computation).overlaps(spans);
  const std::vector<TimeNs> comm = detail::OverlapIndex(communication).overlaps(spans);
  for (std::size_t i = 0; i < steps.steps.size(); ++i) {
    const StepTime& step = steps.steps[i];
    w.overlap.push_back(
        {step.name, comp[i] - both[i], both[i], comm[i] - both[i], step.duration() + both[i] - comp[i] - comm[i]});
  }
  return w;
}

TimeNs merged_length(std::vector<Interval> v) { return detail::total_length(detail::merge_intervals(std::move(v))); }

} // namespace

DistributedView distributed_view(const std::vector<std::pair<std::string, const Trace*>>& inputs) {
  DistributedView view;
  std::vector<Worker> workers;
  for (const auto& [name, trace] : inputs) workers.push_back(read_worker(name, *trace));
  if (workers.empty()) return view;
  for (const Worker& w : workers) {
    if (!w.has_communication || w.collectives.empty() || w.collectives.size() != workers[0].collectives.size()) {
      return view;
    }
  }
  // The i-th collective of every worker is one collective; of its j-th range, the shortest
  // instance is the data transfer, the rest of the others' is waiting for the last to arrive.
  for (std::size_t i = 0; i < workers[0].collectives.size(); ++i) {
    for (std::size_t j = 0; j < workers[0].collectives[i].kernels.size(); ++j) {
      TimeNs shortest = std::numeric_limits<TimeNs>::max();
      for (const Worker& w : workers) {
        const auto& ranges = w.collectives[i].kernels;
        if (ranges.size() != workers[0].collectives[i].kernels.size()) return view;
        shortest = std::min(shortest, ranges[j].end - ranges[j].start);
      }
      for (Worker& w : workers) {
        const Interval r = w.collectives[i].kernels[j];
        w.collectives[i].transfer.push_back({r.end - shortest, r.end});
      }
    }
  }

  view.available = true;
  std::stable_sort(workers.begin(), workers.end(), [](const Worker& a, const Worker& b) { return a.name < b.name; });
  for (Worker& w : workers) {
    DistributedWorker out;
    out.name = w.name;
    out.collectives = w.collectives.size();
    out.overlap = w.overlap;
    StepOverlap all{.step = "all"};
    for (const StepOverlap& o : w.overlap) {
      all.computation_only = limits::add_ns(all.computation_only, o.computation_only);
      all.overlap = limits::add_ns(all.overlap, o.overlap);
      all.communication_only = limits::add_ns(all.communication_only, o.communication_only);
      all.other = limits::add_ns(all.other, o.other);
    }
    const auto steps = static_cast<TimeNs>(std::max<std::size_t>(1, w.overlap.size()));
    out.overlap.push_back(
        {"all", all.computation_only / steps, all.overlap / steps, all.communication_only / steps, all.other / steps});

    // Per step, in the order of the steps' first collectives; per name, in first-seen order.
    std::vector<std::string> step_order;
    std::map<std::string, std::pair<std::vector<Interval>, std::vector<Interval>>> step_ranges;
    std::vector<std::string_view> name_order;
    std::map<std::string_view, std::pair<std::vector<Interval>, std::vector<Interval>>> name_ranges;
    std::map<std::string_view, CollectiveStats> by_name;
    for (const Collective& c : w.collectives) {
      auto [sit, new_step] = step_ranges.try_emplace(c.step);
      if (new_step) step_order.push_back(c.step);
      sit->second.first.insert(sit->second.first.end(), c.kernels.begin(), c.kernels.end());
      sit->second.second.insert(sit->second.second.end(), c.transfer.begin(), c.transfer.end());
      auto [nit, new_name] = name_ranges.try_emplace(c.name);
      if (new_name) name_order.push_back(c.name);
      nit->second.first.insert(nit->second.first.end(), c.kernels.begin(), c.kernels.end());
      nit->second.second.insert(nit->second.second.end(), c.transfer.begin(), c.transfer.end());
      CollectiveStats& stats = by_name[c.name];
      stats.name = std::string(c.name);
      ++stats.calls;
      stats.bytes = saturating_add(stats.bytes, c.bytes);
    }
    StepWait all_wait{.step = "all"};
    for (const std::string& step : step_order) {
      auto& [kernels, transfer] = step_ranges[step];
      const TimeNs latency = merged_length(std::move(kernels)), data = merged_length(std::move(transfer));
      out.wait.push_back({step, data, latency - data});
      all_wait.transfer = limits::add_ns(all_wait.transfer, data);
      all_wait.synchronizing = limits::add_ns(all_wait.synchronizing, latency - data);
    }
    const auto waits = static_cast<TimeNs>(std::max<std::size_t>(1, step_order.size()));
    out.wait.push_back({"all", all_wait.transfer / waits, all_wait.synchronizing / waits});
    for (std::string_view name : name_order) {
      auto& [kernels, transfer] = name_ranges[name];
      CollectiveStats stats = by_name[name];
      stats.latency = merged_length(std::move(kernels));
      stats.transfer = merged_length(std::move(transfer));
      out.collective_ops.push_back(std::move(stats));
    }
    view.workers.push_back(std::move(out));
  }
  return view;
}

} // namespace dreamscope::analyzers
