// The Chrome trace exporter: what it writes is valid Trace Event Format JSON, and the
// Kineto importer reads it back into the same events, flows and args.
#include "import_test_util.h"

#include "../storage/test_traces.h"

#include <dreamscope/storage/exporters.h>
#include <dreamscope/storage/trace_file.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <tuple>

namespace dreamscope::test {
namespace {

// (track key, start, end, name) of every event of one table, sorted: ids and track
// numbers may differ between two traces, what the rows say may not.
template <typename Table>
std::vector<std::string> rows_of(const Trace& t, const Table& table) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < table.size(); ++i) {
    const TrackInfo& tr = t.tracks()[table.track[i]];
    std::string where = tr.kind == TrackKind::CpuThread
                            ? "pid " + std::to_string(t.processes()[tr.process].pid) + " tid " + std::to_string(tr.tid)
                            : "gpu " + std::to_string(t.devices()[tr.device].ordinal) + " stream " + std::to_string(tr.stream);
    out.push_back(where + " [" + std::to_string(table.start[i]) + ", " + std::to_string(table.end[i]) + ") " +
                  std::string(t.str(table.name[i])));
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(ChromeExport, ReimportGivesTheSameEvents) {
  TempDir dir;
  for (const char* file : {"ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
                           "critical_path/cuda_event_sync/event_sync_trace.json.gz",
                           "mtia_inference_trace/mtia_inference_rank_0.json.gz"}) {
    SCOPED_TRACE(file);
    Trace a = import_kineto(kineto(file));
    export_chrome(a, dir / "out.json");
    ImportStats stats;
    Trace b = import_kineto(dir / "out.json", &stats);
    EXPECT_EQ(stats.warning_count(), 0) << stats.summary();
    EXPECT_EQ(rows_of(b, b.cuda_api()), rows_of(a, a.cuda_api()));
    EXPECT_EQ(rows_of(b, b.gpu_ops()), rows_of(a, a.gpu_ops()));
    EXPECT_EQ(rows_of(b, b.annotations()), rows_of(a, a.annotations()));
    EXPECT_EQ(count_kinds(b), count_kinds(a));
    EXPECT_EQ(b.flows().size(), a.flows().size());
    // Correlation and launch configuration survive.
    for (GpuOpIndex i{0}; i < a.gpu_ops().size(); ++i) {
      auto ops = b.gpu_ops_with_correlation(a.gpu_ops().correlation[i]);
      if (a.gpu_ops().correlation[i] == kNoValue) continue;
      ASSERT_FALSE(ops.empty());
    }
    EXPECT_EQ(b.launch_configs().size(), a.launch_configs().size());
    // Thread and stream names survive.
    std::vector<std::string> na, nb;
    for (const auto& tr : a.tracks()) na.push_back(tr.name);
    for (const auto& tr : b.tracks()) nb.push_back(tr.name);
    std::sort(na.begin(), na.end());
    std::sort(nb.begin(), nb.end());
    EXPECT_EQ(nb, na);
  }
}

TEST(ChromeExport, ATraceMadeByTraceBuilderRoundTrips) {
  // What the tracer and the simulator make: categories Kineto does not know, a stream
  // annotation, a flow between threads of two processes.
  TempDir dir;
  Trace a = make_full_trace();
  export_chrome(a, dir / "full.json");
  ImportStats stats;
  Trace b = import_kineto(dir / "full.json", &stats);
  EXPECT_EQ(stats.warning_count(), 0) << stats.summary();
  EXPECT_EQ(rows_of(b, b.cuda_api()), rows_of(a, a.cuda_api()));
  EXPECT_EQ(rows_of(b, b.gpu_ops()), rows_of(a, a.gpu_ops()));
  EXPECT_EQ(rows_of(b, b.annotations()), rows_of(a, a.annotations()));
  ASSERT_EQ(b.flows().size(), 1u);
  EXPECT_EQ(b.str(b.flows()[0].kind), "batch");
  EXPECT_EQ(b.flows()[0].from_time, 3500);
  EXPECT_EQ(b.flows()[0].to_time, 4000);
  auto sync = b.gpu_ops_with_correlation(5);
  ASSERT_EQ(sync.size(), 1u);
  EXPECT_EQ(static_cast<SyncKind>(b.gpu_ops().subkind[sync[0]]), SyncKind::StreamWaitEvent);
  EXPECT_EQ(b.gpu_ops().event[sync[0]], 42);
  auto driver = b.cuda_api_with_correlation(3);
  ASSERT_TRUE(driver);
  EXPECT_EQ(b.cuda_api().kind[*driver], ApiKind::Driver);
  EXPECT_EQ(b.arg_int(*driver, "result"), 700);
  std::vector<std::string> names;
  for (const auto& tr : b.tracks()) names.push_back(tr.name);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"MainThread", "compute", "copy", "pt_data_pin", "worker-0"}));
  // Memory events go out as Kineto's "[memory]" events and come back with every field, on their
  // threads, in their order (an address past 2^63 written unsigned, as Kineto writes pointers).
  ASSERT_EQ(b.memory_events().size(), a.memory_events().size());
  for (std::size_t i = 0; i < a.memory_events().size(); ++i) {
    MemoryEventRecord x = a.memory_events()[i], y = b.memory_events()[i];
    EXPECT_EQ(a.tracks()[x.track].tid, b.tracks()[y.track].tid) << i;
    EXPECT_EQ(a.processes()[a.tracks()[x.track].process].pid, b.processes()[b.tracks()[y.track].process].pid) << i;
    x.track = y.track = TrackId{0};
    EXPECT_EQ(x, y) << i;
  }
}

// An arg is written as raw JSON only once the exporter checked it is JSON, and a double JSON
// cannot hold is null: a trace file may say anything (round2's export_*_escape_args.json made
// files that did not parse).
TEST(ChromeExport, WhatJsonCannotHoldIsNeverWrittenRaw) {
  TempDir dir;
  TraceBuilder b;
  b.set_source(TraceSource::Tracer);
  const auto process = b.add_process(ProcessInfo{.pid = 1, .name = "p"});
  const TrackId thread = b.thread_track(process, 1, "main");
  const AnnotationIndex row =
      b.add(AnnotationRecord{.track = thread, .start = 10, .end = 20, .name = b.intern("aten::add")});
  b.add_arg(row, EventArg{.key = b.intern("escape"), .type = ArgType::Json, .text = b.intern(R"(["Sc\alar"])")});
  b.add_arg(row, EventArg{.key = b.intern("grammar"), .type = ArgType::Json, .text = b.intern("[1 2]")});
  b.add_arg(row, EventArg{.key = b.intern("shape"), .type = ArgType::Json, .text = b.intern("[[2, 3]]")});
  b.add_arg(row, EventArg{.key = b.intern("ratio"), .type = ArgType::Double, .double_value = std::nan("")});
  const Trace a = std::move(b).build();
  export_chrome(a, dir / "hostile.json");
  std::ifstream in(dir / "hostile.json");
  const std::string json((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(json.find(R"("escape":"[\"Sc\\alar\"]")"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("grammar":"[1 2]")"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("shape":[[2, 3]])"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("ratio":null)"), std::string::npos) << json;
  ImportStats stats;
  const Trace back = import_kineto(dir / "hostile.json", &stats);
  EXPECT_EQ(stats.warning_count(), 0) << stats.summary();
  ASSERT_EQ(back.annotations().size(), 1u);
}

TEST(ChromeExport, ArgsAndMetadataAreWritten) {
  TempDir dir;
  Trace a = import_kineto(kineto("nccl_parser_config/nccl_data.json.gz"));
  export_chrome(a, dir / "nccl.json");
  std::ifstream in(dir / "nccl.json");
  std::string json((std::istreambuf_iterator<char>(in)), {});
  EXPECT_TRUE(json.starts_with("{\"displayTimeUnit\":\"ns\""));
  EXPECT_NE(json.find("\"In msg nelems\":2049000"), std::string::npos);
  EXPECT_NE(json.find("\"name\":\"thread_name\""), std::string::npos);
  EXPECT_NE(json.find("\"ph\":\"f\""), std::string::npos);
  Trace b = import_kineto(dir / "nccl.json");
  auto nccl = gpu_ops_named(b, "ncclKernel");
  ASSERT_EQ(nccl.size(), 21u);
  std::int64_t max_in = 0;
  for (GpuOpIndex i : nccl) max_in = std::max(max_in, b.arg_int(i, "In msg nelems").value_or(0));
  EXPECT_EQ(max_in, 7875584);
}

// A job of ranks from several machines: two processes may share a pid. Each keeps its own
// rows, named by its rank, and the events come back the same.
TEST(ChromeExport, RanksOfAJobKeepTheirOwnRowsEvenWithOnePid) {
  TraceBuilder b;
  const StringId op = b.intern("forward");
  for (std::int64_t r = 0; r < 2; ++r) {
    const auto p = b.add_process({.pid = 4242, .name = "python", .rank = r, .world_size = 2, .host = r ? "b" : "a"});
    const TrackId t = b.thread_track(p, 4242);
    b.add(AnnotationRecord{.track = t, .start = 100 + r, .end = 200 + r, .name = op});
  }
  const Trace job = std::move(b).build();
  TempDir dir;
  export_chrome(job, dir / "job.json");
  std::ifstream in(dir / "job.json");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("\"name\":\"rank 0: python\""), std::string::npos);
  EXPECT_NE(text.find("\"name\":\"rank 1: python\""), std::string::npos);
  EXPECT_NE(text.find("\"sort_index\":1"), std::string::npos);
  ImportStats stats;
  const Trace back = import_kineto(dir / "job.json", &stats);
  EXPECT_EQ(stats.warning_count(), 0) << stats.summary();
  ASSERT_EQ(back.annotations().size(), 2u);
  EXPECT_NE(back.annotations().track[0], back.annotations().track[1]);
}

TEST(ChromeExport, UnwritablePathIsAnErrorNamingIt) {
  Trace t = TraceBuilder().build();
  try {
    export_chrome(t, "/nonexistent-dir/out.json");
    FAIL() << "no error";
  } catch (const TraceError& e) {
    EXPECT_TRUE(std::string(e.what()).starts_with("/nonexistent-dir/out.json: cannot create")) << e.what();
  }
}

} // namespace
} // namespace dreamscope::test
