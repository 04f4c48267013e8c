// Where a process stands in a distributed job, as its launcher said it in the environment:
// what the tracer records for every process it traces (ProcessInfo::rank, local_rank,
// world_size) and what `dreamscope trace --per-rank` names its output after
// (docs/tracing.md, "Distributed jobs"). Read once when a process starts, never per event.
//
// Launchers set one family of variables each; the first family whose rank variable is set is
// the one used, and its local rank and world size come from the same family:
//   RANK, LOCAL_RANK, WORLD_SIZE                                   torchrun, torch.distributed
//   OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_LOCAL_RANK, OMPI_COMM_WORLD_SIZE   Open MPI (mpirun)
//   SLURM_PROCID, SLURM_LOCALID, SLURM_NTASKS                      Slurm (srun)
//   PMI_RANK, PMI_SIZE                                             MPICH, Intel MPI (PMI)
// A value that is not a whole number in [0, 2^24) (limits::kMaxWorldSize), a world size not
// above the rank, or a local rank not below the world size is ignored with a warning; an
// ignored rank variable lets the next family speak. A torchrun agent has none of these set:
// it is not a rank.
#pragma once

#include <dreamscope/storage/trace.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace dreamscope {

struct RankVariables {
  const char* rank;
  const char* local_rank; // nullptr: the family has none
  const char* world_size;
};

// In the order they are tried.
inline constexpr RankVariables kRankVariables[] = {
    {"RANK", "LOCAL_RANK", "WORLD_SIZE"},
    {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE"},
    {"SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS"},
    {"PMI_RANK", nullptr, "PMI_SIZE"},
};

struct RankPlacement {
  std::int64_t rank = kNoValue; // kNoValue: not a rank
  std::int64_t local_rank = kNoValue;
  std::int64_t world_size = kNoValue;
  const char* rank_variable = nullptr; // where the rank came from ("RANK", "SLURM_PROCID", ...)
  // Variables that were set and ignored, one line each ("RANK=abc is not a rank ...").
  std::vector<std::string> warnings;

  bool is_rank() const { return rank != kNoValue; }
};

// `lookup(name)` returns the variable's value, or nullptr when it is not set.
using EnvironmentLookup = std::function<const char*(const char*)>;

RankPlacement rank_from_environment(const EnvironmentLookup& lookup);
// From this process's environment (std::getenv).
RankPlacement rank_from_environment();

// "RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID or PMI_RANK": for messages.
std::string rank_variable_names();

} // namespace dreamscope
