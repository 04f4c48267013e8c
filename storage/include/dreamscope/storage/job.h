// A distributed job in one Trace: its ranks, and the Trace of one of them
// (docs/multi-rank.md).
//
// A rank is the set of processes that share a `ProcessInfo::rank`: the rank's
// own process and the data-loader workers it forked, which inherit its
// environment. A trace none of whose processes has a rank is a single-process
// run, and has no ranks here.
#pragma once

#include "dreamscope/storage/collectives.h"
#include "dreamscope/storage/importers.h"
#include "dreamscope/storage/trace.h"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace dreamscope {

struct JobRank {
  std::int64_t rank = kNoValue;
  std::int64_t local_rank = kNoValue;
  std::string host;
  std::vector<ProcessId> processes; // the rank's own first
};

// The ranks of the trace's processes, by rank; empty for a single-process run.
std::vector<JobRank> job_ranks(const Trace& trace);

// The rank each track belongs to (kNoValue for a track of no rank), indexed by
// TrackId: a thread by its process, a stream by its device's process.
std::vector<std::int64_t> track_ranks(const Trace& trace);

// The trace of one rank: its processes, their threads, devices and streams, and
// every row on them, with the job's meta. Throws TraceError when the trace has
// no such rank.
Trace rank_subtrace(const Trace& trace, std::int64_t rank);

// ---- Loading a job from several files
// ----------------------------------------------------

// The trace files a job's inputs name: each input is a file, a directory (the
// files in it that hold a trace, by content), or a glob pattern; directories
// and globs in natural order (rank2 before rank10). Throws TraceError for an
// input that names nothing.
std::vector<std::filesystem::path> job_files(const std::vector<std::string>& inputs);

// The rank a file's name gives: the number after "rank" or "worker"
// (rank3.json, worker_12.pt.trace.json, trace-rank-0.db); kNoValue when it
// names none.
std::int64_t rank_from_file_name(const std::filesystem::path& path);

enum class ClockAlignment : std::uint8_t {
  Auto,   // shift a clock when its collectives end more than kClockTolerance away
          // from rank 0's
  Always, // shift every clock that is not rank 0's by what its collectives say
  Never,
};
// Collective ends on one clock differ by the link's latency and the ranks' own
// skew; below this a difference is not taken for another clock.
inline constexpr TimeNs kClockTolerance = 100'000;

// How far each clock domain is from the reference's, from the collectives they
// shared: the median, over the instances both took part in, of (reference end -
// domain end), using all-reduce, all-gather, reduce-scatter, all-to-all and
// barrier (whose ends coincide) when there are any. `domain_of_rank` maps each
// rank to its clock; the reference is the domain of the lowest rank. Domains
// with no shared instance get no entry; with Auto, neither do those within
// kClockTolerance.
std::map<std::int64_t, TimeNs> clock_offsets(const JobCollectives& collectives,
                                             const std::map<std::int64_t, std::int64_t>& domain_of_rank,
                                             ClockAlignment mode);

struct JobLoadOptions {
  std::size_t threads = 0; // files loaded at once; 0: the machine's cores
  ClockAlignment align = ClockAlignment::Auto;
  // Called with each file's trace as soon as it is loaded (from a loading
  // thread); throws to refuse it (an import that kept nothing, say).
  std::function<void(const std::filesystem::path&, const Trace&)> check_file;
  // How much of each file to keep (importers.h): WithoutOperators where only rank summaries are
  // made of the traces (analyze of a job), a third less work per PyTorch trace.
  ImportDetail detail = ImportDetail::Full;
};

struct LoadedJob {
  Trace trace;
  // What the loader decided, one line each: ranks taken from file names or
  // order, clocks shifted. Also in meta.job_notes.
  std::vector<std::string> notes;
};

// The job in `files` as one Trace: every file's processes, with their ranks, on
// one clock. One file is loaded as it is. Throws TraceError naming the file for
// a file that cannot be read, and for two files of the same rank.
LoadedJob load_job(const std::vector<std::filesystem::path>& files, const JobLoadOptions& options = {});

// Each rank's trace in turn, for analyses that look at one rank at a time:
// memory holds at most `options.threads` ranks, not the job. `visit` runs on
// the loading threads, several at once, in no particular order; the first
// exception it or a load throws stops the others and is rethrown. A single file
// with several ranks is cut into them (rank_subtrace). A file that names no
// rank is passed as it is, with the rank its name or place gives it.
void for_each_rank(const std::vector<std::filesystem::path>& files, const JobLoadOptions& options,
                   const std::function<void(std::int64_t rank, Trace&& trace, const std::filesystem::path& file)>& visit);

} // namespace dreamscope
