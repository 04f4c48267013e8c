// Pass 7, process starts: a child process of the trace starts when its parent forked it.
#include "passes/passes.h"

#include <dreamscope/dependency_graph.h>
#include <dreamscope/trace.h>

#include <gtest/gtest.h>

#include <string>

namespace dreamscope {
namespace {

using graph_build::run_passes;

void range(TraceBuilder& b, TrackId track, const std::string& name, TimeNs start, TimeNs end) {
  AnnotationRecord a;
  a.track = track;
  a.name = b.intern(name);
  a.category = b.intern("operation");
  a.start = start;
  a.end = end;
  b.add(a);
}

EventIndex annotation_named(const Trace& t, const std::string& name) {
  for (EventIndex i = 0; i < t.annotations().size(); ++i) {
    if (t.str(t.annotations().name[i]) == name) return i;
  }
  return kNoIndex;
}

// A parent (pid 100) forks a worker (pid 101) at 5 µs, in the middle of its "forking" range;
// a process whose parent is not in the trace (pid 200, parent 1) keeps its measured start.
Trace forked_worker() {
  TraceBuilder b;
  const auto parent = b.add_process(ProcessInfo{.pid = 100, .name = "train", .start = 0});
  const auto child = b.add_process(ProcessInfo{.pid = 101, .parent_pid = 100, .name = "worker", .start = 5'000});
  const auto stranger = b.add_process(ProcessInfo{.pid = 200, .parent_pid = 1, .name = "other", .start = 1'000});
  const TrackId main = b.thread_track(parent, 100, "train");
  range(b, main, "before", 0, 4'000);
  range(b, main, "forking", 4'000, 6'000);
  range(b, main, "after", 6'000, 9'000);
  range(b, b.thread_track(child, 101, "worker"), "work", 7'000, 8'000);
  range(b, b.thread_track(stranger, 200, "other"), "elsewhere", 2'000, 3'000);
  return std::move(b).build();
}

TEST(ProcessStartsPass, AChildStartsAtItsMeasuredDelayAfterItsParentsTask) {
  const Trace trace = forked_worker();
  const graph_build::GraphBuildState before = run_passes(trace, "inferred_waits");
  const graph_build::GraphBuildState st = run_passes(trace, "process_starts");
  const TaskId forking = st.tasks.annotation_first[annotation_named(trace, "forking")];
  const TaskId work = st.tasks.annotation_first[annotation_named(trace, "work")];
  const TaskId elsewhere = st.tasks.annotation_first[annotation_named(trace, "elsewhere")];
  ASSERT_EQ(st.edges.ends.size(), before.edges.ends.size() + 1);
  const std::size_t k = st.edges.ends.size() - 1;
  EXPECT_EQ(st.edges.ends[k], (std::pair<std::uint32_t, std::uint32_t>{forking, work}));
  EXPECT_EQ(st.edges.info[k].kind, EdgeKind::Handoff);
  EXPECT_EQ(st.edges.info[k].delay, 3'000);
  EXPECT_EQ(before.tasks.gap[work], 7'000);
  EXPECT_EQ(st.tasks.gap[work], 0);
  EXPECT_EQ(st.tasks.gap[elsewhere], 2'000) << "no parent in the trace: its measured start";
}

} // namespace
} // namespace dreamscope
