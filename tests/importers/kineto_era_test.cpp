// One test per era of the PyTorch profiler's format, on the hand-written fixtures of
// tests/data/importers/kineto (README there): what each era writes differently is read.
#include "import_test_util.h"

#include <dreamscope/storage/trace_summary.h>

#include <map>

namespace dreamscope::test {
namespace {

std::filesystem::path fixture(const std::string& name) {
  return std::filesystem::path(DREAMSCOPE_TEST_DATA_DIR) / "importers" / "kineto" / name;
}

TEST(KinetoEra, PyTorch18StringIdsKeepTheCpuSideAndLinkLaunches) {
  ImportStats stats;
  Trace t = load_trace(fixture("pytorch-1.8-gpu.json"), &stats);
  EXPECT_EQ(stats.warning_count(), 0) << stats.summary();
  EXPECT_EQ(count_kinds(t), (KindCounts{.runtime = 4, .kernel = 1, .memcpy = 1, .memset = 1, .annotation = 3}));
  ASSERT_EQ(t.processes().size(), 1u);
  EXPECT_EQ(t.processes()[0].pid, 24572);
  EXPECT_EQ(t.processes()[0].name, "python");
  // "tid": "24572" and the flow's "tid": 24572 are one thread; "stream 7" is stream 7.
  ASSERT_EQ(t.flows().size(), 1u);
  EXPECT_EQ(t.flows()[0].id, 446);
  const auto kernel = gpu_ops_named(t, "volta_sgemm");
  ASSERT_EQ(kernel.size(), 1u);
  EXPECT_EQ(gpu_op_row(t, kernel[0]), "kernel 'volta_sgemm_128x32_nt' device 0 stream 7 [1621401187223150000, "
                                      "1621401187223180000) corr 446");
  // computeProperties, the 1.8 name, with its own key names.
  ASSERT_EQ(t.devices().size(), 1u);
  EXPECT_EQ(t.devices()[0].name, "Tesla V100-DGXS-32GB");
  EXPECT_EQ(t.devices()[0].sm_count, 80);
  EXPECT_EQ(t.devices()[0].compute_capability_major, 7);
  EXPECT_EQ(empty_import_problem(t), "");
}

TEST(KinetoEra, PyTorch19CpuOnlyTraceKeepsEveryOperatorAndBothThreads) {
  ImportStats stats;
  Trace t = load_trace(fixture("pytorch-1.9-cpu-only.json"), &stats);
  EXPECT_EQ(t.annotations().size(), 6u);
  std::size_t threads = 0;
  for (const auto& track : t.tracks()) threads += track.kind == TrackKind::CpuThread;
  EXPECT_EQ(threads, 2u);
  EXPECT_EQ(annotations_in_category(t, "Operator").size(), 6u);
  EXPECT_EQ(stats.events_kept, 6u);
}

TEST(KinetoEra, RocmDevicePropertiesUnderAnotherIdAreMatchedByOrder) {
  ImportStats stats;
  Trace t = load_trace(fixture("pytorch-2.4-rocm-visible-device.json"), &stats);
  // One device: gpu 2 with the MI300X's properties; no empty gpu 0 beside it.
  ASSERT_EQ(t.devices().size(), 1u);
  EXPECT_EQ(t.devices()[0].ordinal, 2);
  EXPECT_EQ(t.devices()[0].name, "AMD Instinct MI300X");
  EXPECT_EQ(t.devices()[0].sm_count, 304);
  EXPECT_EQ(stats.issues.at("kineto_device_id_mapped_by_order").severity, ImportSeverity::Info);
  // hipMalloc/hipFree flow starts and the memset's two finishes are ROCm's quirks: info.
  EXPECT_EQ(stats.warning_count(), 0) << stats.summary();
  EXPECT_EQ(stats.issues.at("kineto_flow_start_on_runtime_call_without_gpu_work").count, 2);
  EXPECT_EQ(stats.issues.at("kineto_flow_two_finishes").count, 1);
  EXPECT_EQ(t.flows().size(), 2u);
  // Float µs are exact ns, and the wall-clock base travels in meta.
  EXPECT_EQ(t.meta_value("kineto.ts_precision"), "ns");
  EXPECT_EQ(t.meta_value("kineto.baseTimeNanoseconds"), "1735632360000000000");
  const auto k = gpu_ops_named(t, "Cijk");
  ASSERT_EQ(k.size(), 1u);
  EXPECT_EQ(t.gpu_ops().start[k[0]], 5000130250);
  EXPECT_EQ(t.gpu_ops().end[k[0]], 5000171000);
}

TEST(KinetoEra, DevicesListedButUnusedStayAsTheMachinesOtherGpus) {
  TempDir dir;
  auto p = dir.write("eight.json", R"json({"deviceProperties": [
    {"id": 0, "name": "A", "numSms": 1}, {"id": 1, "name": "B", "numSms": 2}, {"id": 3, "name": "D", "numSms": 4}],
    "traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 1, "tid": 7, "ts": 1, "dur": 1, "args": {"device": 1, "stream": 7}},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 9, "tid": 7, "ts": 1, "dur": 1, "args": {"device": 9, "stream": 7}}]})json");
  ImportStats stats;
  Trace t = load_trace(p, &stats);
  // Device 1 matches by id; 9 has no entry, and borrowing another GPU's would be a guess.
  std::map<std::int64_t, std::string> names;
  for (const auto& d : t.devices()) names[d.ordinal] = d.name;
  EXPECT_EQ(names, (std::map<std::int64_t, std::string>{{0, "A"}, {1, "B"}, {3, "D"}, {9, ""}}));
  EXPECT_EQ(stats.issues.count("kineto_device_id_mapped_by_order"), 0u);
}

TEST(KinetoEra, FlowIdsThatAreTextPairByTheirText) {
  TempDir dir;
  auto p = dir.write("text_ids.json", R"json({"traceEvents": [
    {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": "1", "tid": "2", "ts": 10, "dur": 5, "args": {"correlation": 1}},
    {"ph": "s", "cat": "async", "name": "launch", "id": "launch-a", "pid": 1, "tid": 2, "ts": 10},
    {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": "1", "tid": "2", "ts": 20, "dur": 5, "args": {"correlation": 2}},
    {"ph": "s", "cat": "async", "name": "launch", "id": "launch-b", "pid": 1, "tid": 2, "ts": 20},
    {"ph": "X", "cat": "Kernel", "name": "k", "pid": 0, "tid": "stream 7", "ts": 30, "dur": 5, "args": {"correlation": 2}},
    {"ph": "f", "cat": "async", "name": "launch", "id": "launch-b", "pid": 0, "tid": "stream 7", "ts": 30, "bp": "e"},
    {"ph": "X", "cat": "Kernel", "name": "k", "pid": 0, "tid": "stream 7", "ts": 40, "dur": 5, "args": {"correlation": 1}},
    {"ph": "f", "cat": "async", "name": "launch", "id": "launch-a", "pid": 0, "tid": "stream 7", "ts": 40, "bp": "e"}]})json");
  ImportStats stats;
  Trace t = load_trace(p, &stats);
  EXPECT_EQ(stats.warning_count(), 0) << stats.summary();
  ASSERT_EQ(t.flows().size(), 2u);
  // Each start meets the finish of its own text: launch-a at 10 µs ends at 40 µs.
  for (std::size_t i = 0; i < t.flows().size(); ++i) {
    EXPECT_EQ(t.flows()[i].to_time - t.flows()[i].from_time, t.flows()[i].from_time == 10000 ? 30000 : 10000);
  }
}

// PyTorch's profile_memory: "[memory]" instant events as each version wrote them (1.9: device
// and bytes only; 1.10: address and the allocator's totals; 2.x: cat, "Ev Idx", float µs; ROCm:
// "finished"), all kept on the thread of the operators, with what a version did not write unknown.
TEST(KinetoEra, MemoryEventsOfEveryPyTorchVersionAreKept) {
  TempDir dir;
  auto file = dir.write("memory.json", R"json({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::empty", "pid": 42, "tid": 42, "ts": 100, "dur": 50},
    {"ph": "i", "s": "t", "name": "[memory]", "pid": 42, "tid": 42, "ts": 101,
     "args": {"Device Type": 0, "Device Id": -1, "Bytes": 4}},
    {"ph": "i", "s": "t", "name": "[memory]", "pid": "42", "tid": "42", "ts": 102,
     "args": {"Device Type": 1, "Device Id": 0, "Addr": 139872013811712, "Bytes": 512,
              "Total Allocated": 512, "Total Reserved": 2097152}},
    {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 42, "tid": 42, "ts": 103.25,
     "args": {"Ev Idx": 7, "Device Type": 1, "Device Id": 0, "Addr": 139872013811712, "Bytes": -512,
              "Total Allocated": 0, "Total Reserved": 2097152}},
    {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 42, "tid": 43, "ts": 104,
     "args": {"Total Reserved": null, "Total Allocated": 8, "Bytes": 8, "Device Id": -1, "Device Type": 0,
              "Addr": 18446744073709547520, "finished": false, "Ev Idx": 8}},
    {"ph": "i", "s": "g", "name": "Iteration Start: PyTorch Profiler", "pid": "Traces", "tid": "x", "ts": 90}]})json");
  ImportStats stats;
  const Trace t = load_trace(file, &stats);
  EXPECT_EQ(stats.warning_count(), 0) << stats.summary();
  EXPECT_EQ(stats.events_kept, 5u);
  ASSERT_EQ(stats.issues.count("kineto_instant_event"), 1u);
  EXPECT_EQ(stats.issues.at("kineto_instant_event").count, 1); // the other instant event
  ASSERT_EQ(t.memory_events().size(), 4u);
  const TrackId main = t.annotations().track[0];
  const auto& m = t.memory_events();
  EXPECT_EQ(m[0], (MemoryEventRecord{.track = main, .time = 101000, .device_type = 0, .device_id = -1,
                                     .addr = kNoValue, .bytes = 4, .total_allocated = kNoValue,
                                     .total_reserved = kNoValue}));
  EXPECT_EQ(m[1], (MemoryEventRecord{.track = main, .time = 102000, .device_type = 1, .device_id = 0,
                                     .addr = 139872013811712, .bytes = 512, .total_allocated = 512,
                                     .total_reserved = 2097152}));
  EXPECT_EQ(m[2].time, 103250);
  EXPECT_EQ(m[2].bytes, -512);
  EXPECT_EQ(m[2].total_allocated, 0);
  EXPECT_NE(m[3].track, main);
  EXPECT_EQ(t.tracks()[m[3].track].tid, 43);
  EXPECT_EQ(m[3].addr, static_cast<std::int64_t>(18446744073709547520ull));
  EXPECT_EQ(m[3].total_allocated, 8);
  EXPECT_EQ(m[3].total_reserved, kNoValue);
  // HTA's rounding rule follows the complete events only: these are whole µs.
  EXPECT_EQ(t.meta_value("kineto.ts_precision"), "us");
  EXPECT_EQ(empty_import_problem(t), "");
  EXPECT_EQ(summarize(t).counts.memory_events, 4u);
}

// An arg that is not an integer (or bytes past ±2^62) drops the event, counted by its own id;
// the file's other memory events stay. A file of memory events alone is usable.
TEST(KinetoEra, AMemoryEventWithABadArgIsDroppedAndCounted) {
  TempDir dir;
  auto file = dir.write("bad.json", R"json([
    {"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": 1, "args": {"Device Type": 0, "Bytes": "4"}},
    {"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": 2, "args": {"Device Type": 0, "Bytes": 5e18}},
    {"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": 3, "args": {"Addr": 1.5, "Bytes": 8}},
    {"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": 4, "args": {"Device Type": true}},
    {"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": 5, "args": {"Device Type": 0, "Bytes": 16.0}},
    {"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "args": {"Bytes": 1}}])json");
  ImportStats stats;
  const Trace t = load_trace(file, &stats);
  ASSERT_EQ(stats.issues.count("kineto_memory_event_bad_arg"), 1u) << stats.summary();
  EXPECT_EQ(stats.issues.at("kineto_memory_event_bad_arg").count, 4);
  EXPECT_EQ(stats.issues.at("kineto_memory_event_bad_arg").severity, ImportSeverity::Warning);
  EXPECT_EQ(stats.issues.count("kineto_event_without_ts"), 1u);
  ASSERT_EQ(t.memory_events().size(), 1u);
  EXPECT_EQ(t.memory_events()[0].bytes, 16);
  EXPECT_EQ(t.memory_events()[0].addr, kNoValue);
  EXPECT_EQ(empty_import_problem(t), "");
}

TEST(KinetoEra, AnImportThatKeepsNothingOrLosesASideSaysSo) {
  TempDir dir;
  // Ids that are neither numbers nor numeric strings: every event is dropped.
  auto none = dir.write("none.json", R"json({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "a", "pid": "main", "tid": "x", "ts": 1, "dur": 2},
    {"ph": "X", "cat": "cpu_op", "name": "b", "pid": "main", "tid": "x", "ts": 3, "dur": 2}]})json");
  EXPECT_EQ(empty_import_problem(load_trace(none)),
            "the import kept none of the 2 events in the file (2 x kineto_bad_pid_tid)");
  // The GPU side kept, the CPU side lost.
  auto half = dir.write("half.json", R"json({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "a", "pid": "main", "tid": "x", "ts": 1, "dur": 2},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 1, "args": {"stream": 7}}]})json");
  EXPECT_EQ(empty_import_problem(load_trace(half)),
            "the import kept none of the 1 CPU-side events in the file (1 x kineto_bad_pid_tid)");
  // A CPU-only file lacks a GPU side: nothing to report.
  EXPECT_EQ(empty_import_problem(load_trace(fixture("pytorch-1.9-cpu-only.json"))), "");
}

} // namespace
} // namespace dreamscope::test
