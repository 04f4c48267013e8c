// What the passes of the graph builder share (graph_builder.cpp runs them, in the order of
// passes.h). Every field here is written by one pass and read by those after it; each pass's
// file says at its top which fields it reads and which it writes, and nothing else is shared
// between passes: a pass is a function of the Trace and this state.
#pragma once

#include "dreamscope/graph/dependency_graph.h"

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

namespace dreamscope::graph_build {

// The tasks, as the task pass cuts them. Later passes add no tasks; they change only the
// per-task columns their comments name (flags, base, gap, cpu_share).
struct TaskTable {
  std::vector<TaskId> resource_begin; // resource_count + 1 offsets
  std::vector<std::uint8_t> resource_is_stream;
  std::vector<ResourceId> resource;
  std::vector<TaskKind> kind;
  std::vector<std::uint8_t> flags;
  std::vector<float> cpu_share;
  std::vector<std::uint32_t> source_row; // of the table the task's kind says (DependencyGraph::source_row)
  std::vector<TimeNs> measured_start, measured_end, base, gap;
  // The tasks each row of the Trace became (kNoTask: none).
  std::vector<TaskId> api_first, api_last, annotation_first, annotation_last, gpu_task;

  std::size_t size() const { return resource.size(); }
  std::size_t resource_count() const { return resource_begin.size() - 1; }
  TaskId first(ResourceId r) const { return resource_begin[r]; }
  TaskId end(ResourceId r) const { return resource_begin[r + 1]; }
  bool is_stream(ResourceId r) const { return resource_is_stream[r] != 0; }
  void set_cpu_share(TaskId t, double share);
};

// Per stream: its tasks in order of issue (launch call start), with the highest FIFO position
// issued so far, so that "the last task issued to S before time x" is one binary search.
struct IssueOrder {
  std::vector<TimeNs> time;
  std::vector<std::uint32_t> max_position;
};

// How each GPU task was issued, as the launch pass finds it.
struct Launches {
  std::vector<TaskId> launcher;   // per task: the first task of its launch call; kNoTask if none
  std::vector<TimeNs> issue_time; // per GPU task: its launch call's start, else its own start
  std::vector<IssueOrder> issue_order; // per resource (empty for threads)

  // The last task issued to stream r strictly before `time`, as measured.
  TaskId issued_before(const TaskTable& tasks, ResourceId r, TimeNs time) const;
  // The first task issued to stream r at or after `time`.
  TaskId issued_from(const TaskTable& tasks, ResourceId r, TimeNs time) const;
};

// Synchronization on the GPU, as the CUDA-synchronization pass finds it.
struct Synchronization {
  std::vector<SyncAction> actions; // sorted by task
  std::vector<std::vector<ResourceId>> stream_groups;
  std::uint32_t event_count = 0;
  // Per task: the latest end of what its stream was told to wait for before it (a
  // cudaStreamWaitEvent's event), as measured; kNoValue where nothing was.
  std::vector<TimeNs> stream_barrier;
};

// Cross-resource edges, collected by the passes and turned into the CSR at the end.
struct EdgeBuffer {
  std::vector<std::pair<std::uint32_t, std::uint32_t>> ends;
  std::vector<EdgeInfo> info;
  void add(TaskId from, TaskId to, EdgeKind kind, TimeNs delay) {
    ends.emplace_back(from, to);
    info.push_back({delay, kind});
  }
};

// The streams a call on a thread may mean, per process: those of its own process, or of
// devices whose process is unknown (imported single-process traces), in resource order; and
// among them the first with a given stream id. Built once per process on first use: the
// passes that link calls to streams ask for every call, and a scan of every resource per call
// was quadratic in a trace of many threads or streams.
class ProcessStreams {
 public:
  const std::vector<ResourceId>& of(const Trace& trace, const TaskTable& tasks, ResourceId thread);
  ResourceId find(const Trace& trace, const TaskTable& tasks, ResourceId thread, std::int64_t stream_id);

 private:
  struct Streams {
    std::vector<ResourceId> list;
    std::unordered_map<std::int64_t, ResourceId> by_id; // the first of each id in `list`
  };
  Streams& entry(const Trace& trace, const TaskTable& tasks, ResourceId thread);

  bool grouped_ = false;
  std::unordered_map<ProcessId, std::vector<ResourceId>> by_owner_; // streams by process_of (kNoIndex: unknown)
  std::unordered_map<ProcessId, Streams> by_process_;
};

struct GraphBuildState {
  explicit GraphBuildState(const Trace& t) : trace(t) {}

  const Trace& trace;
  TaskTable tasks;
  Launches launches;
  Synchronization sync;
  EdgeBuffer edges;
  // Collective instances, whole (DependencyGraph::collective): members and per-instance offsets.
  std::vector<CollectiveMember> collective_members;
  std::vector<std::uint32_t> collective_begin;
  std::size_t collective_links = 0;
  // Per task: the latest measured end of what it waited for (sync targets, producers,
  // bursts), kNoValue where it waited for nothing; every pass that links a wait adds to it
  // through note_wait(), and the residual pass turns it into the task's base duration.
  std::vector<TimeNs> wait_end;
  // Blocking tasks that waited, with what they take when they need not wait (residual pass).
  std::vector<std::pair<TaskId, TimeNs>> ready_base;
  GraphWarnings warnings;
  // Filled on demand, after the task pass (streams_of_process, find_stream).
  ProcessStreams process_streams;

  // Task t waited until `target_end` (at least): it blocks, and its base is what it took after.
  void note_wait(TaskId t, TimeNs target_end) {
    wait_end[t] = std::max(wait_end[t], target_end);
    tasks.flags[t] |= kTaskBlocking;
  }
};

// Which process a thread or stream belongs to (kNoIndex: unknown), and the streams a call on
// a thread may mean (ProcessStreams). Shared by the passes that link calls to streams.
ProcessId process_of(const Trace& trace, ResourceId r);
const std::vector<ResourceId>& streams_of_process(GraphBuildState& s, ResourceId thread);
ResourceId find_stream(GraphBuildState& s, ResourceId thread, std::int64_t stream_id);

} // namespace dreamscope::graph_build
