// critical_path: the replayed run's critical path (critical_path_analysis), for the whole run
// and per step, split by what bound it (CPU work, GPU work, launch latency, waits for a sync,
// a batch or a collective, gaps), with the operations that were on it longest.
#pragma once

#include "dreamscope/storage/trace.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dreamscope::analyzers {

// What a stretch of the critical path was spent on.
enum class PathCategory : std::uint8_t {
  CpuWork,       // a task on a CPU thread (framework code, a CUDA API call, untraced work)
  GpuWork,       // a kernel, memcpy or memset on a GPU stream
  LaunchLatency, // from a launch call's start to its GPU task's start
  SyncWait,      // a blocking call or a stream woken after the GPU work it waited for ended
  DataFlowWait,  // a consumer woken after the producer of its batch ended
  CollectiveWait, // a rank in a collective until the last rank arrived (multi-rank jobs)
  Gap,           // idle time on a thread or stream that no dependency explains
};
inline constexpr std::size_t kPathCategories = 7;
std::string_view to_string(PathCategory c);

// Time on the path in one category, on one thread or stream for work and gaps.
struct CriticalPathPart {
  PathCategory category = PathCategory::CpuWork;
  std::string resource;   // "thread 1 MainThread", "GPU 0 stream 7"; "" for launches and waits
  TimeNs time = 0;
  std::int64_t hops = 0;  // path links of this kind (a sync crossed is a hop of 0 ns or more; gaps: those > 0)
  double share = 0;       // of the path's length
};

struct CriticalPathOperation {
  std::string name;       // kernel, API call or annotation name; "(cpu work)" for untraced CPU time
  std::string kind;       // "kernel", "memcpy", "memset", "cuda_api", "annotation", "cpu_work"
  std::int64_t count = 0; // times on the path
  TimeNs time = 0;        // its own time on the path
  double share = 0;       // of the path's length
};

struct CriticalPathSummary {
  std::string name;          // "(whole run)" or the step's name
  TimeNs begin = 0, end = 0; // replayed
  std::array<TimeNs, kPathCategories> by_category{}; // indexed by PathCategory; sums to length()
  std::vector<CriticalPathPart> split;              // largest first
  std::vector<CriticalPathOperation> operations;     // largest first, at most the asked number
  std::size_t tasks = 0;     // tasks on the path
  std::string ends_with;     // the path's last task: "cudaEventQuery on thread 7 worker"
  double share_of_run = 0;   // length / the replayed run's length
  std::size_t index = 0;     // a step's place among all steps, in time order (0 for the run)
  TimeNs length() const { return end - begin; }
};

struct CriticalPathReport {
  bool available = false;    // false: the trace has no tasks to replay (see note)
  std::string note;
  TimeNs measured_span = 0;  // the measured run: first task start to last task end
  TimeNs replayed_span = 0;  // the replay of the unmodified run, what the path adds up to
  std::size_t unscheduled = 0;
  CriticalPathSummary run;
  std::vector<CriticalPathSummary> steps; // per step (find_steps) summarized, in time order
  std::vector<TimeNs> step_lengths;       // every step's path length, in time order
};

// Replays the trace's dependency graph (no overhead correction: the run as measured) and walks
// the chain of binding constraints back from the last task to end, for the whole run and from
// each step's last task back to the step's start. Every step is summarized, or with a
// `step_limit` the steps report.h's listed_steps picks by their path lengths: a summary takes
// about 600 bytes, 60 MB for a trace of 10^5 steps whose report lists 1000.
CriticalPathReport critical_path_analysis(const Trace& trace, std::size_t top_operations = 20,
                                          std::size_t step_limit = static_cast<std::size_t>(-1));

} // namespace dreamscope::analyzers
