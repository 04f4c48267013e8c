// A distributed job in one Trace: its ranks, and the Trace of one of them (docs/multi-rank.md).
//
// A rank is the set of processes that share a `ProcessInfo::rank`: the rank's own process and
// the data-loader workers it forked, which inherit its environment. A trace none of whose
// processes has a rank is a single-process run, and has no ranks here.
#pragma once

#include "dreamscope/trace.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dreamscope {

struct JobRank {
  std::int64_t rank = kNoValue;
  std::int64_t local_rank = kNoValue;
  std::string host;
  std::vector<std::uint32_t> processes; // indices into Trace::processes(), the rank's own first
};

// The ranks of the trace's processes, by rank; empty for a single-process run.
std::vector<JobRank> job_ranks(const Trace& trace);

// The rank each track belongs to (kNoValue for a track of no rank), indexed by TrackId: a
// thread by its process, a stream by its device's process.
std::vector<std::int64_t> track_ranks(const Trace& trace);

// The trace of one rank: its processes, their threads, devices and streams, and every row on
// them, with the job's meta. Throws TraceError when the trace has no such rank.
Trace rank_subtrace(const Trace& trace, std::int64_t rank);

} // namespace dreamscope
