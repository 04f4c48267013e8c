#include "dreamscope/storage/job.h"

#include "dreamscope/storage/trace_copy.h"

#include <algorithm>
#include <map>

namespace dreamscope {

std::vector<JobRank> job_ranks(const Trace& trace) {
  std::map<std::int64_t, JobRank> ranks;
  for (ProcessId i{0}; i < trace.processes().size(); ++i) {
    const ProcessInfo& p = trace.processes()[i];
    if (!p.is_rank()) continue;
    JobRank& r = ranks[p.rank];
    r.rank = p.rank;
    r.processes.push_back(i);
    if (r.local_rank == kNoValue) r.local_rank = p.local_rank;
    if (r.host.empty()) r.host = p.host;
  }
  std::vector<JobRank> out;
  out.reserve(ranks.size());
  for (auto& entry : ranks) {
    // Not a structured binding: clang 14 (the fuzz build) cannot capture one in a lambda.
    JobRank& r = entry.second;
    // The rank's own process first: the one that is not a child of another of its processes.
    auto is_child_of_rank = [&](ProcessId p) {
      const std::int64_t parent = trace.processes()[p].parent_pid;
      return std::any_of(r.processes.begin(), r.processes.end(),
                         [&](ProcessId q) { return q != p && trace.processes()[q].pid == parent; });
    };
    std::stable_partition(r.processes.begin(), r.processes.end(), [&](ProcessId p) { return !is_child_of_rank(p); });
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<std::int64_t> track_ranks(const Trace& trace) {
  std::vector<std::int64_t> out(trace.tracks().size(), kNoValue);
  auto rank_of_process = [&](ProcessId p) {
    return p < trace.processes().size() ? trace.processes()[p].rank : kNoValue;
  };
  for (TrackId t{0}; t < trace.tracks().size(); ++t) {
    const TrackInfo& tr = trace.tracks()[t];
    if (tr.kind == TrackKind::CpuThread) {
      out[t] = rank_of_process(tr.process);
    } else if (tr.device < trace.devices().size()) {
      out[t] = rank_of_process(trace.devices()[tr.device].process);
    }
  }
  return out;
}

Trace rank_subtrace(const Trace& trace, std::int64_t rank) {
  const bool found = std::any_of(trace.processes().begin(), trace.processes().end(),
                                 [&](const ProcessInfo& p) { return p.rank == rank; });
  if (!found || rank == kNoValue) {
    const auto ranks = job_ranks(trace);
    throw TraceError("the trace has no rank " + std::to_string(rank) +
                     (ranks.empty() ? std::string(" (it is a single-process run)")
                                    : " (its ranks: " + std::to_string(ranks.front().rank) + " to " +
                                          std::to_string(ranks.back().rank) + ")"));
  }
  TraceBuilder b;
  b.set_origin("rank " + std::to_string(rank));
  for (const auto& [key, value] : trace.meta()) b.set_meta(key, value);
  b.set_source(trace.source());
  TraceCopyEdits keep;
  keep.keep_process = [&](ProcessId p) { return trace.processes()[p].rank == rank; };
  const TraceIdMap ids = append_trace_ids(b, trace, keep);
  append_trace_rows(b, trace, ids, keep);
  for (const CalibrationRecord& c : trace.calibration()) b.add(c);
  return std::move(b).build();
}

} // namespace dreamscope
