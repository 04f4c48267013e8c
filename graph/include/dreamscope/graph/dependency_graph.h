// The task dependency graph of one run (design.md, "Dependency graph and simulation").
//
// Tasks are stored column-wise (flat arrays indexed by TaskId), not one allocation per
// node: a 10 M-task graph is a few hundred bytes per task at most. The tasks of one
// resource (a CPU thread or a GPU stream, i.e. a Trace track) are numbered consecutively in
// their FIFO order, so "the next task on my resource" is `t + 1` within the resource's range.
//
// Cross-resource edges live in a Boost compressed-sparse-row graph. Program order and stream
// FIFO order are implicit in the numbering. Synchronization on the GPU (stream, device and
// event syncs, event record → stream wait) is kept symbolic as `SyncAction`s and resolved
// by the simulator against what has been issued when the call runs, so that a what-if that
// inserts or removes GPU work keeps every sync right.
#pragma once

#include "dreamscope/storage/limits.h"
#include "dreamscope/storage/trace.h"

#include <boost/graph/compressed_sparse_row_graph.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace dreamscope {

using TaskId = std::uint32_t;
using ResourceId = std::uint32_t; // the TrackId of the thread or stream the task runs on
inline constexpr TaskId kNoTask = kNoIndex;

enum class TaskKind : std::uint8_t {
  CpuWork = 0,    // time on a thread between recorded events (untraced CPU work)
  CudaApi = 1,    // (part of) a CUDA API call
  Annotation = 2, // (part of) an annotation range not covered by anything nested in it
  Kernel = 3,
  Memcpy = 4,
  Memset = 5,
  Synthetic = 6,  // added by a what-if
};
std::string_view to_string(TaskKind k);
inline bool is_gpu_task(TaskKind k) { return k == TaskKind::Kernel || k == TaskKind::Memcpy || k == TaskKind::Memset; }

// What an edge constrains. The source end is the start of the source task for launches and
// its end otherwise; the target is the start of the target task (launch, dependency) or its
// completion (sync, flow: the target is a blocking task whose end waits for the source).
enum class EdgeKind : std::uint8_t {
  Launch = 0,     // API call start → GPU task start, delay = launch latency
  Dependency = 1, // end → start (what-ifs)
  Sync = 2,       // GPU task end → end of a blocking call (a synchronous cudaMemcpy)
  Flow = 3,       // producer's end → consumer's wait end (batch prepared → batch consumed)
  // A thread that handed work to another and waited for it (the autograd engine's caller
  // and its device thread): the waiting task's start → the burst's first task (delay as
  // measured), and the burst's last task's end → the waiting task's end.
  Handoff = 4,
  Join = 5,
  // A rank's collective cannot complete before every rank of it has arrived: a peer's call
  // start → this call's completion (delay 0); what the call takes after the last arrival is
  // its duration (the transfer).
  Collective = 6,
};
std::string_view to_string(EdgeKind k);
inline bool edge_from_start(EdgeKind k) {
  return k == EdgeKind::Launch || k == EdgeKind::Handoff || k == EdgeKind::Collective;
}
inline bool edge_gates_completion(EdgeKind k) {
  return k == EdgeKind::Sync || k == EdgeKind::Flow || k == EdgeKind::Join || k == EdgeKind::Collective;
}

struct EdgeInfo {
  TimeNs delay = 0;
  EdgeKind kind = EdgeKind::Dependency;
};

// An edge to add: from → to, of a kind, with a delay.
struct EdgeSpec {
  TaskId from = kNoTask;
  TaskId to = kNoTask;
  EdgeKind kind = EdgeKind::Dependency;
  TimeNs delay = 0;
};

using EdgeGraph = boost::compressed_sparse_row_graph<boost::directedS, boost::no_property, EdgeInfo,
                                                      boost::no_property, std::uint32_t, std::uint32_t>;

// A synchronization resolved while simulating, against the tasks issued so far.
enum class SyncOp : std::uint8_t {
  WaitStreams = 0,     // block until the last task issued to each stream of `streams` (but `except`) ends
  WaitEvent = 1,       // block until the task captured by the last record of `event` ends
  RecordEvent = 2,     // capture the last task issued to `stream` into `event`
  StreamWaitEvent = 3, // the next task issued to `stream` starts after `event`'s task ends
};
std::string_view to_string(SyncOp op);

struct SyncAction {
  TaskId task = kNoTask;     // the CPU task that performs it
  SyncOp op = SyncOp::WaitStreams;
  std::uint32_t streams = 0; // WaitStreams: index into stream_groups()
  // WaitStreams: the streams of `streams` it leaves out, an index into stream_groups() too
  // (kNoIndex: none). A device-wide sync names its process's streams and the few whose target
  // it cannot have waited for, not a list of the others per sync.
  std::uint32_t except = kNoIndex;
  ResourceId stream = kNoIndex; // RecordEvent, StreamWaitEvent
  std::uint32_t event = 0;   // WaitEvent, RecordEvent, StreamWaitEvent: dense event index
};

// One rank's call of a collective instance (DependencyGraph::collective). The instance's
// members are sorted by their arrival's measured start; a member's completion waits for the
// arrival of each other member among the first `peers` of them: those that arrived, as
// measured, before it returned (a later one is a contradiction the builder leaves unlinked,
// GraphWarnings::collective_peer_after_return).
struct CollectiveMember {
  TaskId arrival = kNoTask;    // the call's first task: when its rank arrived
  TaskId completion = kNoTask; // its last task: what waits for the others
  std::uint32_t call = 0;      // its place among the instance's calls, as the trace matched them
  std::uint32_t peers = 0;     // the members (a prefix, itself skipped) whose arrival it waits for
};

// A link of a collective that a what-if removed (DependencyGraph::remove_edges): the member
// `member` (its index in collective_members()) no longer waits for the arrival of the member
// at position `peer` of its instance. The instance stays whole; expand_collectives() leaves
// the link's edge out.
struct UnlinkedPeer {
  std::uint32_t member = 0;
  std::uint32_t peer = 0;
  auto operator<=>(const UnlinkedPeer&) const = default;
};

// Per-task flags.
inline constexpr std::uint8_t kTaskRemoved = 1;     // takes no time and is left out of the prediction
inline constexpr std::uint8_t kTaskBlocking = 2;    // its end waits for completion edges or syncs
inline constexpr std::uint8_t kTaskHasSync = 4;     // has SyncActions (sorted by task in sync_actions())
inline constexpr std::uint8_t kTaskIssuedByEdge = 8; // a GPU task with a launch edge

// What the builder saw that it could not use as it is; the graph is still usable.
struct GraphWarnings {
  std::int64_t gpu_op_before_launch = 0;  // GPU op starts before its launch call: latency clamped to 0
  std::int64_t sync_target_after_return = 0; // a wait's target ends after the wait returned: not linked
  std::int64_t unknown_sync_stream = 0;   // stream sync with no known stream: waits for the whole process
  std::int64_t unresolved_event = 0;      // event sync / stream wait with no event id
  std::int64_t gpu_ops_without_launch = 0;
  std::int64_t sync_ops_skipped = 0;      // GPU "sync" records: the waits they show are edges
  std::int64_t collective_peer_after_return = 0; // a rank arrived after another's call returned: not linked
  std::int64_t total() const;
  std::string describe() const;
};

// A batch of structural edits (insert, move, new resources), applied at once by
// DependencyGraph::apply: the tasks are renumbered so that each resource's tasks stay
// consecutive, which is O(tasks) per batch, not per edit.
class GraphEdit {
 public:
  // A new thread or stream (a loader worker of a pool, a communication link). The id it
  // returns names it within this edit (insert, move); EditResult::resources has its id in
  // the graph afterwards. The predicted trace gets a track for it.
  ResourceId add_resource(TrackInfo track);
  // A new task of `kind` that takes `duration` after a `gap`, right after `after` (wherever
  // that task is once the moves are done), or first on `resource` when `after` is kNoTask.
  // Returns its index in EditResult::inserted.
  std::uint32_t insert(ResourceId resource, TaskId after, TaskKind kind, std::string name, TimeNs duration,
                       TimeNs gap = 0);
  // Moves an existing task to another resource, placed among its tasks by measured start.
  void move(TaskId task, ResourceId resource);

 private:
  friend class DependencyGraph;
  struct Insert {
    ResourceId resource;
    TaskId after;
    TaskKind kind;
    std::string name;
    TimeNs duration, gap;
  };
  std::vector<TrackInfo> resources_;
  std::vector<Insert> inserts_;
  std::vector<std::pair<TaskId, ResourceId>> moves_;
};

struct EditResult {
  std::vector<TaskId> old_to_new; // every task id before the edit → its id after
  std::vector<TaskId> inserted;   // ids of the inserted tasks, in insert() order
  std::vector<ResourceId> resources; // ids of the added resources, in add_resource() order
};

class DependencyGraph {
 public:
  std::size_t task_count() const { return resource_.size(); }
  std::size_t resource_count() const { return resource_begin_.size() - 1; }

  // Tasks of a resource, [first, last), in FIFO order.
  TaskId resource_first(ResourceId r) const { return resource_begin_[r]; }
  TaskId resource_end(ResourceId r) const { return resource_begin_[r + 1]; }
  bool is_stream(ResourceId r) const { return resource_is_stream_[r] != 0; }

  ResourceId resource(TaskId t) const { return resource_[t]; }
  TaskKind kind(TaskId t) const { return kind_[t]; }
  std::uint8_t flags(TaskId t) const { return flags_[t]; }
  bool removed(TaskId t) const { return (flags_[t] & kTaskRemoved) != 0; }
  bool blocking(TaskId t) const { return (flags_[t] & kTaskBlocking) != 0; }
  // The part of a CPU task's time that needs a core, when the simulation shares a limited
  // number of them among threads (the rest waits off the CPU, after the CPU part). 1 for
  // CPU work and calls; 0 inside a data-pipeline `wait` (for a batch) and inside a `fetch`
  // (storage I/O, DS-Analyzer's split of loading into I/O and CPU work); for fetch and prep
  // ranges that the annotation library measured, the CPU time it measured over the range's
  // duration (a `cpu` mark at the range's end, docs/annotations.md).
  double cpu_share(TaskId t) const { return cpu_share_[t]; }
  void set_cpu_share(TaskId t, double share);
  // Whether the task keeps a core busy at all: a CPU task that does not block on something
  // else and has a CPU share.
  bool uses_cpu(TaskId t) const {
    return !resource_is_stream_[resource_[t]] && !(flags_[t] & (kTaskRemoved | kTaskBlocking)) && cpu_share_[t] > 0;
  }
  // The Trace row the task comes from: of cuda_api, annotations or gpu_ops by kind (so a plain
  // row number, which the caller makes a CudaApiIndex, ... once it knows which); kNoIndex for
  // CPU work and synthetic tasks.
  std::uint32_t source_row(TaskId t) const { return source_row_[t]; }

  // As measured. A blocking task's base duration is what remains after its wait ends.
  TimeNs measured_start(TaskId t) const { return measured_start_[t]; }
  TimeNs measured_end(TaskId t) const { return measured_end_[t]; }
  TimeNs base_duration(TaskId t) const { return base_[t]; }
  // Time the resource needs before this task once what it waited for is done (the previous
  // task on the resource, the run's begin, or an event its stream was told to wait for):
  // what the trace shows as idle that no edge explains.
  TimeNs gap(TaskId t) const { return gap_[t]; }
  TimeNs run_begin() const { return run_begin_; }
  TimeNs run_end() const { return run_end_; }

  // The knobs a what-if turns: duration = max(base × ratio + add, 0).
  double ratio(TaskId t) const { return ratio_[t]; }
  TimeNs add(TaskId t) const { return add_[t]; }
  TimeNs duration(TaskId t) const {
    if (flags_[t] & kTaskRemoved) return 0;
    if (ratio_[t] == 1.0f && add_[t] == 0) return base_[t];
    return scaled_duration(t);
  }
  static constexpr double kMaxRatio = 0x1p62;
  // A ratio past 2^62 (or NaN) makes any measured duration saturate (limits::saturated_ns), so
  // it is clamped there: a float cannot hold every double a transform may compose.
  void scale(TaskId t, double ratio, TimeNs add) {
    ratio_[t] = static_cast<float>(std::isnan(ratio) ? 1.0 : std::clamp(ratio, 0.0, kMaxRatio));
    add_[t] = std::clamp(add, -limits::kMaxAbsTimestampNs, limits::kMaxAbsTimestampNs);
  }
  // A blocking task's duration when what it waits for is already done as it starts. Its
  // measured residual (duration()) holds the wake-up after a real wait, which a wait that
  // finds its batch ready, or a sync with nothing left to run, does not pay: this is what the
  // trace shows such tasks take when they did not wait (the median of those on the same
  // thread with the same name), or the shortest residual among them when all of them waited.
  TimeNs ready_duration(TaskId t) const;
  void set_gap(TaskId t, TimeNs gap) { gap_[t] = gap; }
  void set_removed(TaskId t, bool removed);

  const EdgeGraph& edges() const { return edges_; }
  // Structural edits for what-ifs (add_edge / remove_edge). Each rebuilds the edge index in
  // O(edges), so batch them. A completion edge (sync, flow) makes its target blocking. An edge
  // that closes a cycle is accepted; the replay then leaves the cycle's tasks unscheduled
  // and says how many.
  void add_edges(std::span<const EdgeSpec> edges);
  // Removes every edge from → to (of any kind), and every link of a collective from → to
  // (an UnlinkedPeer each: the collectives stay whole); returns how many there were.
  std::size_t remove_edges(TaskId from, TaskId to);
  // Inserts and moves tasks, adds resources; every TaskId held before changes (see the map).
  EditResult apply(const GraphEdit& edit);
  // Resources a what-if added (ids from the trace's track count on), and inserted tasks' names.
  const std::vector<TrackInfo>& added_resources() const { return added_resources_; }
  std::string_view synthetic_name(TaskId t) const;
  std::size_t edge_count() const { return boost::num_edges(edges_); }
  // Edges into t that gate its start, and those that gate its completion.
  std::uint32_t start_in_degree(TaskId t) const { return start_in_[t]; }
  std::uint32_t completion_in_degree(TaskId t) const { return completion_in_[t]; }

  // Collective instances: each member's completion waits for its peers' arrivals, as a
  // `collective` edge from each peer would, without an edge per pair (R ranks: R² edges). The
  // simulator resolves an instance once per arrival; expand_collectives() makes the edges.
  std::size_t collective_count() const { return collective_begin_.empty() ? 0 : collective_begin_.size() - 1; }
  std::span<const CollectiveMember> collective(std::size_t i) const {
    return {collective_members_.data() + collective_begin_[i], collective_members_.data() + collective_begin_[i + 1]};
  }
  // Every instance's members, one after the other (collective(i) is a part of it).
  std::span<const CollectiveMember> collective_members() const { return collective_members_; }
  // The (peer, member) pairs the collectives link: the edges expand_collectives() would add.
  std::size_t collective_links() const { return collective_links_; }
  // The links remove_edges() took out of the collectives, by member, then peer; and those of
  // one member (an index into collective_members()).
  std::span<const UnlinkedPeer> unlinked_peers() const { return unlinked_peers_; }
  std::span<const UnlinkedPeer> unlinked_peers(std::uint32_t member) const;
  // Turns every collective into a `collective` edge per linked pair (instance by instance,
  // member by member in call order, peers in call order), the representation the builder
  // made before instances were kept whole: the reference of the tests.
  void expand_collectives();
  // Whether `from` → `to` is a link of a collective (not an edge): O(members).
  bool collective_link(TaskId from, TaskId to) const;

  std::span<const SyncAction> sync_actions() const { return sync_actions_; }
  std::span<const SyncAction> sync_actions_of(TaskId t) const;
  const std::vector<std::vector<ResourceId>>& stream_groups() const { return stream_groups_; }
  // Gives each WaitStreams action that leaves streams out (SyncAction::except) a group of the
  // streams it waits for, in the order of its group, the representation the builder made
  // before: the reference of the tests.
  void expand_stream_exclusions();
  std::uint32_t event_count() const { return event_count_; }
  // FIFO position of a GPU task on its stream (t - resource_first).
  std::uint32_t stream_position(TaskId t) const { return t - resource_begin_[resource_[t]]; }

  // The tasks an event of the trace became: an API call or annotation is every task from its
  // first to its last (nested events have tasks in between); a GPU op is one task.
  TaskId api_first(CudaApiIndex row) const { return api_first_[row]; }
  TaskId api_last(CudaApiIndex row) const { return api_last_[row]; }
  TaskId annotation_first(AnnotationIndex row) const { return annotation_first_[row]; }
  TaskId annotation_last(AnnotationIndex row) const { return annotation_last_[row]; }
  TaskId gpu_task(GpuOpIndex row) const { return gpu_task_[row]; }

  const GraphWarnings& warnings() const { return warnings_; }
  std::size_t memory_bytes() const;

 private:
  friend class DependencyGraphBuilder;
  TimeNs scaled_duration(TaskId t) const;

  std::vector<TaskId> resource_begin_; // resource_count + 1 offsets
  std::vector<std::uint8_t> resource_is_stream_;
  std::vector<ResourceId> resource_;
  std::vector<TaskKind> kind_;
  std::vector<std::uint8_t> flags_;
  std::vector<float> cpu_share_;
  std::vector<std::uint32_t> source_row_;
  std::vector<TimeNs> measured_start_, measured_end_, base_, gap_, add_;
  std::vector<float> ratio_;
  std::vector<std::uint32_t> start_in_, completion_in_;
  EdgeGraph edges_;
  std::vector<SyncAction> sync_actions_;
  std::vector<std::vector<ResourceId>> stream_groups_;
  std::vector<CollectiveMember> collective_members_;
  std::vector<std::uint32_t> collective_begin_; // collective_count + 1 offsets; empty: none
  // Calls f(link) for each link of a collective from `from`'s arrival to `to`'s completion not
  // cut yet, until f returns false; returns whether it went through all of them.
  template <class F>
  bool each_collective_link(TaskId from, TaskId to, F&& f) const;
  std::size_t collective_links_ = 0;
  std::vector<UnlinkedPeer> unlinked_peers_; // sorted
  std::uint32_t event_count_ = 0;
  std::vector<TaskId> api_first_, api_last_, annotation_first_, annotation_last_, gpu_task_;
  TimeNs run_begin_ = 0, run_end_ = 0;
  GraphWarnings warnings_;
  std::vector<TrackInfo> added_resources_;
  std::vector<std::pair<TaskId, std::string>> synthetic_names_; // sorted by task
  std::vector<std::pair<TaskId, TimeNs>> ready_base_; // blocking tasks that waited; sorted by task
};

// Builds the graph of a Trace (any source: tracer, importer, simulator).
DependencyGraph build_dependency_graph(const Trace& trace);

} // namespace dreamscope
