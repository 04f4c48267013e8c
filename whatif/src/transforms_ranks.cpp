// What-if primitives across the ranks of a distributed job (docs/multi-rank.md).
#include <dreamscope/storage/collectives.h>
#include <dreamscope/whatif/transforms.h>

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

namespace dreamscope::whatif {

TransformEffect match_ranks(DependencyGraph& graph, const TaskSelection& selection, const std::vector<TaskId>& tasks,
                            std::int64_t rank) {
  TransformEffect e;
  std::set<std::int64_t> ranks;
  for (TaskId t = 0; t < graph.task_count(); ++t) {
    if (const std::int64_t r = selection.rank(t); r != kNoValue) ranks.insert(r);
  }
  if (ranks.size() < 2) throw TransformError("match_ranks needs a trace of two ranks or more (docs/multi-rank.md)");
  std::string why;
  if (rank == kStragglerRank) {
    const JobCollectives collectives = find_collectives(selection.trace());
    rank = most_waited_for_rank(collectives);
    if (rank == kNoValue) {
      throw TransformError(
          "match_ranks: the trace's collectives show no straggler (no rank kept another waiting); name one with "
          "rank = N");
    }
    why = " (the straggler: the rank the others waited for most)";
  } else if (!ranks.contains(rank)) {
    throw TransformError(fmt::format("match_ranks: the trace has no rank {} (its ranks: {} to {})", rank,
                                     *ranks.begin(), *ranks.rbegin()));
  }
  // Each rank's selected time per step; the target's tasks per step.
  std::map<std::int64_t, std::map<std::int64_t, TimeNs>> time; // step -> rank -> time
  std::map<std::int64_t, std::vector<TaskId>> target;          // step -> the rank's tasks
  for (TaskId t : tasks) {
    const std::int64_t r = selection.rank(t);
    if (r == kNoValue) continue;
    const std::int64_t step = selection.step(t).value_or(kNoValue);
    time[step][r] += graph.duration(t);
    if (r == rank) target[step].push_back(t);
  }
  std::vector<double> ratios;
  for (auto& [step, own] : target) {
    const auto& per_rank = time[step];
    const TimeNs mine = per_rank.at(rank);
    std::vector<TimeNs> others;
    for (const auto& [r, t] : per_rank) {
      if (r != rank) others.push_back(t);
    }
    if (others.empty() || mine <= 0) continue;
    // The median of the others; with an even count, the mean of the middle two.
    std::sort(others.begin(), others.end());
    const std::size_t n = others.size();
    const double median = n % 2 ? static_cast<double>(others[n / 2])
                                : (static_cast<double>(others[n / 2 - 1]) + static_cast<double>(others[n / 2])) / 2;
    const double ratio = median / static_cast<double>(mine);
    const TransformEffect step_effect = scale(graph, own, ratio, 0);
    e.tasks += step_effect.tasks;
    e.time_before += step_effect.time_before;
    e.time_after += step_effect.time_after;
    ratios.push_back(ratio);
  }
  if (ratios.empty()) {
    e.detail = fmt::format("rank {}{}: nothing selected in a step that another rank also ran", rank, why);
    return e;
  }
  std::sort(ratios.begin(), ratios.end());
  e.detail = fmt::format("rank {}{} to the other ranks' median: ×{:.3g} in the median step ({} steps, ×{:.3g} to ×{:.3g})",
                         rank, why, ratios[ratios.size() / 2], ratios.size(), ratios.front(), ratios.back());
  return e;
}

} // namespace dreamscope::whatif
