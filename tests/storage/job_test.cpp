// The ranks of a distributed job in one Trace, and the Trace of one rank.
#include "test_traces.h"

#include <dreamscope/storage/job.h>
#include <dreamscope/storage/trace_file.h>

#include <gtest/gtest.h>

namespace dreamscope {
namespace {

// Two ranks on two hosts, each with a training thread and a GPU stream, rank 1
// with a forked data-loader worker; a flow inside rank 1 and one from rank 0 to
// rank 1.
Trace two_rank_job() {
  TraceBuilder b;
  b.set_meta("command", "torchrun --nproc-per-node 2 train.py");
  ProcessId proc[3];
  proc[0] = b.add_process({.pid = 10, .name = "python", .rank = 0, .local_rank = 0, .world_size = 2, .host = "a"});
  proc[1] = b.add_process({.pid = 20, .name = "python", .rank = 1, .local_rank = 0, .world_size = 2, .host = "b"});
  proc[2] = b.add_process({.pid = 21, .parent_pid = 20, .name = "worker", .rank = 1, .host = "b"});
  const auto launcher = b.add_process({.pid = 5, .name = "torchrun"});
  (void)launcher;
  const StringId op = b.intern("forward");
  const StringId kernel = b.intern("gemm");
  TrackId thread[3], stream[2];
  for (int r = 0; r < 2; ++r) {
    thread[r] = b.thread_track(proc[r], 10 * (r + 1));
    const auto dev = b.add_device({.ordinal = 0, .process = proc[r], .name = "GPU"});
    stream[r] = b.stream_track(dev, 7);
    b.add(AnnotationRecord{.track = thread[r], .start = 100, .end = 200 + r, .name = op});
    b.add(GpuOpRecord{.track = stream[r], .start = 150, .end = 180 + r, .name = kernel, .correlation = 1});
  }
  thread[2] = b.thread_track(proc[2], 21);
  b.add(AnnotationRecord{.track = thread[2], .start = 50, .end = 90, .name = b.intern("prep")});
  b.add(FlowRecord{
      .kind = b.intern("batch"), .from_track = thread[2], .from_time = 90, .to_track = thread[1], .to_time = 100});
  b.add(FlowRecord{
      .kind = b.intern("batch"), .from_track = thread[0], .from_time = 90, .to_track = thread[1], .to_time = 100});
  return std::move(b).build();
}

TEST(Job, RanksAreTheProcessesSharingARankWithTheRanksOwnProcessFirst) {
  const Trace t = two_rank_job();
  const auto ranks = job_ranks(t);
  ASSERT_EQ(ranks.size(), 2u);
  EXPECT_EQ(ranks[0].rank, 0);
  EXPECT_EQ(ranks[0].host, "a");
  EXPECT_EQ(ranks[0].processes, (std::vector{ProcessId{0}}));
  EXPECT_EQ(ranks[1].rank, 1);
  EXPECT_EQ(ranks[1].local_rank, 0);
  EXPECT_EQ(ranks[1].processes, (std::vector{ProcessId{1}, ProcessId{2}}));

  const auto by_track = track_ranks(t);
  for (TrackId tr{0}; tr < t.tracks().size(); ++tr) {
    const TrackInfo& info = t.tracks()[tr];
    const ProcessId p = info.kind == TrackKind::CpuThread ? info.process : t.devices()[info.device].process;
    EXPECT_EQ(by_track[tr], t.processes()[p].rank) << "track " << tr;
  }
}

TEST(Job, ARankSubtraceHoldsOnlyThatRanksProcessesStreamsAndRows) {
  const Trace t = two_rank_job();
  const Trace r1 = rank_subtrace(t, 1);
  ASSERT_EQ(r1.processes().size(), 2u);
  EXPECT_EQ(r1.processes()[0].pid, 20);
  EXPECT_EQ(r1.processes()[1].pid, 21);
  ASSERT_EQ(r1.devices().size(), 1u);
  EXPECT_EQ(r1.devices()[0].process, 0u);
  EXPECT_EQ(r1.tracks().size(), 3u); // two threads, one stream
  EXPECT_EQ(r1.annotations().size(), 2u);
  ASSERT_EQ(r1.gpu_ops().size(), 1u);
  EXPECT_EQ(r1.gpu_ops().end[0], 181);
  ASSERT_EQ(r1.flows().size(), 1u); // the flow from rank 0 has lost an end
  EXPECT_EQ(r1.meta_value("command"), "torchrun --nproc-per-node 2 train.py");

  const Trace r0 = rank_subtrace(t, 0);
  EXPECT_EQ(r0.processes().size(), 1u);
  EXPECT_EQ(r0.annotations().size(), 1u);
  EXPECT_EQ(r0.annotations().end[0], 200);
}

TEST(Job, AnAbsentRankIsAnErrorThatListsTheRanks) {
  const Trace t = two_rank_job();
  try {
    (void)rank_subtrace(t, 5);
    FAIL() << "no error";
  } catch (const TraceError& e) {
    EXPECT_STREQ(e.what(), "the trace has no rank 5 (its ranks: 0 to 1)");
  }
  EXPECT_TRUE(job_ranks(test::make_full_trace()).size() == 1u);
  TraceBuilder single;
  single.add_process({.pid = 1});
  EXPECT_TRUE(job_ranks(std::move(single).build()).empty());
}

TEST(Job, RanksSurviveTheTraceFile) {
  test::ScratchDir dir;
  const Trace t = two_rank_job();
  write_trace(t, dir / "job.db");
  const Trace back = read_trace(dir / "job.db");
  EXPECT_EQ(back.processes(), t.processes());
  EXPECT_EQ(job_ranks(back).size(), 2u);
}

} // namespace
} // namespace dreamscope
