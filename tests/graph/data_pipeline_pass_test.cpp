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

// A loader two batches ahead of the consumer (a prefetch window of 2): it puts batch b, sits
// idle until the consumer's wait for batch b - 1 ends, and begins b + 1 moments after.
// Steps are 1000 ns; each batch takes the loader 300 ns (the first two, 50).
struct WindowedLoader {
  HandTrace h{""};
  TrackId main = h.thread(1), loader = h.thread(2);
  explicit WindowedLoader(TimeNs late_pop_of_batch_4 = 0) {
    for (std::int64_t b = 0; b < 8; ++b) {
      // Batch b is let go by the end of the wait for b - 2; the first two are not held back.
      const TimeNs begin = b < 2 ? b * 50 : (b - 2) * 1000 + 110 + 5;
      h.annotation(loader, "fetch " + std::to_string(b), "fetch", begin, begin + (b < 2 ? 50 : 300), b);
      const TimeNs wait_end = b * 1000 + 110 + (b == 4 ? late_pop_of_batch_4 : 0);
      h.annotation(main, "wait " + std::to_string(b), "wait", b * 1000, wait_end, b);
      h.annotation(main, "step work " + std::to_string(b), "operation", wait_end, (b + 1) * 1000);
    }
  }
};

TEST(DataPipelinePass, ALoaderHeldByAPrefetchWindowWaitsForTheConsumption) {
  WindowedLoader w;
  const Trace trace = w.h.build();
  const graph_build::GraphBuildState st = run_passes(trace, "data_pipeline");
  for (std::int64_t b = 2; b < 8; ++b) {
    const TaskId fetch = st.tasks.annotation_first[annotation_row(trace, "fetch " + std::to_string(b))];
    const TaskId idle = fetch - 1;
    const TaskId released_by = st.tasks.annotation_last[annotation_row(trace, "wait " + std::to_string(b - 2))];
    EXPECT_TRUE(st.tasks.flags[idle] & kTaskBlocking) << "batch " << b;
    bool linked = false;
    for (std::size_t e = 0; e < st.edges.ends.size(); ++e) {
      if (st.edges.ends[e] == std::pair<std::uint32_t, std::uint32_t>{released_by, idle}) {
        linked = st.edges.info[e].kind == EdgeKind::Flow;
      }
    }
    EXPECT_TRUE(linked) << "batch " << b << " is not let go by the wait for batch " << b - 2;
  }
}

TEST(DataPipelinePass, AConsumerPreemptedBeforeItsWaitEndedStillLetsTheLoaderGoByBatch) {
  // The consumer released batch 6's slot, then was preempted for 150 ns before its wait for
  // batch 4 ended: batch 6 began before that end, and the end of the wait for 3 is nearer.
  WindowedLoader w(150);
  const Trace trace = w.h.build();
  const graph_build::GraphBuildState st = run_passes(trace, "data_pipeline");
  const TaskId idle = st.tasks.annotation_first[annotation_row(trace, "fetch 6")] - 1;
  const TaskId wait4 = st.tasks.annotation_last[annotation_row(trace, "wait 4")];
  bool linked = false;
  for (std::size_t e = 0; e < st.edges.ends.size(); ++e) {
    if (st.edges.ends[e] == std::pair<std::uint32_t, std::uint32_t>{wait4, idle}) {
      linked = true;
      // Let go where it was: 145 ns before the wait's recorded end.
      EXPECT_EQ(st.edges.info[e].delay, 4115 - 4260);
    }
  }
  EXPECT_TRUE(linked); // replay puts it back where it was: WhatifReplay.APreemptedConsumer...
}

// Batch b's loader sat idle until the consumer's wait for batch b - depth let it go: linked by a
// flow whose delay puts the loader where it began (`delay`: before the wait's recorded end).
void expect_let_go_where_it_began(const Trace& trace, const graph_build::GraphBuildState& st, std::int64_t b,
                                  std::int64_t depth, TimeNs delay) {
  const TaskId idle = st.tasks.annotation_first[annotation_row(trace, "fetch " + std::to_string(b))] - 1;
  const TaskId released_by = st.tasks.annotation_last[annotation_row(trace, "wait " + std::to_string(b - depth))];
  bool linked = false;
  for (std::size_t e = 0; e < st.edges.ends.size(); ++e) {
    if (st.edges.ends[e] == std::pair<std::uint32_t, std::uint32_t>{released_by, idle}) {
      linked = true;
      EXPECT_EQ(st.edges.info[e].delay, delay) << "batch " << b << ": let go where it began";
    }
  }
  EXPECT_TRUE(linked) << "batch " << b << " is not let go by the wait for batch " << b - depth;
  EXPECT_TRUE(st.tasks.flags[idle] & kTaskBlocking) << "batch " << b;
}

TEST(DataPipelinePass, ALoaderThatPreemptsItsConsumerIsStillLetGoByTheConsumption) {
  // Two loaders, four batches ahead, on a machine short of cores: loader A begins each odd
  // batch b 9 us after the consumer's wait for b - 4 ended; loader B begins each even batch
  // 5 us into that wait and takes the consumer's core, so the wait ends 255 us after B began,
  // past a wake-up's time (cpu_train --workers 2 beside the tracer's writer on two cores).
  constexpr TimeNs kUs = 1000, kStep = 1000 * kUs, kWork = 250 * kUs;
  HandTrace h("");
  const TrackId main = h.thread(1), a = h.thread(2), b_loader = h.thread(3);
  for (std::int64_t b = 0; b < 16; ++b) {
    const TrackId loader = b % 2 ? a : b_loader;
    // The first four are not held back, and all made before the first step.
    const TimeNs begin = b < 4 ? (b / 2) * 300 * kUs : (b - 3) * kStep + (b % 2 ? 15 : 5) * kUs;
    h.annotation(loader, "fetch " + std::to_string(b), "fetch", begin, begin + kWork, b);
  }
  for (std::int64_t b = 0; b < 12; ++b) {
    const TimeNs step = (b + 1) * kStep, wait_end = step + (b % 2 ? 6 : 260) * kUs;
    h.annotation(main, "wait " + std::to_string(b), "wait", step, wait_end, b);
    h.annotation(main, "step work " + std::to_string(b), "operation", wait_end, step + kStep);
  }
  const Trace trace = h.build();
  const graph_build::GraphBuildState st = run_passes(trace, "data_pipeline");
  for (std::int64_t b = 6; b < 16; b += 2) expect_let_go_where_it_began(trace, st, b, 4, -255 * kUs); // B's, once held
}

TEST(DataPipelinePass, LoadersThatAlwaysPreemptTheirConsumerAreLetGoByItsTakes) {
  // As above, but both loaders begin every batch 5 us into the consumer's wait for batch b - 4
  // and keep its core until 255 us later: no wait ends within a wake-up before a loader begins,
  // so the depth comes from the waits under way when the loaders began (a 200-step cpu_train
  // --workers 2 recording, 2026-11-29: every step so; without the links the loaders kept their
  // measured idle time and the corrected replay's steps ran up to 3 ms long).
  constexpr TimeNs kUs = 1000, kStep = 1000 * kUs, kWork = 250 * kUs;
  HandTrace h("");
  const TrackId main = h.thread(1), a = h.thread(2), b_loader = h.thread(3);
  for (std::int64_t b = 0; b < 16; ++b) {
    const TimeNs begin = b < 4 ? (b / 2) * 300 * kUs : (b - 3) * kStep + 5 * kUs;
    h.annotation(b % 2 ? a : b_loader, "fetch " + std::to_string(b), "fetch", begin, begin + kWork, b);
  }
  for (std::int64_t b = 0; b < 12; ++b) {
    const TimeNs step = (b + 1) * kStep, wait_end = step + 260 * kUs;
    h.annotation(main, "wait " + std::to_string(b), "wait", step, wait_end, b);
    h.annotation(main, "step work " + std::to_string(b), "operation", wait_end, step + kStep);
  }
  const Trace trace = h.build();
  const graph_build::GraphBuildState st = run_passes(trace, "data_pipeline");
  for (std::int64_t b = 6; b < 16; ++b) expect_let_go_where_it_began(trace, st, b, 4, -255 * kUs); // both, once held
}

TEST(DataPipelinePass, ATakeThatLetsItsLoaderGoIsNotAlsoTakenForWaitingOnIt) {
  // As above, but batch 8 was made while recording was paused: no range says who made it, so
  // nothing names what the wait for it waited for. Loader B, let go by that wait 58 us in,
  // takes the consumer's core for 495 us and ends batch 12 7 us before the 560 us wait ends: a
  // burst that timing alone would take for work the consumer handed over and waited for (pass
  // 6). Both would be a cycle (the wait lets B go, B's batch ends the wait), and the replay
  // would stop there (a traced cpu_train --workers 2, right after a resume).
  constexpr TimeNs kUs = 1000, kStep = 1000 * kUs, kWork = 250 * kUs;
  HandTrace h("");
  const TrackId main = h.thread(1), a = h.thread(2), b_loader = h.thread(3);
  for (std::int64_t b = 0; b < 16; ++b) {
    if (b == 8) continue;
    const TrackId loader = b % 2 ? a : b_loader;
    const TimeNs begin = b < 4 ? (b / 2) * 300 * kUs : (b - 3) * kStep + (b == 12 ? 58 : b % 2 ? 15 : 5) * kUs;
    h.annotation(loader, "fetch " + std::to_string(b), "fetch", begin, begin + (b == 12 ? 495 * kUs : kWork), b);
  }
  for (std::int64_t b = 0; b < 12; ++b) {
    const TimeNs step = (b + 1) * kStep, wait_end = step + (b == 8 ? 560 : b % 2 ? 6 : 260) * kUs;
    h.annotation(main, "wait " + std::to_string(b), "wait", step, wait_end, b);
    h.annotation(main, "step work " + std::to_string(b), "operation", wait_end, step + kStep);
  }
  const Trace trace = h.build();
  const graph_build::GraphBuildState st = run_passes(trace);
  const TaskId wait8 = st.tasks.annotation_last[annotation_row(trace, "wait 8")];
  const TaskId idle12 = st.tasks.annotation_first[annotation_row(trace, "fetch 12")] - 1;
  bool lets_go = false;
  for (std::size_t e = 0; e < st.edges.ends.size(); ++e) {
    const auto [from, to] = st.edges.ends[e];
    lets_go = lets_go || (from == wait8 && to == idle12);
    EXPECT_FALSE(to == wait8 && st.edges.info[e].kind == EdgeKind::Join) << "the wait for batch 8 joined task " << from;
    EXPECT_FALSE(from == wait8 && st.edges.info[e].kind == EdgeKind::Handoff) << "the wait for batch 8 handed off to " << to;
  }
  EXPECT_TRUE(lets_go) << "batch 12 is not let go by the wait for batch 8";
}

// Whether the idle piece before `fetch` (an annotation's name) is linked to the end of `wait`.
bool let_go_by(const Trace& trace, const graph_build::GraphBuildState& st, const std::string& fetch,
               const std::string& wait) {
  const TaskId idle = st.tasks.annotation_first[annotation_row(trace, fetch)] - 1;
  const TaskId take = st.tasks.annotation_last[annotation_row(trace, wait)];
  for (std::size_t e = 0; e < st.edges.ends.size(); ++e) {
    if (st.edges.ends[e] == std::pair<std::uint32_t, std::uint32_t>{take, idle}) {
      return st.edges.info[e].kind == EdgeKind::Flow && (st.tasks.flags[idle] & kTaskBlocking);
    }
  }
  return false;
}

TEST(DataPipelinePass, ALoaderThatFilledTheQueueWhileItsConsumerStartedIsLetGoByTheTake) {
  // cuda_train on an H200: the loader made batches 0 and 1 in its first 2 ms and sat idle
  // while the consumer's first step took 108 ms (CUDA's start-up); the consumer's wait for
  // batch 1 found it there (a zero-length wait), and the loader began batch 2 59 us after.
  // Batch 1 is the one the loader put before sitting idle, but that wait did not wait for it:
  // it released the slot. Without the link the corrected replay, 20 ms shorter in step 0, kept
  // the loader's idle time and had step 2 wait 28 ms for batch 2. From batch 3 on the loader
  // is behind (each wait begins before its batch is put): never tied to the consumer.
  constexpr TimeNs kUs = 1000, kMs = 1000 * kUs;
  HandTrace h("");
  const TrackId main = h.thread(1), loader = h.thread(2);
  h.annotation(loader, "fetch 0", "fetch", 0, 900 * kUs, 0);
  h.annotation(loader, "fetch 1", "fetch", 1 * kMs, 2 * kMs, 1);
  h.annotation(main, "wait 0", "wait", 0, 1 * kMs, 0);
  h.annotation(main, "step work 0", "operation", 1 * kMs, 108 * kMs);
  h.annotation(main, "wait 1", "wait", 108 * kMs, 108 * kMs, 1);
  h.annotation(main, "step work 1", "operation", 108 * kMs, 109 * kMs);
  for (std::int64_t b = 2; b < 6; ++b) {
    const TimeNs begin = b == 2 ? 108 * kMs + 59 * kUs : (107 + b) * kMs;
    h.annotation(loader, "fetch " + std::to_string(b), "fetch", begin, (107 + b) * kMs + 900 * kUs, b);
    h.annotation(main, "wait " + std::to_string(b), "wait", (107 + b) * kMs, (107 + b) * kMs + 901 * kUs, b);
    h.annotation(main, "step work " + std::to_string(b), "operation", (107 + b) * kMs + 901 * kUs, (108 + b) * kMs);
  }
  const Trace trace = h.build();
  const graph_build::GraphBuildState st = run_passes(trace, "data_pipeline");
  EXPECT_TRUE(let_go_by(trace, st, "fetch 2", "wait 1"));
  for (std::int64_t b = 3; b < 6; ++b) {
    const TaskId idle = st.tasks.annotation_first[annotation_row(trace, "fetch " + std::to_string(b))] - 1;
    EXPECT_FALSE(st.tasks.flags[idle] & kTaskBlocking) << "batch " << b;
  }
}

TEST(DataPipelinePass, LoadersInForkedProcessesAreLetGoByTheirParentsTakes) {
  // PyTorch's DataLoader: two worker processes the training process forked, prefetching four
  // batches; each take sends the next index through a pipe, and the worker it goes to begins
  // that batch 400 us later (0.1 to 0.7 ms on an H200). A process that is no child of the
  // consumer's (another rank, say) is never let go by its takes.
  constexpr TimeNs kUs = 1000, kStep = 3000 * kUs;
  HandTrace h("");
  const TrackId main = h.thread(1);
  ProcessInfo worker;
  worker.parent_pid = 1000;
  worker.pid = 1001;
  const TrackId w0 = h.thread(h.process(worker), 1001);
  worker.pid = 1002;
  const TrackId w1 = h.thread(h.process(worker), 1002);
  ProcessInfo stranger;
  stranger.pid = 2000;
  const TrackId other = h.thread(h.process(stranger), 2000);
  for (std::int64_t b = 0; b < 12; ++b) {
    const TimeNs begin = b < 4 ? (b / 2) * 1000 * kUs : (b - 3) * kStep + 400 * kUs;
    const TrackId loader = b == 5 || b == 9 ? other : b % 2 ? w1 : w0;
    h.annotation(loader, "fetch " + std::to_string(b), "fetch", begin, begin + 900 * kUs, b);
  }
  for (std::int64_t b = 0; b < 8; ++b) {
    const TimeNs step = (b + 1) * kStep;
    h.annotation(main, "wait " + std::to_string(b), "wait", step, step + 10 * kUs, b);
    h.annotation(main, "step work " + std::to_string(b), "operation", step + 10 * kUs, step + kStep);
  }
  const Trace trace = h.build();
  const graph_build::GraphBuildState st = run_passes(trace, "data_pipeline");
  for (std::int64_t b = 4; b < 12; ++b) {
    if (b == 5 || b == 9) continue;
    EXPECT_TRUE(let_go_by(trace, st, "fetch " + std::to_string(b), "wait " + std::to_string(b - 4))) << "batch " << b;
  }
  const TaskId idle9 = st.tasks.annotation_first[annotation_row(trace, "fetch 9")] - 1;
  EXPECT_FALSE(st.tasks.flags[idle9] & kTaskBlocking);
}

TEST(DataPipelinePass, ALoaderAlwaysBehindIsNotTiedToTheConsumer) {
  // The consumer waits for every batch; each wait ends because the loader just put it.
  HandTrace h("");
  const TrackId main = h.thread(1), loader = h.thread(2);
  for (std::int64_t b = 0; b < 8; ++b) {
    h.annotation(loader, "fetch " + std::to_string(b), "fetch", b * 1000 + 2, b * 1000 + 1000, b);
    h.annotation(main, "wait " + std::to_string(b), "wait", b * 1000 - 700 < 0 ? 0 : b * 1000 - 700, b * 1000 + 1001, b);
    h.annotation(main, "step work " + std::to_string(b), "operation", b * 1000 + 1001, b * 1000 + 1300);
  }
  const Trace trace = h.build();
  const graph_build::GraphBuildState st = run_passes(trace, "data_pipeline");
  for (std::int64_t b = 1; b < 8; ++b) {
    const TaskId idle = st.tasks.annotation_first[annotation_row(trace, "fetch " + std::to_string(b))] - 1;
    EXPECT_FALSE(st.tasks.flags[idle] & kTaskBlocking) << "batch " << b;
  }
}

} // namespace
} // namespace dreamscope
