// PyTorch without Kineto (Debian's python3-torch 1.13.1, any USE_KINETO=0 build): the autograd
// profiler's own export_chrome_trace, a bare array of X events without cat on the
// pseudo-process "CPU functions". The fixtures are real files recorded with that package
// (tests/data/importers/kineto/autograd-legacy, README and record.py there) and two written
// from the exporter's source; the counts below are the files' own, taken with Python's json:
//
//   import json, re
//   op = lambda n: '::' in n or re.fullmatch(r'[A-Za-z_][A-Za-z0-9_]*Backward[0-9]*', n)
//   d = json.load(open(f)); len(d); sum(bool(op(e['name'])) for e in d)
//   collections.Counter(str(e['tid']) for e in d)
#include "import_test_util.h"

#include <dreamscope/storage/steps.h>
#include <dreamscope/storage/trace_summary.h>

#include <cstdlib>
#include <map>

namespace dreamscope::test {
namespace {

std::filesystem::path legacy_fixture(const std::string& name) {
  return std::filesystem::path(DREAMSCOPE_TEST_DATA_DIR) / "importers" / "kineto" / "autograd-legacy" / name;
}

// How many annotations of each name a category has.
std::map<std::string, int> names_in_category(const Trace& t, std::string_view category) {
  std::map<std::string, int> out;
  for (AnnotationIndex i : annotations_in_category(t, category)) ++out[std::string(t.str(t.annotations().name[i]))];
  return out;
}

// Each CPU thread as "process name/tid" with its annotation count.
std::map<std::string, std::size_t> cpu_threads(const Trace& t) {
  std::map<std::string, std::size_t> out;
  for (TrackId tr{0}; tr < t.tracks().size(); ++tr) {
    const TrackInfo& info = t.tracks()[tr];
    if (info.kind != TrackKind::CpuThread) continue;
    out[t.processes()[info.process].name + "/" + std::to_string(info.tid)] = t.annotations_on(tr).size();
  }
  return out;
}

TEST(KinetoLegacy, AutogradProfilerTrainingStepsAreOperatorsAndRanges) {
  ImportStats stats;
  const Trace t = load_trace(legacy_fixture("autograd-profile-train.json"), &stats);
  // 301 X events; 289 namespaced operators or autograd nodes, 12 record_function ranges.
  EXPECT_EQ(stats.events_read, 301u);
  EXPECT_EQ(stats.events_kept, 301u);
  EXPECT_EQ(stats.warning_count(), 0) << stats.summary();
  EXPECT_EQ(count_kinds(t), (KindCounts{.annotation = 301}));
  EXPECT_EQ(annotations_in_category(t, "cpu_op").size(), 289u);
  EXPECT_EQ(names_in_category(t, "user_annotation"),
            (std::map<std::string, int>{{"Optimizer.step#SGD.step", 2},
                                        {"Optimizer.zero_grad#SGD.zero_grad", 2},
                                        {"backward", 2},
                                        {"detach", 4}, // an operator not named as one: the file cannot tell
                                        {"forward", 2}}));
  EXPECT_EQ(names_in_category(t, "cpu_op")["aten::addmm"], 4);
  EXPECT_EQ(names_in_category(t, "cpu_op")["AddmmBackward0"], 4);
  // One pseudo-process without a pid, one thread.
  ASSERT_EQ(t.processes().size(), 1u);
  EXPECT_EQ(t.processes()[0].pid, kNoValue);
  EXPECT_EQ(cpu_threads(t), (std::map<std::string, std::size_t>{{"CPU functions/1", 301}}));
  // The file's first event: {"name": "aten::zeros", "ts": 230, "dur": 70}; the last ends at 2479 µs.
  EXPECT_EQ(t.begin_time(), 230'000);
  EXPECT_EQ(t.end_time(), 2'479'000);
  EXPECT_EQ(t.meta_value("kineto.exporter"), "autograd_profiler");
  EXPECT_EQ(t.meta_value("kineto.ts_precision"), "us");
  EXPECT_EQ(t.meta_value("complete"), "1");
  // Every kept CPU event's category was told by its name, and the import says so.
  ASSERT_EQ(stats.issues.count("kineto_legacy_category_from_name"), 1u) << stats.summary();
  EXPECT_EQ(stats.issues.at("kineto_legacy_category_from_name").count, 301);
  EXPECT_EQ(stats.issues.at("kineto_legacy_category_from_name").severity, ImportSeverity::Info);
  EXPECT_EQ(stats.issues.at("kineto_legacy_category_from_name").example, "event #1 'aten::zeros' at ts 230");
  EXPECT_EQ(stats.events_dropped(), 0);
  EXPECT_EQ(empty_import_problem(t), "");
}

TEST(KinetoLegacy, ScheduledProfilerStepsAreSteps) {
  ImportStats stats;
  const Trace t = load_trace(legacy_fixture("profiler-schedule-steps.json"), &stats);
  EXPECT_EQ(stats.events_kept, 310u);
  EXPECT_EQ(annotations_in_category(t, "cpu_op").size(), 300u);
  EXPECT_EQ(annotations_in_category(t, "user_annotation").size(), 10u);
  // {"name": "ProfilerStep#1", "ts": 313, "dur": 1046}, {"name": "ProfilerStep#2", "ts": 1400, "dur": 756}
  const std::vector<AnnotationIndex> steps = find_steps(t);
  ASSERT_EQ(steps.size(), 2u);
  const auto& a = t.annotations();
  EXPECT_EQ(step_label(t, steps[0]), "ProfilerStep#1");
  EXPECT_EQ(step_number(t, steps[1]), 2);
  EXPECT_EQ(a.start[steps[0]], 313'000);
  EXPECT_EQ(a.end[steps[0]], 1'359'000);
  EXPECT_EQ(a.end[steps[1]] - a.start[steps[1]], 756'000);
}

TEST(KinetoLegacy, InterOpThreadsAreThreadsAndFloatMicrosecondsAreExact) {
  ImportStats stats;
  const Trace t = load_trace(legacy_fixture("profiler-legacy-fork-threads.json"), &stats);
  EXPECT_EQ(stats.events_kept, 36u);
  EXPECT_EQ(cpu_threads(t), (std::map<std::string, std::size_t>{
                            {"CPU functions/1", 6}, {"CPU functions/3", 10}, {"CPU functions/4", 10}, {"CPU functions/5", 10}}));
  // torch.autograd.profiler_legacy writes Python floats: {"ts": 65.215, "dur": 13.64} first,
  // then {"ts": 70.703, "dur": 3.703000000000003}, whose tail is rounded off at the ns.
  const auto& a = t.annotations();
  EXPECT_EQ(a.start[0], 65'215);
  EXPECT_EQ(a.end[0], 65'215 + 13'640);
  EXPECT_EQ(a.end[1] - a.start[1], 3'703);
  EXPECT_EQ(t.meta_value("kineto.ts_precision"), "ns");
}

TEST(KinetoLegacy, RemoteEventsAreTheCalleesThread) {
  ImportStats stats;
  const Trace t = load_trace(legacy_fixture("profiler-legacy-rpc.json"), &stats);
  EXPECT_EQ(stats.events_kept, 16u);
  EXPECT_EQ(stats.warning_count(), 0) << stats.summary();
  // Ten local events on tid 1; six of the callee on tid " node_id:1, thread_id:4 ".
  EXPECT_EQ(cpu_threads(t), (std::map<std::string, std::size_t>{{"CPU functions/1", 10},
                                                            {"CPU functions, node_id:1/4", 6}}));
  ASSERT_EQ(t.processes().size(), 2u);
  EXPECT_EQ(t.processes()[1].pid, kNoValue);
  // Remote operators keep their cpu_op category: "...#remote_op: aten::add".
  EXPECT_EQ(names_in_category(t, "cpu_op")["rpc_sync#remote_add(w0 -> w1)#remote_op: aten::add"], 1);
  EXPECT_EQ(names_in_category(t, "user_annotation"),
            (std::map<std::string, int>{{"rpc_call", 1}, {"rpc_sync#remote_add(w0 -> w1)", 1}}));
}

TEST(KinetoLegacy, AnUnescapedQuoteInANameKeepsTheEventsBeforeIt) {
  ImportStats stats;
  const Trace t = load_trace(legacy_fixture("autograd-profile-quote-in-name.json"), &stats);
  // "name": "say "hi"" is not JSON: the 11 events before it are kept, the rest counted lost.
  EXPECT_EQ(t.annotations().size(), 11u);
  ASSERT_EQ(stats.issues.count("kineto_damaged_json"), 1u) << stats.summary();
  EXPECT_EQ(t.meta_value("complete"), "0");
  EXPECT_EQ(empty_import_problem(t), "");
}

TEST(KinetoLegacy, OldUseCudaKernelsAreStreamlessKernelsWithTheirLaunchFlows) {
  ImportStats stats;
  const Trace t = load_trace(legacy_fixture("handwritten-1.7-use-cuda.json"), &stats);
  EXPECT_EQ(stats.warning_count(), 0) << stats.summary();
  EXPECT_EQ(count_kinds(t), (KindCounts{.kernel = 3, .annotation = 6}));
  // "pid": "CUDA functions", "tid": device index; no stream.
  const auto sgemm = gpu_ops_named(t, "volta_sgemm");
  ASSERT_EQ(sgemm.size(), 1u);
  EXPECT_EQ(gpu_op_row(t, sgemm[0]),
            "kernel 'volta_sgemm_128x64_nn' device 0 stream -9223372036854775808 [20750, 36250) corr "
            "-9223372036854775808");
  const auto gemv = gpu_ops_named(t, "gemv2T");
  ASSERT_EQ(gemv.size(), 1u);
  EXPECT_EQ(t.devices()[t.tracks()[t.gpu_ops().track[gemv[0]]].device].ordinal, 1);
  // Three cpu_to_cuda flows, each from the launching operator's thread to the kernel's row.
  ASSERT_EQ(t.flows().size(), 3u);
  for (const FlowRecord& f : t.flows()) {
    EXPECT_EQ(t.str(f.kind), "cpu_to_cuda");
    EXPECT_EQ(t.tracks()[f.from_track].kind, TrackKind::CpuThread);
    EXPECT_EQ(t.tracks()[f.to_track].kind, TrackKind::GpuStream);
  }
  EXPECT_EQ(cpu_threads(t), (std::map<std::string, std::size_t>{
                            {"CPU functions/1", 4}, {"CPU functions/2", 1}, {"CPU functions, node_id:1/3", 1}}));
  EXPECT_EQ(names_in_category(t, "user_annotation"), (std::map<std::string, int>{{"my_range", 1}, {"train_step", 1}}));
}

TEST(KinetoLegacy, PyTorch113UseCudaFlowStartsAloneAreAQuirkNotDamage) {
  ImportStats stats;
  const Trace t = load_trace(legacy_fixture("handwritten-1.13-use-cuda.json"), &stats);
  EXPECT_EQ(t.annotations().size(), 3u);
  EXPECT_EQ(t.flows().size(), 0u);
  EXPECT_EQ(stats.warning_count(), 0) << stats.summary();
  ASSERT_EQ(stats.issues.count("kineto_flow_kernel_start_only"), 1u) << stats.summary();
  EXPECT_EQ(stats.issues.at("kineto_flow_kernel_start_only").count, 2);
  EXPECT_EQ(stats.issues.at("kineto_flow_kernel_start_only").severity, ImportSeverity::Info);
}

TEST(KinetoLegacy, EveryWayThroughTheReaderReadsTheSame) {
  // Runs of one event and more, in turn or on a thread of their own, streamed or read whole.
  const auto path = legacy_fixture("profiler-schedule-steps.json");
  const Trace whole = load_trace(path);
  for (const char* run_bytes : {"1", "700", "262144"}) {
    for (const char* threads_env : {"1", "2"}) {
      SCOPED_TRACE(std::string("run bytes ") + run_bytes + ", threads " + threads_env);
      ::setenv("DREAMSCOPE_IMPORT_RUN_BYTES", run_bytes, 1);
      ::setenv("DREAMSCOPE_IMPORT_THREADS", threads_env, 1);
      ::setenv("DREAMSCOPE_IMPORT_STREAM_FROM", "0", 1);
      ImportStats stats;
      const Trace t = load_trace(path, &stats);
      ::unsetenv("DREAMSCOPE_IMPORT_RUN_BYTES");
      ::unsetenv("DREAMSCOPE_IMPORT_THREADS");
      ::unsetenv("DREAMSCOPE_IMPORT_STREAM_FROM");
      EXPECT_EQ(stats.events_kept, 310u);
      EXPECT_EQ(t.annotations().start, whole.annotations().start);
      EXPECT_EQ(t.annotations().category, whole.annotations().category);
    }
  }
}

TEST(KinetoLegacy, WithoutOperatorsKeepsTheRangesAndSummarizesTheOperators) {
  ImportStats stats;
  const Trace t = import_kineto(legacy_fixture("profiler-schedule-steps.json"), &stats, {}, ImportDetail::WithoutOperators);
  // The 10 ranges (ProfilerStep#1/#2 among them) stay annotations; the 300 operators are summarized.
  EXPECT_EQ(t.annotations().size(), 10u);
  EXPECT_EQ(find_steps(t).size(), 2u);
  EXPECT_EQ(stats.events_kept, 310u);
}

TEST(KinetoLegacy, OnlyTheExportersPseudoProcessesStandForAPid) {
  TempDir dir;
  // A bare array is no sign by itself: without cat, a numeric pid is dropped as HTA does, and
  // a string pid that is not "<NAME> functions" is no pid. With a cat, the cat decides.
  auto p = dir.write("mixed.json", R"json([
    {"name": "a", "ph": "X", "ts": 1, "dur": 2, "tid": 1, "pid": 7, "args": {}},
    {"name": "b", "ph": "X", "ts": 1, "dur": 2, "tid": 1, "pid": "main", "args": {}},
    {"name": "c", "ph": "X", "ts": 1, "dur": 2, "tid": 1, "pid": "CPU 2 functions", "args": {}},
    {"name": "r", "ph": "X", "cat": "user_annotation", "ts": 1, "dur": 2, "tid": 1, "pid": "CPU functions", "args": {}},
    {"name": "aten::add", "ph": "X", "ts": 1, "dur": 2, "tid": "node_id:x", "pid": "CPU functions", "args": {}},
    {"name": "aten::mul", "ph": "X", "ts": 1, "dur": 2, "tid": 1, "pid": "NPU functions", "args": {}}
  ])json");
  ImportStats stats;
  const Trace t = load_trace(p, &stats);
  std::map<std::string, std::int64_t> counts;
  for (const auto& [id, issue] : stats.issues) counts[id] = issue.count;
  EXPECT_EQ(counts, (std::map<std::string, std::int64_t>{{"kineto_event_without_cat", 3}, {"kineto_bad_pid_tid", 1}}));
  // "r" by its cat; the NPU row's event a stream-less kernel of device 1 (its tid).
  EXPECT_EQ(count_kinds(t), (KindCounts{.kernel = 1, .annotation = 1}));
  EXPECT_EQ(names_in_category(t, "user_annotation"), (std::map<std::string, int>{{"r", 1}}));
  ASSERT_EQ(t.gpu_ops().size(), 1u);
  EXPECT_EQ(gpu_op_row(t, GpuOpIndex{0}),
            "kernel 'aten::mul' device 1 stream -9223372036854775808 [1000, 3000) corr "
            "-9223372036854775808");
}

} // namespace
} // namespace dreamscope::test
