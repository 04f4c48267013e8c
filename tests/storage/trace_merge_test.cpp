// Merging a job's part logs (dreamscope/storage/trace_merge.h) and the Trace copy under it
// (dreamscope/storage/trace_copy.h): parts written with the tracer's own log writer, merged without
// running any process.
#include "test_traces.h"

#include <dreamscope/storage/trace_copy.h>
#include <dreamscope/storage/trace_log.h>
#include <dreamscope/storage/trace_merge.h>
#include <dreamscope/storage/trace_summary.h>

#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <map>

namespace dreamscope {
namespace {

using test::ScratchDir;

// One process's part as the tracer writes it: its process, one thread, and what `record`
// adds on that thread's track. `closed`: the process ended normally (else it was killed).
struct PartWriter {
  std::int64_t pid = 0;
  std::int64_t parent_pid = kNoValue;
  TimeNs start = 0, end = 0;
  bool closed = true;
  std::string ended_by;
  std::string warnings;
  std::int64_t dropped = 0;
  std::int64_t exit_status = kNoValue;
  std::int64_t rank = kNoValue;
  std::function<void(TraceLogWriter&, TrackId thread, ProcessId process)> record;

  void write(const std::filesystem::path& path) const {
    TraceLogWriter w(path);
    w.set_meta("source", "tracer");
    w.set_meta("host", "node-3");
    w.set_meta("start", std::to_string(start));
    w.set_meta("end", std::to_string(end));
    w.set_meta("dropped_events", std::to_string(dropped));
    if (!warnings.empty()) w.set_meta("warnings", warnings);
    if (!ended_by.empty()) w.set_meta("ended_by", ended_by);
    const ProcessId process = w.add_process(ProcessInfo{.pid = pid,
                                                        .parent_pid = parent_pid,
                                                        .name = "p" + std::to_string(pid),
                                                        .start = start,
                                                        .end = end,
                                                        .exit_status = exit_status,
                                                        .rank = rank});
    const TrackId thread = w.add_track(TrackInfo{.kind = TrackKind::CpuThread, .process = process, .tid = pid,
                                                 .name = "main-" + std::to_string(pid)});
    w.add(CalibrationRecord{.event_kind = "nvtx_range", .cost_ns = 20.0 + static_cast<double>(pid), .samples = 5000,
                            .method = "self"});
    if (record) record(w, thread, process);
    if (closed) {
      w.close();
    } else {
      w.flush(); // what a SIGKILLed process leaves: flushed, never closed
    }
  }
};

void annotate(TraceLogWriter& w, TrackId track, std::string_view name, std::string_view category, TimeNs start,
              TimeNs end, std::int64_t payload = kNoValue) {
  w.add(AnnotationRecord{.track = track, .start = start, .end = end, .name = w.intern(name),
                         .domain = w.intern("dreamscope"), .category = w.intern(category), .payload = payload});
}

std::size_t annotations_named(const Trace& t, std::string_view name) {
  std::size_t n = 0;
  for (StringId s : t.annotations().name) n += t.str(s) == name;
  return n;
}

const ProcessInfo* process_with_pid(const Trace& t, std::int64_t pid) {
  for (const auto& p : t.processes()) {
    if (p.pid == pid) return &p;
  }
  return nullptr;
}

// CUPTI's cost per call is measured only in a process that used CUDA: the merged trace takes
// it, and how many calls it timed, from that part, while the rest is the first part's.
TEST(MergePartLogs, CudaApiCalibrationComesFromTheProcessThatUsedCuda) {
  ScratchDir dir;
  PartWriter launcher{.pid = 300, .start = 1000, .end = 9000};
  launcher.write(dir / "300-1000-0.dslog");
  PartWriter cuda_user{.pid = 301, .parent_pid = 300, .start = 2000, .end = 8000};
  cuda_user.record = [](TraceLogWriter& w, TrackId, ProcessId) {
    w.add(CalibrationRecord{.event_kind = "cuda_api", .cost_ns = 640.0, .samples = 4500, .method = "cupti"});
    w.set_meta("cuda_api_calibration_calls", "4500");
  };
  cuda_user.write(dir / "301-2000-0.dslog");
  const MergedJob m = merge_part_logs(dir.path(), JobFacts{.command = "python train.py", .root_pid = 300});
  std::map<std::string, double> costs;
  for (const auto& c : m.trace.calibration()) costs[c.event_kind] = c.cost_ns;
  EXPECT_EQ(costs.size(), 2u);
  EXPECT_EQ(costs["nvtx_range"], 320.0) << "the first part's";
  EXPECT_EQ(costs["cuda_api"], 640.0);
  EXPECT_EQ(m.trace.meta_value("cuda_api_calibration_calls"), "4500");
}

TEST(MergePartLogs, PartsOfAJobBecomeOneTraceWithEachProcessOnItsOwnTracks) {
  ScratchDir dir;
  // The child started later but is listed first: the merge orders parts by start.
  PartWriter child{.pid = 201, .parent_pid = 200, .start = 2000, .end = 8000, .dropped = 2, .exit_status = 0};
  child.warnings = "CUPTI activity kind 5 not recorded: x";
  child.record = [](TraceLogWriter& w, TrackId t, ProcessId) {
    for (int i = 0; i < 3; ++i) annotate(w, t, "load", "operation", 2100 + i * 100, 2150 + i * 100);
    w.add(ThreadLoadRecord{.track = t, .start = 2000, .end = 2500, .cpu_ns = 480, .runqueue_ns = 10, .events = 3,
                           .cost_samples = 1, .range_cost_ns = 41.0});
  };
  child.write(dir / "201-2000-0.dslog");
  PartWriter root{.pid = 200, .start = 1000, .end = 9000, .dropped = 1};
  root.record = [](TraceLogWriter& w, TrackId t, ProcessId process) {
    annotate(w, t, "step", "step", 1500, 8500, 0);
    const DeviceId device = w.add_device(DeviceInfo{.ordinal = 0, .process = process, .name = "H100"});
    const TrackId stream = w.add_track(TrackInfo{.kind = TrackKind::GpuStream, .device = device, .stream = 7});
    const std::int64_t launch = w.add(CudaApiRecord{.track = t, .start = 1600, .end = 1700,
                                                    .name = w.intern("cudaLaunchKernel"), .correlation = 9});
    w.add_arg(launch, EventArg{.key = w.intern("grid"), .type = ArgType::Int, .int_value = 64});
    w.add(GpuOpRecord{.track = stream, .kind = GpuOpKind::Kernel, .start = 1800, .end = 2800,
                      .name = w.intern("gemm"), .correlation = 9,
                      .launch = LaunchConfig{{64, 1, 1}, {256, 1, 1}, 32, 0, 0}});
    w.add(OverheadRecord{.track = t, .start = 3000, .end = 3100, .kind = w.intern("tracer_buffer_map")});
    w.add(ThreadLoadRecord{.track = t, .start = 1000, .end = 9000, .cpu_ns = 7000, .runqueue_ns = kNoValue,
                           .events = 2, .cost_samples = 2, .range_cost_ns = 25.5, .mark_cost_ns = 11.0});
  };
  root.write(dir / "200-1000-0.dslog");

  const MergedJob m = merge_part_logs(dir.path(), JobFacts{.command = "python train.py", .root_pid = 200,
                                                           .root_exit_status = 0, .root_program = "python",
                                                           .warnings = {"no CUDA driver"}, .cpu_cores = 12});
  const Trace& t = m.trace;
  EXPECT_EQ(m.parts, 2u);
  EXPECT_EQ(m.processes, 2u);
  EXPECT_EQ(m.events, 6u);
  EXPECT_TRUE(m.complete);
  EXPECT_TRUE(m.warnings.empty());
  EXPECT_TRUE(t.complete());
  ASSERT_EQ(t.processes().size(), 2u);
  EXPECT_EQ(t.processes()[0].pid, 200); // start order
  EXPECT_EQ(t.processes()[1].pid, 201);
  EXPECT_EQ(t.meta_value("command"), "python train.py");
  EXPECT_EQ(t.meta_value("host"), "node-3");
  EXPECT_EQ(t.meta_value("cpu_cores"), "12");
  EXPECT_EQ(t.meta_value("parts"), "2");
  EXPECT_EQ(t.meta_value("start"), "1000");
  EXPECT_EQ(t.meta_value("end"), "9000");
  EXPECT_EQ(t.dropped_events(), 3);
  EXPECT_EQ(t.meta_value("warnings"), "CUPTI activity kind 5 not recorded: x; no CUDA driver");
  // One calibration, the first part's.
  ASSERT_EQ(t.calibration().size(), 1u);
  EXPECT_EQ(t.calibration()[0].cost_ns, 220.0);

  // Every row is on a track of its own process, with its names, launch and args.
  const auto& ann = t.annotations();
  ASSERT_EQ(ann.size(), 4u);
  for (std::size_t i = 0; i < ann.size(); ++i) {
    const TrackInfo& track = t.tracks()[ann.track[i]];
    const std::int64_t pid = t.processes()[track.process].pid;
    EXPECT_EQ(track.tid, pid);
    EXPECT_EQ(t.str(ann.name[i]), pid == 200 ? "step" : "load");
  }
  ASSERT_EQ(t.gpu_ops().size(), 1u);
  const GpuOpRecord kernel = t.gpu_ops().row(GpuOpIndex{0}, t.launch_configs());
  EXPECT_EQ(t.str(kernel.name), "gemm");
  EXPECT_EQ(kernel.launch.grid[0], 64);
  EXPECT_EQ(kernel.launch.registers_per_thread, 32);
  EXPECT_EQ(t.tracks()[kernel.track].kind, TrackKind::GpuStream);
  EXPECT_EQ(t.devices().at(t.tracks()[kernel.track].device).process, 0u);
  ASSERT_EQ(t.cuda_api().size(), 1u);
  EXPECT_EQ(t.arg_int(CudaApiIndex{0}, "grid"), 64);
  ASSERT_EQ(t.overheads().size(), 1u);
  EXPECT_EQ(t.str(t.overheads()[0].kind), "tracer_buffer_map");
  // Each part's thread 0 is a different track of the merged trace; its loads follow it there.
  ASSERT_EQ(t.thread_loads().size(), 2u);
  for (const ThreadLoadRecord& l : t.thread_loads()) {
    const TrackInfo& track = t.tracks()[l.track];
    EXPECT_EQ(track.kind, TrackKind::CpuThread);
    EXPECT_EQ(track.tid, l.start == 1000 ? 200 : 201);
    EXPECT_EQ(track.name, l.start == 1000 ? "main-200" : "main-201");
  }
  EXPECT_EQ(t.thread_loads()[0].cpu_ns, 7000); // (track, start) order: the root's thread first
  EXPECT_EQ(t.thread_loads()[1], (ThreadLoadRecord{.track = t.thread_loads()[1].track, .start = 2000, .end = 2500,
                                                   .cpu_ns = 480, .runqueue_ns = 10, .events = 3, .cost_samples = 1,
                                                   .range_cost_ns = 41.0}));
  EXPECT_NE(t.thread_loads()[1].track, t.thread_loads()[0].track);
}

TEST(MergePartLogs, ABatchPreparedInOneProcessAndWaitedForInAnotherGetsAFlow) {
  ScratchDir dir;
  PartWriter loader{.pid = 301, .start = 1100, .end = 5000};
  loader.record = [](TraceLogWriter& w, TrackId t, ProcessId) {
    annotate(w, t, "prep", "prep", 1200, 1400, 5);
    annotate(w, t, "prep", "prep", 1500, 1900, 5); // the batch's last prep ends at 1900
    annotate(w, t, "prep", "prep", 2000, 2100, 6); // never waited for: no flow
  };
  loader.write(dir / "301.dslog");
  PartWriter trainer{.pid = 300, .start = 1000, .end = 6000};
  trainer.record = [](TraceLogWriter& w, TrackId t, ProcessId) { annotate(w, t, "wait", "wait", 1800, 2500, 5); };
  trainer.write(dir / "300.dslog");

  const Trace t = merge_part_logs(dir.path(), JobFacts{.root_pid = 300, .root_exit_status = 0}).trace;
  ASSERT_EQ(t.flows().size(), 1u);
  const FlowRecord& f = t.flows()[0];
  EXPECT_EQ(t.str(f.kind), "batch");
  EXPECT_EQ(f.id, 5);
  EXPECT_EQ(f.from_time, 1900);
  EXPECT_EQ(f.to_time, 2500);
  EXPECT_EQ(t.processes()[t.tracks()[f.from_track].process].pid, 301);
  EXPECT_EQ(t.processes()[t.tracks()[f.to_track].process].pid, 300);
}

// Two ranks of one job: each numbers its batches and its launches from 0, and neither may
// be linked to the other's.
TEST(MergePartLogs, RanksKeepTheirOwnBatchesAndLaunches) {
  ScratchDir dir;
  for (std::int64_t r = 0; r < 2; ++r) {
    PartWriter part{.pid = 900 + r, .start = 1000 + r, .end = 9000, .rank = r};
    part.record = [r](TraceLogWriter& w, TrackId t, ProcessId process) {
      annotate(w, t, "prep", "prep", 1100 + r * 10, 1200 + r * 10, 0);
      annotate(w, t, "wait", "wait", 1300 + r * 10, 1400 + r * 10, 0);
      const DeviceId device = w.add_device(DeviceInfo{.ordinal = 0, .process = process, .name = "H100"});
      const TrackId stream = w.add_track(TrackInfo{.kind = TrackKind::GpuStream, .device = device, .stream = 7});
      w.add(CudaApiRecord{.track = t, .start = 1500, .end = 1510, .name = w.intern("cudaLaunchKernel"), .correlation = 1});
      w.add(GpuOpRecord{.track = stream, .kind = GpuOpKind::Kernel, .start = 1600, .end = 1700 + r,
                        .name = w.intern("gemm"), .correlation = 1});
    };
    part.write(dir / (std::to_string(900 + r) + "-1000-0.dslog"));
  }
  const Trace t = merge_part_logs(dir.path(), JobFacts{.root_pid = 900, .root_exit_status = 0}).trace;
  ASSERT_EQ(t.flows().size(), 2u);
  for (const FlowRecord& f : t.flows()) {
    EXPECT_EQ(t.tracks()[f.from_track].process, t.tracks()[f.to_track].process);
  }
  ASSERT_EQ(t.gpu_ops().size(), 2u);
  EXPECT_NE(t.gpu_ops().correlation[0], t.gpu_ops().correlation[1]);
  for (GpuOpIndex k{0}; k < 2; ++k) {
    const auto api = t.cuda_api_with_correlation(t.gpu_ops().correlation[k]);
    ASSERT_TRUE(api);
    const ProcessId device_process = t.devices()[t.tracks()[t.gpu_ops().track[k]].device].process;
    EXPECT_EQ(t.tracks()[t.cuda_api().track[*api]].process, device_process);
  }
}

TEST(MergePartLogs, AKilledProcessIsMergedAndMakesTheJobIncomplete) {
  ScratchDir dir;
  PartWriter root{.pid = 400, .start = 1000, .end = 9000};
  root.write(dir / "400.dslog");
  PartWriter killed{.pid = 401, .start = 1500, .closed = false};
  killed.record = [](TraceLogWriter& w, TrackId t, ProcessId) { annotate(w, t, "work", "operation", 1600, 1700); };
  killed.write(dir / "401.dslog");

  const MergedJob m = merge_part_logs(dir.path(), JobFacts{.root_pid = 400, .root_exit_status = 0});
  EXPECT_FALSE(m.complete);
  EXPECT_FALSE(m.trace.complete());
  EXPECT_EQ(annotations_named(m.trace, "work"), 1u);
  ASSERT_EQ(m.warnings.size(), 1u);
  EXPECT_EQ(m.warnings[0], "process 401 did not close its trace (killed or crashed): its events end at its last flush");
  EXPECT_NE(m.trace.meta_value("warnings").find(m.warnings[0]), std::string::npos);
}

TEST(MergePartLogs, AnUnreadablePartIsLeftOutNamingItsFile) {
  ScratchDir dir;
  PartWriter root{.pid = 500, .start = 1000, .end = 2000};
  root.record = [](TraceLogWriter& w, TrackId t, ProcessId) { annotate(w, t, "step", "step", 1100, 1900, 0); };
  root.write(dir / "500.dslog");
  std::ofstream(dir / "501.dslog") << "not a trace log at all";
  std::ofstream(dir / "notes.txt") << "not a part: ignored";

  const MergedJob m = merge_part_logs(dir.path(), JobFacts{.root_pid = 500, .root_exit_status = 0});
  EXPECT_EQ(m.parts, 1u);
  EXPECT_FALSE(m.complete);
  ASSERT_EQ(m.warnings.size(), 1u);
  EXPECT_EQ(m.warnings[0].rfind("part " + (dir / "501.dslog").string() + " could not be read and is left out: ", 0),
            0u)
      << m.warnings[0];
  EXPECT_EQ(annotations_named(m.trace, "step"), 1u);
}

TEST(MergePartLogs, TheRootsExitStatusGoesToItsLastImage) {
  ScratchDir dir;
  // The root exec'ed once: its first image ended by exec and has no status of its own.
  PartWriter first{.pid = 600, .start = 1000, .end = 1500, .ended_by = "exec"};
  first.write(dir / "600-a.dslog");
  PartWriter second{.pid = 600, .start = 1600, .end = 3000};
  second.write(dir / "600-b.dslog");
  PartWriter worker{.pid = 601, .start = 1700, .end = 2000, .exit_status = 0};
  worker.write(dir / "601.dslog");

  // Killed by SIGKILL: the launcher's 137 stands, whatever the part says.
  const Trace t = merge_part_logs(dir.path(), JobFacts{.root_pid = 600, .root_exit_status = 137}).trace;
  ASSERT_EQ(t.processes().size(), 3u);
  EXPECT_EQ(t.processes()[0].exit_status, kNoValue); // the image that exec'ed
  EXPECT_EQ(t.processes()[1].exit_status, 137);
  EXPECT_EQ(process_with_pid(t, 601)->exit_status, 0);
}

TEST(MergePartLogs, ARootThatRecordedNothingIsStillTheJobsProcess) {
  ScratchDir dir;
  const MergedJob m = merge_part_logs(dir.path(), JobFacts{.command = "/bin/true --x", .root_pid = 700,
                                                           .root_exit_status = 3, .root_program = "/bin/true"});
  EXPECT_EQ(m.parts, 0u);
  EXPECT_TRUE(m.complete);
  ASSERT_EQ(m.trace.processes().size(), 1u);
  EXPECT_EQ(m.trace.processes()[0].pid, 700);
  EXPECT_EQ(m.trace.processes()[0].name, "true");
  EXPECT_EQ(m.trace.processes()[0].exit_status, 3);
  EXPECT_EQ(m.trace.meta_value("command"), "/bin/true --x");
  // Nothing recorded, and said why: what `dreamscope trace` prints and every command reads.
  const std::string why = "no process of the job made an NVTX call; no CUDA work was recorded: no process of the job "
                          "initialised CUDA, or CUPTI could not record it";
  EXPECT_EQ(m.no_events, why);
  EXPECT_EQ(m.trace.meta_value("no_events"), why);
  EXPECT_TRUE(holds_no_events(m.trace));
  EXPECT_EQ(empty_trace_problem(m.trace),
            "the trace holds no events (no NVTX range or mark, CUDA API call or GPU work): " + why);
}

// Issue 33: a job that recorded no event is told apart from one that did, with the reason the
// launcher (what --trace asked for, whether a CUDA driver loads) and the parts can give.
TEST(MergePartLogs, AJobThatRecordedNoEventSaysWhyAsFarAsItIsKnown) {
  auto merged = [](const JobFacts& job, const std::function<void(TraceLogWriter&, TrackId, ProcessId)>& record,
                   const std::string& warnings = {}) {
    ScratchDir dir;
    PartWriter part{.pid = 800, .start = 1000, .end = 2000, .warnings = warnings, .exit_status = 0};
    part.record = record;
    part.write(dir / "800.dslog");
    return merge_part_logs(dir.path(), job);
  };
  // A thread's load alone (its ranges fell outside the window) is no event to analyze.
  auto loads_only = [](TraceLogWriter& w, TrackId t, ProcessId) {
    w.add(ThreadLoadRecord{.track = t, .start = 1100, .end = 1200, .events = 4});
  };
  auto windowed = [&](TraceLogWriter& w, TrackId t, ProcessId p) {
    loads_only(w, t, p);
    w.set_meta("window_from_ns", "5000");
  };
  auto with_device = [](TraceLogWriter& w, TrackId, ProcessId p) {
    w.add_device(DeviceInfo{.ordinal = 0, .process = p, .name = "GPU"});
  };
  const JobFacts root{.root_pid = 800, .root_exit_status = 0};
  JobFacts no_driver = root;
  no_driver.cuda_driver = false;
  MergedJob m = merged(no_driver, loads_only);
  EXPECT_EQ(m.no_events, "no process of the job made an NVTX call; no CUDA driver on this machine (libcuda.so.1 not "
                         "loadable)");
  EXPECT_TRUE(holds_no_events(m.trace));
  EXPECT_EQ(m.trace.thread_loads().size(), 1u) << "what was recorded is kept";
  JobFacts nvtx_only = root;
  nvtx_only.sources = "nvtx";
  EXPECT_EQ(merged(nvtx_only, windowed).no_events,
            "no NVTX range or mark fell in the --delay/--duration window; CUDA was not recorded (--trace nvtx)");
  JobFacts cuda_only = root;
  cuda_only.sources = "cuda";
  EXPECT_EQ(merged(cuda_only, with_device).no_events,
            "NVTX was not recorded (--trace cuda); CUDA was initialised, but no CUDA API call or GPU work was recorded");
  EXPECT_EQ(merged(root, {}, "CUPTI is not available (CUPTI_ERROR_UNKNOWN): recording NVTX and the CPU side only")
                .no_events,
            "no process of the job made an NVTX call; no CUDA work was recorded: CUPTI could not record it (see the "
            "warnings)");

  // One range is something: no reason, no meta.no_events, nothing refused.
  m = merged(no_driver, [](TraceLogWriter& w, TrackId t, ProcessId) { annotate(w, t, "step", "step", 1100, 1900); });
  EXPECT_EQ(m.no_events, "");
  EXPECT_EQ(m.trace.meta_value("no_events"), "");
  EXPECT_FALSE(holds_no_events(m.trace));
  EXPECT_EQ(empty_trace_problem(m.trace), "");
}

TEST(MergePartLogs, AFolderThatCannotBeListedIsAnErrorNamingIt) {
  ScratchDir dir;
  const auto missing = dir / "no-such-parts";
  try {
    merge_part_logs(missing, JobFacts{});
    FAIL() << "merged a folder that does not exist";
  } catch (const TraceError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(missing.string() + ": cannot list the trace parts: ", 0), 0u) << e.what();
  }
}

TEST(TraceCopy, ACopyIntoAnEmptyBuilderIsTheSameTraceArgsIncluded) {
  TraceBuilder with_args;
  const Trace full = test::make_full_trace();
  const TraceIdMap first = append_trace_ids(with_args, full);
  append_trace_rows(with_args, full, first);
  with_args.add_arg(GpuOpIndex{0}, "kernel_backend", "triton");
  const Trace original = std::move(with_args).build();

  TraceBuilder b;
  const TraceIdMap ids = append_trace_ids(b, original);
  append_trace_rows(b, original, ids);
  for (const auto& c : original.calibration()) b.add(c);
  const Trace copy = std::move(b).build();
  test::expect_same_events(original, copy);
  EXPECT_EQ(copy.arg_text(GpuOpIndex{0}, "kernel_backend"), "triton");
  EXPECT_EQ(copy.arg_count(), 1u);
}

TEST(TraceCopy, IdsAreRemappedBehindWhatTheOutputHeldAndEditsMoveOrDropRows) {
  const Trace full = test::make_full_trace();
  TraceBuilder b;
  b.intern("something else");
  const auto earlier = b.add_process(ProcessInfo{.pid = 1, .name = "earlier"});
  b.thread_track(earlier, 1, "earlier-main");
  TraceCopyEdits edits;
  edits.process = [](ProcessInfo& p) { p.name += "-copied"; };
  edits.annotation = [](AnnotationIndex, AnnotationRecord& r) {
    r.start += 1'000'000;
    r.end += 1'000'000;
    return true;
  };
  edits.cuda_api = [&](CudaApiIndex row, CudaApiRecord&) { return full.cuda_api().cbid[row] != 307; };
  edits.overhead = [](OverheadRecord&) { return false; };
  edits.thread_load = [&](ThreadLoadRecord& l) {
    if (l.cpu_ns == kNoValue) return false;
    l.events += 100;
    return true;
  };
  edits.memory_event = [](MemoryEventRecord& m) {
    if (m.device_type == 0) return false;
    m.time += 1'000'000;
    return true;
  };
  const TraceIdMap ids = append_trace_ids(b, full, edits);
  append_trace_rows(b, full, ids, edits);
  const Trace t = std::move(b).build();

  ASSERT_EQ(t.processes().size(), 3u);
  EXPECT_EQ(t.processes()[1].name, "python-copied");
  EXPECT_EQ(ids.processes, (std::vector{ProcessId{1}, ProcessId{2}}));
  EXPECT_EQ(ids.tracks.front(), 1u);
  for (TrackId track{0}; track < full.tracks().size(); ++track) {
    const TrackInfo& copied = t.tracks()[ids.tracks[track]];
    EXPECT_EQ(copied.name, full.tracks()[track].name);
    if (copied.process != kNoIndex) {
      EXPECT_EQ(t.processes()[copied.process].pid, full.processes()[full.tracks()[track].process].pid);
    }
  }
  EXPECT_EQ(t.cuda_api().size(), full.cuda_api().size() - 1); // the driver call was left out
  EXPECT_TRUE(t.overheads().empty());
  ASSERT_EQ(t.annotations().size(), full.annotations().size());
  EXPECT_EQ(t.gpu_ops().start, full.gpu_ops().start); // not edited: not moved
  for (std::size_t i = 0; i < t.annotations().size(); ++i) EXPECT_GE(t.annotations().start[i], 1'000'000);
  ASSERT_EQ(t.flows().size(), 1u);
  EXPECT_EQ(t.str(t.flows()[0].kind), "batch");
  EXPECT_EQ(t.tracks()[t.flows()[0].from_track].name, "worker-0");
  ASSERT_EQ(t.thread_loads().size(), 2u); // the worker's, with nothing known, was left out
  for (const ThreadLoadRecord& l : t.thread_loads()) {
    EXPECT_EQ(t.tracks()[l.track].name, "MainThread");
    EXPECT_GE(l.events, 100);
  }
  ASSERT_EQ(t.memory_events().size(), 3u); // the CPU's were left out
  for (const MemoryEventRecord& m : t.memory_events()) {
    EXPECT_EQ(t.tracks()[m.track].name, "MainThread");
    EXPECT_GE(m.time, 1'000'000);
  }
}

} // namespace
} // namespace dreamscope
