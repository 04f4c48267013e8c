// Pass 5, data pipeline: flows from the batch a thread prepared to the wait for it, and the
// CPU share of fetch, prep and wait pieces.
#include "../common/hand_trace.h"
#include "passes/passes.h"

#include <gtest/gtest.h>

namespace dreamscope {
namespace {

using graph_build::run_passes;
using test::annotation_row;
using test::HandTrace;

TEST(DataPipelinePass, AWaitIsFedByTheLatestBatchOfItsIdFinishedBeforeIt) {
  HandTrace h("");
  const TrackId main = h.thread(1), worker = h.thread(2), other = h.thread(3);
  h.annotation(worker, "prep 1 (epoch 0)", "prep", 0, 100, 1);
  h.annotation(other, "fetch 1 (epoch 1)", "fetch", 150, 400, 1);
  h.annotation(worker, "prep 1 (epoch 1)", "prep", 400, 600, 1);
  h.annotation(main, "wait 1", "wait", 500, 610, 1);
  h.annotation(main, "prep 2 on main", "prep", 620, 700, 2);
  h.annotation(main, "wait 2", "wait", 700, 710, 2); // its producer is on its own thread
  const Trace trace = h.build();
  const graph_build::GraphBuildState st = run_passes(trace, "data_pipeline");
  const TaskId wait1 = st.tasks.annotation_last[annotation_row(trace, "wait 1")];
  const TaskId producer = st.tasks.annotation_last[annotation_row(trace, "prep 1 (epoch 1)")];
  ASSERT_EQ(st.edges.ends.size(), 1u);
  EXPECT_EQ(st.edges.ends[0], (std::pair<std::uint32_t, std::uint32_t>{producer, wait1}));
  EXPECT_EQ(st.edges.info[0].kind, EdgeKind::Flow);
  EXPECT_EQ(st.wait_end[wait1], 600);
  EXPECT_TRUE(st.tasks.flags[wait1] & kTaskBlocking);
  EXPECT_EQ(st.wait_end[st.tasks.annotation_last[annotation_row(trace, "wait 2")]], kNoValue);
}

TEST(DataPipelinePass, CpuSharesOfFetchPrepAndWait) {
  HandTrace h("");
  const TrackId worker = h.thread(2), main = h.thread(1);
  h.annotation(worker, "fetch", "fetch", 0, 100, 1);              // storage I/O: no core
  h.annotation(worker, "prep", "prep", 100, 300, 1);
  h.annotation(worker, "prep cpu", "cpu", 300, 300, 50);          // 50 ns of CPU in 200 ns
  h.annotation(worker, "fetch measured", "fetch", 400, 500, 2);
  h.annotation(worker, "fetch measured cpu", "cpu", 500, 500, 25);
  h.annotation(main, "wait", "wait", 0, 310, 1);
  h.annotation(main, "forward", "operation", 310, 400);
  const Trace trace = h.build();
  const graph_build::GraphBuildState st = run_passes(trace, "data_pipeline");
  auto share = [&](std::string_view name) { return st.tasks.cpu_share[st.tasks.annotation_first[annotation_row(trace, name)]]; };
  EXPECT_EQ(share("fetch"), 0.0f);
  EXPECT_FLOAT_EQ(share("prep"), 0.25f);
  EXPECT_FLOAT_EQ(share("fetch measured"), 0.25f);
  EXPECT_EQ(share("wait"), 0.0f);
  EXPECT_EQ(share("forward"), 1.0f);
}

} // namespace
} // namespace dreamscope
