// Pass 3, CUDA synchronization: every sync call becomes a SyncAction, resolved while
// simulating (docs/simulation.md, "Synchronization is symbolic"); a blocking copy becomes a
// sync edge from its copy. The targets a sync would resolve to in the measured run are
// checked against its measured return, and a wait that cannot have happened (the target ended
// after the call returned) is left out rather than bend the replay.
//
// Reads: TaskTable; Launches (issue order); the Trace's calls with their stream and event
//   columns, and its GPU sync records (the stream of a stream sync whose call names none).
// Writes: Synchronization, all of it (actions sorted by task, stream groups, event count,
//   stream_barrier: when a stream wait's next task could start, as measured); sync edges
//   (blocking copies); wait_end and kTaskBlocking (note_wait) and kTaskHasSync flags;
//   warnings sync_target_after_return, unknown_sync_stream, unresolved_event.
#include "passes.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

namespace dreamscope::graph_build {
namespace {

enum class CallRole : std::uint8_t { Plain, DeviceSync, StreamSync, EventSync, EventRecord, StreamWaitEvent, BlockingCopy };

CallRole classify(std::string_view name) {
  std::string_view rest = name;
  for (std::string_view prefix : {"cuda", "hip", "cu"}) {
    if (rest.starts_with(prefix)) {
      rest.remove_prefix(prefix.size());
      break;
    }
  }
  if (rest.size() == name.size()) return CallRole::Plain;
  if (rest.starts_with("DeviceSynchronize") || rest.starts_with("CtxSynchronize") ||
      rest.starts_with("ThreadSynchronize")) {
    return CallRole::DeviceSync;
  }
  if (rest.starts_with("StreamSynchronize")) return CallRole::StreamSync;
  if (rest.starts_with("EventSynchronize")) return CallRole::EventSync;
  if (rest.starts_with("EventRecord")) return CallRole::EventRecord;
  if (rest.starts_with("StreamWaitEvent")) return CallRole::StreamWaitEvent;
  if (rest.starts_with("Memcpy") && rest.find("Async") == std::string_view::npos) return CallRole::BlockingCopy;
  return CallRole::Plain;
}

class SyncLinker {
 public:
  explicit SyncLinker(GraphBuildState& s) : s_(s), trace_(s.trace), tasks_(s.tasks), sync_(s.sync) {}

  void run() {
    const auto& api = trace_.cuda_api();
    sync_.stream_barrier.assign(tasks_.size(), kNoValue);
    std::vector<CallRole> role_of_name(trace_.strings().size(), CallRole::Plain);
    for (StringId id = 0; id < trace_.strings().size(); ++id) role_of_name[id] = classify(trace_.str(id));

    std::vector<CudaApiIndex> calls;
    for (CudaApiIndex row{0}; row < api.size(); ++row) {
      if (role_of_name[api.name[row]] != CallRole::Plain && tasks_.api_first[row] != kNoTask) calls.push_back(row);
    }
    std::sort(calls.begin(), calls.end(), [&](CudaApiIndex a, CudaApiIndex b) { return api.start[a] < api.start[b]; });
    find_whole_process_waits(calls, role_of_name);
    for (CudaApiIndex row : calls) link(row, role_of_name[api.name[row]]);
    for (const auto& a : sync_.actions) s_.tasks.flags[a.task] |= kTaskHasSync;
    std::stable_sort(sync_.actions.begin(), sync_.actions.end(),
                     [](const SyncAction& a, const SyncAction& b) { return a.task < b.task; });
  }

 private:
  // Waits act in the call's last piece, records and stream waits in its first.
  void link(CudaApiIndex row, CallRole role) {
    const auto& api = trace_.cuda_api();
    const ResourceId thread = api.track[row];
    const TaskId first = tasks_.api_first[row], last = tasks_.api_last[row];
    const TimeNs start = api.start[row], end = tasks_.measured_end[last];
    const std::uint32_t process = process_of(trace_, thread);
    auto event_of = [&]() -> std::optional<std::uint32_t> {
      if (api.event[row] == kNoValue) {
        // A record no known wait refers to changes nothing; a wait without its event does.
        if (role != CallRole::EventRecord) ++s_.warnings.unresolved_event;
        return std::nullopt;
      }
      const std::uint32_t e = event_index(process, api.event[row]);
      if (e >= event_target_.size()) event_target_.resize(e + 1, kNoTask);
      return e;
    };
    switch (role) {
      case CallRole::Plain: break;
      case CallRole::DeviceSync:
      case CallRole::StreamSync: {
        std::vector<ResourceId> streams;
        if (role == CallRole::StreamSync) {
          const ResourceId st = synced_stream(row);
          if (st != kNoIndex) {
            streams.push_back(st);
          } else {
            ++s_.warnings.unknown_sync_stream;
          }
        }
        if (streams.empty()) {
          link_whole_process_wait(row, last);
          break;
        }
        std::vector<ResourceId> kept;
        for (ResourceId st : streams) {
          const TaskId target = s_.launches.issued_before(tasks_, st, tasks_.measured_start[last]);
          if (target != kNoTask && tasks_.measured_end[target] > end) {
            ++s_.warnings.sync_target_after_return;
            continue;
          }
          if (target != kNoTask) s_.note_wait(last, tasks_.measured_end[target]);
          kept.push_back(st);
        }
        if (kept.empty()) break;
        s_.tasks.flags[last] |= kTaskBlocking;
        sync_.actions.push_back({.task = last, .op = SyncOp::WaitStreams, .streams = stream_group(std::move(kept))});
        break;
      }
      case CallRole::EventSync: {
        auto e = event_of();
        if (!e) break;
        const TaskId target = event_target_[*e];
        if (target != kNoTask && tasks_.measured_end[target] > end) {
          ++s_.warnings.sync_target_after_return;
          break;
        }
        if (target != kNoTask) s_.note_wait(last, tasks_.measured_end[target]);
        s_.tasks.flags[last] |= kTaskBlocking;
        sync_.actions.push_back({.task = last, .op = SyncOp::WaitEvent, .event = *e});
        break;
      }
      case CallRole::EventRecord: {
        auto e = event_of();
        const ResourceId st = find_stream(s_, thread, api.stream[row]);
        if (!e) break;
        if (st == kNoIndex) {
          ++s_.warnings.unknown_sync_stream;
          break;
        }
        event_target_[*e] = s_.launches.issued_before(tasks_, st, start);
        sync_.actions.push_back({.task = first, .op = SyncOp::RecordEvent, .stream = st, .event = *e});
        break;
      }
      case CallRole::StreamWaitEvent: {
        auto e = event_of();
        const ResourceId st = find_stream(s_, thread, api.stream[row]);
        if (!e) break;
        if (st == kNoIndex) {
          ++s_.warnings.unknown_sync_stream;
          break;
        }
        const TaskId target = event_target_[*e];
        const TaskId next = s_.launches.issued_from(tasks_, st, start);
        if (target != kNoTask && next != kNoTask) {
          if (tasks_.measured_start[next] < tasks_.measured_end[target]) {
            ++s_.warnings.sync_target_after_return;
            break;
          }
          sync_.stream_barrier[next] = std::max(sync_.stream_barrier[next], tasks_.measured_end[target]);
        }
        sync_.actions.push_back({.task = first, .op = SyncOp::StreamWaitEvent, .stream = st, .event = *e});
        break;
      }
      case CallRole::BlockingCopy: {
        if (api.correlation[row] == kNoValue) break;
        for (GpuOpIndex op : trace_.gpu_ops_with_correlation(api.correlation[row])) {
          const TaskId copy = tasks_.gpu_task[op];
          if (copy == kNoTask) continue;
          if (tasks_.measured_end[copy] > end) {
            ++s_.warnings.sync_target_after_return;
            continue;
          }
          s_.edges.add(copy, last, EdgeKind::Sync, 0);
          s_.note_wait(last, tasks_.measured_end[copy]);
        }
        break;
      }
    }
  }

  // The stream a stream sync names, or its GPU sync record does; kNoIndex if neither does.
  ResourceId synced_stream(CudaApiIndex row) {
    const auto& api = trace_.cuda_api();
    const ResourceId st = find_stream(s_, api.track[row], api.stream[row]);
    return st != kNoIndex ? st : stream_from_sync_record(api.correlation[row]);
  }

  // A wait for every stream of its process (a device sync, or a stream sync whose stream is
  // not known): it waits for the last task issued to each before its last piece started, as
  // measured; one whose task ended after the call returned cannot have been waited for, and
  // is left out. Looking at every stream for every such call cost syncs × streams (device_syncs
  // in bench/complexity.py), so the calls of each process are answered together: in order of
  // their last piece's start, while the issues of the process's streams are swept in order of
  // time, with the ends of the streams' current targets in an ordered set. A call costs
  // O(log n), plus the streams it leaves out (SyncAction::except).
  struct WholeWait {
    TimeNs max_end = kNoValue;          // the latest end of the targets it waits for; kNoValue: none
    std::vector<ResourceId> left_out;   // streams whose target ended after the call returned
  };
  void find_whole_process_waits(const std::vector<CudaApiIndex>& calls, const std::vector<CallRole>& role_of_name) {
    const auto& api = trace_.cuda_api();
    struct Query {
      TimeNs at, end;
      CudaApiIndex row;
    };
    std::map<const std::vector<ResourceId>*, std::vector<Query>> by_list;
    for (CudaApiIndex row : calls) {
      const CallRole role = role_of_name[api.name[row]];
      if (role != CallRole::DeviceSync && (role != CallRole::StreamSync || synced_stream(row) != kNoIndex)) continue;
      const TaskId last = tasks_.api_last[row];
      by_list[&streams_of_process(s_, api.track[row])].push_back(
          {tasks_.measured_start[last], tasks_.measured_end[last], row});
    }
    for (auto& [list, queries] : by_list) {
      struct Issue {
        TimeNs at;
        ResourceId stream;
        TaskId target;
      };
      std::vector<Issue> issues;
      for (ResourceId r : *list) {
        const IssueOrder& io = s_.launches.issue_order[r];
        for (std::size_t k = 0; k < io.time.size(); ++k) issues.push_back({io.time[k], r, tasks_.first(r) + io.max_position[k]});
      }
      std::stable_sort(issues.begin(), issues.end(), [](const Issue& a, const Issue& b) { return a.at < b.at; });
      std::stable_sort(queries.begin(), queries.end(), [](const Query& a, const Query& b) { return a.at < b.at; });
      std::map<ResourceId, TimeNs> target_end; // per stream with a target: its end
      std::set<std::pair<TimeNs, ResourceId>> ends;
      std::size_t next = 0;
      for (const Query& q : queries) {
        for (; next < issues.size() && issues[next].at < q.at; ++next) { // issued strictly before
          const Issue& issue = issues[next];
          auto [it, fresh] = target_end.try_emplace(issue.stream, tasks_.measured_end[issue.target]);
          if (!fresh) {
            ends.erase({it->second, issue.stream});
            it->second = tasks_.measured_end[issue.target];
          }
          ends.insert({it->second, issue.stream});
        }
        WholeWait& w = whole_waits_[q.row];
        auto after = ends.upper_bound({q.end, std::numeric_limits<ResourceId>::max()});
        for (auto it = after; it != ends.end(); ++it) w.left_out.push_back(it->second);
        std::sort(w.left_out.begin(), w.left_out.end());
        if (after != ends.begin()) w.max_end = std::prev(after)->first;
      }
    }
  }
  void link_whole_process_wait(CudaApiIndex row, TaskId last) {
    const std::vector<ResourceId>& streams = streams_of_process(s_, trace_.cuda_api().track[row]);
    const WholeWait& w = whole_waits_.at(row);
    s_.warnings.sync_target_after_return += static_cast<std::int64_t>(w.left_out.size());
    if (w.left_out.size() == streams.size()) return; // nothing left to wait for
    if (w.max_end != kNoValue) s_.note_wait(last, w.max_end);
    s_.tasks.flags[last] |= kTaskBlocking;
    auto [it, fresh] = whole_group_.try_emplace(&streams, 0);
    if (fresh) it->second = stream_group(streams);
    // The streams left out are named, not the others: listing the others cost each such call
    // the process's streams, N calls over N streams N² (left_out_syncs in bench/complexity.py),
    // and gave each call a group of its own that the simulator could not index.
    const std::uint32_t except = w.left_out.empty() ? kNoIndex : stream_group(w.left_out);
    sync_.actions.push_back({.task = last, .op = SyncOp::WaitStreams, .streams = it->second, .except = except});
  }

  // The stream a sync call waited on when the call itself does not say: the GPU sync record
  // with the same correlation id names it, unless it is a context-wide one.
  ResourceId stream_from_sync_record(std::int64_t correlation) const {
    if (correlation == kNoValue) return kNoIndex;
    for (GpuOpIndex op : trace_.gpu_ops_with_correlation(correlation)) {
      if (trace_.gpu_ops().kind[op] != GpuOpKind::Sync) continue;
      const TrackId track = trace_.gpu_ops().track[op];
      if (trace_.tracks()[track].stream == kContextWideStream) return kNoIndex;
      return track;
    }
    return kNoIndex;
  }

  std::uint32_t stream_group(std::vector<ResourceId> streams) {
    auto [it, inserted] = group_ids_.try_emplace(streams, static_cast<std::uint32_t>(sync_.stream_groups.size()));
    if (inserted) sync_.stream_groups.push_back(std::move(streams));
    return it->second;
  }

  // CUDA event handles are per process: the dense index of (process, handle).
  std::uint32_t event_index(std::uint32_t process, std::int64_t event) {
    auto [it, inserted] = event_ids_.try_emplace({process, event}, sync_.event_count);
    if (inserted) ++sync_.event_count;
    return it->second;
  }

  GraphBuildState& s_;
  const Trace& trace_;
  const TaskTable& tasks_;
  Synchronization& sync_;
  std::vector<TaskId> event_target_; // as measured, by dense event index
  std::map<std::vector<ResourceId>, std::uint32_t> group_ids_;
  std::map<const std::vector<ResourceId>*, std::uint32_t> whole_group_; // a process's streams: their group
  std::unordered_map<CudaApiIndex, WholeWait> whole_waits_;             // by call
  std::map<std::pair<std::uint32_t, std::int64_t>, std::uint32_t> event_ids_;
};

} // namespace

void add_cuda_synchronization(GraphBuildState& s) { SyncLinker(s).run(); }

} // namespace dreamscope::graph_build
