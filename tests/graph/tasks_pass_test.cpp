// Pass 1, tasks: how threads and streams are cut into tasks (dependency_graph_test.cpp has
// the nesting cases), and that no time an event may hold ends the cut early.
#include "../common/hand_trace.h"
#include "passes/passes.h"

#include <dreamscope/storage/limits.h>
#include <dreamscope/graph/graph.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace dreamscope {
namespace {

using graph_build::run_passes;
using test::annotation_row;
using test::api_row;
using test::gpu_row;
using test::HandTrace;

// The latest instant a Trace may hold (limits.h): INT64_MAX itself no longer loads, but the
// cut must close events at the bound as at any other time.
constexpr TimeNs kMaxTime = limits::kMaxAbsTimestampNs - 1;

TEST(TasksPass, StreamsKeepTheirOpsAndLeaveSyncRecordsOut) {
  HandTrace h;
  const TrackId t = h.thread(1);
  const TrackId s = h.stream(7);
  h.api(t, "cudaLaunchKernel", 100, 110, 1, 7);
  h.kernel(s, "k1", 120, 200, 1);
  h.gpu(s, GpuOpKind::Memcpy, "copy", 200, 250);
  h.gpu(s, GpuOpKind::Sync, "sync record", 250, 260);
  const Trace trace = h.build();
  const graph_build::GraphBuildState st = run_passes(trace, "tasks");
  const graph_build::TaskTable& tasks = st.tasks;
  ASSERT_EQ(tasks.end(s) - tasks.first(s), 2u);
  EXPECT_EQ(tasks.kind[tasks.first(s)], TaskKind::Kernel);
  EXPECT_EQ(tasks.kind[tasks.first(s) + 1], TaskKind::Memcpy);
  EXPECT_EQ(tasks.gpu_task[gpu_row(trace, "k1")], tasks.first(s));
  EXPECT_EQ(tasks.gpu_task[gpu_row(trace, "sync record")], kNoTask);
  EXPECT_EQ(st.warnings.sync_ops_skipped, 1);
  // The thread's first task is idle since the run's begin (the kernel's stream has none).
  EXPECT_EQ(tasks.gap[tasks.first(t)], 0);
  EXPECT_TRUE(std::all_of(st.wait_end.begin(), st.wait_end.end(), [](TimeNs w) { return w == kNoValue; }));
}

TEST(TasksPass, AThreadThatStartsLaterIsIdleSinceTheRunsBegin) {
  HandTrace h;
  const TrackId a = h.thread(1), b = h.thread(2);
  h.api(a, "cudaMalloc", 100, 200);
  h.api(b, "cudaFree", 350, 400);
  const Trace trace = h.build();
  const graph_build::TaskTable tasks = run_passes(trace, "tasks").tasks;
  EXPECT_EQ(tasks.gap[tasks.first(a)], 0);
  EXPECT_EQ(tasks.gap[tasks.first(b)], 250);
}

// issue 13: a call ending at INT64_MAX (a fuzzed Kineto trace) was never closed, because the
// cut used INT64_MAX as "no more boundaries", and the sync pass then read its last task,
// kNoTask, out of bounds. The cut now stops when every event is closed, whatever the times.
TEST(TasksPass, EventsEndingAtTheLargestTimeAreClosed) {
  HandTrace h;
  const TrackId t = h.thread(1);
  const TrackId s = h.stream(7);
  h.annotation(t, "forever", "operation", kMaxTime - 1000, kMaxTime);
  h.api(t, "cudaMemcpy", kMaxTime - 807, kMaxTime, 5, 7);
  h.api(t, "cudaDeviceSynchronize", kMaxTime, kMaxTime); // starts at the largest time too
  h.gpu(s, GpuOpKind::Memcpy, "copy", kMaxTime - 500, kMaxTime - 100, 5);
  const Trace trace = h.build();
  const graph_build::TaskTable tasks = run_passes(trace, "tasks").tasks;
  const CudaApiIndex copy_call = api_row(trace, "cudaMemcpy"), sync = api_row(trace, "cudaDeviceSynchronize");
  ASSERT_NE(tasks.api_last[copy_call], kNoTask);
  EXPECT_EQ(tasks.measured_end[tasks.api_last[copy_call]], kMaxTime);
  ASSERT_NE(tasks.api_first[sync], kNoTask);
  EXPECT_EQ(tasks.api_first[sync], tasks.api_last[sync]);
  const AnnotationIndex forever = annotation_row(trace, "forever");
  ASSERT_NE(tasks.annotation_last[forever], kNoTask);
  EXPECT_EQ(tasks.measured_start[tasks.annotation_first[forever]], kMaxTime - 1000);
  EXPECT_EQ(tasks.end(t) - tasks.first(t), 3u); // forever's own piece, the copy call, the sync

  // The whole build links the blocking copy to its copy and the sync to the stream.
  const DependencyGraph g = build_dependency_graph(trace);
  const TaskId call = g.api_last(copy_call);
  EXPECT_EQ(g.completion_in_degree(call), 1u);
  EXPECT_TRUE(g.blocking(call));
  EXPECT_EQ(g.base_duration(call), 100); // what it took after its copy ended
  ASSERT_EQ(g.sync_actions().size(), 1u);
  EXPECT_EQ(g.sync_actions()[0].op, SyncOp::WaitStreams);
}

// An event that ends while one opened after it is still open leaves the later one the owner
// of what follows, however deep the stack of open events (issue 38: the cut keeps open
// events on a stack and in a heap by end, no longer in one list it scanned per boundary).
TEST(TasksPass, AnEventEndingUnderALaterOneLeavesTheInnermostStillOpenTheOwner) {
  HandTrace h;
  const TrackId t = h.thread(1);
  h.annotation(t, "a", "operation", 0, 40);
  h.annotation(t, "b", "operation", 5, 30);
  h.api(t, "cudaMemcpy", 10, 50);
  h.annotation(t, "d", "operation", 12, 20);
  const Trace trace = h.build();
  const graph_build::TaskTable tasks = run_passes(trace, "tasks").tasks;
  const AnnotationIndex a = annotation_row(trace, "a"), b = annotation_row(trace, "b"), d = annotation_row(trace, "d");
  const CudaApiIndex copy = api_row(trace, "cudaMemcpy");
  struct Piece {
    TimeNs start, end;
    TaskKind kind;
    std::uint32_t row; // of the table `kind` says
    bool operator==(const Piece&) const = default;
  };
  std::vector<Piece> cut;
  for (TaskId k = tasks.first(t); k < tasks.end(t); ++k) {
    cut.push_back({tasks.measured_start[k], tasks.measured_end[k], tasks.kind[k], tasks.source_row[k]});
  }
  const std::vector<Piece> expected = {
      {0, 5, TaskKind::Annotation, a},   {5, 10, TaskKind::Annotation, b}, {10, 12, TaskKind::CudaApi, copy},
      {12, 20, TaskKind::Annotation, d}, {20, 30, TaskKind::CudaApi, copy}, {30, 40, TaskKind::CudaApi, copy},
      {40, 50, TaskKind::CudaApi, copy}};
  ASSERT_EQ(cut.size(), expected.size());
  EXPECT_TRUE(cut == expected);
  EXPECT_EQ(tasks.measured_end[tasks.annotation_last[b]], 30);
  EXPECT_EQ(tasks.measured_end[tasks.annotation_last[a]], 40);
  EXPECT_EQ(tasks.measured_start[tasks.annotation_first[d]], 12);
  EXPECT_EQ(tasks.measured_end[tasks.api_last[copy]], 50);
}

// Many events that nest, overlap and share ends, checked against the rule itself: a piece
// belongs to the event that started last among those open over it (starts are distinct
// here, so that is one event), and each event's first and last pieces meet its start and end.
TEST(TasksPass, EachPieceOfATangleOfRangesBelongsToTheLatestStartedOpenEvent) {
  HandTrace h;
  const TrackId t = h.thread(1);
  struct Event {
    TimeNs start, end;
    bool api;
  };
  std::vector<Event> events;
  std::uint64_t seed = 38;
  auto next = [&](std::uint64_t bound) {
    seed = seed * 6364136223846793005u + 1442695040888963407u;
    return static_cast<TimeNs>((seed >> 33) % bound);
  };
  for (int k = 0; k < 400; ++k) {
    const TimeNs start = 10 * k + 1;
    const TimeNs end = start + 10 * next(60); // ends land on multiples of 10 plus 1: many tie
    events.push_back({start, end, next(3) == 0});
    const std::string name = "e" + std::to_string(k);
    if (events.back().api) {
      h.api(t, name, start, end);
    } else {
      h.annotation(t, name, "operation", start, end);
    }
  }
  const Trace trace = h.build();
  const graph_build::TaskTable tasks = run_passes(trace, "tasks").tasks;
  TimeNs at = events.front().start;
  for (TaskId k = tasks.first(t); k < tasks.end(t); ++k) {
    ASSERT_EQ(tasks.measured_start[k], at);
    const TimeNs s = tasks.measured_start[k], e = tasks.measured_end[k];
    at = e;
    if (s == e) continue; // a zero-length event's own piece
    int owner = -1;
    for (int x = 0; x < static_cast<int>(events.size()); ++x) {
      if (events[x].start <= s && events[x].end > s) owner = x; // starts ascend: the last wins
    }
    if (owner < 0) {
      EXPECT_EQ(tasks.kind[k], TaskKind::CpuWork) << "piece at " << s;
      continue;
    }
    const std::string name = "e" + std::to_string(owner);
    const bool api = events[owner].api;
    ASSERT_EQ(tasks.kind[k], api ? TaskKind::CudaApi : TaskKind::Annotation) << "piece at " << s;
    EXPECT_EQ(tasks.source_row[k], api ? api_row(trace, name) : annotation_row(trace, name)) << "piece at " << s;
    EXPECT_LE(e, events[owner].end);
  }
  for (int x = 0; x < static_cast<int>(events.size()); ++x) {
    const std::string name = "e" + std::to_string(x);
    const std::uint32_t row = events[x].api ? api_row(trace, name) : annotation_row(trace, name);
    const auto& first = events[x].api ? tasks.api_first : tasks.annotation_first;
    const auto& last = events[x].api ? tasks.api_last : tasks.annotation_last;
    ASSERT_NE(last[row], kNoTask) << name;
    EXPECT_EQ(tasks.measured_start[first[row]], events[x].start) << name;
    EXPECT_EQ(tasks.measured_end[last[row]], events[x].end) << name;
  }
}

} // namespace
} // namespace dreamscope
