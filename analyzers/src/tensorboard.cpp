// The TensorBoard profiler plugin's overview: the step time breakdown, GPU utilization,
// estimated SM efficiency and estimated achieved occupancy (definitions from the plugin's
// docs/gpu_utilization.md and README).
#include "dreamscope/analyzers.h"
#include "dreamscope/steps.h"

#include <dreamscope/kernel_classes.h>

#include "intervals.h"

#include <algorithm>
#include <cmath>
#include <tuple>

namespace dreamscope::analyzers {

namespace {

using detail::Interval;

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

bool is_data_loading(const Trace& trace, EventIndex i) {
  const auto& ann = trace.annotations();
  std::string_view category = trace.str(ann.category[i]);
  return starts_with(trace.str(ann.name[i]), "enumerate(DataLoader)") || category == annotation_category::kFetch ||
         category == annotation_category::kPrep || category == annotation_category::kWait;
}

struct StepWindow {
  std::string name;
  TimeNs start, end;
};

// Steps on CPU threads, in time order, cut so that they do not overlap; the whole trace
// when there are none.
std::vector<StepWindow> step_windows(const Trace& trace) {
  const auto& ann = trace.annotations();
  std::vector<StepWindow> steps;
  for (EventIndex i = 0; i < ann.size(); ++i) {
    if (!is_step(trace, i)) continue;
    steps.push_back({step_label(trace, i), ann.start[i], ann.end[i]});
  }
  std::sort(steps.begin(), steps.end(), [](const StepWindow& a, const StepWindow& b) { return a.start < b.start; });
  std::vector<StepWindow> out;
  for (StepWindow& s : steps) {
    if (!out.empty()) s.start = std::max(s.start, out.back().end);
    if (s.end > s.start) out.push_back(std::move(s));
  }
  if (out.empty() && trace.end_time() > trace.begin_time()) {
    out.push_back({"(whole trace)", trace.begin_time(), trace.end_time()});
  }
  return out;
}

struct DeviceLimits {
  int max_warps_per_sm;
  int max_blocks_per_sm;
  int registers_per_sm;
  int shared_memory_per_sm; // bytes
};

// Per-SM limits from the CUDA occupancy calculator, by compute capability.
DeviceLimits limits_for(const DeviceInfo& d) {
  const int cc = static_cast<int>(d.compute_capability_major * 10 + d.compute_capability_minor);
  if (cc >= 90) return {64, 32, 65536, 233472};
  if (cc == 89) return {48, 24, 65536, 102400};
  if (cc >= 86) return {48, 16, 65536, 102400};
  if (cc >= 80) return {64, 32, 65536, 167936};
  if (cc >= 75) return {32, 16, 65536, 65536};
  if (cc >= 70) return {64, 32, 65536, 98304};
  if (cc >= 60) return {64, 32, 65536, 65536};
  return {64, 32, 65536, 49152};
}

std::int64_t blocks_of(const LaunchConfig& l) {
  return static_cast<std::int64_t>(l.grid[0]) * std::max(l.grid[1], 1) * std::max(l.grid[2], 1);
}
std::int64_t threads_per_block(const LaunchConfig& l) {
  return static_cast<std::int64_t>(l.block[0]) * std::max(l.block[1], 1) * std::max(l.block[2], 1);
}

} // namespace

std::string_view to_string(StepCategory c) {
  switch (c) {
    case StepCategory::Kernel: return "Kernel";
    case StepCategory::Memcpy: return "Memcpy";
    case StepCategory::Memset: return "Memset";
    case StepCategory::Communication: return "Communication";
    case StepCategory::Runtime: return "Runtime";
    case StepCategory::DataLoader: return "DataLoader";
    case StepCategory::CpuExec: return "CPU Exec";
    case StepCategory::Other: return "Other";
  }
  return "Other";
}

StepBreakdown step_breakdown(const Trace& trace) {
  StepBreakdown out;
  const std::vector<StepWindow> windows = step_windows(trace);
  if (windows.empty()) return out;

  // One sweep over every interval's endpoints and the step boundaries: in each elementary
  // segment the highest-priority active category claims the time.
  struct Edge {
    TimeNs time;
    int delta;
    int category; // -1: a step boundary
  };
  std::vector<Edge> edges;
  auto add = [&](TimeNs s, TimeNs e, StepCategory c) {
    if (e <= s) return;
    edges.push_back({s, +1, static_cast<int>(c)});
    edges.push_back({e, -1, static_cast<int>(c)});
  };
  const auto& gpu = trace.gpu_ops();
  for (EventIndex i = 0; i < gpu.size(); ++i) {
    switch (gpu.kind[i]) {
      case GpuOpKind::Kernel:
        // Our own notion of communication (RCCL, NVSHMEM, multimem collectives too), not HTA's regexes.
        add(gpu.start[i], gpu.end[i],
            is_communication_kernel(trace.str(gpu.name[i])) ? StepCategory::Communication : StepCategory::Kernel);
        break;
      case GpuOpKind::Memcpy: add(gpu.start[i], gpu.end[i], StepCategory::Memcpy); break;
      case GpuOpKind::Memset: add(gpu.start[i], gpu.end[i], StepCategory::Memset); break;
      case GpuOpKind::Sync: break;
    }
  }
  const auto& api = trace.cuda_api();
  for (EventIndex i = 0; i < api.size(); ++i) add(api.start[i], api.end[i], StepCategory::Runtime);
  const auto& ann = trace.annotations();
  for (EventIndex i = 0; i < ann.size(); ++i) {
    if (trace.tracks()[ann.track[i]].kind != TrackKind::CpuThread || is_step(trace, i)) continue;
    add(ann.start[i], ann.end[i], is_data_loading(trace, i) ? StepCategory::DataLoader : StepCategory::CpuExec);
  }
  for (std::size_t s = 0; s < windows.size(); ++s) {
    edges.push_back({windows[s].start, +1, -1});
    edges.push_back({windows[s].end, -1, -1});
  }
  std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) { return a.time < b.time; });

  out.steps.reserve(windows.size());
  for (const StepWindow& w : windows) out.steps.push_back(StepTime{.name = w.name, .start = w.start, .end = w.end});
  std::array<std::int64_t, kStepCategories> active{};
  std::size_t next_step = 0;  // the step a +1 boundary opens next
  std::ptrdiff_t current = -1; // the open step, if any
  for (std::size_t i = 0; i < edges.size(); ++i) {
    const Edge& e = edges[i];
    if (e.category < 0) {
      if (e.delta > 0) current = static_cast<std::ptrdiff_t>(next_step++);
      else if (current >= 0 && out.steps[static_cast<std::size_t>(current)].end == e.time) current = -1;
    } else {
      active[static_cast<std::size_t>(e.category)] += e.delta;
    }
    if (current < 0 || i + 1 == edges.size()) continue;
    const TimeNs span = edges[i + 1].time - e.time;
    if (span <= 0) continue;
    std::size_t claimed = static_cast<std::size_t>(StepCategory::Other);
    for (std::size_t c = 0; c < kStepCategories - 1; ++c) {
      if (active[c] > 0) {
        claimed = c;
        break;
      }
    }
    out.steps[static_cast<std::size_t>(current)].time[claimed] += span;
  }
  for (const StepTime& s : out.steps) {
    for (std::size_t c = 0; c < kStepCategories; ++c) out.average[c] += s.time[c];
  }
  for (auto& t : out.average) t /= static_cast<TimeNs>(out.steps.size());
  return out;
}

double estimated_sm_efficiency(const LaunchConfig& launch, std::int64_t sm_count) {
  if (sm_count <= 0 || blocks_of(launch) <= 0) return 0;
  return std::min(1.0, static_cast<double>(blocks_of(launch)) / static_cast<double>(sm_count));
}

double theoretical_occupancy(const LaunchConfig& launch, const DeviceInfo& device) {
  const std::int64_t threads = threads_per_block(launch);
  if (threads <= 0) return 0;
  const DeviceLimits lim = limits_for(device);
  const std::int64_t warps_per_block = (threads + 31) / 32;
  std::int64_t blocks = std::min<std::int64_t>(lim.max_blocks_per_sm, lim.max_warps_per_sm / warps_per_block);
  if (launch.registers_per_thread > 0) {
    // Registers are allocated per warp in units of 256.
    const std::int64_t per_warp = (launch.registers_per_thread * 32 + 255) / 256 * 256;
    blocks = std::min(blocks, lim.registers_per_sm / (per_warp * warps_per_block));
  }
  const std::int64_t shared = static_cast<std::int64_t>(launch.shared_memory_static) + launch.shared_memory_dynamic;
  if (shared > 0) blocks = std::min(blocks, lim.shared_memory_per_sm / shared);
  return std::clamp(static_cast<double>(blocks * warps_per_block) / lim.max_warps_per_sm, 0.0, 1.0);
}

double estimated_achieved_occupancy(const LaunchConfig& launch, const DeviceInfo& device) {
  if (device.sm_count <= 0) return 0;
  const DeviceLimits lim = limits_for(device);
  const double threads = static_cast<double>(blocks_of(launch) * threads_per_block(launch));
  const double by_shape = threads / static_cast<double>(device.sm_count) / (lim.max_warps_per_sm * 32.0);
  return std::min(by_shape, theoretical_occupancy(launch, device));
}

namespace {
// Kineto computes each kernel's estimate at record time (from the occupancy API, which knows
// the real limits); the plugin shows that, so it wins over our own estimate when present.
double achieved_occupancy_of(const Trace& trace, EventIndex kernel, const LaunchConfig& launch, const DeviceInfo& device) {
  if (const EventArg* a = trace.find_arg(EventTable::GpuOp, kernel, "est. achieved occupancy %")) {
    if (a->type == ArgType::Int) return static_cast<double>(a->int_value) / 100.0;
    if (a->type == ArgType::Double) return a->double_value / 100.0;
  }
  return estimated_achieved_occupancy(launch, device);
}
} // namespace

std::vector<DeviceEfficiency> gpu_efficiency(const Trace& trace) {
  const std::vector<StepWindow> windows = step_windows(trace);
  TimeNs steps_time = 0;
  for (const StepWindow& w : windows) steps_time += w.end - w.start;

  // The part of [s, e) that lies within the steps.
  auto in_steps = [&](TimeNs s, TimeNs e) {
    TimeNs sum = 0;
    auto it = std::upper_bound(windows.begin(), windows.end(), s,
                               [](TimeNs t, const StepWindow& w) { return t < w.end; });
    for (; it != windows.end() && it->start < e; ++it) sum += std::max<TimeNs>(0, std::min(e, it->end) - std::max(s, it->start));
    return sum;
  };

  const auto& gpu = trace.gpu_ops();
  const auto& devices = trace.devices();
  std::vector<DeviceEfficiency> out;
  for (std::uint32_t d = 0; d < devices.size(); ++d) {
    DeviceEfficiency e;
    e.device = devices[d].ordinal;
    e.name = devices[d].name;
    e.steps_time = steps_time;
    std::vector<Interval> kernels;
    double sm_weighted = 0, occupancy_weighted = 0, occupancy_time = 0;
    bool have_launch = false;
    for (TrackId t = 0; t < trace.tracks().size(); ++t) {
      const TrackInfo& info = trace.tracks()[t];
      if (info.kind != TrackKind::GpuStream || info.device != d) continue;
      const EventRange r = trace.gpu_ops_on(t);
      for (EventIndex i = r.begin; i < r.end; ++i) {
        if (gpu.kind[i] != GpuOpKind::Kernel) continue;
        kernels.push_back({gpu.start[i], gpu.end[i]});
        if (gpu.launch[i] == 0) continue;
        const LaunchConfig& l = trace.launch_configs()[gpu.launch[i]];
        const double dur = static_cast<double>(in_steps(gpu.start[i], gpu.end[i]));
        have_launch = true;
        sm_weighted += dur * estimated_sm_efficiency(l, devices[d].sm_count);
        occupancy_weighted += dur * achieved_occupancy_of(trace, i, l, devices[d]);
        occupancy_time += dur;
      }
    }
    if (kernels.empty()) continue;
    for (const Interval& k : detail::merge_intervals(std::move(kernels))) e.busy += in_steps(k.start, k.end);
    if (steps_time > 0) e.gpu_utilization = static_cast<double>(e.busy) / static_cast<double>(steps_time);
    if (have_launch && devices[d].sm_count > 0 && steps_time > 0) {
      e.sm_efficiency = sm_weighted / static_cast<double>(steps_time);
      if (occupancy_time > 0) e.achieved_occupancy = occupancy_weighted / occupancy_time;
    }
    out.push_back(std::move(e));
  }
  return out;
}

} // namespace dreamscope::analyzers
