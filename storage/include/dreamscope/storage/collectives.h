// The collectives of a distributed job (all-reduce, all-gather, broadcast,
// all-to-all, ...), found in a Trace whatever produced it and matched across
// ranks (docs/multi-rank.md).
//
// A rank's collective call is the event in which it waits for the other ranks
// and then transfers: the communication kernel on a GPU stream (NCCL, RCCL,
// NVSHMEM, multimem), or, for a rank with no such kernels (a CPU job, the gloo
// backend), its CPU range: a dreamscope `collective` annotation, else PyTorch's
// `record_param_comms` operator, else its `nccl:*` / `gloo:*` range. Every
// rank's calls of one communicator are numbered in time order, and the calls
// with the same communicator and number on different ranks are one instance of
// the collective: its last call to start is the last rank to arrive, and until
// then every other rank waited.
//
// The number of a call is PyTorch's sequence number where every call of its
// communicator has one; else its order within its step (so that ranks whose
// profiles began at different collectives still match), else its order in the
// trace.
#pragma once

#include "dreamscope/storage/trace.h"

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace dreamscope {

struct CollectiveCall {
  std::int64_t rank = kNoValue;         // ProcessInfo::rank of the call's process
  std::string op;                       // normalised: all_reduce, all_gather, reduce_scatter, broadcast,
                                        // reduce, all_to_all, send_recv, barrier; else the name as given
  std::string communicator;             // the process group's name; "" for the job's default group
  std::int64_t sequence = 0;            // the call's number within its communicator on its rank
  bool pytorch_sequence = false;        // the number is PyTorch's (it counts across
                                        // steps), not the call's order in its step
  std::int64_t step = kNoValue;         // the step number it ran in (steps.h), if any
  std::int64_t bytes = kNoValue;        // what this rank contributes; kNoValue when
                                        // the trace does not say
  EventTable table = EventTable::GpuOp; // GpuOp (a kernel) or Annotation (a CPU range)
  std::uint32_t row = 0;                // a row of `table`
  TrackId track{0};
  TimeNs start = 0, end = 0;
  TimeNs duration() const { return end - start; }
};

// One collective across the ranks that took part in it.
struct CollectiveInstance {
  std::string communicator;
  std::int64_t sequence = 0;
  std::string op;
  std::int64_t step = kNoValue;
  std::vector<std::uint32_t> calls;  // indices into JobCollectives::calls, by rank
  TimeNs first_arrival = 0;          // the earliest start among the calls
  TimeNs last_arrival = 0;           // the latest start: from here on every rank is in
  std::int64_t last_rank = kNoValue; // the rank that arrived last
  TimeNs last_end = 0;
  // The time each rank spent in it before the last rank arrived (never more
  // than its own call), and the time after: the transfer.
  TimeNs wait_of(const std::vector<CollectiveCall>& all, std::uint32_t call) const;
};

struct JobCollectives {
  std::vector<CollectiveCall> calls;         // by rank, then time
  std::vector<CollectiveInstance> instances; // in order of last arrival
  // Calls whose communicator and number no other rank had (a profile window
  // that began or ended mid-collective on one rank): not in any instance.
  std::size_t unmatched_calls = 0;
  // Instances whose ranks disagree on the operation (all_reduce on one,
  // broadcast on another): a sign that the ranks' numbering is off; kept, and
  // counted.
  std::size_t mismatched_ops = 0;
};

// Every collective call of every rank of the trace, matched into instances. A
// trace with no ranks (a single-process run) has calls (rank kNoValue) and no
// instances.
JobCollectives find_collectives(const Trace& trace);

// Whether find_collectives reads the args of a CPU range of this name (PyTorch's
// record_param_comms and its nccl:/gloo:/mpi:/ucc: ranges): an import for a rank summary
// (importers.h, ImportDetail::WithoutOperatorArgs) keeps the args of these alone.
bool collective_args_read(std::string_view cpu_range_name);

// Matches calls found in several traces (the ranks of a job, one file each;
// their `rank` set) into instances, as find_collectives does within one.
JobCollectives match_collectives(std::vector<CollectiveCall> calls);

// What each rank cost the others at collectives: per instance, the time the ranks that
// arrived earlier waited is billed to the rank that arrived last. Ranks that kept nobody
// waiting are absent.
std::map<std::int64_t, TimeNs> wait_caused_by_rank(const JobCollectives& job);

// The rank the others waited for most (kNoValue: no instance kept anybody waiting).
std::int64_t most_waited_for_rank(const JobCollectives& job);

// The normalised operation for a collective's name: a kernel name
// (`ncclKernel_AllReduce_RING_LL_Sum_float`, `ncclDevKernel_AllGather_...`,
// `multimem_all_reduce_kernel`), PyTorch's `Collective name` arg (`allreduce`,
// `_allgather_base`), or a range name (`nccl:all_reduce`, `c10d::allreduce_`).
std::string normalised_collective_op(std::string_view name);

// Bytes per element of a PyTorch dtype name ("Float", "c10::BFloat16", "float",
// "long int"), 0 when unknown.
std::int64_t dtype_bytes(std::string_view dtype);

} // namespace dreamscope
