// The critical path of the replayed run, summarized by what bound it.
//
// The path is a chain of binding constraints, last task first. Walking it moves a cursor from
// the last task's end back to the run's (or a step's) start, and every stretch the cursor
// passes is billed to one category: a task's own duration to the thread or stream it ran on,
// the link to the task before to the constraint that tied them. The stretches tile the window
// with no overlap, so the categories add up to its length exactly.
#include "critical_path/critical_path.h"
#include "report/report_tables.h"

#include <dreamscope/whatif/replay.h>
#include <dreamscope/whatif/simulator.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

namespace dreamscope::analyzers {

std::string_view to_string(PathCategory c) {
  switch (c) {
    case PathCategory::CpuWork: return "cpu work";
    case PathCategory::GpuWork: return "gpu work";
    case PathCategory::LaunchLatency: return "launch latency";
    case PathCategory::SyncWait: return "sync wait";
    case PathCategory::DataFlowWait: return "data-flow wait";
    case PathCategory::CollectiveWait: return "collective wait";
    case PathCategory::Gap: return "idle gap";
  }
  return "unknown";
}

namespace {

constexpr ResourceId kNoResource = kNoIndex;

// A point a walk back along the path reaches (a task's end, or its start through a launch),
// and the point a walk goes on to with the binding that leads there (simulator.h).
using PathPoint = whatif::CriticalPathPoint;
using PathLink = whatif::CriticalPathLink;

class PathSummarizer {
 public:
  PathSummarizer(const Trace& trace, const DependencyGraph& graph, const whatif::SimulationResult& result)
      : trace_(trace), g_(graph), r_(result) {}

  // A path whose last task is `last` (kNoTask: an empty path); time before `window_begin` is
  // not counted, and the walk stops there.
  void start(std::string name, TaskId last, TimeNs window_begin) {
    s_ = CriticalPathSummary{};
    s_.name = std::move(name);
    s_.begin = window_begin;
    s_.end = last == kNoTask ? window_begin : r_.end[last];
    if (last != kNoTask) s_.ends_with = task_label(last) + " on " + resource_label(g_.resource(last));
    window_ = window_begin;
    cursor_ = s_.end;
    parts_.clear();
    ops_.clear();
  }
  // Whether the walk has time left to bill.
  bool open() const { return cursor_ > window_; }
  TimeNs cursor() const { return cursor_; }

  // Bills the path's next point (task t, reached at its start or end) and the link to the one
  // before it in time, `next` (null where the path ends at t). False: the walk stops here.
  bool bill(TaskId t, bool through_start, const PathLink* next) {
    ++s_.tasks;
    if (!through_start) {
      // A task reached at its end: its own time, down to where whatever bound its end let go.
      const TimeNs took = take(work_category(t), g_.resource(t), own_from(t, next));
      if (took > 0) add_operation(t, took);
    }
    if (!next) {
      // The path's first task: from the run's begin (its gap), or cut short by a binding the
      // simulator did not record, billed as unexplained idle time so the sum holds.
      take(PathCategory::Gap, g_.resource(t), r_.begin);
      return false;
    }
    const TaskId u = next->to.task;
    if (r_.start[u] == kNoValue || r_.end[u] == kNoValue) return false;
    const LinkStretch link = link_stretch(t, *next);
    take(link.category, link.resource, link.from);
    return true;
  }

  // Bills a stretch of points summed ahead (StretchTotals): the walk goes on at `resume`.
  struct Bill {
    std::uint64_t key; // part_key() or operation_key()
    TaskId example;    // for an operation: a task of it, for its name
    TimeNs time;
    std::int64_t count;
  };
  void bill_stretch(std::size_t points, const std::vector<Bill>& bills, TimeNs resume) {
    s_.tasks += points;
    for (const Bill& b : bills) {
      if (b.key & kOperationKey) {
        CriticalPathOperation& op = operation(b.example);
        op.count += b.count;
        op.time += b.time;
      } else {
        auto& part = parts_[{static_cast<PathCategory>(b.key >> 32), static_cast<ResourceId>(b.key)}];
        part.first += b.time;
        part.second += b.count;
      }
    }
    cursor_ = resume;
  }

  CriticalPathSummary finish(std::size_t top_operations) {
    CriticalPathSummary s = std::move(s_);
    // A window that begins before the run (it never does for a replay) keeps the tiling.
    if (cursor_ > window_) take(PathCategory::Gap, kNoResource, window_);
    const double length = static_cast<double>(std::max<TimeNs>(s.length(), 1));
    for (const auto& [key, part] : parts_) {
      const auto& [category, resource] = key;
      // A zero-length wait still says the path crossed one; a zero-length gap or task says nothing.
      const bool wait = category == PathCategory::LaunchLatency || category == PathCategory::SyncWait ||
                        category == PathCategory::DataFlowWait || category == PathCategory::CollectiveWait;
      if (part.first == 0 && !wait) continue;
      s.by_category[static_cast<std::size_t>(category)] += part.first;
      s.split.push_back({category, resource == kNoResource ? std::string() : resource_label(resource), part.first,
                         part.second, static_cast<double>(part.first) / length});
    }
    std::sort(s.split.begin(), s.split.end(), [](const CriticalPathPart& a, const CriticalPathPart& b) {
      return std::tie(b.time, a.category, a.resource) < std::tie(a.time, b.category, b.resource);
    });
    for (auto& [key, op] : ops_) {
      op.name = key.second;
      op.share = static_cast<double>(op.time) / length;
      s.operations.push_back(std::move(op));
    }
    // The whole run of a trace of 10^5 steps bills 10^5 step names: order only the kept ones,
    // and give back the room of the rest, which the report would otherwise hold to its end.
    const std::size_t kept = std::min(top_operations, s.operations.size());
    std::partial_sort(s.operations.begin(), s.operations.begin() + static_cast<std::ptrdiff_t>(kept),
                      s.operations.end(), [](const auto& a, const auto& b) {
                        return std::tie(b.time, a.kind, a.name) < std::tie(a.time, b.kind, b.name);
                      });
    s.operations.resize(kept);
    s.operations.shrink_to_fit();
    return s;
  }

  // The whole of a path as critical_path() returns it (last task first).
  CriticalPathSummary summarize(std::string name, const std::vector<whatif::CriticalPathStep>& path, TimeNs window_begin,
                                std::size_t top_operations) {
    start(std::move(name), path.empty() ? kNoTask : path.front().task, window_begin);
    for (std::size_t i = 0; i < path.size() && open(); ++i) {
      PathLink link;
      if (i + 1 < path.size()) link = {{path[i + 1].task, !path[i + 1].through_start}, path[i + 1].via};
      if (!bill(path[i].task, path[i].through_start, i + 1 < path.size() ? &link : nullptr)) break;
    }
    return finish(top_operations);
  }

  // What bill() does at a point whose stretches nothing clips (the cursor at the point's own
  // time, the window before all of them): `add(key, example task, time, count)` for each part
  // and operation it bills. False where the stretches would not run back in time from the
  // point to the next point's time, each from where the last ended: then the cursor's clamps
  // decide, which only a walk sees, and the point is no part of a summed stretch.
  template <typename Add>
  bool unclipped_bill(PathPoint p, const PathLink& next, Add&& add) const {
    const TaskId t = p.task, u = next.to.task;
    if (r_.start[t] == kNoValue || r_.start[u] == kNoValue || r_.end[u] == kNoValue) return false;
    TimeNs cursor = p.at_end ? r_.end[t] : r_.start[t];
    if (p.at_end) {
      const TimeNs from = own_from(t, &next);
      if (from > cursor) return false;
      const PathCategory work = work_category(t);
      add(part_key(work, g_.resource(t)), t, cursor - from, 1);
      if (cursor > from) add(operation_key(t), t, cursor - from, 1);
      cursor = from;
    }
    const LinkStretch link = link_stretch(t, next);
    if (link.from > cursor || link.from != (next.to.at_end ? r_.end[u] : r_.start[u])) return false;
    const TimeNs gap = cursor - link.from;
    add(part_key(link.category, link.resource), t, gap, link.category != PathCategory::Gap || gap > 0 ? 1 : 0);
    return true;
  }

 private:
  static constexpr std::uint64_t kOperationKey = std::uint64_t{1} << 62;
  static constexpr std::uint64_t kUnknownName = std::uint64_t{1} << 61;
  static std::uint64_t part_key(PathCategory c, ResourceId r) { return (std::uint64_t{static_cast<std::uint8_t>(c)} << 32) | r; }
  // Tasks of one key are one operation (the key may split an operation across keys: the
  // summary merges them by name again).
  std::uint64_t operation_key(TaskId t) const {
    const TaskKind kind = g_.kind(t);
    const std::uint64_t key = kOperationKey | (std::uint64_t{static_cast<std::uint8_t>(kind)} << 32);
    const std::uint32_t row = g_.source_row(t); // of the table `kind` says
    switch (kind) {
      case TaskKind::CpuWork: return key;
      case TaskKind::Synthetic: return key | t;
      case TaskKind::CudaApi: return row == kNoIndex ? key | kUnknownName : key | trace_.cuda_api().name[row];
      case TaskKind::Annotation: return row == kNoIndex ? key | kUnknownName : key | trace_.annotations().name[row];
      default: return row == kNoIndex ? key | kUnknownName : key | trace_.gpu_ops().name[row];
    }
  }

  // Where a task reached at its end stops billing its own time: where whatever bound its end
  // let go of it (the end of its wait), else its start.
  TimeNs own_from(TaskId t, const PathLink* next) const {
    const bool waited = next && whatif::end_set_by_task(next->via);
    return waited ? r_.end[t] - (g_.removed(t) ? 0 : g_.duration(t)) : r_.start[t];
  }

  struct LinkStretch {
    PathCategory category;
    ResourceId resource;
    TimeNs from;
  };
  // What the link from t back to `next` bills, down to where.
  LinkStretch link_stretch(TaskId t, const PathLink& next) const {
    const TaskId u = next.to.task;
    switch (next.via) {
      case whatif::Constraint::Launch: return {PathCategory::LaunchLatency, kNoResource, r_.start[u]};
      // Another thread handed it the work: the wake-up is a wait like a sync's.
      case whatif::Constraint::Handoff: return {PathCategory::SyncWait, kNoResource, r_.start[u]};
      case whatif::Constraint::Sync:
      case whatif::Constraint::EventWait: return {PathCategory::SyncWait, kNoResource, r_.end[u]};
      case whatif::Constraint::Flow: return {PathCategory::DataFlowWait, kNoResource, r_.end[u]};
      // The last rank to arrive at a collective: the path goes on from its arrival.
      case whatif::Constraint::Collective: return {PathCategory::CollectiveWait, kNoResource, r_.start[u]};
      // Resource order: the gap the thread or stream needed after its previous task. A
      // what-if dependency's delay is no dependency of the measured run: idle as well.
      default: return {PathCategory::Gap, g_.resource(t), r_.end[u]};
    }
  }

  // Moves the cursor back to `from` (never before the window, never forward) and bills the
  // stretch; returns its length.
  TimeNs take(PathCategory category, ResourceId resource, TimeNs from) {
    const TimeNs to = std::clamp(from, window_, cursor_);
    const TimeNs time = cursor_ - to;
    cursor_ = to;
    auto& part = parts_[{category, resource}];
    part.first += time;
    // Nearly every resource-order link has a zero gap; counting those would say nothing.
    if (category != PathCategory::Gap || time > 0) ++part.second;
    return time;
  }

  PathCategory work_category(TaskId t) const {
    return is_gpu_task(g_.kind(t)) || g_.is_stream(g_.resource(t)) ? PathCategory::GpuWork : PathCategory::CpuWork;
  }

  std::string resource_label(ResourceId r) const {
    if (r < trace_.tracks().size()) return detail::track_label(trace_, TrackId{r});
    const std::size_t added = r - trace_.tracks().size();
    if (added < g_.added_resources().size() && !g_.added_resources()[added].name.empty()) {
      return g_.added_resources()[added].name;
    }
    return "added resource " + std::to_string(added);
  }

  std::string task_label(TaskId t) const {
    const std::uint32_t row = g_.source_row(t); // of the table the task's kind says
    std::string_view name;
    switch (g_.kind(t)) {
      case TaskKind::CudaApi: name = trace_.str(trace_.cuda_api().name[row]); break;
      case TaskKind::Annotation: name = trace_.str(trace_.annotations().name[row]); break;
      case TaskKind::Kernel:
      case TaskKind::Memcpy:
      case TaskKind::Memset: name = trace_.str(trace_.gpu_ops().name[row]); break;
      case TaskKind::CpuWork: name = "(cpu work)"; break;
      case TaskKind::Synthetic: name = g_.synthetic_name(t); break;
    }
    if (row == kNoIndex && g_.kind(t) != TaskKind::CpuWork && g_.kind(t) != TaskKind::Synthetic) name = "(unknown)";
    return std::string(name);
  }

  CriticalPathOperation& operation(TaskId t) {
    CriticalPathOperation& op = ops_[{std::string(to_string(g_.kind(t))), task_label(t)}];
    op.kind = std::string(to_string(g_.kind(t)));
    return op;
  }
  void add_operation(TaskId t, TimeNs time) {
    CriticalPathOperation& op = operation(t);
    ++op.count;
    op.time += time;
  }

  const Trace& trace_;
  const DependencyGraph& g_;
  const whatif::SimulationResult& r_;
  CriticalPathSummary s_;
  TimeNs window_ = 0, cursor_ = 0;
  std::map<std::pair<PathCategory, ResourceId>, std::pair<TimeNs, std::int64_t>> parts_;
  std::map<std::pair<std::string, std::string>, CriticalPathOperation> ops_;
};

// The walk back from a point, as a step's path takes it (critical_path_link()), stopping
// where it would reach a task that never ended.
std::optional<PathLink> path_link(const whatif::SimulationResult& result, PathPoint p) {
  std::optional<PathLink> link = whatif::critical_path_link(result, p);
  if (link && result.end[link->to.task] == kNoValue) return std::nullopt;
  return link;
}

TimeNs point_time(const whatif::SimulationResult& result, PathPoint p) {
  return p.at_end ? result.end[p.task] : result.start[p.task];
}

// Each step's path is the walk back from the step's last task to the step's start. Steps may
// overlap (N `step` ranges a nanosecond apart in a fuzzed trace), and then their paths share
// most of their points: walking each would take N × N. The points of all the paths form a
// forest (each point leads to one point back in time), a path runs from its first point
// toward a root, and the bills of a point that nothing clips are the same on every path
// through it. So one depth-first pass over the forest keeps, per bill key, running totals
// along the root path it stands on, and a step's unclipped stretch is the difference of two
// totals per key it bills. Only the stretch's clipped ends are walked, by PathSummarizer.
class StretchTotals {
 public:
  struct Query {
    PathPoint from;      // a valid point: the one after the step's last task
    TimeNs window_begin; // the step's start
  };
  // The run of unclipped points a query's path starts with.
  struct Stretch {
    std::size_t points = 0; // none: the walk sums nothing
    PathPoint resume;       // the point after them
    std::vector<PathSummarizer::Bill> bills;
  };

  StretchTotals(const PathSummarizer& summarizer, const whatif::SimulationResult& result, std::size_t task_count,
                const std::vector<Query>& queries)
      : summarizer_(summarizer), result_(result), queries_(queries), stretches_(queries.size()) {
    collect_points(task_count);
    walk_forest();
  }
  const Stretch& stretch(std::size_t query) const { return stretches_[query]; }

 private:
  static constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();
  struct Total {
    std::uint32_t depth;
    std::uint64_t time; // stretches are never negative; unsigned, so that differences stay exact
    std::int64_t count;
  };

  // The points of every query's path, each once, with the point it leads to, and the forest
  // as lists of children, and the queries by the point they start at.
  void collect_points(std::size_t task_count) {
    std::vector<std::uint32_t> slot_of(2 * task_count, kNone);
    auto id = [](PathPoint p) { return 2 * std::size_t{p.task} + (p.at_end ? 1 : 0); };
    std::vector<std::uint32_t> query_slot;
    for (const Query& q : queries_) {
      PathPoint p = q.from;
      while (slot_of[id(p)] == kNone) {
        slot_of[id(p)] = static_cast<std::uint32_t>(points_.size());
        points_.push_back(p);
        const std::optional<PathLink> link = path_link(result_, p);
        links_.push_back(link.value_or(PathLink{}));
        if (!link) break;
        p = link->to;
      }
      query_slot.push_back(slot_of[id(q.from)]);
    }
    const std::size_t n = points_.size();
    parent_.assign(n, kNone);
    child_begin_.assign(n + 1, 0);
    for (std::size_t v = 0; v < n; ++v) {
      if (links_[v].to.task == kNoTask) continue;
      parent_[v] = slot_of[id(links_[v].to)];
      ++child_begin_[parent_[v] + 1];
    }
    for (std::size_t v = 0; v < n; ++v) child_begin_[v + 1] += child_begin_[v];
    children_.resize(child_begin_[n]);
    std::vector<std::uint32_t> fill(child_begin_.begin(), child_begin_.end() - 1);
    for (std::size_t v = 0; v < n; ++v) {
      if (parent_[v] != kNone) children_[fill[parent_[v]]++] = static_cast<std::uint32_t>(v);
    }
    query_begin_.assign(n + 1, 0);
    for (std::uint32_t slot : query_slot) ++query_begin_[slot + 1];
    for (std::size_t v = 0; v < n; ++v) query_begin_[v + 1] += query_begin_[v];
    queries_at_.resize(queries_.size());
    fill.assign(query_begin_.begin(), query_begin_.end() - 1);
    for (std::size_t q = 0; q < queries_.size(); ++q) queries_at_[fill[query_slot[q]]++] = static_cast<std::uint32_t>(q);
  }

  // Depth first from each root, iteratively: a path may be as long as the run has tasks.
  // Points on a cycle (none in a replay) are never reached, and their queries sum nothing.
  void walk_forest() {
    std::vector<std::pair<std::uint32_t, std::uint32_t>> stack; // point, its next child
    for (std::uint32_t root = 0; root < points_.size(); ++root) {
      if (parent_[root] != kNone) continue;
      enter(root);
      stack.emplace_back(root, child_begin_[root]);
      while (!stack.empty()) {
        const std::uint32_t v = stack.back().first;
        if (stack.back().second < child_begin_[v + 1]) {
          const std::uint32_t child = children_[stack.back().second++];
          enter(child);
          stack.emplace_back(child, child_begin_[child]);
        } else {
          leave();
          stack.pop_back();
        }
      }
    }
  }

  void enter(std::uint32_t v) {
    const auto depth = static_cast<std::uint32_t>(path_.size());
    path_.push_back(v);
    time_at_.push_back(point_time(result_, points_[v]));
    pushed_begin_.push_back(pushed_.size());
    bills_.clear();
    const bool unclipped = links_[v].to.task != kNoTask &&
                           summarizer_.unclipped_bill(points_[v], links_[v], [&](std::uint64_t key, TaskId example,
                                                                                 TimeNs time, std::int64_t count) {
                             if (time != 0 || count != 0) bills_.push_back({key, example, time, count});
                           });
    last_clipped_.push_back(unclipped ? (depth == 0 ? -1 : last_clipped_.back()) : std::int64_t{depth});
    if (unclipped) {
      for (const PathSummarizer::Bill& b : bills_) add_total(depth, b);
    }
    for (std::uint32_t i = query_begin_[v]; i < query_begin_[v + 1]; ++i) answer(queries_at_[i]);
  }

  void add_total(std::uint32_t depth, const PathSummarizer::Bill& b) {
    auto [it, fresh] = key_index_.try_emplace(b.key, static_cast<std::uint32_t>(keys_.size()));
    const std::uint32_t k = it->second;
    if (fresh) {
      keys_.push_back(b.key);
      examples_.push_back(b.example);
      totals_.emplace_back();
    }
    std::vector<Total>& list = totals_[k];
    if (!list.empty() && list.back().depth == depth) {
      list.back().time += static_cast<std::uint64_t>(b.time);
      list.back().count += b.count;
      return;
    }
    const Total before = list.empty() ? Total{0, 0, 0} : list.back();
    if (!list.empty()) latest_.erase({before.depth, k});
    list.push_back({depth, before.time + static_cast<std::uint64_t>(b.time), before.count + b.count});
    latest_.insert({depth, k});
    pushed_.push_back(k);
  }

  void leave() {
    const auto depth = static_cast<std::uint32_t>(path_.size() - 1);
    for (std::size_t i = pushed_begin_.back(); i < pushed_.size(); ++i) {
      std::vector<Total>& list = totals_[pushed_[i]];
      latest_.erase({depth, pushed_[i]});
      list.pop_back();
      if (!list.empty()) latest_.insert({list.back().depth, pushed_[i]});
    }
    pushed_.resize(pushed_begin_.back());
    pushed_begin_.pop_back();
    path_.pop_back();
    time_at_.pop_back();
    last_clipped_.pop_back();
  }

  // The query starts at the point on top of the root path. Its stretch: the unclipped points
  // from there back while the point each leads to is after the window's begin. Along
  // unclipped points time only goes back, so that is a binary search on the root path.
  void answer(std::uint32_t q) {
    const auto top = static_cast<std::int64_t>(path_.size() - 1);
    const std::int64_t lowest = last_clipped_.back() + 1; // >= 1: a root leads nowhere, so it is clipped
    const TimeNs window = queries_[q].window_begin;
    if (lowest > top || time_at_[static_cast<std::size_t>(top - 1)] <= window) return;
    std::int64_t lo = lowest, hi = top;
    while (lo < hi) {
      const std::int64_t mid = lo + (hi - lo) / 2;
      if (time_at_[static_cast<std::size_t>(mid - 1)] > window) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    const auto first = static_cast<std::uint32_t>(lo);
    Stretch& s = stretches_[q];
    s.points = static_cast<std::size_t>(top - lo + 1);
    s.resume = points_[path_[first - 1]];
    for (auto it = latest_.rbegin(); it != latest_.rend() && it->first >= first; ++it) {
      const std::vector<Total>& list = totals_[it->second];
      const auto below = std::lower_bound(list.begin(), list.end(), first,
                                          [](const Total& t, std::uint32_t depth) { return t.depth < depth; });
      const Total base = below == list.begin() ? Total{0, 0, 0} : *std::prev(below);
      s.bills.push_back({keys_[it->second], examples_[it->second], static_cast<TimeNs>(list.back().time - base.time),
                         list.back().count - base.count});
    }
  }

  const PathSummarizer& summarizer_;
  const whatif::SimulationResult& result_;
  const std::vector<Query>& queries_;
  std::vector<Stretch> stretches_;
  std::vector<PathPoint> points_;
  std::vector<PathLink> links_;
  std::vector<std::uint32_t> parent_, child_begin_, children_, query_begin_, queries_at_;
  // Per bill key: the running totals at the depths of the root path that billed it, and the
  // keys ordered by the depth of their latest bill (those a stretch up to the top billed).
  std::unordered_map<std::uint64_t, std::uint32_t> key_index_;
  std::vector<std::uint64_t> keys_;
  std::vector<TaskId> examples_;
  std::vector<std::vector<Total>> totals_;
  std::set<std::pair<std::uint32_t, std::uint32_t>> latest_;
  // The root path the walk stands on, per depth: its point, the point's time, the depth of
  // the last clipped point at or below it (-1: none), where its keys' totals start in pushed_.
  std::vector<std::uint32_t> path_;
  std::vector<TimeNs> time_at_;
  std::vector<std::int64_t> last_clipped_;
  std::vector<std::size_t> pushed_begin_;
  std::vector<std::uint32_t> pushed_;
  std::vector<PathSummarizer::Bill> bills_;
};

// Whether two steps' replayed windows overlap. Where none do, their paths cross disjoint
// stretches of time, so walking them all costs about one walk of the run, less than summing.
bool windows_overlap(const std::vector<whatif::StepTime>& steps, const DependencyGraph& graph,
                     const whatif::SimulationResult& result) {
  std::vector<std::pair<TimeNs, TimeNs>> windows;
  for (const whatif::StepTime& step : steps) {
    const TaskId last = graph.annotation_last(step.row);
    if (last == kNoTask || result.end[last] == kNoValue || result.end[last] <= step.predicted_start) continue;
    windows.emplace_back(step.predicted_start, result.end[last]);
  }
  std::sort(windows.begin(), windows.end());
  for (std::size_t i = 1; i < windows.size(); ++i) {
    if (windows[i].first < windows[i - 1].second) return true;
    windows[i].second = std::max(windows[i].second, windows[i - 1].second);
  }
  return false;
}

} // namespace

namespace detail {

CriticalPathReport critical_path_analysis(const Trace& trace, std::size_t top_operations, std::size_t step_limit,
                                          StepPaths step_paths) {
  CriticalPathReport report;
  const DependencyGraph graph = build_dependency_graph(trace);
  if (graph.task_count() == 0) {
    report.note = "The trace has no CPU or GPU tasks to replay.";
    return report;
  }
  const whatif::SimulationResult result = whatif::simulate(graph);
  report.available = true;
  report.unscheduled = result.unscheduled;
  TimeNs measured_end = graph.run_begin();
  for (TaskId t = 0; t < graph.task_count(); ++t) measured_end = std::max(measured_end, graph.measured_end(t));
  report.measured_span = measured_end - graph.run_begin();
  report.replayed_span = result.span();

  PathSummarizer summarizer(trace, graph, result);
  report.run = summarizer.summarize("(whole run)", critical_path(graph, result), result.begin, top_operations);
  report.run.share_of_run = report.replayed_span > 0 ? 1.0 : 0.0;
  // A step's path runs from its start to the end of its last task, so its length is known
  // before the walk: only the steps the report lists are walked.
  const std::vector<whatif::StepTime> steps = whatif::step_times(trace, graph, result);
  report.step_lengths.reserve(steps.size());
  for (const whatif::StepTime& step : steps) {
    const TaskId last = graph.annotation_last(step.row);
    const bool ran = last != kNoTask && result.end[last] != kNoValue;
    report.step_lengths.push_back(ran ? result.end[last] - step.predicted_start : 0);
  }
  const std::vector<std::size_t> listed = listed_steps(report.step_lengths, step_limit);
  report.steps.reserve(listed.size());
  // Each listed step's path, back from its last task to the step's start; the walk stops at
  // the first point at or before the start. Where steps overlap, each one's unclipped
  // stretch is summed ahead from running totals instead of walked.
  if (step_paths == StepPaths::Fastest) {
    step_paths = windows_overlap(steps, graph, result) ? StepPaths::SumStretches : StepPaths::WalkEveryPoint;
  }
  std::vector<StretchTotals::Query> queries;
  std::vector<std::size_t> query_of(steps.size(), steps.size());
  for (std::size_t i : listed) {
    if (step_paths != StepPaths::SumStretches) break;
    const TaskId last = graph.annotation_last(steps[i].row);
    if (last == kNoTask || result.end[last] == kNoValue || result.end[last] <= steps[i].predicted_start) continue;
    if (const std::optional<PathLink> link = path_link(result, {last, true})) {
      query_of[i] = queries.size();
      queries.push_back({link->to, steps[i].predicted_start});
    }
  }
  const StretchTotals stretches(summarizer, result, graph.task_count(), queries);
  for (std::size_t i : listed) {
    const whatif::StepTime& step = steps[i];
    const TimeNs window = step.predicted_start;
    const TaskId last = graph.annotation_last(step.row);
    const bool scheduled = last != kNoTask && result.end[last] != kNoValue;
    summarizer.start(step.name, scheduled ? last : kNoTask, window);
    PathPoint p{last, true};
    for (bool first = true; scheduled && summarizer.open(); first = false) {
      std::optional<PathLink> link;
      if (point_time(result, p) > window) link = path_link(result, p);
      if (!summarizer.bill(p.task, !p.at_end, link ? &*link : nullptr)) break;
      p = link->to;
      if (!first || query_of[i] == steps.size()) continue;
      // The walk reached the stretch summed ahead, where it expected to: bill it whole.
      const StretchTotals::Stretch& s = stretches.stretch(query_of[i]);
      if (s.points > 0 && summarizer.open() && summarizer.cursor() == point_time(result, p)) {
        summarizer.bill_stretch(s.points, s.bills, point_time(result, s.resume));
        p = s.resume;
      }
    }
    CriticalPathSummary s = summarizer.finish(top_operations);
    s.index = i;
    s.share_of_run = report.replayed_span > 0
                         ? static_cast<double>(s.length()) / static_cast<double>(report.replayed_span)
                         : 0.0;
    report.steps.push_back(std::move(s));
  }
  if (result.unscheduled > 0) {
    report.note = std::to_string(result.unscheduled) + " tasks could not be scheduled (a dependency cycle).";
  }
  return report;
}

} // namespace detail

CriticalPathReport critical_path_analysis(const Trace& trace, std::size_t top_operations, std::size_t step_limit) {
  return detail::critical_path_analysis(trace, top_operations, step_limit, detail::StepPaths::Fastest);
}

} // namespace dreamscope::analyzers
