// Pass 7, process starts: a child process of the trace starts when its parent forked it.
#include "../common/hand_trace.h"
#include "passes/passes.h"

#include <gtest/gtest.h>

namespace dreamscope {
namespace {

using graph_build::run_passes;
using test::annotation_row;
using test::HandTrace;

// The traced process (pid 1000) forks a worker at 5 µs, in the middle of its "forking" range;
// a process whose parent is not in the trace (pid 200, parent 1) keeps its measured start.
Trace forked_worker() {
  HandTrace h("");
  const TrackId main = h.thread(1000);
  const auto child = h.process(ProcessInfo{.pid = 1001, .parent_pid = 1000, .name = "worker", .start = 5'000});
  const auto stranger = h.process(ProcessInfo{.pid = 200, .parent_pid = 1, .name = "other", .start = 1'000});
  h.annotation(main, "before", "operation", 0, 4'000);
  h.annotation(main, "forking", "operation", 4'000, 6'000);
  h.annotation(main, "after", "operation", 6'000, 9'000);
  h.annotation(h.thread(child, 1001), "work", "operation", 7'000, 8'000);
  h.annotation(h.thread(stranger, 200), "elsewhere", "operation", 2'000, 3'000);
  return h.build();
}

TEST(ProcessStartsPass, AChildStartsAtItsMeasuredDelayAfterItsParentsTask) {
  const Trace trace = forked_worker();
  const graph_build::GraphBuildState before = run_passes(trace, "inferred_waits");
  const graph_build::GraphBuildState st = run_passes(trace, "process_starts");
  const TaskId forking = st.tasks.annotation_first[annotation_row(trace, "forking")];
  const TaskId work = st.tasks.annotation_first[annotation_row(trace, "work")];
  const TaskId elsewhere = st.tasks.annotation_first[annotation_row(trace, "elsewhere")];
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
