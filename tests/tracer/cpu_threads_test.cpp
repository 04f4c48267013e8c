// Threads that work without recording anything (an OpenMP or BLAS pool, PyTorch's autograd
// thread) are in the trace: a CPU-thread track each, named as the OS names it, with their CPU
// time in thread_load rows and no events. Real processes under the preloaded tracer; the
// bounds are generous (machines are noisy): this is not a timing test.
#include "run_helpers.h"

#include <dreamscope/graph/graph.h>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <map>
#include <sstream>

namespace dreamscope::test {
namespace {

struct Load {
  std::int64_t cpu = 0;
  std::size_t rows = 0;
};

std::map<TrackId, Load> loads_by_track(const Trace& t) {
  std::map<TrackId, Load> out;
  for (const ThreadLoadRecord& l : t.thread_loads()) {
    if (l.cpu_ns == kNoValue) continue;
    out[l.track].cpu += l.cpu_ns;
    ++out[l.track].rows;
  }
  return out;
}

bool has_events(const Trace& t, TrackId track) {
  return !t.annotations_on(track).empty() || !t.cuda_api_on(track).empty() || !t.gpu_ops_on(track).empty();
}

TEST(CpuThreads, ThreadsThatRecordNothingAreTracksWithTheirCpuTime) {
  const auto dir = scratch_dir("cpu-threads");
  const auto out = dir / "busy.db";
  RunResult r = run(traced(out, {program("busy_threads")}), {{"SPIN_MS", "100"}});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // "spin-a TID CPU_NS" from each spinning thread.
  std::map<std::string, std::pair<std::int64_t, std::int64_t>> spun;
  std::istringstream lines(r.output);
  for (std::string name; lines >> name;) {
    std::int64_t tid = 0, cpu = 0;
    if ((name == "spin-a" || name == "spin-b") && (lines >> tid >> cpu)) spun[name] = {tid, cpu};
  }
  ASSERT_EQ(spun.size(), 2u) << r.output;

  const Trace t = read_trace(out);
  EXPECT_TRUE(t.complete());
  const auto loads = loads_by_track(t);
  for (const auto& [name, thread] : spun) {
    const auto [tid, cpu] = thread;
    TrackId track = kNoIndex;
    for (TrackId k{0}; k < t.tracks().size(); ++k) {
      if (t.tracks()[k].kind == TrackKind::CpuThread && t.tracks()[k].tid == tid) track = k;
    }
    ASSERT_NE(track, kNoIndex) << name << " (tid " << tid << ") has no track";
    EXPECT_EQ(t.tracks()[track].name, name);
    EXPECT_FALSE(has_events(t, track)) << name;
    ASSERT_TRUE(loads.count(track)) << name << " has no thread_load rows";
    // It spun 100 ms of CPU, all after the tracer's first read of the threads; the tracer read
    // it last at exit, where it was still alive. The kernel's schedstat may lag the thread's
    // CPU clock by a tick or so.
    EXPECT_GT(loads.at(track).cpu, 30'000'000) << name;
    EXPECT_LE(loads.at(track).cpu, cpu + 20'000'000) << name << ": more than the thread says it ran";
    TimeNs previous_end = kNoValue;
    for (const ThreadLoadRecord& l : t.thread_loads()) {
      if (l.track != track) continue;
      EXPECT_EQ(l.events, 0);
      EXPECT_EQ(l.cost_samples, 0);
      EXPECT_LT(l.range_cost_ns, 0);
      EXPECT_LT(l.start, l.end);
      EXPECT_GE(l.runqueue_ns, 0);
      if (previous_end != kNoValue) {
        EXPECT_GE(l.start, previous_end) << "windows of a thread overlap";
      }
      previous_end = l.end;
    }
  }
  // The recording main thread, and no track for the tracer's own writer thread.
  bool main_range = false;
  for (const Row& row : annotation_rows(t)) main_range |= row.name == "main" && row.tid == t.processes()[0].pid;
  EXPECT_TRUE(main_range);
  for (const TrackInfo& track : t.tracks()) EXPECT_NE(track.name, "dreamscope-wr");
  // The graph has a resource for each such thread, with no tasks.
  const DependencyGraph g = build_dependency_graph(t);
  for (const auto& [track, load] : loads) {
    if (!has_events(t, track)) {
      EXPECT_EQ(g.resource_first(track), g.resource_end(track));
    }
  }

  RunResult info = run({bin("dreamscope"), "info", out.string()});
  ASSERT_EQ(info.exit_code, 0) << info.output;
  EXPECT_NE(info.output.find("that recorded no events"), std::string::npos) << info.output;
  for (const auto& [name, thread] : spun) {
    const std::string line = "thread " + std::to_string(thread.first);
    const auto at = info.output.find(line);
    ASSERT_NE(at, std::string::npos) << info.output;
    const std::string rest = info.output.substr(at, info.output.find('\n', at) - at);
    EXPECT_NE(rest.find(name), std::string::npos) << rest;
    EXPECT_NE(rest.find("0 events  cpu "), std::string::npos) << rest;
  }
  RunResult json = run({bin("dreamscope"), "info", "--json", out.string()});
  ASSERT_EQ(json.exit_code, 0) << json.output;
  std::size_t silent_busy = 0;
  const auto j = nlohmann::json::parse(json.output);
  for (const auto& th : j["processes"][0]["threads"]) {
    if (th["events"] == 0 && th["cpu_ns"].is_number() && th["cpu_ns"].get<std::int64_t>() > 30'000'000) ++silent_busy;
  }
  EXPECT_GE(silent_busy, 2u) << json.output;
}

// spin-b spins 100 ms unrecorded, then records a range around 100 ms more: one track, with
// its unrecorded windows first and its recorded ones after, none overlapping.
TEST(CpuThreads, AThreadThatBeginsRecordingKeepsItsTrackAndItsLoad) {
  const auto dir = scratch_dir("cpu-threads-late");
  const auto out = dir / "late.db";
  RunResult r = run(traced(out, {program("busy_threads")}), {{"SPIN_MS", "100"}, {"LATE_RANGE", "1"}});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Trace t = read_trace(out);
  TrackId track = kNoIndex;
  for (const Row& row : annotation_rows(t)) {
    if (row.name != "late") continue;
    for (TrackId k{0}; k < t.tracks().size(); ++k) {
      if (t.tracks()[k].kind == TrackKind::CpuThread && t.tracks()[k].tid == row.tid) track = k;
    }
  }
  ASSERT_NE(track, kNoIndex) << "no 'late' range";
  EXPECT_EQ(t.tracks()[track].name, "spin-b");
  std::size_t tracks_of_tid = 0;
  for (const TrackInfo& k : t.tracks()) tracks_of_tid += k.tid == t.tracks()[track].tid;
  EXPECT_EQ(tracks_of_tid, 1u);
  std::int64_t unrecorded = 0, recorded = 0;
  TimeNs previous_end = kNoValue;
  for (const ThreadLoadRecord& l : t.thread_loads()) {
    if (l.track != track) continue;
    if (previous_end != kNoValue) {
      EXPECT_GE(l.start, previous_end) << "windows of a thread overlap";
    }
    previous_end = l.end;
    (l.cost_samples == 0 && l.events == 0 && recorded == 0 ? unrecorded : recorded) += l.cpu_ns;
  }
  // About 100 ms each side (the window in which it began recording may count on either).
  EXPECT_GT(unrecorded, 30'000'000);
  EXPECT_GT(unrecorded + recorded, 130'000'000);
}

// A python3 that imports torch: the one on PATH, else Debian's.
std::string python_with_torch() {
  for (const char* python : {"python3", "/usr/bin/python3"}) {
    if (std::system((std::string(python) + " -c 'import torch' >/dev/null 2>&1").c_str()) == 0) return python;
  }
  return "";
}

TEST(CpuThreads, TorchsIntraOpThreadsAreInTheTrace) {
  const std::string python = python_with_torch();
  if (python.empty()) GTEST_SKIP() << "no python3 with torch";
  const auto dir = scratch_dir("cpu-threads-torch");
  const auto out = dir / "torch.db";
  // Two intra-op threads asked for: libgomp gives this project's 2-core VMs one by default.
  // Element-wise ops on a large tensor run on ATen's OpenMP pool (matmul may not: BLAS).
  const std::string script = "import torch, dreamscope\n"
                             "torch.set_num_threads(2)\n"
                             "a = torch.randn(2_000_000)\n"
                             "with dreamscope.operation('ops'):\n"
                             "    for i in range(30): torch.exp(a).sum()\n"
                             "print('threads', torch.get_num_threads())\n";
  RunResult r = run(traced(out, {python, "-c", script}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_NE(r.output.find("threads 2"), std::string::npos) << r.output;
  const Trace t = read_trace(out);
  std::size_t busy = 0, busy_silent = 0;
  for (const auto& [track, load] : loads_by_track(t)) {
    if (load.cpu < 5'000'000) continue;
    ++busy;
    if (!has_events(t, track)) ++busy_silent;
  }
  EXPECT_GE(busy, 2u) << "the main thread and an OpenMP thread";
  EXPECT_GE(busy_silent, 1u) << "an OpenMP thread, which records nothing";
}

} // namespace
} // namespace dreamscope::test
