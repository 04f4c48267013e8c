// Pass 7, blocking residuals: a task that waited keeps only what it took after the wait, and
// what it takes when it need not wait is what its siblings that did not wait took.
#include "../common/hand_trace.h"
#include "passes/passes.h"

#include <gtest/gtest.h>

namespace dreamscope {
namespace {

using graph_build::run_passes;
using test::api_row;
using test::HandTrace;

TEST(BlockingResidualsPass, BaseIsWhatATaskTookAfterItsWait) {
  HandTrace h;
  const TrackId t = h.thread(1);
  const TrackId s = h.stream(7);
  h.api(t, "launch", 0, 10, 1, 7);
  h.kernel(s, "k", 20, 500, 1);
  h.api(t, "cudaStreamSynchronize", 100, 530, kNoValue, 7); // waited until 500, then 30
  h.api(t, "launch2", 600, 610, 2, 7);
  h.kernel(s, "k2", 620, 700, 2);
  h.api(t, "cudaStreamSynchronize", 800, 820, kNoValue, 7); // k2 long done: 20, no wait
  h.api(t, "launch3", 900, 910, 3, 7);
  h.kernel(s, "k3", 920, 1000, 3);
  h.api(t, "cudaStreamSynchronize", 1100, 1110, kNoValue, 7); // no wait: 10
  const Trace trace = h.build();
  graph_build::GraphBuildState st = run_passes(trace, "inferred_waits");
  const TaskId waited = st.tasks.api_last[api_row(trace, "cudaStreamSynchronize")];
  ASSERT_EQ(st.tasks.base[waited], 430); // as measured until this pass
  graph_build::set_blocking_residuals(st);
  EXPECT_EQ(st.tasks.base[waited], 30);
  // The syncs that found their stream done keep their measured time; their median (of 20
  // and 10, the upper one) is what the one that waited takes when it need not.
  ASSERT_EQ(st.ready_base.size(), 1u);
  EXPECT_EQ(st.ready_base[0], (std::pair<TaskId, TimeNs>{waited, 20}));
  const DependencyGraph g = build_dependency_graph(trace);
  EXPECT_EQ(g.ready_duration(g.api_last(api_row(trace, "cudaStreamSynchronize"))), 20);
}

} // namespace
} // namespace dreamscope
