// The graph's structure: how a thread's timeline is cut into tasks, which edges and syncs a
// trace yields, and what the builder reports when the trace contradicts itself.
#include "../common/hand_trace.h"

#include <dreamscope/graph/graph.h>

#include <gtest/gtest.h>

namespace dreamscope {
namespace {

using test::annotation_row;
using test::api_row;
using test::gpu_row;
using test::HandTrace;

struct Piece {
  TaskKind kind;
  TimeNs start, end;
  bool operator==(const Piece&) const = default;
};
std::ostream& operator<<(std::ostream& os, const Piece& p) {
  return os << to_string(p.kind) << " [" << p.start << ", " << p.end << ")";
}

std::vector<Piece> pieces(const DependencyGraph& g, ResourceId r) {
  std::vector<Piece> out;
  for (TaskId t = g.resource_first(r); t < g.resource_end(r); ++t) {
    out.push_back({g.kind(t), g.measured_start(t), g.measured_end(t)});
  }
  return out;
}

TEST(DependencyGraph, ThreadIsCutAtEveryBoundaryAndTheInnermostEventOwnsEachPiece) {
  HandTrace h;
  const TrackId t = h.thread(1);
  h.annotation(t, "outer", "operation", 0, 100);
  h.annotation(t, "inner", "operation", 10, 60);
  h.api(t, "cudaLaunchKernel", 20, 30);
  h.api(t, "cuLaunchKernel", 22, 28); // a driver call inside the runtime call
  h.annotation(t, "mark", "operation", 70, 70); // zero length: a marker
  h.annotation(t, "later", "operation", 150, 160);
  const Trace trace = h.build();
  const DependencyGraph g = build_dependency_graph(trace);
  const std::vector<Piece> expected = {
      {TaskKind::Annotation, 0, 10},  {TaskKind::Annotation, 10, 20}, {TaskKind::CudaApi, 20, 22},
      {TaskKind::CudaApi, 22, 28},    {TaskKind::CudaApi, 28, 30},    {TaskKind::Annotation, 30, 60},
      {TaskKind::Annotation, 60, 70}, {TaskKind::Annotation, 70, 70}, {TaskKind::Annotation, 70, 100},
      {TaskKind::CpuWork, 100, 150},  {TaskKind::Annotation, 150, 160}};
  EXPECT_EQ(pieces(g, t), expected);
  const CudaApiIndex runtime = api_row(trace, "cudaLaunchKernel");
  EXPECT_EQ(g.measured_start(g.api_first(runtime)), 20);
  EXPECT_EQ(g.measured_end(g.api_last(runtime)), 30);
  const AnnotationIndex mark = annotation_row(trace, "mark");
  EXPECT_EQ(g.annotation_first(mark), g.annotation_last(mark));
  EXPECT_EQ(g.measured_end(g.annotation_last(annotation_row(trace, "outer"))), 100);
  EXPECT_EQ(g.gap(g.resource_first(t)), 0);
}

TEST(DependencyGraph, RangesThatDoNotNestStillEndOnTaskBoundaries) {
  HandTrace h;
  const TrackId t = h.thread(1);
  h.annotation(t, "a", "operation", 0, 50);
  h.annotation(t, "b", "operation", 30, 80);
  const Trace trace = h.build();
  const DependencyGraph g = build_dependency_graph(trace);
  const std::vector<Piece> expected = {
      {TaskKind::Annotation, 0, 30}, {TaskKind::Annotation, 30, 50}, {TaskKind::Annotation, 50, 80}};
  EXPECT_EQ(pieces(g, t), expected);
  EXPECT_EQ(g.measured_end(g.annotation_last(annotation_row(trace, "a"))), 50);
  EXPECT_EQ(g.source_row(g.resource_first(t) + 1), annotation_row(trace, "b"));
}

TEST(DependencyGraph, EdgesAndSyncsOfATrainingStep) {
  HandTrace h;
  const TrackId main = h.thread(1), worker = h.thread(2);
  const TrackId s = h.stream(7), copy = h.stream(8);
  h.annotation(worker, "prep", "prep", 0, 90, 4);
  h.annotation(main, "wait", "wait", 0, 100, 4);
  h.api(main, "cudaMemcpyAsync", 100, 110, 1, 8);
  h.gpu(copy, GpuOpKind::Memcpy, "h2d", 115, 140, 1);
  h.api(main, "cudaEventRecord", 111, 112, kNoValue, 8, 1);
  h.api(main, "cudaStreamWaitEvent", 113, 114, kNoValue, 7, 1);
  h.api(main, "cudaLaunchKernel", 120, 130, 2, 7);
  h.kernel(s, "k", 142, 300, 2);
  h.api(main, "cudaDeviceSynchronize", 131, 305);
  h.gpu(s, GpuOpKind::Sync, "sync record", 131, 305, kNoValue);
  const Trace trace = h.build();
  const DependencyGraph g = build_dependency_graph(trace);
  EXPECT_EQ(g.edge_count(), 3u); // two launches, one flow
  EXPECT_EQ(g.warnings().sync_ops_skipped, 1);
  EXPECT_EQ(g.gpu_task(gpu_row(trace, "sync record")), kNoTask);
  ASSERT_EQ(g.sync_actions().size(), 3u);
  std::vector<SyncOp> ops;
  for (const auto& a : g.sync_actions()) ops.push_back(a.op);
  EXPECT_EQ(ops, (std::vector<SyncOp>{SyncOp::RecordEvent, SyncOp::StreamWaitEvent, SyncOp::WaitStreams}));
  const SyncAction& device_sync = g.sync_actions()[2];
  EXPECT_EQ(g.stream_groups()[device_sync.streams], (std::vector<ResourceId>{s, copy}));
  EXPECT_EQ(g.event_count(), 1u);
  const TaskId k = g.gpu_task(gpu_row(trace, "k"));
  EXPECT_EQ(g.gap(k), 2); // after the copy it waited for, by the event
  const TaskId wait = g.annotation_last(annotation_row(trace, "wait"));
  EXPECT_TRUE(g.blocking(wait));
  EXPECT_EQ(g.completion_in_degree(wait), 1u);
  EXPECT_EQ(g.base_duration(wait), 10);
  bool flow = false;
  for (auto [e, end] = boost::edges(g.edges()); e != end; ++e) {
    if (g.edges()[*e].kind == EdgeKind::Flow) {
      flow = true;
      EXPECT_EQ(boost::source(*e, g.edges()), g.annotation_last(annotation_row(trace, "prep")));
      EXPECT_EQ(boost::target(*e, g.edges()), wait);
    }
  }
  EXPECT_TRUE(flow);
  EXPECT_GT(g.memory_bytes(), g.task_count() * 40);
}

TEST(DependencyGraph, ContradictionsAreCountedNotLinked) {
  HandTrace h;
  const TrackId t = h.thread(1);
  const TrackId s = h.stream(7);
  h.api(t, "launch", 100, 110, 1, 7);
  h.kernel(s, "early", 90, 200, 1);                 // starts before its launch call
  h.api(t, "cudaStreamSynchronize", 120, 150, kNoValue, 7); // returns before the kernel ends
  h.api(t, "cudaEventSynchronize", 160, 170);       // no event id
  const Trace trace = h.build();
  const DependencyGraph g = build_dependency_graph(trace);
  EXPECT_EQ(g.warnings().gpu_op_before_launch, 1);
  EXPECT_EQ(g.warnings().sync_target_after_return, 1);
  EXPECT_EQ(g.warnings().unresolved_event, 1);
  EXPECT_TRUE(g.sync_actions().empty());
  EXPECT_FALSE(g.blocking(g.api_last(api_row(trace, "cudaStreamSynchronize"))));
  EXPECT_NE(g.warnings().describe().find("before their launch call"), std::string::npos);
}

TEST(DependencyGraph, KnobsSetTheDuration) {
  HandTrace h;
  const TrackId t = h.thread(1);
  h.api(t, "cudaFree", 0, 100);
  const Trace trace = h.build();
  DependencyGraph g = build_dependency_graph(trace);
  EXPECT_EQ(g.duration(0), 100);
  g.scale(0, 1.5, 10);
  EXPECT_EQ(g.duration(0), 160);
  g.scale(0, 0.5, -80);
  EXPECT_EQ(g.duration(0), 0); // never negative
  g.scale(0, 1.0, 0);
  g.set_removed(0, true);
  EXPECT_EQ(g.duration(0), 0);
  EXPECT_TRUE(g.removed(0));
}

} // namespace
} // namespace dreamscope
