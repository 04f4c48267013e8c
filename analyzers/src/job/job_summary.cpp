// One rank's trace reduced to what the job report needs (job_analysis.h).
#include "dreamscope/analyzers/job_analysis.h"

#include "dreamscope/analyzers/hta.h"
#include "dreamscope/analyzers/pipeline.h"

#include "dreamscope/storage/collectives.h"

#include <algorithm>

namespace dreamscope::analyzers {

RankSummary summarize_rank(const Trace& trace, std::int64_t rank, std::string trace_name, const HtaOptions& hta) {
  RankSummary s;
  s.rank = rank;
  // The rank's own process says who it is; its data-loader workers carry the same rank.
  const ProcessInfo* own = nullptr;
  for (const ProcessInfo& p : trace.processes()) {
    if (p.is_rank() && (rank == kNoValue || p.rank == rank)) {
      own = &p;
      break;
    }
  }
  if (own) {
    if (s.rank == kNoValue) s.rank = own->rank;
    s.local_rank = own->local_rank;
    s.world_size = own->world_size;
    s.host = own->host;
  }
  s.trace_name = std::move(trace_name);
  s.source = std::string(to_string(trace.source()));
  s.begin = trace.begin_time();
  s.end = trace.end_time();
  s.events = static_cast<std::int64_t>(trace.event_count()) + summarized_event_count(trace);

  HtaReport h = hta_analyze(trace, hta);
  s.hta.temporal = h.temporal;
  s.hta.comm_comp_overlap_pct = h.comm_comp_overlap_pct;
  s.hta.kernel_types = std::move(h.kernels.by_type);
  s.hta.kernels = std::move(h.kernels.by_name);
  s.hta.idle_time = std::move(h.idle_time);
  s.hta.launches = h.launch_summary;
  s.hta.profiler_steps = h.profiler_steps;
  s.hta.step_filter_applied = h.step_filter_applied;

  DataStalls d = data_stalls(trace);
  s.data_source = std::move(d.source);
  s.data_waits = std::move(d.waits);
  for (StepDataStall& st : d.steps) {
    s.steps.push_back(
        {.number = st.number, .name = std::move(st.step), .start = st.start, .end = st.end, .data_wait = st.data_wait});
  }

  // The rank's own calls: those of its processes, or every call of a file that names no rank.
  const std::int64_t file_rank = own ? own->rank : kNoValue;
  for (CollectiveCall& c : find_collectives(trace).calls) {
    if (c.rank != file_rank) continue;
    s.collectives.push_back({.communicator = std::move(c.communicator),
                             .sequence = c.sequence,
                             .pytorch_sequence = c.pytorch_sequence,
                             .step = c.step,
                             .op = std::move(c.op),
                             .bytes = c.bytes,
                             .start = c.start,
                             .end = c.end});
  }
  return s;
}

} // namespace dreamscope::analyzers
