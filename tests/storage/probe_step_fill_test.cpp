// Filling probe steps at merge (storage/src/tracelog/probe_step_fill.h): a step whose inner ranges
// the tracer counted instead of recording gets those of the nearest recorded step that ran the
// same, stretched with its phases and flagged `filled_from`; one with no such neighbour is left as
// it was and the merge says so.
#include "test_traces.h"

#include <dreamscope/storage/trace_log.h>
#include <dreamscope/storage/trace_merge.h>

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <tuple>
#include <vector>

namespace dreamscope {
namespace {

using test::ScratchDir;

// A thread's ranges as the tracer writes them, in a one-process job.
class ThreadLog {
 public:
  explicit ThreadLog(const std::filesystem::path& path) : w_(path) {
    w_.set_meta("source", "tracer");
    w_.set_meta("start", "0");
    w_.set_meta("end", "100000");
    const ProcessId p = w_.add_process(ProcessInfo{.pid = 7, .name = "train", .start = 0, .end = 100000});
    track_ = w_.add_track(TrackInfo{.kind = TrackKind::CpuThread, .process = p, .tid = 7, .name = "main"});
  }
  void range(std::string_view name, TimeNs start, TimeNs end, std::string_view domain = "train",
             std::string_view category = "nvtx") {
    w_.add(AnnotationRecord{.track = track_, .start = start, .end = end, .name = w_.intern(name),
                            .domain = w_.intern(domain), .category = w_.intern(category), .payload = 42});
  }
  // A training step at `at`, 1000 ns: forward [0, 500) holding two layers, backward [500, 1000)
  // holding a layer's gradient with an op inside; `layers`: how many forward layers (2 as a rule).
  void step(TimeNs at, std::string_view name = "step", int layers = 2) {
    range(name, at, at + 1000);
    range("forward", at, at + 500);
    for (int i = 0; i < layers; ++i) range("layer", at + 100 + 150 * i, at + 200 + 150 * i);
    range("backward", at + 500, at + 1000);
    range("layer_grad", at + 600, at + 900);
    range("op", at + 650, at + 700);
  }
  // A probe step at `at`, `length` long: its step and phases (half each) recorded, its inner
  // ranges counted, and the tracer's mark at its end.
  void probe_step(TimeNs at, TimeNs length, std::int64_t counted) {
    range("step", at, at + length);
    range("forward", at, at + length / 2);
    range("backward", at + length / 2, at + length);
    w_.add(AnnotationRecord{.track = track_, .start = at + length, .end = at + length,
                            .name = w_.intern("cost probe step"), .domain = w_.intern("dreamscope.tracer"),
                            .payload = counted});
  }
  void close() { w_.close(); }

 private:
  TraceLogWriter w_;
  TrackId track_{};
};

MergedJob merge(const ScratchDir& dir) { return merge_part_logs(dir.path(), JobFacts{.command = "train", .root_pid = 7}); }

// (name, start, end, depth, filled_from) of every filled range, in time order.
using Filled = std::tuple<std::string, TimeNs, TimeNs, int, TimeNs>;
std::vector<Filled> filled_ranges(const Trace& t) {
  std::vector<Filled> out;
  const auto& ann = t.annotations();
  for (AnnotationIndex i{0}; i < ann.size(); ++i) {
    if (ann.filled_from[i] == kNoValue) continue;
    out.emplace_back(std::string(t.str(ann.name[i])), ann.start[i], ann.end[i], ann.depth[i], ann.filled_from[i]);
    EXPECT_EQ(ann.payload[i], kNoValue) << "a call's own payload is not copied";
    if (t.str(ann.name[i]) != "batch") {
      EXPECT_EQ(t.str(ann.domain[i]), "train");
      EXPECT_EQ(t.str(ann.category[i]), "nvtx");
    }
  }
  std::sort(out.begin(), out.end(), [](const Filled& a, const Filled& b) { return std::get<1>(a) < std::get<1>(b); });
  return out;
}

bool warned_unfilled(const MergedJob& m, std::string_view how_many) {
  for (const std::string& w : m.warnings) {
    if (w.starts_with(how_many) && w.find("probe steps were not filled") != std::string::npos) return true;
  }
  return false;
}

TEST(ProbeStepFill, AProbeStepGetsItsNearestRecordedStepsRangesStretchedWithItsPhases) {
  ScratchDir dir;
  ThreadLog log(dir / "7-0-0.dslog");
  log.step(0);
  log.step(1000);
  log.probe_step(2000, 800, 4); // ran 20 % faster without recording: 400 ns a phase
  log.step(3000);
  log.close();
  const MergedJob m = merge(dir);
  EXPECT_TRUE(m.warnings.empty()) << m.warnings.front();
  // From the step before it (the nearer of two at the same distance), each phase's ranges
  // shrunk by 0.8 from the phase's start; nesting as recorded.
  EXPECT_EQ(filled_ranges(m.trace), (std::vector<Filled>{{"layer", 2080, 2160, 2, 1000},
                                                         {"layer", 2200, 2280, 2, 1000},
                                                         {"layer_grad", 2480, 2720, 2, 1000},
                                                         {"op", 2520, 2560, 3, 1000}}));
}

TEST(ProbeStepFill, OnlyARecordedStepOfTheSameNameThatRanAsManyRangesIsATemplate) {
  ScratchDir dir;
  ThreadLog log(dir / "7-0-0.dslog");
  log.step(0, "step", 1);    // 3 inner ranges: not the 4 counted
  log.step(1000, "step", 3); // nor 5
  log.step(2000, "eval");        // another name
  log.probe_step(3000, 1000, 4);
  log.probe_step(4000, 1000, 4); // a probe is no template for another
  log.step(5000, "step", 2);
  log.close();
  const MergedJob m = merge(dir);
  EXPECT_TRUE(m.warnings.empty());
  const auto filled = filled_ranges(m.trace);
  ASSERT_EQ(filled.size(), 8u);
  for (const Filled& f : filled) EXPECT_EQ(std::get<4>(f), 5000) << std::get<0>(f) << " at " << std::get<1>(f);
}

TEST(ProbeStepFill, AProbeStepNoNeighbourMatchesIsLeftAsItWasAndTheMergeSaysSo) {
  ScratchDir dir;
  ThreadLog log(dir / "7-0-0.dslog");
  log.step(0);
  log.probe_step(1000, 1000, 7); // counted 7; its neighbours ran 4
  log.step(2000);
  // One that recorded an inner range of its own (nvtxRangeStart/End is recorded in a probe):
  // which of the counted ones it lacks is unknown.
  log.probe_step(3000, 1000, 4);
  log.range("layer", 3100, 3200);
  log.step(4000);
  log.close();
  const MergedJob m = merge(dir);
  EXPECT_TRUE(filled_ranges(m.trace).empty());
  EXPECT_TRUE(warned_unfilled(m, "2 of 2 ")) << (m.warnings.empty() ? "no warning" : m.warnings.front());
  EXPECT_NE(m.trace.meta_value("warnings").find("probe steps were not filled"), std::string::npos);
}

TEST(ProbeStepFill, WhatTheMergeLeavesOutOfARecordedStepIsLeftOutOfItsCopies) {
  // The program annotates its own data pipeline (a `prep` in the "dreamscope" domain), so the
  // PyTorch layer's automatic `prep` ranges are left out of the trace: of the probe step's copies
  // too.
  ScratchDir dir;
  ThreadLog log(dir / "7-0-0.dslog");
  auto step = [&](TimeNs at) {
    log.range("step", at, at + 1000);
    log.range("forward", at, at + 500);
    log.range("layer", at + 100, at + 200);
    log.range("batch", at + 300, at + 400, "dreamscope.auto", "prep");
    log.range("backward", at + 500, at + 1000);
  };
  step(0);
  log.probe_step(1000, 1000, 2);
  step(2000);
  log.range("prep", 3000, 3100, "dreamscope", "prep");
  log.close();
  const MergedJob m = merge(dir);
  EXPECT_TRUE(m.warnings.empty());
  EXPECT_EQ(filled_ranges(m.trace), (std::vector<Filled>{{"layer", 1100, 1200, 2, 0}}));
  for (StringId name : m.trace.annotations().name) EXPECT_NE(m.trace.str(name), "batch") << "left out as recorded";
}

TEST(ProbeStepFill, ATemplateFurtherThanItsReachIsNotUsed) {
  ScratchDir dir;
  ThreadLog log(dir / "7-0-0.dslog");
  log.step(0);
  for (int i = 1; i <= 8; ++i) log.step(i * 1000, "eval");
  log.probe_step(9000, 1000, 4); // the recorded step is 9 steps back
  log.close();
  EXPECT_TRUE(filled_ranges(merge(dir).trace).empty());
}

} // namespace
} // namespace dreamscope
