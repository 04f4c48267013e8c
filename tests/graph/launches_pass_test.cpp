// Pass 2, launches: each GPU task's launch call by correlation id, its issue time, and "the
// last task issued to a stream before t" when tasks were issued out of their FIFO order.
#include "../common/hand_trace.h"
#include "passes/passes.h"

#include <gtest/gtest.h>

namespace dreamscope {
namespace {

using graph_build::run_passes;
using test::api_row;
using test::gpu_row;
using test::HandTrace;

TEST(LaunchesPass, EachGpuTaskFindsItsCallByCorrelation) {
  for (std::int64_t spread : {1, 1'000'000'000}) { // a dense counter, and ids too sparse for a table
    SCOPED_TRACE(spread);
    HandTrace h;
    const TrackId t = h.thread(1);
    const TrackId s = h.stream(7);
    h.api(t, "launch1", 100, 110, 1 * spread, 7);
    h.api(t, "launch2", 120, 130, 2 * spread, 7);
    h.kernel(s, "k1", 140, 200, 1 * spread);
    h.kernel(s, "k2", 200, 260, 2 * spread);
    h.kernel(s, "orphan", 300, 310, 3 * spread); // no call with its id
    const Trace trace = h.build();
    const graph_build::GraphBuildState st = run_passes(trace, "launches");
    const TaskId k1 = st.tasks.gpu_task[gpu_row(trace, "k1")], k2 = st.tasks.gpu_task[gpu_row(trace, "k2")];
    const TaskId orphan = st.tasks.gpu_task[gpu_row(trace, "orphan")];
    EXPECT_EQ(st.launches.launcher[k1], st.tasks.api_first[api_row(trace, "launch1")]);
    EXPECT_EQ(st.launches.launcher[k2], st.tasks.api_first[api_row(trace, "launch2")]);
    EXPECT_EQ(st.launches.launcher[orphan], kNoTask);
    EXPECT_EQ(st.launches.issue_time[k2], 120);
    EXPECT_EQ(st.launches.issue_time[orphan], 300); // its own start
    EXPECT_EQ(st.launches.launcher[st.tasks.first(t)], kNoTask); // CPU tasks have none
  }
}

TEST(LaunchesPass, IssueOrderAnswersWhatWasIssuedBeforeATime) {
  HandTrace h;
  const TrackId a = h.thread(1), b = h.thread(2);
  const TrackId s = h.stream(7);
  // Two threads launch onto one stream; b's call comes first in time but its kernel runs second.
  h.api(a, "launchA", 100, 110, 1, 7);
  h.api(b, "launchB", 50, 60, 2, 7);
  h.api(a, "launchC", 400, 410, 3, 7);
  h.kernel(s, "ka", 120, 200, 1);
  h.kernel(s, "kb", 200, 300, 2);
  h.kernel(s, "kc", 420, 500, 3);
  const Trace trace = h.build();
  const graph_build::GraphBuildState st = run_passes(trace, "launches");
  const TaskId ka = st.tasks.gpu_task[gpu_row(trace, "ka")], kb = st.tasks.gpu_task[gpu_row(trace, "kb")];
  const TaskId kc = st.tasks.gpu_task[gpu_row(trace, "kc")];
  const graph_build::Launches& l = st.launches;
  EXPECT_EQ(l.issued_before(st.tasks, s, 50), kNoTask);
  EXPECT_EQ(l.issued_before(st.tasks, s, 51), kb); // kb was issued, ka not yet
  EXPECT_EQ(l.issued_before(st.tasks, s, 101), kb); // the later in FIFO order of the two
  EXPECT_EQ(l.issued_before(st.tasks, s, 1000), kc);
  EXPECT_EQ(l.issued_from(st.tasks, s, 0), ka);
  EXPECT_EQ(l.issued_from(st.tasks, s, 101), kc); // everything before kc was issued by then
  EXPECT_EQ(l.issued_from(st.tasks, s, 401), kNoTask);
}

} // namespace
} // namespace dreamscope
