// cpu_train traced end to end through `dreamscope trace`: every step, wait, fetch and prep
// is in the trace, on the right thread, with the right batch id, exactly once.
#include "run_helpers.h"

#include <dreamscope/whatif/cost_probes.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>

namespace dreamscope::test {
namespace {

std::vector<Row> named(const std::vector<Row>& rows, const std::string& name) {
  std::vector<Row> out;
  for (const auto& r : rows) {
    if (r.name == name) out.push_back(r);
  }
  return out;
}

std::map<std::int64_t, Row> by_payload(const std::vector<Row>& rows) {
  std::map<std::int64_t, Row> m;
  for (const auto& r : rows) EXPECT_TRUE(m.emplace(r.payload, r).second) << r.name << " payload " << r.payload << " twice";
  return m;
}

TEST(CpuTrainTrace, EveryPhaseOfEveryBatchOnItsThread) {
  const auto dir = scratch_dir("cpu-train");
  const auto out = dir / "cpu.db";
  constexpr int kSteps = 30, kWorkers = 3;
  RunResult r = run(traced(out, {bin("cpu_train"), "--steps", std::to_string(kSteps), "--workers",
                                 std::to_string(kWorkers), "--prefetch", "4", "--dataset-size", "100",
                                 "--data", (dir / "data").string()}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("median_step_ns"), std::string::npos) << r.output;

  Trace t = read_trace(out);
  EXPECT_TRUE(t.complete());
  EXPECT_EQ(t.dropped_events(), 0);
  ASSERT_EQ(t.processes().size(), 1u);
  const std::int64_t pid = t.processes()[0].pid;
  EXPECT_EQ(t.processes()[0].exit_status, 0);
  // Start-up calibration: the cost of a range and a mark back to back and among work, and
  // what the in-run timing reads for them in the same rounds.
  std::set<std::string> calibrated;
  for (const auto& c : t.calibration()) {
    calibrated.insert(c.event_kind);
    EXPECT_GT(c.cost_ns, 0) << c.event_kind;
  }
  EXPECT_EQ(calibrated, (std::set<std::string>{"nvtx_range", "nvtx_mark", "nvtx_range_timed", "nvtx_mark_timed",
                                               "nvtx_range_in_work", "nvtx_mark_in_work", "nvtx_range_counted",
                                               "clock_read"}));
  // Every thread that recorded has its load: windows inside the run, the events it recorded
  // in them, and (where the kernel keeps schedstats) the CPU it got and its waits for a core.
  std::set<TrackId> loaded;
  std::int64_t load_events = 0, timed_calls = 0;
  const bool schedstats = std::filesystem::exists("/proc/self/schedstat");
  // schedstat's CPU time of a running thread is brought up to date at scheduler ticks and
  // context switches, so a reading lags by up to a tick: 10 ms where the kernel runs at
  // 100 Hz (an H100 machine's Firecracker kernel read 12.3 ms in a 10.5 ms window).
  constexpr std::int64_t kSchedstatLagNs = 10'000'000;
  std::map<TrackId, std::int64_t> cpu_by_track, length_by_track;
  for (const ThreadLoadRecord& l : t.thread_loads()) {
    loaded.insert(l.track);
    EXPECT_LT(l.start, l.end);
    load_events += l.events;
    timed_calls += l.cost_samples;
    if (schedstats) {
      EXPECT_NE(l.cpu_ns, kNoValue);
      EXPECT_GE(l.runqueue_ns, 0);
      EXPECT_LE(l.cpu_ns, l.end - l.start + kSchedstatLagNs) << "more CPU than the window's length";
      cpu_by_track[l.track] += l.cpu_ns;
      length_by_track[l.track] += l.end - l.start;
    }
  }
  for (const auto& [track, cpu] : cpu_by_track) {
    EXPECT_LE(cpu, length_by_track[track] + kSchedstatLagNs) << "more CPU than the windows' length";
  }
  // A thread's windows begin when the writer first sees it: one whose whole life fell between
  // two drains (a loader of this 56 ms run, sometimes) has none. The training thread, there
  // from start to end, always has.
  bool main_loaded = false;
  for (TrackId track : loaded) main_loaded |= t.tracks()[track].tid == pid;
  EXPECT_TRUE(main_loaded);
  // The first events of a thread, before the writer first saw it, are in no window.
  EXPECT_GT(load_events, 0);
  EXPECT_LE(load_events, static_cast<std::int64_t>(t.annotations().size()) * 2);
  EXPECT_GT(timed_calls, 0);
  // The cores the job could use, for what-ifs that add threads.
  EXPECT_GE(std::atoi(t.meta_value("cpu_cores").c_str()), 1);

  const auto rows = annotation_rows(t);
  for (const auto& row : rows) EXPECT_EQ(row.domain, "dreamscope") << row.name;

  const auto steps = by_payload(named(rows, "step"));
  const auto waits = by_payload(named(rows, "wait"));
  const auto fetches = by_payload(named(rows, "fetch"));
  const auto preps = by_payload(named(rows, "prep"));
  ASSERT_EQ(steps.size(), static_cast<std::size_t>(kSteps));
  ASSERT_EQ(waits.size(), static_cast<std::size_t>(kSteps));
  ASSERT_EQ(fetches.size(), static_cast<std::size_t>(kSteps));
  ASSERT_EQ(preps.size(), static_cast<std::size_t>(kSteps));
  for (const char* op : {"forward", "loss", "backward", "optimizer"}) {
    EXPECT_EQ(named(rows, op).size(), static_cast<std::size_t>(kSteps)) << op;
  }

  std::set<std::int64_t> loader_threads;
  for (std::int64_t i = 0; i < kSteps; ++i) {
    ASSERT_TRUE(steps.count(i) && waits.count(i) && fetches.count(i) && preps.count(i)) << "batch " << i;
    const Row &step = steps.at(i), &wait = waits.at(i), &fetch = fetches.at(i), &prep = preps.at(i);
    EXPECT_EQ(step.category, "step");
    EXPECT_EQ(wait.category, "wait");
    EXPECT_EQ(fetch.category, "fetch");
    EXPECT_EQ(prep.category, "prep");
    // The step and its wait on the main thread, the wait inside the step.
    EXPECT_EQ(step.tid, pid);
    EXPECT_EQ(wait.tid, pid);
    EXPECT_GE(wait.start, step.start);
    EXPECT_LE(wait.end, step.end);
    // Fetch then prep of a batch on one loader thread, done before the step got it.
    EXPECT_NE(fetch.tid, pid);
    EXPECT_EQ(fetch.tid, prep.tid);
    EXPECT_LE(fetch.end, prep.start);
    EXPECT_LE(prep.end, wait.end);
    loader_threads.insert(fetch.tid);
  }
  EXPECT_LE(loader_threads.size(), static_cast<std::size_t>(kWorkers));

  // One batch flow per step: from the end of its prep on the loader to the end of its wait.
  ASSERT_EQ(t.flows().size(), static_cast<std::size_t>(kSteps));
  for (const auto& f : t.flows()) {
    EXPECT_EQ(t.str(f.kind), "batch");
    ASSERT_TRUE(preps.count(f.id) && waits.count(f.id));
    EXPECT_EQ(f.from_time, preps.at(f.id).end);
    EXPECT_EQ(f.to_time, waits.at(f.id).end);
    EXPECT_EQ(t.tracks()[f.from_track].tid, preps.at(f.id).tid);
    EXPECT_EQ(t.tracks()[f.to_track].tid, pid);
  }

  // The loader threads carry their names.
  std::set<std::string> names;
  for (const auto& track : t.tracks()) {
    if (track.kind == TrackKind::CpuThread && track.tid != pid) names.insert(track.name);
  }
  for (const auto& n : names) EXPECT_EQ(n.rfind("loader-", 0), 0u) << n;
  std::filesystem::remove_all(dir);
}

TEST(CpuTrainTrace, InlineLoadingAndFineAnnotations) {
  const auto dir = scratch_dir("cpu-train-inline");
  const auto out = dir / "cpu.db";
  RunResult r = run(traced(out, {bin("cpu_train"), "--steps", "5", "--workers", "0", "--batch-size", "4",
                                 "--hidden", "16", "--dataset-size", "20", "--data", (dir / "data").string(),
                                 "--fine-annotations"}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto rows = annotation_rows(read_trace(out));
  const std::int64_t pid = rows.empty() ? 0 : rows.front().pid;
  // One neuron range per hidden unit and sample and step: 5 x 4 x 16.
  EXPECT_EQ(named(rows, "neuron").size(), 320u);
  EXPECT_EQ(named(rows, "neuron_grad").size(), 320u);
  EXPECT_EQ(named(rows, "wait").size(), 0u);
  const auto steps = by_payload(named(rows, "step"));
  for (const auto& f : named(rows, "fetch")) {
    EXPECT_EQ(f.tid, pid);
    ASSERT_TRUE(steps.count(f.payload));
    EXPECT_GE(f.start, steps.at(f.payload).start);
    EXPECT_LE(f.end, steps.at(f.payload).end);
  }
  EXPECT_EQ(named(rows, "fetch").size(), 5u);
  EXPECT_EQ(named(rows, "prep").size(), 5u);
  std::filesystem::remove_all(dir);
}

// About a million NVTX events in some 40 ms, from one thread: far more than one chunk and
// faster than the writer drains, so the thread's chain grows and nothing is dropped. Without
// cost probes, which would leave out some of the neurons' ranges on purpose.
TEST(CpuTrainTrace, FineAnnotationBurstIsRecordedWhole) {
  const auto dir = scratch_dir("cpu-train-burst");
  const auto out = dir / "cpu.db";
  RunResult r = run(traced(out, {bin("cpu_train"), "--steps", "60", "--fine-annotations", "--workers", "2",
                                 "--data", (dir / "data").string()},
                           {"--cost-probe", "0"}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  Trace t = read_trace(out);
  EXPECT_TRUE(t.complete());
  EXPECT_EQ(t.dropped_events(), 0);
  const auto rows = annotation_rows(t);
  EXPECT_EQ(named(rows, "step").size(), 60u);
  EXPECT_EQ(named(rows, "neuron").size(), named(rows, "neuron_grad").size());
  EXPECT_GT(rows.size(), 400'000u);
  // What writing 400 k ranges cost the tracer's own thread, beside the traced ones: more than
  // nothing, and less than the process's whole life on one core.
  const std::int64_t writer_cpu = std::atoll(t.meta_value("tracer_writer_cpu_ns").c_str());
  TimeNs lifetimes = 0;
  for (const ProcessInfo& p : t.processes()) lifetimes += p.end - p.start;
  EXPECT_GT(writer_cpu, 0);
  EXPECT_LT(writer_cpu, lifetimes);
  std::filesystem::remove_all(dir);
}

// Cost probes (tracer/src/writer_thread.cpp): for 2 ms now and then, a thread's pushes inside
// two open ranges and their pops are counted, not recorded. Every range is whole (a counted
// push's pop is never recorded, whenever it comes), the two outermost levels (steps, forward,
// backward) are all there, the windows count the calls left out, and with --cost-probe 0
// --cost-probe-steps 0 nothing is left out.
TEST(CpuTrainTrace, CostProbesLeaveOutWholeInnerRangesAndCountThem) {
  const auto dir = scratch_dir("cpu-train-probes");
  // Long enough for two probes whatever the machine's speed (600 steps, some 65 ms on the
  // development VM, once held only one).
  constexpr int kSteps = 2000, kBatch = 4, kHidden = 64;
  const std::vector<std::string> job = {bin("cpu_train"), "--steps", std::to_string(kSteps), "--workers", "0",
                                        "--batch-size", std::to_string(kBatch), "--hidden", std::to_string(kHidden),
                                        "--fine-annotations", "--data", (dir / "data").string()};
  for (const char* every : {"20:2", "0"}) {
    const auto out = dir / (std::string("probe-") + every + ".db");
    // --cost-probe alone takes the place of the default probe steps; off, both are off.
    const bool off = std::string(every) == "0";
    RunResult r = run(traced(out, job, off ? std::vector<std::string>{"--cost-probe", every, "--cost-probe-steps", "0"}
                                           : std::vector<std::string>{"--cost-probe", every}));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    Trace t = read_trace(out);
    EXPECT_EQ(t.dropped_events(), 0);
    const auto rows = annotation_rows(t);
    EXPECT_EQ(named(rows, "step").size(), static_cast<std::size_t>(kSteps)) << every;
    const std::size_t neurons = named(rows, "neuron").size(), grads = named(rows, "neuron_grad").size();
    std::int64_t counted = 0, probe_windows = 0;
    for (const ThreadLoadRecord& l : t.thread_loads()) {
      EXPECT_GE(l.probe_events, 0);
      EXPECT_EQ(l.probe_events % 2, 0) << "a counted push and its pop";
      counted += l.probe_events;
      if (l.probe_events > l.events) ++probe_windows;
    }
    const whatif::ProbeSummary probes = whatif::summarize_probes(t);
    const std::size_t all = static_cast<std::size_t>(kSteps * kBatch * kHidden);
    if (std::string(every) == "0") {
      EXPECT_EQ(counted, 0);
      EXPECT_EQ(probes.probes, 0);
      EXPECT_EQ(neurons, all);
      EXPECT_EQ(grads, all);
      continue;
    }
    // A probe every 20 ms on average, 2 ms long, in a run of well over 100 ms.
    EXPECT_GE(probe_windows, 2);
    EXPECT_EQ(probes.probes, probe_windows);
    EXPECT_LT(neurons, all);
    EXPECT_GT(neurons, all / 2);
    // The neurons' ranges left out are those the windows counted, a push and a pop each.
    EXPECT_EQ(static_cast<std::int64_t>(2 * (all - neurons + all - grads)), counted);
    double range_counted = -1;
    for (const auto& c : t.calibration()) {
      if (c.event_kind == "nvtx_range_counted") range_counted = c.cost_ns;
    }
    EXPECT_GT(range_counted, 0);
  }
  std::filesystem::remove_all(dir);
}

// Probe steps (--cost-probe-steps, tracer/src/nvtx_injection.cpp): one step in N on average
// counts its neurons instead of recording them and ends with a `cost probe step` mark (domain
// dreamscope.tracer) saying how many; every other step, and every step's phases, are whole.
TEST(CpuTrainTrace, ProbeStepsCountTheirInnerRangesAndSaySo) {
  const auto dir = scratch_dir("cpu-train-probe-steps");
  // About 0.2 s of steps: the writer turns probe steps on at its first drain, some 20 ms in.
  constexpr int kSteps = 2000, kBatch = 4, kHidden = 64;
  const std::vector<std::string> job = {bin("cpu_train"), "--steps", std::to_string(kSteps), "--workers", "0",
                                        "--batch-size", std::to_string(kBatch), "--hidden", std::to_string(kHidden),
                                        "--fine-annotations", "--data", (dir / "data").string()};
  const auto out = dir / "probe-steps.db";
  RunResult r = run(traced(out, job, {"--cost-probe-steps", "10"}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  Trace t = read_trace(out);
  EXPECT_EQ(t.dropped_events(), 0);
  const auto& ann = t.annotations();
  const auto probe_name = t.find_string("cost probe step");
  const auto tracer_domain = t.find_string("dreamscope.tracer");
  ASSERT_TRUE(probe_name && tracer_domain);
  const auto neuron = t.find_string("neuron"), grad = t.find_string("neuron_grad"), step = t.find_string("step");
  ASSERT_TRUE(neuron && grad && step);
  // Per step (by its number): the neurons it recorded, and what its probe mark says it counted.
  // And the neurons the merge filled into each probe step, copied from a recorded step.
  std::map<std::int64_t, std::int64_t> recorded, counted, filled;
  std::vector<std::pair<TimeNs, TimeNs>> steps;
  std::vector<std::int64_t> numbers;
  for (AnnotationIndex i{0}; i < ann.size(); ++i) {
    if (ann.name[i] == *step) {
      steps.emplace_back(ann.start[i], ann.end[i]);
      numbers.push_back(ann.payload[i]);
    }
  }
  auto step_at = [&](TimeNs at) -> std::int64_t {
    for (std::size_t k = 0; k < steps.size(); ++k) {
      if (steps[k].first <= at && at <= steps[k].second) return numbers[k];
    }
    return -1;
  };
  for (AnnotationIndex i{0}; i < ann.size(); ++i) {
    if (ann.name[i] == *neuron || ann.name[i] == *grad) {
      ++(ann.filled_from[i] == kNoValue ? recorded : filled)[step_at(ann.start[i])];
    } else {
      EXPECT_EQ(ann.filled_from[i], kNoValue) << "only the counted ranges are filled";
    }
    if (ann.name[i] == *probe_name) {
      EXPECT_EQ(ann.domain[i], *tracer_domain);
      EXPECT_EQ(ann.end[i], ann.start[i]) << "a mark";
      counted[step_at(ann.start[i])] = ann.payload[i];
    }
  }
  EXPECT_EQ(steps.size(), static_cast<std::size_t>(kSteps));
  // One in 10 on average, drawn 5 to 14 apart, from the writer's first drain on (the first
  // steps go by before it): 2000 steps hold at most 400, and most of them at least 100.
  EXPECT_GE(counted.size(), 50u);
  EXPECT_LE(counted.size(), 400u);
  const std::int64_t per_step = 2 * kBatch * kHidden;
  std::int64_t counted_calls = 0;
  for (const auto& [number, n] : counted) {
    ASSERT_GE(number, 0) << "a probe mark at the end of its step";
    EXPECT_EQ(n, per_step) << "step " << number;
    EXPECT_EQ(recorded.count(number), 0u) << "step " << number << " counted its neurons and recorded some";
    EXPECT_EQ(filled[number], n) << "step " << number << ": every step runs the same neurons, so each probe is filled";
    counted_calls += 2 * n;
  }
  for (const auto& [number, n] : filled) {
    EXPECT_TRUE(counted.contains(number)) << "step " << number << " was filled and was no probe step";
  }
  // Each filled range names the recorded step it was copied from.
  std::set<TimeNs> recorded_starts;
  for (std::size_t k = 0; k < steps.size(); ++k) {
    if (!counted.contains(numbers[k])) recorded_starts.insert(steps[k].first);
  }
  for (AnnotationIndex i{0}; i < ann.size(); ++i) {
    if (ann.filled_from[i] != kNoValue) {
      EXPECT_TRUE(recorded_starts.contains(ann.filled_from[i])) << "filled from " << ann.filled_from[i];
    }
  }
  for (const auto& [number, n] : recorded) {
    if (number >= 0) {
      EXPECT_EQ(n, per_step) << "step " << number;
    }
  }
  std::int64_t probe_events = 0;
  for (const ThreadLoadRecord& l : t.thread_loads()) probe_events += l.probe_events;
  EXPECT_EQ(probe_events, counted_calls) << "the windows count a counted push and its pop, not the timed ones";
  // After each probe step the tracer timed 256 counted ranges on the thread: an overhead record
  // each, between that step's end and the next step's start (however long a busy machine made it).
  const auto timed_kind = t.find_string("tracer_counted_ranges_timed");
  ASSERT_TRUE(timed_kind);
  std::size_t timings = 0;
  for (const OverheadRecord& o : t.overheads()) {
    if (o.kind != *timed_kind) continue;
    ++timings;
    EXPECT_GT(o.end, o.start);
    const auto after = std::find_if(steps.begin(), steps.end(), [&](const auto& st) { return st.first >= o.end; });
    ASSERT_NE(after, steps.begin()) << "timing at " << o.start << " before every step";
    const std::size_t k = static_cast<std::size_t>(after - steps.begin()) - 1;
    EXPECT_LE(steps[k].second, o.start) << "timing at " << o.start << " inside step " << numbers[k];
    EXPECT_TRUE(counted.contains(numbers[k])) << "timing after step " << numbers[k] << ", no probe step";
  }
  EXPECT_EQ(timings, counted.size());
  std::filesystem::remove_all(dir);
}

TEST(CpuTrainTrace, SyntheticDataHasNoPipeline) {
  const auto dir = scratch_dir("cpu-train-synthetic");
  const auto out = dir / "cpu.db";
  RunResult r = run(traced(out, {bin("cpu_train"), "--steps", "7", "--no-loading"}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto rows = annotation_rows(read_trace(out));
  EXPECT_EQ(named(rows, "step").size(), 7u);
  EXPECT_EQ(named(rows, "fetch").size() + named(rows, "prep").size() + named(rows, "wait").size(), 0u);
  std::filesystem::remove_all(dir);
}

TEST(CpuTrainTrace, RecordingWindowKeepsOnlyLaterEvents) {
  const auto dir = scratch_dir("cpu-train-window");
  const auto out = dir / "cpu.db";
  const std::vector<std::string> train = {bin("cpu_train"), "--steps", "120", "--workers", "1", "--fetch-delay-us",
                                          "3000", "--dataset-size", "50", "--data", (dir / "data").string()};
  // The dataset exists before the traced run, so the steps begin soon after the start.
  ASSERT_EQ(run(train).exit_code, 0);
  RunResult r = run(traced(out, train, {"--delay", "0.1"}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  Trace t = read_trace(out);
  const auto steps = named(annotation_rows(t), "step");
  const std::int64_t from = std::atoll(t.meta_value("window_from_ns").c_str());
  ASSERT_GT(from, 0);
  ASSERT_GT(steps.size(), 0u);
  // Exactly the steps that started inside the window: a suffix of the run.
  std::int64_t first = 120;
  for (const auto& s : steps) {
    EXPECT_GE(s.start, from);
    first = std::min(first, s.payload);
  }
  EXPECT_EQ(static_cast<std::int64_t>(steps.size()), 120 - first);
  std::filesystem::remove_all(dir);
}

} // namespace
} // namespace dreamscope::test
