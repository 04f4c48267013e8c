#include <dreamscope/whatif/cpu_sharing.h>

#include <dreamscope/storage/limits.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

namespace dreamscope::whatif {

namespace {

const TrackInfo* track_of(const Trace& trace, const DependencyGraph& graph, ResourceId r) {
  const std::size_t traced = trace.tracks().size();
  if (r < traced) return &trace.tracks()[r];
  const auto& added = graph.added_resources();
  return r - traced < added.size() ? &added[r - traced] : nullptr;
}

// A pool's rate of progress over time: min(1, cores / running) between breakpoints, running
// counting the background load, and its integral from the first breakpoint on, so that the
// work done over any interval is one difference of two lookups.
class PoolRate {
 public:
  void add(TimeNs start, TimeNs end) {
    if (end <= start) return;
    changes_.push_back({start, +1.0});
    changes_.push_back({end, -1.0});
  }
  void add_background(const std::vector<CpuLoadStep>& steps) {
    double before = 0;
    for (const CpuLoadStep& s : steps) {
      changes_.push_back({s.time, s.threads - before});
      before = s.threads;
    }
  }

  void build(std::size_t cores) {
    std::sort(changes_.begin(), changes_.end());
    TimeNs at = changes_.empty() ? 0 : changes_.front().first;
    double running = 0;
    double integral = 0;
    for (std::size_t i = 0; i < changes_.size();) {
      const TimeNs t = changes_[i].first;
      integral += rate(running, cores) * static_cast<double>(t - at);
      at = t;
      for (; i < changes_.size() && changes_[i].first == t; ++i) running += changes_[i].second;
      points_.push_back({t, integral, rate(running, cores)});
    }
    changes_.clear();
    changes_.shrink_to_fit();
  }

  // Work done at full speed over [start, end] by a task that ran all of it.
  double work(TimeNs start, TimeNs end) const { return at(end) - at(start); }

 private:
  struct Point {
    TimeNs time;
    double integral; // up to `time`
    double rate;     // from `time` to the next point
  };

  // Whole threads count exactly; a background's sums of fractions may be off by an ulp or so.
  static double rate(double running, std::size_t cores) {
    return running <= static_cast<double>(cores) + 1e-9 ? 1.0 : static_cast<double>(cores) / running;
  }

  double at(TimeNs t) const {
    auto it = std::upper_bound(points_.begin(), points_.end(), t, [](TimeNs v, const Point& p) { return v < p.time; });
    if (it == points_.begin()) return static_cast<double>(t - (points_.empty() ? t : points_.front().time));
    --it;
    return it->integral + it->rate * static_cast<double>(t - it->time);
  }

  std::vector<std::pair<TimeNs, double>> changes_;
  std::vector<Point> points_;
};

} // namespace

CpuPools machine_pools(const Trace& trace, const DependencyGraph& graph, std::size_t cores) {
  CpuPools pools;
  pools.cores = cores;
  pools.of_resource.assign(graph.resource_count(), 0);
  std::map<std::string, std::uint32_t> by_host;
  for (ResourceId r = 0; r < graph.resource_count(); ++r) {
    const TrackInfo* track = track_of(trace, graph, r);
    std::string host;
    if (track != nullptr && track->process < trace.processes().size()) host = trace.processes()[track->process].host;
    pools.of_resource[r] = by_host.try_emplace(host, static_cast<std::uint32_t>(by_host.size())).first->second;
  }
  pools.pools = std::max<std::size_t>(by_host.size(), 1);

  // The background: the windows of threads with no events, as running threads' worth.
  std::vector<std::vector<std::pair<TimeNs, double>>> changes(pools.pools);
  const auto& tracks = trace.tracks();
  std::vector<std::int8_t> silent(tracks.size(), -1); // per track: -1 not known yet, 1 no events
  for (const ThreadLoadRecord& l : trace.thread_loads()) {
    if (l.track >= tracks.size() || l.track >= pools.of_resource.size() || tracks[l.track].kind != TrackKind::CpuThread) {
      continue;
    }
    if (silent[l.track] < 0) {
      silent[l.track] = trace.annotations_on(l.track).empty() && trace.cuda_api_on(l.track).empty() &&
                        trace.gpu_ops_on(l.track).empty();
    }
    if (!silent[l.track] || l.cpu_ns == kNoValue || l.cpu_ns <= 0 || l.end <= l.start) continue;
    const double threads = std::min(1.0, static_cast<double>(l.cpu_ns) / static_cast<double>(l.end - l.start));
    auto& c = changes[pools.of_resource[l.track]];
    c.push_back({l.start, threads});
    c.push_back({l.end, -threads});
  }
  pools.background.resize(pools.pools);
  for (std::size_t p = 0; p < pools.pools; ++p) {
    auto& c = changes[p];
    std::sort(c.begin(), c.end());
    double load = 0;
    for (std::size_t i = 0; i < c.size();) {
      const TimeNs t = c[i].first;
      for (; i < c.size() && c[i].first == t; ++i) load += c[i].second;
      if (std::abs(load) < 1e-9) load = 0; // the sums of fractions come back to none
      auto& steps = pools.background[p];
      if (steps.empty() ? load != 0 : steps.back().threads != load) steps.push_back({t, load});
    }
  }
  return pools;
}

ContentionRemoved remove_measured_contention(DependencyGraph& graph, const CpuPools& pools) {
  ContentionRemoved out;
  if (pools.cores == 0) return out;
  auto pool_of = [&](TaskId t) {
    const ResourceId r = graph.resource(t);
    return r < pools.of_resource.size() ? pools.of_resource[r] : 0u;
  };
  std::vector<PoolRate> rates(std::max<std::size_t>(pools.pools, 1));
  for (TaskId t = 0; t < graph.task_count(); ++t) {
    if (graph.uses_cpu(t)) rates[pool_of(t)].add(graph.measured_start(t), graph.measured_end(t));
  }
  for (std::size_t p = 0; p < pools.background.size() && p < rates.size(); ++p) rates[p].add_background(pools.background[p]);
  for (PoolRate& r : rates) r.build(pools.cores);

  for (TaskId t = 0; t < graph.task_count(); ++t) {
    if (!graph.uses_cpu(t)) continue;
    const TimeNs start = graph.measured_start(t), end = graph.measured_end(t);
    const double wall = static_cast<double>(end - start);
    const TimeNs duration = graph.duration(t);
    if (!(wall > 0) || duration <= 0) continue;
    const double progress = rates[pool_of(t)].work(start, end); // ns of full speed over the interval
    if (!(progress < wall)) continue;                             // it never waited for a core
    const double share = graph.cpu_share(t);
    double factor = progress / wall;
    if (share < 0.999) {
      // Its CPU time is measured (share × wall), and contention only stretched the part of
      // the task that needed the CPU: that part took cpu / mean rate of the wall time.
      const double cpu = share * wall;
      const double mean_rate = progress / wall;
      const double uncontended = std::clamp(cpu + (wall - cpu / mean_rate), cpu, wall);
      factor = uncontended / wall;
      graph.set_cpu_share(t, uncontended > 0 ? cpu / uncontended : 1.0);
    }
    ++out.tasks;
    out.time_before = limits::add_ns(out.time_before, duration);
    graph.scale(t, graph.ratio(t) * factor,
                limits::saturated_ns(static_cast<double>(graph.add(t)) * factor));
    out.time_after = limits::add_ns(out.time_after, graph.duration(t));
  }
  return out;
}

} // namespace dreamscope::whatif
