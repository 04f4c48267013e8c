// Malformed PyTorch profiler input: usable input gives counted, explained warnings, and
// unusable input a TraceError that names the file and the problem.
#include "import_test_util.h"

#include <dreamscope/storage/trace_file.h>
#include <dreamscope/storage/trace_summary.h>

#include <fstream>
#include <iterator>

namespace dreamscope::test {
namespace {

std::string error_of(const std::filesystem::path& p) {
  try {
    load_trace(p);
  } catch (const TraceError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(KinetoBadInput, TruncatedGzipIsAnErrorNamingTheFile) {
  TempDir dir;
  std::ifstream in(kineto("nccl_parser_config/nccl_data.json.gz"), std::ios::binary);
  std::string gz((std::istreambuf_iterator<char>(in)), {});
  auto p = dir.write("cut.json.gz", gz.substr(0, gz.size() / 2));
  std::string e = error_of(p);
  EXPECT_TRUE(e.starts_with(p.string() + ": truncated gzip file")) << e;
}

TEST(KinetoBadInput, NotJsonIsAnError) {
  TempDir dir;
  auto p = dir.write("notes.json", "{ this is not json at all");
  EXPECT_TRUE(error_of(p).starts_with(p.string() + ": not valid JSON")) << error_of(p);
  auto text = dir.write("readme.txt", "hello\n");
  EXPECT_EQ(error_of(text), text.string() + ": not a trace dreamscope reads (expected a dreamscope trace.db, a "
                                            "PyTorch profiler trace .json or .json.gz, or an Nsight Systems SQLite export)");
  auto gz = dir.write_gzip("binary.json.gz", "\x01\x02 binary");
  EXPECT_EQ(error_of(gz), gz.string() + ": gzip data that is not JSON, so not a PyTorch profiler trace");
}

TEST(KinetoBadInput, MissingTraceEventsIsAnError) {
  TempDir dir;
  auto p = dir.write("meta.json", R"json({"schemaVersion": 1, "deviceProperties": []})json");
  EXPECT_EQ(error_of(p), p.string() + ": no traceEvents array, so not a PyTorch profiler trace");
  auto q = dir.write("wrong.json", R"json({"traceEvents": {"ph": "X"}})json");
  EXPECT_EQ(error_of(q), q.string() + ": traceEvents is not an array");
}

TEST(KinetoBadInput, EventsMissingFieldsAreCountedAndTheRestKept) {
  TempDir dir;
  auto p = dir.write("holes.json", R"json({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 2, "ts": 10, "dur": 5},
    {"ph": "X", "cat": "cpu_op", "name": "no dur", "pid": 1, "tid": 2, "ts": 10},
    {"ph": "X", "name": "no cat", "pid": 1, "tid": 2, "ts": 10, "dur": 1},
    {"ph": "X", "cat": "cpu_op", "name": "no ts", "pid": 1, "tid": 2, "dur": 1},
    {"ph": "X", "cat": "cpu_op", "name": "string ts", "pid": 1, "tid": 2, "ts": "10", "dur": 1},
    {"ph": "X", "cat": "cpu_op", "name": "negative", "pid": 1, "tid": 2, "ts": 10, "dur": -1},
    {"ph": "X", "cat": "cpu_op", "name": "thread name", "pid": 1, "tid": "main", "ts": 10, "dur": 1},
    42,
    {"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans", "tid": "x", "ts": 0, "dur": 99},
    {"ph": "B", "cat": "cpu_op", "name": "begin", "pid": 1, "tid": 2, "ts": 10},
    {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": 7, "pid": 1, "tid": 2, "ts": 10},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 11, "dur": 2, "args": {"stream": 7, "correlation": 7}}
  ]})json");
  ImportStats stats;
  Trace t = load_trace(p, &stats);
  EXPECT_EQ(t.annotations().size(), 1u);
  EXPECT_EQ(t.gpu_ops().size(), 1u);
  EXPECT_EQ(stats.events_read, 12u);
  EXPECT_EQ(stats.events_kept, 2u);
  std::map<std::string, std::int64_t> counts;
  for (const auto& [id, issue] : stats.issues) counts[id] = issue.count;
  EXPECT_EQ(counts, (std::map<std::string, std::int64_t>{
                        {"kineto_event_without_dur", 1},
                        {"kineto_event_without_cat", 1},
                        {"kineto_event_without_ts", 1},
                        {"kineto_time_not_a_number", 1},
                        {"kineto_negative_dur", 1},
                        {"kineto_bad_pid_tid", 1},
                        {"kineto_element_not_object", 1},
                        {"kineto_profiler_span", 1},
                        {"kineto_unknown_phase", 1},
                        {"kineto_flow_start_without_finish", 1},
                    }));
  EXPECT_EQ(stats.issues.at("kineto_event_without_dur").example, "event #2 'no dur' at ts 10");
  // The profiler span is no event, but the TensorBoard plugin's timeline runs over it.
  EXPECT_EQ(t.meta_value("kineto.profiler_span_ns"), "0 99000");
  EXPECT_EQ(stats.issues.at("kineto_negative_dur").severity, ImportSeverity::Warning);
  EXPECT_EQ(stats.warning_count(), 7);
  // The same summary travels with the trace.
  EXPECT_EQ(t.meta_value("import_warnings"), stats.summary());
  EXPECT_TRUE(stats.summary().starts_with("warning: ")) << stats.summary();
  // `dreamscope info` sums them up.
  EXPECT_EQ(summarize(t).warnings,
            "import: 7 warnings, 3 events dropped as the peer tools do (meta import_warnings lists them)");
}

TEST(KinetoBadInput, DamagedJsonAfterSomeEventsKeepsThem) {
  TempDir dir;
  auto p = dir.write("cut.json", R"json({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 2, "ts": 10, "dur": 5},
    {"ph": "X", "cat": "cpu_op", "name": "b", "pid": 1, "tid": 2, "ts": 20, "dur": 5},
    {"ph": "X", "cat": "cpu_op", "name": "c", "pid": 1, "tid": 2, "ts": 30, "dur": 5} ,, ]})json");
  ImportStats stats;
  Trace t = load_trace(p, &stats);
  EXPECT_EQ(t.annotations().size(), 3u);
  EXPECT_EQ(stats.issues.count("kineto_damaged_json"), 1u);
  EXPECT_FALSE(t.complete());
}

TEST(KinetoBadInput, The2021FormatStreamTidAndExponentTimestamps) {
  TempDir dir;
  auto p = dir.write_gzip("old.json.gz", R"json({"traceEvents": [
    {"ph": "X", "cat": "Operator", "name": "aten::conv2d", "pid": 5, "tid": 5, "ts": 1.5e3, "dur": 2.0005},
    {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 5, "tid": 5, "ts": 1501, "dur": 1, "args": {"correlation": 9, "external id": 3}},
    {"ph": "X", "cat": "Kernel", "name": "conv", "pid": 0, "tid": "stream 7", "ts": 1503, "dur": 4, "args": {"correlation": 9, "device": 0}},
    {"ph": "X", "cat": "Memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": "stream 7", "ts": 1510, "dur": 1, "args": {"bytes": 64}}
  ]})json");
  Trace t = load_trace(p);
  ASSERT_EQ(t.annotations().size(), 1u);
  EXPECT_EQ(t.annotations().start[0], 1500000);
  EXPECT_EQ(t.annotations().end[0], 1502001); // 2.0005 µs rounds to 2001 ns
  ASSERT_EQ(t.gpu_ops().size(), 2u);
  EXPECT_EQ(gpu_op_row(t, GpuOpIndex{0}), "kernel 'conv' device 0 stream 7 [1503000, 1507000) corr 9");
  EXPECT_EQ(static_cast<CopyKind>(t.gpu_ops().subkind[1]), CopyKind::HtoD);
  EXPECT_EQ(t.gpu_ops().bytes[1], 64);
  EXPECT_EQ(t.cuda_api().external_id[0], 3);
  EXPECT_EQ(t.meta_value("kineto.ts_precision"), "ns");
}

// The TensorBoard plugin's own test trace names "device" twice in one kernel's args; Python
// keeps the last value, and so does the importer (for every key it reads).
TEST(KinetoBadInput, AKeyWrittenTwiceInArgsHasItsLastValue) {
  TempDir dir;
  auto p = dir.write("twice.json", R"json({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": "stream 7", "ts": 10, "dur": 2,
     "args": {"device": 0, "correlation": 1, "stream": 7, "correlation": 5, "device": 1}}
  ]})json");
  const Trace t = load_trace(p);
  ASSERT_EQ(t.gpu_ops().size(), 1u);
  EXPECT_EQ(t.gpu_ops().correlation[0], 5);
  EXPECT_EQ(t.devices()[t.tracks()[t.gpu_ops().track[0]].device].ordinal, 1);
  EXPECT_TRUE(t.args_of(GpuOpIndex{0}).empty()); // neither copy is left over as an arg
}

TEST(KinetoBadInput, ByteOrderMarkIsSkipped) {
  TempDir dir;
  auto p = dir.write("bom.json", "\xEF\xBB\xBF{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"a\", "
                                 "\"pid\": 1, \"tid\": 1, \"ts\": 1, \"dur\": 2}]}");
  EXPECT_EQ(detect_trace_format(p), TraceFormat::KinetoJson);
  Trace t = load_trace(p);
  ASSERT_EQ(t.annotations().size(), 1u);
  EXPECT_EQ(t.annotations().end[0], 3000);
}

TEST(KinetoBadInput, MissingFileAndDirectory) {
  TempDir dir;
  EXPECT_EQ(error_of(dir / "nope.json"), (dir / "nope.json").string() + ": no such file");
  std::filesystem::create_directory(dir / "d");
  EXPECT_EQ(error_of(dir / "d"), (dir / "d").string() + ": is a directory, not a trace file");
}

} // namespace
} // namespace dreamscope::test
