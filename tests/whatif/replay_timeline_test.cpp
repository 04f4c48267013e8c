// Hand-built traces with exact expected timelines: for each edge kind and each sync kind,
// the unmodified replay reproduces every event to the nanosecond, and a changed duration
// moves exactly what depends on it.
#include "../common/hand_trace.h"

#include <dreamscope/graph/graph.h>
#include <dreamscope/storage/importers.h>
#include <dreamscope/whatif/whatif.h>

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

namespace dreamscope::whatif {
namespace {

using test::annotation_row;
using test::api_row;
using test::gpu_row;
using test::HandTrace;

// Every event of the predicted trace at its measured time.
void expect_exact_replay(const Trace& trace) {
  DependencyGraph graph = build_dependency_graph(trace);
  SimulationResult result = simulate(graph);
  ASSERT_EQ(result.unscheduled, 0u);
  Trace predicted = make_predicted_trace(trace, graph, result);
  ASSERT_EQ(predicted.cuda_api().size(), trace.cuda_api().size());
  ASSERT_EQ(predicted.gpu_ops().size(), trace.gpu_ops().size());
  ASSERT_EQ(predicted.annotations().size(), trace.annotations().size());
  for (CudaApiIndex i{0}; i < trace.cuda_api().size(); ++i) {
    EXPECT_EQ(predicted.cuda_api().start[i], trace.cuda_api().start[i]) << trace.str(trace.cuda_api().name[i]);
    EXPECT_EQ(predicted.cuda_api().end[i], trace.cuda_api().end[i]) << trace.str(trace.cuda_api().name[i]);
  }
  for (GpuOpIndex i{0}; i < trace.gpu_ops().size(); ++i) {
    EXPECT_EQ(predicted.gpu_ops().start[i], trace.gpu_ops().start[i]) << trace.str(trace.gpu_ops().name[i]);
    EXPECT_EQ(predicted.gpu_ops().end[i], trace.gpu_ops().end[i]) << trace.str(trace.gpu_ops().name[i]);
  }
  for (AnnotationIndex i{0}; i < trace.annotations().size(); ++i) {
    EXPECT_EQ(predicted.annotations().start[i], trace.annotations().start[i]) << trace.str(trace.annotations().name[i]);
    EXPECT_EQ(predicted.annotations().end[i], trace.annotations().end[i]) << trace.str(trace.annotations().name[i]);
  }
}

struct Times {
  TimeNs start, end;
  bool operator==(const Times&) const = default;
};
std::ostream& operator<<(std::ostream& os, const Times& t) { return os << "[" << t.start << ", " << t.end << "]"; }

Times of_task(const SimulationResult& r, TaskId t) { return {r.start[t], r.end[t]}; }
Times of_api(const DependencyGraph& g, const SimulationResult& r, CudaApiIndex row) {
  return {r.start[g.api_first(row)], r.end[g.api_last(row)]};
}
Times of_annotation(const DependencyGraph& g, const SimulationResult& r, AnnotationIndex row) {
  return {r.start[g.annotation_first(row)], r.end[g.annotation_last(row)]};
}

TEST(ReplayTimeline, ProgramOrderKeepsGapsBetweenEvents) {
  HandTrace h;
  const TrackId t = h.thread(1);
  h.annotation(t, "step", "step", 100, 300);
  h.api(t, "cudaGetDevice", 120, 130);
  h.api(t, "cudaFree", 150, 190);
  h.annotation(t, "after", "operation", 400, 450);
  const Trace trace = h.build();
  expect_exact_replay(trace);

  DependencyGraph g = build_dependency_graph(trace);
  // step: [100,120) [120,130) [130,150) [150,190) [190,300), CPU work [300,400), after.
  EXPECT_EQ(g.task_count(), 7u);
  const TaskId free_call = g.api_first(api_row(trace, "cudaFree"));
  EXPECT_EQ(g.kind(free_call), TaskKind::CudaApi);
  EXPECT_EQ(g.kind(free_call + 2), TaskKind::CpuWork);
  g.scale(free_call, 2.0, 0);
  const SimulationResult r = simulate(g);
  EXPECT_EQ(of_api(g, r, api_row(trace, "cudaFree")), (Times{150, 230}));
  EXPECT_EQ(of_annotation(g, r, annotation_row(trace, "step")), (Times{100, 340}));
  EXPECT_EQ(of_annotation(g, r, annotation_row(trace, "after")), (Times{440, 490}));
  const auto steps = step_times(trace, g, r);
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].measured(), 200);
  EXPECT_EQ(steps[0].predicted(), 240);
}

TrackId launch_pair(HandTrace& h, TrackId t) {
  const TrackId s = h.stream(7);
  h.api(t, "launch1", 0, 10, 1, 7);
  h.api(t, "launch2", 20, 30, 2, 7);
  h.kernel(s, "k1", 15, 115, 1);
  h.kernel(s, "k2", 117, 217, 2); // queued behind k1, 2 ns stream gap
  return s;
}

TEST(ReplayTimeline, LaunchLatencyAndStreamOrder) {
  HandTrace h;
  const TrackId t = h.thread(1);
  launch_pair(h, t);
  const Trace trace = h.build();
  expect_exact_replay(trace);

  DependencyGraph g = build_dependency_graph(trace);
  const TaskId k1 = g.gpu_task(gpu_row(trace, "k1")), k2 = g.gpu_task(gpu_row(trace, "k2"));
  EXPECT_EQ(g.edge_count(), 2u);
  EXPECT_EQ(g.gap(k2), 2);
  // k1 faster: k2 follows it (stream order), 2 ns later.
  g.scale(k1, 0.5, 0);
  SimulationResult r = simulate(g);
  EXPECT_EQ(of_task(r, k1), (Times{15, 65}));
  EXPECT_EQ(of_task(r, k2), (Times{67, 167}));
  EXPECT_EQ(r.binding[k2].start, Constraint::ResourceOrder);
  // k1 much faster: k2 waits for its launch (call start 20 + the typical latency 15).
  g.scale(k1, 0.1, 0);
  r = simulate(g);
  EXPECT_EQ(of_task(r, k2), (Times{35, 135}));
  EXPECT_EQ(r.binding[k2].start, Constraint::Launch);
  // k1 removed: it takes no time, k2 is still bound by its own launch.
  g.scale(k1, 1.0, 0);
  g.set_removed(k1, true);
  r = simulate(g);
  EXPECT_EQ(of_task(r, k2), (Times{35, 135}));
  Trace predicted = make_predicted_trace(trace, g, r);
  EXPECT_EQ(predicted.gpu_ops().size(), 1u);
}

// The predicted trace is the measured one copied row by row (append_trace_rows): a kernel
// that moved keeps its args, and a removed one leaves with them.
TEST(ReplayTimeline, PredictedRowsKeepTheirArgs) {
  HandTrace h;
  const TrackId t = h.thread(1);
  const TrackId s = h.stream(7);
  h.api(t, "launch", 10, 20, 1, 7);
  h.gpu_arg(h.gpu(s, GpuOpKind::Kernel, "k1", 25, 125, 1), "kernel_backend", 3);
  h.api(t, "launch", 30, 40, 2, 7);
  h.gpu_arg(h.gpu(s, GpuOpKind::Kernel, "k2", 127, 227, 2), "kernel_backend", 4);
  const Trace trace = h.build();
  DependencyGraph g = build_dependency_graph(trace);
  g.scale(g.gpu_task(gpu_row(trace, "k1")), 0.5, 0);
  const SimulationResult r = simulate(g);
  const Trace predicted = make_predicted_trace(trace, g, r);
  const GpuOpIndex k2 = gpu_row(predicted, "k2");
  EXPECT_EQ(predicted.gpu_ops().start[k2], 77); // after k1's 50 ns and the 2 ns gap
  EXPECT_EQ(predicted.arg_int(k2, "kernel_backend"), 4);
  EXPECT_EQ(predicted.arg_int(gpu_row(predicted, "k1"), "kernel_backend"), 3);

  g.set_removed(g.gpu_task(gpu_row(trace, "k1")), true);
  const Trace without_k1 = make_predicted_trace(trace, g, simulate(g));
  ASSERT_EQ(without_k1.gpu_ops().size(), 1u);
  EXPECT_EQ(without_k1.arg_count(), 1u);
  EXPECT_EQ(without_k1.arg_int(GpuOpIndex{0}, "kernel_backend"), 4);
}

// What the tracer measured of a thread moves with the thread's time like an overhead row,
// and leaves with the tracer's cost when the replay removed it.
TEST(ReplayTimeline, PredictedThreadLoadsMoveWithTheirThread) {
  HandTrace h;
  const TrackId t = h.thread(1);
  const TrackId s = h.stream(7);
  h.api(t, "launch", 5, 15, 1, 7);
  h.kernel(s, "k", 20, 1020, 1);
  h.api(t, "cudaStreamSynchronize", 22, 1025, kNoValue, 7);
  h.api(t, "cudaFree", 1025, 1125);
  h.thread_load(ThreadLoadRecord{.track = t, .start = 1025, .end = 1125, .cpu_ns = 90, .events = 1});
  const Trace trace = h.build();
  DependencyGraph g = build_dependency_graph(trace);
  g.scale(g.gpu_task(gpu_row(trace, "k")), 0.5, 0);
  const SimulationResult r = simulate(g);
  const Trace predicted = make_predicted_trace(trace, g, r);
  const CudaApiIndex free_call = api_row(predicted, "cudaFree");
  ASSERT_LT(predicted.cuda_api().start[free_call], 1025); // the sync waited for a shorter kernel
  ASSERT_EQ(predicted.thread_loads().size(), 1u);
  const ThreadLoadRecord& l = predicted.thread_loads()[0];
  EXPECT_EQ(l.start, predicted.cuda_api().start[free_call]);
  EXPECT_EQ(l.end, predicted.cuda_api().end[free_call]);
  EXPECT_EQ(l.cpu_ns, 90);
  EXPECT_EQ(l.events, 1);
  EXPECT_TRUE(make_predicted_trace(trace, g, r, /*overhead_corrected=*/true).thread_loads().empty());
}

// A loader held by a prefetch window of 2 (the data-pipeline pass links each batch to the
// consumer's wait that let it go); the consumer's wait for batch 4 ends 150 ns late, after the
// loader had begun batch 6. Replay puts every task back where it was, and a faster consumer
// lets the loader go sooner.
TEST(ReplayTimeline, ALoaderHeldByAPrefetchWindowMovesWithItsConsumer) {
  HandTrace h("");
  const TrackId main = h.thread(1), loader = h.thread(2);
  for (std::int64_t b = 0; b < 8; ++b) {
    const TimeNs begin = b < 2 ? b * 50 : (b - 2) * 1000 + 115;
    h.annotation(loader, "fetch " + std::to_string(b), "fetch", begin, begin + (b < 2 ? 50 : 300), b);
    const TimeNs wait_end = b * 1000 + 110 + (b == 4 ? 150 : 0);
    h.annotation(main, "wait " + std::to_string(b), "wait", b * 1000, wait_end, b);
    h.annotation(main, "step work " + std::to_string(b), "operation", wait_end, (b + 1) * 1000);
  }
  const Trace trace = h.build();
  DependencyGraph g = build_dependency_graph(trace);
  const SimulationResult replayed = simulate(g);
  for (AnnotationIndex row{0}; row < trace.annotations().size(); ++row) {
    EXPECT_EQ(replayed.start[g.annotation_first(row)], trace.annotations().start[row]) << row;
    EXPECT_EQ(replayed.end[g.annotation_last(row)], trace.annotations().end[row]) << row;
  }
  // Step work twice as fast: the loader, let go by the waits, begins batch 7 sooner.
  for (std::int64_t b = 0; b < 8; ++b) {
    const TaskId t = g.annotation_first(annotation_row(trace, "step work " + std::to_string(b)));
    g.scale(t, 0.5, 0);
  }
  const SimulationResult faster = simulate(g);
  const AnnotationIndex fetch7 = annotation_row(trace, "fetch 7");
  EXPECT_LT(faster.start[g.annotation_first(fetch7)], trace.annotations().start[fetch7]);
}

TEST(ReplayTimeline, StreamSynchronizeWaitsForTheLastTaskIssuedToItsStream) {
  HandTrace h;
  const TrackId t = h.thread(1);
  const TrackId s = h.stream(7);
  h.api(t, "launch", 10, 20, 1, 7);
  h.kernel(s, "k", 25, 525, 1);
  h.api(t, "cudaStreamSynchronize", 30, 530, kNoValue, 7);
  h.api(t, "cudaFree", 540, 550);
  const Trace trace = h.build();
  expect_exact_replay(trace);

  DependencyGraph g = build_dependency_graph(trace);
  const TaskId k = g.gpu_task(gpu_row(trace, "k"));
  const TaskId sync = g.api_last(api_row(trace, "cudaStreamSynchronize"));
  EXPECT_TRUE(g.blocking(sync));
  EXPECT_EQ(g.base_duration(sync), 5); // 530 - 525: the wake-up after the wait
  g.scale(k, 0.5, 0);
  SimulationResult r = simulate(g);
  EXPECT_EQ(of_task(r, k), (Times{25, 275}));
  EXPECT_EQ(of_task(r, sync), (Times{30, 280}));
  EXPECT_EQ(of_api(g, r, api_row(trace, "cudaFree")), (Times{290, 300}));
  EXPECT_EQ(r.binding[sync].end, Constraint::Sync);
  EXPECT_EQ(r.binding[sync].end_by, k);

  const auto path = critical_path(g, r);
  ASSERT_GE(path.size(), 4u);
  EXPECT_EQ(path[0].task, g.api_first(api_row(trace, "cudaFree")));
  bool through_kernel = false;
  for (const auto& step : path) through_kernel |= step.task == k && step.via == Constraint::Sync;
  EXPECT_TRUE(through_kernel);

  // Kernel done before the sync is called: the sync costs its own time only.
  g.scale(k, 0.01, 0);
  r = simulate(g);
  EXPECT_EQ(of_task(r, sync), (Times{30, 35}));
  EXPECT_EQ(r.binding[sync].end, Constraint::Duration);
}

TEST(ReplayTimeline, DeviceSynchronizeWaitsForEveryStream) {
  HandTrace h;
  const TrackId t = h.thread(1);
  const TrackId s1 = h.stream(7), s2 = h.stream(9);
  h.api(t, "launch1", 0, 10, 1, 7);
  h.api(t, "launch2", 20, 30, 2, 9);
  h.kernel(s1, "k1", 12, 212, 1);
  h.kernel(s2, "k2", 32, 432, 2);
  h.api(t, "cudaDeviceSynchronize", 40, 440);
  const Trace trace = h.build();
  expect_exact_replay(trace);

  DependencyGraph g = build_dependency_graph(trace);
  const TaskId k1 = g.gpu_task(gpu_row(trace, "k1")), k2 = g.gpu_task(gpu_row(trace, "k2"));
  const TaskId sync = g.api_last(api_row(trace, "cudaDeviceSynchronize"));
  g.scale(k2, 0.25, 0);
  const SimulationResult r = simulate(g);
  EXPECT_EQ(of_task(r, k2), (Times{32, 132}));
  EXPECT_EQ(of_task(r, sync), (Times{40, 220})); // now k1 (ends 212) is the last + 8 ns wake-up
  EXPECT_EQ(r.binding[sync].end_by, k1);
}

// Device-wide syncs that many streams share are indexed in the simulator (a max over the
// ends known, and a wait for each task still running): random traces of two threads
// launching onto several streams, with device syncs (and stream syncs naming no stream) on
// both, replayed and with their kernels scaled at random, give every task the same start,
// end and binding as the plain loop over each sync's streams.
TEST(ReplayTimeline, IndexedDeviceSyncsMatchThePlainLoop) {
  std::mt19937_64 rng(2);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int indexed_rounds = 0;
  for (int round = 0; round < 300; ++round) {
    HandTrace h;
    const TrackId threads[2] = {h.thread(1), h.thread(2)};
    const int stream_count = uniform(2, 6);
    std::vector<TrackId> streams;
    for (int k = 0; k < stream_count; ++k) streams.push_back(h.stream(7 + k));
    std::vector<TimeNs> stream_free(stream_count, 0);
    TimeNs cursor[2] = {0, uniform(0, 3) * 1000};
    std::int64_t correlation = 1;
    int syncs = 0;
    for (int op = uniform(5, 40); op > 0; --op) {
      const int th = uniform(0, 1);
      TimeNs& at = cursor[th];
      if (uniform(0, 3) > 0) { // a launch and its kernel
        const int st = uniform(0, stream_count - 1);
        const std::string name = "k" + std::to_string(correlation);
        h.api(threads[th], "cudaLaunchKernel" + std::to_string(correlation), at, at + 5'000, correlation, 7 + st);
        const TimeNs start = std::max(at + 3'000, stream_free[st]);
        stream_free[st] = start + uniform(1, 20) * 1'000;
        h.kernel(streams[st], name, start, stream_free[st], correlation);
        ++correlation;
        at += 5'000 + uniform(0, 3) * 1'000;
      } else { // a device-wide sync: returns when every stream is done (or early, now and then)
        TimeNs done = at + 1'000;
        for (TimeNs f : stream_free) done = std::max(done, f);
        if (uniform(0, 5) == 0) done = at + uniform(1, 20) * 1'000;
        const bool stream_sync = uniform(0, 3) == 0;
        h.api(threads[th], (stream_sync ? "cudaStreamSynchronize" : "cudaDeviceSynchronize") + std::to_string(syncs++),
              at, done + 1'000);
        at = done + 1'000 + uniform(0, 2) * 1'000;
      }
    }
    const Trace trace = h.build();
    DependencyGraph g = build_dependency_graph(trace);
    bool shared_group = false;
    std::vector<int> uses(g.stream_groups().size(), 0);
    for (const SyncAction& a : g.sync_actions()) {
      if (a.op == SyncOp::WaitStreams && g.stream_groups()[a.streams].size() > 1 && ++uses[a.streams] > 1) shared_group = true;
    }
    indexed_rounds += shared_group;
    for (int variant = 0; variant < 3; ++variant) {
      if (variant > 0) {
        for (TaskId t = 0; t < g.task_count(); ++t) {
          if (is_gpu_task(g.kind(t))) g.scale(t, 0.25 * uniform(0, 12), 0);
        }
      }
      SimulationOptions plain;
      plain.index_stream_groups = false;
      const SimulationResult a = simulate(g), b = simulate(g, plain);
      ASSERT_EQ(a.unscheduled, b.unscheduled) << "round " << round;
      ASSERT_EQ(a.start, b.start) << "round " << round << ", variant " << variant;
      ASSERT_EQ(a.end, b.end) << "round " << round << ", variant " << variant;
      for (TaskId t = 0; t < g.task_count(); ++t) {
        ASSERT_EQ(a.binding[t].start, b.binding[t].start) << "round " << round << ", task " << t;
        ASSERT_EQ(a.binding[t].start_by, b.binding[t].start_by) << "round " << round << ", task " << t;
        ASSERT_EQ(a.binding[t].end, b.binding[t].end) << "round " << round << ", task " << t;
        ASSERT_EQ(a.binding[t].end_by, b.binding[t].end_by) << "round " << round << ", task " << t;
      }
    }
  }
  EXPECT_GT(indexed_rounds, 150) << "the random traces should share device syncs' groups";
}

// Random traces of up to three processes, each with its GPU, up to six streams (one of them,
// now and then, without a task) and up to four threads launching onto them, with device syncs
// and stream syncs naming no stream on every thread that return as their process's streams
// are done or, now and then, too early: syncs that leave streams out (SyncAction::except),
// and syncs that find many streams' last tasks still running.
Trace random_whole_process_syncs(std::mt19937_64& rng) {
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  struct Process {
    std::vector<TrackId> threads, streams;
    std::vector<TimeNs> cursor, stream_free;
    int idle = -1;
  };
  HandTrace h;
  std::vector<Process> processes(uniform(1, 3));
  for (std::size_t p = 0; p < processes.size(); ++p) {
    Process& pr = processes[p];
    ProcessId process{0};
    DeviceId device{0};
    if (p > 0) {
      process = h.process({.pid = 2000 + static_cast<std::int64_t>(p), .name = "worker"});
      device = h.device(process, "gpu" + std::to_string(p));
    }
    for (int k = uniform(1, 4); k > 0; --k) {
      pr.threads.push_back(h.thread(process, 10 + k));
      pr.cursor.push_back(uniform(0, 3) * 1'000);
    }
    for (int k = 0, n = uniform(1, 6); k < n; ++k) pr.streams.push_back(p == 0 ? h.stream(7 + k) : h.stream(device, 7 + k));
    pr.stream_free.assign(pr.streams.size(), 0);
    if (pr.streams.size() > 1 && uniform(0, 2) == 0) pr.idle = uniform(0, static_cast<int>(pr.streams.size()) - 1);
  }
  std::int64_t correlation = 1;
  int syncs = 0;
  for (int op = uniform(10, 60); op > 0; --op) {
    Process& pr = processes[uniform(0, static_cast<int>(processes.size()) - 1)];
    const int th = uniform(0, static_cast<int>(pr.threads.size()) - 1);
    TimeNs& at = pr.cursor[th];
    const int st = uniform(0, static_cast<int>(pr.streams.size()) - 1);
    if (uniform(0, 2) > 0 && st != pr.idle) { // a launch and its kernel
      h.api(pr.threads[th], "cudaLaunchKernel" + std::to_string(correlation), at, at + 5'000, correlation, 7 + st);
      const TimeNs start = std::max(at + 3'000, pr.stream_free[st]);
      pr.stream_free[st] = start + uniform(1, 20) * 1'000;
      h.kernel(pr.streams[st], "k" + std::to_string(correlation), start, pr.stream_free[st], correlation);
      ++correlation;
      at += 5'000 + uniform(0, 3) * 1'000;
    } else { // a sync of the whole process
      TimeNs done = at + 1'000;
      for (TimeNs f : pr.stream_free) done = std::max(done, f);
      if (uniform(0, 2) == 0) done = at + uniform(1, 20) * 1'000;
      const bool stream_sync = uniform(0, 3) == 0;
      h.api(pr.threads[th], (stream_sync ? "cudaStreamSynchronize" : "cudaDeviceSynchronize") + std::to_string(syncs++), at,
            done + 1'000);
      at = done + 1'000 + uniform(0, 2) * 1'000;
    }
  }
  return h.build();
}

void expect_same_prediction(const SimulationResult& a, const SimulationResult& b, const std::string& where) {
  ASSERT_EQ(a.unscheduled, b.unscheduled) << where;
  ASSERT_EQ(a.start, b.start) << where;
  ASSERT_EQ(a.end, b.end) << where;
  for (TaskId t = 0; t < a.start.size(); ++t) {
    ASSERT_EQ(a.binding[t].start, b.binding[t].start) << where << ", task " << t;
    ASSERT_EQ(a.binding[t].start_by, b.binding[t].start_by) << where << ", task " << t;
    ASSERT_EQ(a.binding[t].end, b.binding[t].end) << where << ", task " << t;
    ASSERT_EQ(a.binding[t].end_by, b.binding[t].end_by) << where << ", task " << t;
  }
}

// A device-wide sync names the streams it leaves out rather than those it waits for: with
// the syncs of random_whole_process_syncs, replayed and with their kernels scaled at random,
// every task gets the same start, end and binding as with a group of the streams each sync
// waits for (the builder's representation before, DependencyGraph::expand_stream_exclusions)
// and the plain loop over it, and as with the plain loop over each group but those left out.
TEST(ReplayTimeline, DeviceSyncsLeavingStreamsOutMatchAGroupOfTheOthers) {
  std::mt19937_64 rng(3);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int shared_exceptions = 0;
  for (int round = 0; round < 300; ++round) {
    const Trace trace = random_whole_process_syncs(rng);
    DependencyGraph g = build_dependency_graph(trace);
    std::vector<int> uses(g.stream_groups().size(), 0);
    bool shared = false;
    for (const SyncAction& a : g.sync_actions()) {
      if (a.op == SyncOp::WaitStreams && a.except != kNoIndex && ++uses[a.streams] > 1) shared = true;
    }
    shared_exceptions += shared;
    for (int variant = 0; variant < 3; ++variant) {
      if (variant > 0) {
        for (TaskId t = 0; t < g.task_count(); ++t) {
          if (is_gpu_task(g.kind(t))) g.scale(t, 0.25 * uniform(0, 12), 0);
        }
      }
      DependencyGraph expanded = g;
      expanded.expand_stream_exclusions();
      for (const SyncAction& a : expanded.sync_actions()) ASSERT_EQ(a.except, kNoIndex);
      SimulationOptions plain;
      plain.index_stream_groups = false;
      const SimulationResult indexed = simulate(g);
      const std::string where = "round " + std::to_string(round) + ", variant " + std::to_string(variant);
      expect_same_prediction(indexed, simulate(expanded, plain), where + ", against the expansion");
      expect_same_prediction(indexed, simulate(g, plain), where + ", against the plain loop");
    }
  }
  EXPECT_GT(shared_exceptions, 100) << "the random traces should have groups that syncs leaving streams out share";
}

// The syncs of an indexed group that find tasks still running are let go together as the
// last of them ends: among other offers to their completion (completion edges added from
// kernels) and among the plain waits of that task, so that ties between offers and the order
// in which the syncs finish (edges added from them to a common task, the syncs of equal
// durations) show. Every task gets the same start, end and binding as with the plain loop.
TEST(ReplayTimeline, IndexedDeviceSyncsFinishAsThePlainLoopsWaitsWould) {
  std::mt19937_64 rng(4);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int round = 0; round < 300; ++round) {
    const Trace trace = random_whole_process_syncs(rng);
    DependencyGraph g = build_dependency_graph(trace);
    std::vector<TaskId> syncs, kernels, others;
    for (TaskId t = 0; t < g.task_count(); ++t) {
      if (is_gpu_task(g.kind(t))) {
        kernels.push_back(t);
      } else if (!g.sync_actions_of(t).empty() && g.sync_actions_of(t).front().op == SyncOp::WaitStreams) {
        syncs.push_back(t);
      } else {
        others.push_back(t);
      }
    }
    if (syncs.empty() || kernels.empty()) continue;
    auto pick = [&](const std::vector<TaskId>& from) { return from[uniform(0, static_cast<int>(from.size()) - 1)]; };
    std::vector<EdgeSpec> edges;
    for (int k = uniform(0, 8); k > 0; --k) edges.push_back({pick(kernels), pick(syncs), EdgeKind::Sync, 0});
    for (int k = uniform(0, 8); k > 0 && !others.empty(); --k) {
      const TaskId from = pick(syncs), to = pick(others);
      if (g.measured_start(to) > g.measured_start(from)) edges.push_back({from, to, EdgeKind::Dependency, uniform(0, 1) * 1'000});
    }
    g.add_edges(edges);
    for (int variant = 0; variant < 3; ++variant) {
      for (TaskId t : kernels) g.scale(t, 0.25 * uniform(0, 12), 0);
      for (TaskId t : syncs) {
        if (variant > 0) g.scale(t, 0, 1'000 * uniform(1, 2));
      }
      SimulationOptions plain;
      plain.index_stream_groups = false;
      expect_same_prediction(simulate(g), simulate(g, plain), "round " + std::to_string(round) + ", variant " + std::to_string(variant));
    }
  }
}

// Two device syncs wait for two streams' queued kernels; the second is indexed (its group's
// second sync). Both are let go as k2 ends, and finish in the order of the plain loop's waits
// on k2 (the later registered is pushed first, so finishes last): with equal durations, the
// first sync's end is the one that sets the start of a task both lead to.
TEST(ReplayTimeline, SyncsLetGoTogetherFinishInThePlainLoopsOrder) {
  HandTrace h;
  const TrackId a = h.thread(1), b = h.thread(2), c = h.thread(3), d = h.thread(4);
  const TrackId s7 = h.stream(7), s8 = h.stream(8);
  h.api(a, "launch1", 0, 5, 1, 7);
  h.api(a, "launch2", 6, 11, 2, 7);
  h.api(a, "launch3", 12, 17, 3, 8);
  h.api(a, "launch4", 18, 23, 4, 8);
  h.kernel(s7, "a0", 30, 800, 1);
  h.kernel(s7, "k1", 800, 900, 2);
  h.kernel(s8, "b0", 30, 850, 3);
  h.kernel(s8, "k2", 850, 950, 4);
  h.api(b, "cudaDeviceSynchronize1", 100, 960);
  h.api(c, "cudaDeviceSynchronize2", 200, 960);
  h.api(d, "cudaFree", 0, 10);
  const Trace trace = h.build();
  DependencyGraph g = build_dependency_graph(trace);
  const TaskId sync1 = g.api_last(api_row(trace, "cudaDeviceSynchronize1"));
  const TaskId sync2 = g.api_last(api_row(trace, "cudaDeviceSynchronize2"));
  const TaskId free = g.api_first(api_row(trace, "cudaFree"));
  const EdgeSpec edges[] = {{sync1, free, EdgeKind::Dependency, 0}, {sync2, free, EdgeKind::Dependency, 0}};
  g.add_edges(edges);
  g.scale(sync1, 0, 40);
  g.scale(sync2, 0, 40);
  SimulationOptions plain;
  plain.index_stream_groups = false;
  const SimulationResult r = simulate(g);
  expect_same_prediction(r, simulate(g, plain), "the plain loop");
  const TaskId k2 = g.gpu_task(gpu_row(trace, "k2"));
  EXPECT_EQ(of_task(r, k2), (Times{850, 950}));
  EXPECT_EQ(of_task(r, sync1), (Times{100, 990}));
  EXPECT_EQ(of_task(r, sync2), (Times{200, 990}));
  EXPECT_EQ(r.binding[sync2].end_by, k2);
  EXPECT_EQ(r.start[free], 990);
  EXPECT_EQ(r.binding[free].start_by, sync1);
}

// An indexed sync waits for T (ends at 1000), K (1000, and an edge from K is added) and T2
// (900), which end as measured in that order: T's end, offered first, is the one the plain
// loop keeps, though the sync is let go as T2 ends, after K's edge offered as late an end.
TEST(ReplayTimeline, AnIndexedSyncKeepsTheFirstOfEqualEnds) {
  HandTrace h;
  const TrackId a = h.thread(1), b = h.thread(2), c = h.thread(3);
  const TrackId s7 = h.stream(7), s8 = h.stream(8), s9 = h.stream(9);
  for (int k = 0; k < 6; ++k) h.api(a, "launch" + std::to_string(k + 1), 6 * k, 6 * k + 5, k + 1, 7 + k / 2);
  h.kernel(s7, "a0", 40, 800, 1);
  h.kernel(s7, "T", 800, 1000, 2);
  h.kernel(s8, "b0", 40, 850, 3);
  h.kernel(s8, "T2", 850, 900, 4);
  h.kernel(s9, "c0", 40, 810, 5);
  h.kernel(s9, "K", 810, 1000, 6);
  h.api(b, "cudaDeviceSynchronize1", 100, 1010);
  h.api(c, "cudaDeviceSynchronize2", 200, 1010);
  const Trace trace = h.build();
  DependencyGraph g = build_dependency_graph(trace);
  const TaskId sync2 = g.api_last(api_row(trace, "cudaDeviceSynchronize2"));
  const TaskId t = g.gpu_task(gpu_row(trace, "T")), k = g.gpu_task(gpu_row(trace, "K"));
  const EdgeSpec edge[] = {{k, sync2, EdgeKind::Sync, 0}};
  g.add_edges(edge);
  SimulationOptions plain;
  plain.index_stream_groups = false;
  const SimulationResult r = simulate(g);
  expect_same_prediction(r, simulate(g, plain), "the plain loop");
  EXPECT_EQ(of_task(r, t), (Times{800, 1000}));
  EXPECT_EQ(of_task(r, k), (Times{810, 1000}));
  EXPECT_EQ(r.end[sync2], 1010);
  EXPECT_EQ(r.binding[sync2].end, Constraint::Sync);
  EXPECT_EQ(r.binding[sync2].end_by, t);
}

TEST(ReplayTimeline, EventSynchronizeWaitsForWhatWasRecorded) {
  HandTrace h;
  const TrackId t = h.thread(1);
  const TrackId s = h.stream(7);
  h.api(t, "launch1", 0, 10, 1, 7);
  h.kernel(s, "k1", 12, 312, 1);
  h.api(t, "cudaEventRecord", 15, 20, kNoValue, 7, 5);
  h.api(t, "launch2", 25, 35, 2, 7);
  h.kernel(s, "k2", 314, 414, 2);
  h.api(t, "cudaEventSynchronize", 40, 318, kNoValue, kNoValue, 5);
  const Trace trace = h.build();
  expect_exact_replay(trace);

  DependencyGraph g = build_dependency_graph(trace);
  const TaskId k1 = g.gpu_task(gpu_row(trace, "k1")), k2 = g.gpu_task(gpu_row(trace, "k2"));
  const TaskId sync = g.api_last(api_row(trace, "cudaEventSynchronize"));
  // k2 was issued after the record: slowing it changes nothing for the sync.
  g.scale(k2, 3.0, 0);
  SimulationResult r = simulate(g);
  EXPECT_EQ(of_task(r, sync), (Times{40, 318}));
  EXPECT_EQ(of_task(r, k2), (Times{314, 614}));
  g.scale(k2, 1.0, 0);
  g.scale(k1, 0.5, 0);
  r = simulate(g);
  EXPECT_EQ(of_task(r, k1), (Times{12, 162}));
  EXPECT_EQ(of_task(r, sync), (Times{40, 168}));
  EXPECT_EQ(of_task(r, k2), (Times{164, 264}));
}

TEST(ReplayTimeline, StreamWaitEventHoldsTheNextTaskOnTheWaitingStream) {
  HandTrace h;
  const TrackId t = h.thread(1);
  const TrackId sa = h.stream(7), sb = h.stream(13);
  h.api(t, "launchA", 0, 10, 1, 7);
  h.kernel(sa, "ka", 20, 220, 1);
  h.api(t, "cudaEventRecord", 12, 14, kNoValue, 7, 3);
  h.api(t, "cudaStreamWaitEvent", 16, 18, kNoValue, 13, 3);
  h.api(t, "launchB", 20, 30, 2, 13);
  h.kernel(sb, "kb", 222, 322, 2);
  const Trace trace = h.build();
  expect_exact_replay(trace);

  DependencyGraph g = build_dependency_graph(trace);
  const TaskId ka = g.gpu_task(gpu_row(trace, "ka")), kb = g.gpu_task(gpu_row(trace, "kb"));
  EXPECT_EQ(g.gap(kb), 2); // after the event, not the launch: the launch latency is ka's (20)
  g.scale(ka, 0.5, 0);
  SimulationResult r = simulate(g);
  EXPECT_EQ(of_task(r, kb), (Times{122, 222}));
  EXPECT_EQ(r.binding[kb].start, Constraint::EventWait);
  g.scale(ka, 0.05, 0);
  r = simulate(g);
  EXPECT_EQ(of_task(r, kb), (Times{40, 140}));
  EXPECT_EQ(r.binding[kb].start, Constraint::Launch);
}

// PyTorch-profiler traces name no events on the calls; their GPU sync records say which
// record (by correlation id) a wait is on, and the stream that record was on. The importer
// gives both calls that event, so the trace goes through the Kineto importer here.
TEST(ReplayTimeline, StreamWaitEventFromKinetoSyncRecords) {
  // Times in µs with ns digits: the timeline of the test above, on streams 7 and 13.
  const std::string json = R"({"traceEvents": [
    {"ph": "X", "cat": "cuda_runtime", "name": "launchA", "pid": 1, "tid": 1, "ts": 0.000, "dur": 0.010,
     "args": {"correlation": 1}},
    {"ph": "X", "cat": "kernel", "name": "ka", "pid": 0, "tid": 7, "ts": 0.020, "dur": 0.200,
     "args": {"device": 0, "stream": 7, "correlation": 1}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaEventRecord", "pid": 1, "tid": 1, "ts": 0.012, "dur": 0.002,
     "args": {"correlation": 50}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamWaitEvent", "pid": 1, "tid": 1, "ts": 0.016, "dur": 0.002,
     "args": {"correlation": 51}},
    {"ph": "X", "cat": "cuda_sync", "name": "Stream Wait Event", "pid": 0, "tid": 13, "ts": 0.016, "dur": 0.002,
     "args": {"device": 0, "stream": 13, "correlation": 51, "cuda_sync_kind": "Stream Wait Event",
              "wait_on_stream": 7, "wait_on_cuda_event_record_corr_id": 50, "wait_on_cuda_event_id": 1}},
    {"ph": "X", "cat": "cuda_runtime", "name": "launchB", "pid": 1, "tid": 1, "ts": 0.020, "dur": 0.010,
     "args": {"correlation": 2}},
    {"ph": "X", "cat": "kernel", "name": "kb", "pid": 0, "tid": 13, "ts": 0.222, "dur": 0.100,
     "args": {"device": 0, "stream": 13, "correlation": 2}}
  ]})";
  const auto path = std::filesystem::temp_directory_path() /
                    ("dreamscope-kineto-stream-wait-" + std::to_string(::getpid()) + ".json");
  std::ofstream(path) << json;
  const Trace trace = import_kineto(path);
  std::filesystem::remove(path);
  // What the importer took from the sync record: the record's stream, and one event for both calls.
  const CudaApiIndex record = api_row(trace, "cudaEventRecord"), wait = api_row(trace, "cudaStreamWaitEvent");
  EXPECT_EQ(trace.cuda_api().stream[record], 7);
  EXPECT_EQ(trace.cuda_api().stream[wait], 13);
  EXPECT_NE(trace.cuda_api().event[record], kNoValue);
  EXPECT_EQ(trace.cuda_api().event[wait], trace.cuda_api().event[record]);
  expect_exact_replay(trace);

  DependencyGraph g = build_dependency_graph(trace);
  EXPECT_EQ(g.sync_actions().size(), 2u);
  EXPECT_EQ(g.warnings().unresolved_event, 0);
  const TaskId ka = g.gpu_task(gpu_row(trace, "ka")), kb = g.gpu_task(gpu_row(trace, "kb"));
  g.scale(ka, 0.5, 0);
  const SimulationResult r = simulate(g);
  EXPECT_EQ(of_task(r, kb), (Times{122, 222}));
  EXPECT_EQ(r.binding[kb].start, Constraint::EventWait);
}

TEST(ReplayTimeline, BlockingMemcpyWaitsForItsCopy) {
  HandTrace h;
  const TrackId t = h.thread(1);
  const TrackId s = h.stream(7);
  h.api(t, "launch", 0, 10, 1, 7);
  h.kernel(s, "k", 15, 315, 1);
  h.api(t, "cudaMemcpy", 20, 420, 2, 7);
  h.gpu(s, GpuOpKind::Memcpy, "copy DtoH", 317, 417, 2);
  h.api(t, "cudaFree", 430, 440);
  const Trace trace = h.build();
  expect_exact_replay(trace);

  DependencyGraph g = build_dependency_graph(trace);
  const TaskId k = g.gpu_task(gpu_row(trace, "k")), copy = g.gpu_task(gpu_row(trace, "copy DtoH"));
  const TaskId call = g.api_last(api_row(trace, "cudaMemcpy"));
  EXPECT_EQ(g.completion_in_degree(call), 1u);
  g.scale(k, 0.5, 0);
  const SimulationResult r = simulate(g);
  EXPECT_EQ(of_task(r, copy), (Times{167, 267}));
  EXPECT_EQ(of_task(r, call), (Times{20, 270}));
  EXPECT_EQ(of_api(g, r, api_row(trace, "cudaFree")), (Times{280, 290}));
  EXPECT_EQ(r.binding[call].end, Constraint::Sync);
}

TEST(ReplayTimeline, DataFlowFromPreparedBatchToItsWait) {
  HandTrace h;
  const TrackId main = h.thread(1), worker = h.thread(2);
  h.annotation(worker, "prep batch 1", "prep", 0, 500, 1);
  h.annotation(main, "wait batch 1", "wait", 100, 510, 1);
  h.annotation(main, "forward", "operation", 510, 600);
  const Trace trace = h.build();
  expect_exact_replay(trace);

  DependencyGraph g = build_dependency_graph(trace);
  const TaskId prep = g.annotation_first(annotation_row(trace, "prep batch 1"));
  const TaskId wait = g.annotation_last(annotation_row(trace, "wait batch 1"));
  EXPECT_EQ(g.base_duration(wait), 10);
  g.scale(prep, 2.0, 0);
  SimulationResult r = simulate(g);
  EXPECT_EQ(of_task(r, wait), (Times{100, 1010}));
  EXPECT_EQ(of_annotation(g, r, annotation_row(trace, "forward")), (Times{1010, 1100}));
  EXPECT_EQ(r.binding[wait].end, Constraint::Flow);
  g.scale(prep, 0.1, 0);
  r = simulate(g);
  EXPECT_EQ(of_task(r, wait), (Times{100, 110}));
}

TEST(ReplayTimeline, AddedAndRemovedEdges) {
  HandTrace h;
  const TrackId t1 = h.thread(1), t2 = h.thread(2);
  h.api(t1, "cudaMalloc", 0, 100);
  h.api(t2, "cudaFree", 10, 30);
  h.api(t2, "cudaFreeHost", 40, 50);
  const Trace trace = h.build();
  DependencyGraph g = build_dependency_graph(trace);
  const TaskId malloc_call = g.api_first(api_row(trace, "cudaMalloc"));
  const TaskId free_call = g.api_first(api_row(trace, "cudaFree"));
  const TaskId free_host = g.api_first(api_row(trace, "cudaFreeHost"));
  // cudaFree may only start 5 ns after cudaMalloc ends: thread 2 shifts by 95 ns.
  const EdgeSpec dependency{.from = malloc_call, .to = free_call, .kind = EdgeKind::Dependency, .delay = 5};
  g.add_edges(std::span(&dependency, 1));
  SimulationResult r = simulate(g);
  EXPECT_EQ(of_task(r, free_call), (Times{105, 125}));
  EXPECT_EQ(of_task(r, free_host), (Times{135, 145}));
  EXPECT_EQ(r.binding[free_call].start, Constraint::Dependency);
  // cudaFreeHost may only end after cudaMalloc ends (a completion edge): it waits at its end.
  EXPECT_EQ(g.remove_edges(malloc_call, free_call), 1u);
  const EdgeSpec flow{.from = malloc_call, .to = free_host, .kind = EdgeKind::Flow, .delay = 0};
  g.add_edges(std::span(&flow, 1));
  EXPECT_TRUE(g.blocking(free_host));
  r = simulate(g);
  EXPECT_EQ(of_task(r, free_call), (Times{10, 30}));
  EXPECT_EQ(of_task(r, free_host), (Times{40, 110}));
  EXPECT_EQ(r.binding[free_host].end, Constraint::Flow);
  // A cycle: both tasks wait for each other and neither runs; the replay says so.
  const EdgeSpec back{.from = free_host, .to = malloc_call, .kind = EdgeKind::Dependency, .delay = 0};
  g.add_edges(std::span(&back, 1));
  EXPECT_GT(simulate(g).unscheduled, 0u);
  EXPECT_EQ(g.remove_edges(free_call, malloc_call), 0u);
}

TEST(ReplayTimeline, InsertedAndMovedTasks) {
  HandTrace h;
  const TrackId main = h.thread(1), worker = h.thread(2);
  const TrackId s = h.stream(7);
  h.annotation(worker, "prep 1", "prep", 0, 400, 1);
  h.annotation(worker, "prep 2", "prep", 400, 800, 2);
  h.annotation(main, "wait 1", "wait", 0, 410, 1);
  h.annotation(main, "wait 2", "wait", 410, 810, 2);
  h.api(main, "launch", 810, 820, 1, 7);
  h.kernel(s, "k", 830, 930, 1);
  const Trace trace = h.build();
  DependencyGraph g = build_dependency_graph(trace);
  const TaskId prep2 = g.annotation_first(annotation_row(trace, "prep 2"));
  const TaskId k = g.gpu_task(gpu_row(trace, "k"));

  // A second loader worker takes batch 2, and an all-reduce of 50 ns follows the kernel.
  GraphEdit edit;
  TrackInfo second;
  second.kind = TrackKind::CpuThread;
  second.name = "loader-1";
  const ResourceId worker2 = edit.add_resource(second);
  edit.move(prep2, worker2);
  const std::uint32_t all_reduce = edit.insert(s, k, TaskKind::Kernel, "all_reduce", 50);
  const EditResult moved = g.apply(edit);
  ASSERT_EQ(moved.resources.size(), 1u);
  EXPECT_EQ(g.resource(moved.old_to_new[prep2]), moved.resources[0]);
  EXPECT_EQ(g.resource_count(), trace.tracks().size() + 1);
  const SimulationResult r = simulate(g);
  EXPECT_EQ(r.unscheduled, 0u);
  // prep 2 now runs from the start, like prep 1: the wait for batch 2 ends 10 ns after
  // wait 1, and everything after moves up by 400 ns.
  EXPECT_EQ(of_task(r, moved.old_to_new[prep2]), (Times{0, 400}));
  EXPECT_EQ(of_annotation(g, r, annotation_row(trace, "wait 2")), (Times{410, 420}));
  EXPECT_EQ(of_task(r, moved.old_to_new[k]), (Times{440, 540}));
  EXPECT_EQ(of_task(r, moved.inserted[all_reduce]), (Times{540, 590}));
  EXPECT_EQ(g.synthetic_name(moved.inserted[all_reduce]), "all_reduce");

  const Trace predicted = make_predicted_trace(trace, g, r);
  ASSERT_EQ(predicted.tracks().size(), trace.tracks().size() + 1);
  EXPECT_EQ(predicted.tracks().back().name, "loader-1");
  EXPECT_EQ(predicted.annotations_on(static_cast<TrackId>(trace.tracks().size())).size(), 1u);
  EXPECT_EQ(predicted.gpu_ops().size(), 2u);
  EXPECT_EQ(predicted.end_time(), 590);
}

TEST(ReplayTimeline, TiePolicyDecidesBetweenEqualStarts) {
  HandTrace h;
  const TrackId t = h.thread(1);
  h.api(t, "cudaFree", 0, 10);
  const Trace trace = h.build();
  DependencyGraph g = build_dependency_graph(trace);
  GpuFirstPolicy gpu_first;
  MeasuredOrderPolicy measured;
  EXPECT_EQ(gpu_first.key(g, 0) >> 63, 1u); // a CPU task sorts after every GPU task
  EXPECT_LT(measured.key(g, 0), measured.key(g, 0) + 1);
  SimulationOptions options;
  options.policy = &gpu_first;
  EXPECT_EQ(simulate(g, options).end_time, 10);
}

TEST(ReplayTimeline, CpuTasksShareTheCoresTheyAreGiven) {
  // Three threads compute 300 ns each from 0; a fourth fetches (storage I/O) and a fifth
  // waits for a batch, off the CPU; a kernel runs on the GPU.
  HandTrace h;
  for (std::int64_t tid = 1; tid <= 3; ++tid) {
    h.annotation(h.thread(tid), "compute" + std::to_string(tid), "operation", 0, 300);
  }
  h.annotation(h.thread(4), "fetch", "fetch", 0, 300, 0);
  h.annotation(h.thread(5), "wait", "wait", 0, 300, 9);
  const TrackId s = h.stream(7);
  h.kernel(s, "gemm", 0, 300);
  const Trace trace = h.build();
  const DependencyGraph g = build_dependency_graph(trace);
  EXPECT_FALSE(g.uses_cpu(g.annotation_first(annotation_row(trace, "fetch"))));
  EXPECT_FALSE(g.uses_cpu(g.annotation_first(annotation_row(trace, "wait"))));
  EXPECT_FALSE(g.uses_cpu(g.gpu_task(gpu_row(trace, "gemm"))));
  EXPECT_TRUE(g.uses_cpu(g.annotation_first(annotation_row(trace, "compute1"))));

  // Unlimited: as measured.
  expect_exact_replay(trace);
  // Two cores for three computing threads: each at 2/3 speed, all done at 450.
  const SimulationResult two = simulate(g, {.cpu_cores = 2});
  for (const char* name : {"compute1", "compute2", "compute3"}) {
    EXPECT_EQ(of_annotation(g, two, annotation_row(trace, name)), (Times{0, 450})) << name;
  }
  EXPECT_EQ(of_annotation(g, two, annotation_row(trace, "fetch")), (Times{0, 300}));
  EXPECT_EQ(of_annotation(g, two, annotation_row(trace, "wait")), (Times{0, 300}));
  EXPECT_EQ(of_task(two, g.gpu_task(gpu_row(trace, "gemm"))), (Times{0, 300}));
  EXPECT_EQ(two.cpu_contention, 3 * 150);
  // Three cores or more: no one waits.
  const SimulationResult three = simulate(g, {.cpu_cores = 3});
  EXPECT_EQ(of_annotation(g, three, annotation_row(trace, "compute3")), (Times{0, 300}));
  EXPECT_EQ(three.cpu_contention, 0);
  // One core: 900 ns of work, all three done at 900 (equal shares finish together).
  const SimulationResult one = simulate(g, {.cpu_cores = 1});
  EXPECT_EQ(of_annotation(g, one, annotation_row(trace, "compute2")), (Times{0, 900}));
}

TEST(ReplayTimeline, AFetchSharesCoresForTheCpuTimeItMeasured) {
  // A fetch of 300 ns whose `cpu` mark says 150 ns of it were CPU work, beside three threads
  // computing 300 ns each, on two cores: four CPU tasks at half speed until the fetch's CPU
  // part is done at 300; the fetch then waits its other 150 ns off the CPU (ends at 450),
  // and the three computes, 150 ns of work left each, share the cores at 2/3: done at 525.
  HandTrace h;
  for (std::int64_t tid = 1; tid <= 3; ++tid) {
    h.annotation(h.thread(tid), "compute" + std::to_string(tid), "operation", 0, 300);
  }
  const TrackId loader = h.thread(4);
  h.annotation(loader, "fetch", "fetch", 0, 300, 0);
  h.annotation(loader, "cpu", "cpu", 300, 300, 150); // emitted as the range ends
  const Trace trace = h.build();
  const DependencyGraph g = build_dependency_graph(trace);
  EXPECT_DOUBLE_EQ(g.cpu_share(g.annotation_first(annotation_row(trace, "fetch"))), 0.5);
  expect_exact_replay(trace);
  const SimulationResult r = simulate(g, {.cpu_cores = 2});
  EXPECT_EQ(of_annotation(g, r, annotation_row(trace, "fetch")), (Times{0, 450}));
  EXPECT_EQ(of_annotation(g, r, annotation_row(trace, "compute2")), (Times{0, 525}));
}

TEST(ReplayTimeline, AThreadWaitingForAnotherThreadsBurstFollowsIt) {
  // PyTorch's backward(): the training thread sits in `backward` while the autograd thread,
  // idle before and after, runs the backward operators; 100 µs after they end the training
  // thread goes on. Replayed as a handoff (the burst starts 100 µs after the wait does) and
  // a join (the wait ends 100 µs after the burst), so the wait follows the burst.
  HandTrace h;
  const TrackId main = h.thread(1), autograd = h.thread(2);
  h.annotation(main, "step", "step", 0, 2'000'000, 0);
  h.annotation(main, "forward", "operation", 0, 500'000);
  h.annotation(main, "backward", "operation", 500'000, 1'800'000);
  h.annotation(autograd, "bw_op1", "operation", 600'000, 1'000'000);
  h.annotation(autograd, "bw_op2", "operation", 1'000'000, 1'700'000);
  const Trace trace = h.build();
  expect_exact_replay(trace);

  DependencyGraph g = build_dependency_graph(trace);
  const TaskId backward = g.annotation_first(annotation_row(trace, "backward"));
  EXPECT_TRUE(g.blocking(backward));
  // The backward operators twice as fast: the wait ends 350 µs sooner.
  const TaskId op2 = g.annotation_first(annotation_row(trace, "bw_op2"));
  g.scale(op2, 0.5, 0);
  SimulationResult r = simulate(g);
  EXPECT_EQ(of_annotation(g, r, annotation_row(trace, "backward")), (Times{500'000, 1'450'000}));
  EXPECT_EQ(of_annotation(g, r, annotation_row(trace, "step")), (Times{0, 1'650'000}));
  // A faster forward pass starts the burst sooner too.
  g.scale(op2, 1.0, 0);
  g.scale(g.annotation_first(annotation_row(trace, "forward")), 0.5, 0);
  r = simulate(g);
  EXPECT_EQ(of_annotation(g, r, annotation_row(trace, "bw_op1")), (Times{350'000, 750'000}));
  EXPECT_EQ(of_annotation(g, r, annotation_row(trace, "step")), (Times{0, 1'750'000}));
}

// Three threads of one process whose 1 ms operators (PyTorch-profiler cpu_ops) all start at
// the same instant: each range fits every other's wait, and the handoff pass once chained
// them into a cycle (thread 1 waited for 2, 2 for 3, 3 for 1), so that the replay left every
// task unscheduled ("3 tasks never ran"). Equal times are ordered strictly now
// (inferred_waits.cpp, EventKey): the replay is the measured run.
TEST(ReplayTimeline, RangesOfThreeThreadsFromOneInstantMakeNoCycle) {
  std::string json = R"({"traceEvents": [)";
  for (int tid = 1; tid <= 3; ++tid) {
    json += std::string(tid > 1 ? "," : "") + R"({"ph": "X", "cat": "cpu_op", "name": "op)" + std::to_string(tid) +
            R"(", "pid": 1, "tid": )" + std::to_string(tid) + R"(, "ts": 0, "dur": 1000})";
  }
  json += "]}";
  const auto path = std::filesystem::temp_directory_path() /
                    ("dreamscope-kineto-three-threads-" + std::to_string(::getpid()) + ".json");
  std::ofstream(path) << json;
  const Trace trace = import_kineto(path);
  std::filesystem::remove(path);
  ASSERT_EQ(trace.annotations().size(), 3u);
  expect_exact_replay(trace);
  const DependencyGraph g = build_dependency_graph(trace);
  const SimulationResult r = simulate(g);
  EXPECT_EQ(r.unscheduled, 0u);
  EXPECT_EQ(r.end_time - r.begin, 1'000'000);

  // The same with 2 to 8 threads, from HandTrace.
  for (int threads = 2; threads <= 8; ++threads) {
    HandTrace h("");
    for (int k = 1; k <= threads; ++k) h.annotation(h.thread(k), "op" + std::to_string(k), "operation", 0, 1'000'000);
    const Trace t = h.build();
    const DependencyGraph gk = build_dependency_graph(t);
    const SimulationResult rk = simulate(gk);
    EXPECT_EQ(rk.unscheduled, 0u) << threads << " threads";
    EXPECT_EQ(rk.end_time - rk.begin, 1'000'000) << threads << " threads";
  }
}

TEST(ReplayTimeline, AForkedWorkerMovesWithItsParent) {
  // A DataLoader worker process forked 1 µs into its parent's "forking" range: the parent's
  // work before the fork twice as fast, and the worker starts 2 µs sooner too.
  HandTrace h("");
  const TrackId main = h.thread(1000);
  const auto child = h.process(ProcessInfo{.pid = 1001, .parent_pid = 1000, .name = "worker", .start = 5'000});
  h.annotation(main, "before", "operation", 0, 4'000);
  h.annotation(main, "forking", "operation", 4'000, 6'000);
  h.annotation(h.thread(child, 1001), "work", "operation", 7'000, 8'000);
  const Trace trace = h.build();
  expect_exact_replay(trace);
  DependencyGraph g = build_dependency_graph(trace);
  g.scale(g.annotation_first(annotation_row(trace, "before")), 0.5, 0);
  const SimulationResult r = simulate(g);
  EXPECT_EQ(of_annotation(g, r, annotation_row(trace, "work")), (Times{5'000, 6'000}));
}

TEST(ReplayTimeline, ALaunchBlockedOnAFullQueueWaitsForTheKernelThatFreedIt) {
  // The second launch takes 495 µs and returns 5 µs after the first kernel ends: the
  // device's queue was full. It is replayed as a wait for that kernel.
  HandTrace h;
  const TrackId t = h.thread(1);
  const TrackId s = h.stream(7);
  h.annotation(t, "step", "step", 0, 1'000'000, 0);
  h.api(t, "cudaLaunchKernel", 0, 5'000, 1);
  h.kernel(s, "k1", 10'000, 500'000, 1);
  h.api(t, "cudaLaunchKernel#2", 5'000, 505'000, 2);
  h.kernel(s, "k2", 500'000, 900'000, 2);
  h.annotation(t, "cpu_after", "operation", 505'000, 1'000'000);
  const Trace trace = h.build();
  expect_exact_replay(trace);

  DependencyGraph g = build_dependency_graph(trace);
  const TaskId launch2 = g.api_first(api_row(trace, "cudaLaunchKernel#2"));
  EXPECT_TRUE(g.blocking(launch2));
  // k1 twice as fast: the launch returns 245 µs sooner, and the CPU work after it with it.
  g.scale(g.gpu_task(gpu_row(trace, "k1")), 0.5, 0);
  const SimulationResult r = simulate(g);
  EXPECT_EQ(of_api(g, r, api_row(trace, "cudaLaunchKernel#2")), (Times{5'000, 260'000}));
  EXPECT_EQ(of_annotation(g, r, annotation_row(trace, "cpu_after")), (Times{260'000, 755'000}));
}

TEST(ReplayTimeline, AWaitThatFindsItsBatchReadyPaysNoWakeUp) {
  // The main thread waits for batches 0 and 1 and wakes 100 ns after each is prepared;
  // batch 2 is ready when its wait starts, which then takes 2 ns. With the loader ten times
  // faster, only the first wait still waits (and wakes 100 ns late); the others find their
  // batch ready and take the 2 ns a ready wait took, not the 100 ns wake-up.
  HandTrace h;
  const TrackId main = h.thread(1), loader = h.thread(2);
  h.annotation(loader, "prep", "prep", 0, 250, 0);
  h.annotation(loader, "prep", "prep", 300, 550, 1);
  h.annotation(loader, "prep", "prep", 550, 700, 2);
  const TimeNs step_start[] = {0, 450, 750}, wait_end[] = {350, 650, 752};
  for (int b = 0; b < 3; ++b) {
    h.annotation(main, "step", "step", step_start[b], wait_end[b] + 100, b);
    h.annotation(main, "wait", "wait", step_start[b], wait_end[b], b);
    h.annotation(main, "compute" + std::to_string(b), "operation", wait_end[b], wait_end[b] + 100);
  }
  const Trace trace = h.build();
  expect_exact_replay(trace);

  DependencyGraph g = build_dependency_graph(trace);
  for (AnnotationIndex row{0}; row < trace.annotations().size(); ++row) {
    if (trace.str(trace.annotations().name[row]) == "prep") g.scale(g.annotation_first(row), 0.1, 0);
  }
  const SimulationResult r = simulate(g);
  EXPECT_EQ(of_annotation(g, r, annotation_row(trace, "compute0")), (Times{125, 225}));
  EXPECT_EQ(of_annotation(g, r, annotation_row(trace, "compute1")), (Times{227, 327}));
  EXPECT_EQ(of_annotation(g, r, annotation_row(trace, "compute2")), (Times{329, 429}));
}

} // namespace
} // namespace dreamscope::whatif
