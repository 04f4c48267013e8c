// Pass 2, launches: which API call launched each GPU task, and when each was issued.
//
// Reads: TaskTable (tasks, api_first, source_row); the Trace's correlation ids.
// Writes: Launches, all of it: launcher (by correlation id), issue_time (the launch call's
//   start, or the task's own start when no call is known) and the per-stream issue order.
#include "passes.h"

#include <algorithm>
#include <limits>

namespace dreamscope::graph_build {
namespace {

void index_issue_order(const TaskTable& tasks, Launches& launches) {
  launches.issue_order.assign(tasks.resource_count(), {});
  for (ResourceId r = 0; r < tasks.resource_count(); ++r) {
    if (!tasks.is_stream(r)) continue;
    const TaskId first = tasks.first(r), end = tasks.end(r);
    std::vector<std::pair<TimeNs, std::uint32_t>> order;
    order.reserve(end - first);
    for (TaskId t = first; t < end; ++t) order.emplace_back(launches.issue_time[t], t - first);
    std::sort(order.begin(), order.end());
    auto& io = launches.issue_order[r];
    io.time.reserve(order.size());
    io.max_position.reserve(order.size());
    std::uint32_t highest = 0;
    for (std::size_t k = 0; k < order.size(); ++k) {
      highest = k == 0 ? order[k].second : std::max(highest, order[k].second);
      io.time.push_back(order[k].first);
      io.max_position.push_back(highest);
    }
  }
}

} // namespace

TaskId Launches::issued_before(const TaskTable& tasks, ResourceId r, TimeNs time) const {
  const auto& io = issue_order[r];
  auto it = std::lower_bound(io.time.begin(), io.time.end(), time);
  if (it == io.time.begin()) return kNoTask;
  return tasks.first(r) + io.max_position[static_cast<std::size_t>(it - io.time.begin()) - 1];
}

TaskId Launches::issued_from(const TaskTable& tasks, ResourceId r, TimeNs time) const {
  const auto& io = issue_order[r];
  auto it = std::lower_bound(io.time.begin(), io.time.end(), time);
  if (it == io.time.end()) return kNoTask;
  // Tasks issued from `time` on: the first of them in FIFO order is the lowest position
  // not issued before, i.e. one past the highest position issued before.
  const std::size_t k = static_cast<std::size_t>(it - io.time.begin());
  const std::uint32_t pos = k == 0 ? 0 : io.max_position[k - 1] + 1;
  const TaskId t = tasks.first(r) + pos;
  return t < tasks.end(r) ? t : kNoTask;
}

void find_launches(GraphBuildState& s) {
  const Trace& trace = s.trace;
  const TaskTable& tasks = s.tasks;
  Launches& launches = s.launches;
  const auto& ops = trace.gpu_ops();
  const auto& api = trace.cuda_api();
  launches.launcher.assign(tasks.size(), kNoTask);
  launches.issue_time.assign(tasks.size(), kNoValue);
  // Correlation ids are usually a dense counter: a direct table beats one binary search
  // per GPU op (the top cost of the build at 1 M tasks). Sparse ids use the Trace's index.
  std::int64_t lo = std::numeric_limits<std::int64_t>::max(), hi = std::numeric_limits<std::int64_t>::min();
  std::size_t with_id = 0;
  for (std::size_t row = 0; row < api.size(); ++row) {
    if (api.correlation[row] == kNoValue) continue;
    lo = std::min(lo, api.correlation[row]);
    hi = std::max(hi, api.correlation[row]);
    ++with_id;
  }
  std::vector<CudaApiIndex> call_by_id;
  const bool dense = with_id > 0 && hi - lo < static_cast<std::int64_t>(4 * with_id + 1024);
  if (dense) {
    call_by_id.assign(static_cast<std::size_t>(hi - lo + 1), kNoIndex);
    for (std::size_t row = 0; row < api.size(); ++row) {
      if (api.correlation[row] == kNoValue) continue;
      auto& slot = call_by_id[static_cast<std::size_t>(api.correlation[row] - lo)];
      if (slot == kNoIndex) slot = CudaApiIndex{row}; // the first row, as the Trace's lookup
    }
  }
  auto call_of = [&](std::int64_t corr) -> CudaApiIndex {
    if (!dense) return trace.cuda_api_with_correlation(corr).value_or(kNoIndex);
    if (corr < lo || corr > hi) return kNoIndex;
    return call_by_id[static_cast<std::size_t>(corr - lo)];
  };
  for (ResourceId r = 0; r < tasks.resource_count(); ++r) {
    if (!tasks.is_stream(r)) continue;
    for (TaskId t = tasks.first(r); t < tasks.end(r); ++t) {
      launches.issue_time[t] = tasks.measured_start[t];
      const std::int64_t corr = ops.correlation[tasks.source_row[t]];
      if (corr == kNoValue) continue;
      if (const CudaApiIndex call = call_of(corr); call != kNoIndex && tasks.api_first[call] != kNoTask) {
        launches.launcher[t] = tasks.api_first[call];
        launches.issue_time[t] = tasks.measured_start[launches.launcher[t]];
      }
    }
  }
  index_issue_order(tasks, launches);
}

} // namespace dreamscope::graph_build
