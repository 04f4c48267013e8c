// The Kineto importer on the real traces in shared/data/kineto-hta: every file imports,
// and rows hold what the JSON says. Expected values were counted independently of this
// code with Python's json and gzip modules (json.loads(..., parse_float=Decimal) for exact
// timestamps), applying HTA's rule: keep ph X events that have dur and cat, and cat != Trace.
#include "import_test_util.h"

#include <dreamscope/storage/trace_file.h>

#include <algorithm>
#include <string>

namespace dreamscope::test {
namespace {

TEST(KinetoImport, EveryTraceInSharedDataImports) {
  std::size_t files = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(kineto(""))) {
    if (!entry.is_regular_file() || !entry.path().string().ends_with(".json.gz")) continue;
    ++files;
    SCOPED_TRACE(entry.path().string());
    EXPECT_EQ(detect_trace_format(entry.path()), TraceFormat::KinetoJson);
    ImportStats stats;
    Trace t = load_trace(entry.path(), &stats);
    EXPECT_EQ(t.source(), TraceSource::Kineto);
    EXPECT_GT(t.event_count(), 0u);
    EXPECT_EQ(t.meta_value("kineto.file"), entry.path().string());
    EXPECT_TRUE(t.complete());
    for (const auto& [id, issue] : stats.issues) {
      // Real traces have only what HTA drops too, and Kineto's own unpaired flows.
      EXPECT_TRUE(issue.message.find("dropped, as HTA does") != std::string::npos || id.starts_with("kineto_flow"))
          << id;
    }
  }
  EXPECT_EQ(files, 16u);
}

struct CountCase {
  const char* file;
  KindCounts expected;
  std::size_t flows;
};

// Counted with Python (see the file comment); flows are (cat, id) pairs with both an s and an f.
const CountCase kCounts[] = {
    {"nccl_parser_config/nccl_data.json.gz",
     {.runtime = 8740, .kernel = 2700, .memcpy = 960, .memset = 114, .annotation = 14418}, 3774 + 543},
    {"ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
     {.runtime = 15329, .kernel = 4350, .memcpy = 1600, .memset = 145, .annotation = 23995}, 0},
    // MTIA: dma_request ccp events with a direction are copies; the rest of mtia_ccp_events are kernels.
    {"mtia_trace_single_rank/mtia_rank_0.json.gz", {.runtime = 3453, .kernel = 3453, .memcpy = 22361, .annotation = 109103},
     3453 + 205},
    {"critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz",
     {.runtime = 361, .kernel = 79, .memcpy = 16, .memset = 3, .sync = 41, .annotation = 367}, 139},
    {"amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz", {.runtime = 21, .kernel = 14, .memcpy = 2, .annotation = 75},
     0},
    {"trace_file_list/inference_rank_1.json.gz", {.runtime = 8, .kernel = 4}, 4},
    {"cupti_profiler/benchmark_result_924719_1679055439_trace.json.gz", {.runtime = 1862, .annotation = 460}, 0},
    {"triton_example/triton_example.json.gz", {.runtime = 1, .driver = 1, .kernel = 1, .annotation = 4}, 0},
};

TEST(KinetoImport, EventsPerKindMatchAnIndependentCount) {
  for (const auto& c : kCounts) {
    SCOPED_TRACE(c.file);
    Trace t = import_kineto(kineto(c.file));
    EXPECT_EQ(count_kinds(t), c.expected);
    if (c.flows) {
      EXPECT_EQ(t.flows().size(), c.flows);
    }
  }
}

TEST(KinetoImport, NsPrecisionTimestampsAreExact) {
  // ts 1712195495505582.988 µs, dur 4.928 µs; its launch ts 1712195495505543.140, dur 41.768.
  Trace t = import_kineto(kineto("ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"));
  EXPECT_EQ(t.meta_value("kineto.ts_precision"), "ns");
  auto ops = t.gpu_ops_with_correlation(135071);
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(gpu_op_row(t, ops[0]),
            "kernel '" + std::string(t.str(t.gpu_ops().name[ops[0]])) +
                "' device 0 stream 7 [1712195495505582988, 1712195495505587916) corr 135071");
  EXPECT_TRUE(t.str(t.gpu_ops().name[ops[0]]).starts_with("void at::native::(anonymous namespace)::CatArrayBatchedCopy_"));
  auto api = t.cuda_api_with_correlation(135071);
  ASSERT_TRUE(api);
  EXPECT_EQ(api_row(t, *api).substr(0, 26), "runtime 'cudaLaunchKernel'");
  EXPECT_EQ(t.cuda_api().start[*api], 1712195495505543140);
  EXPECT_EQ(t.cuda_api().end[*api], 1712195495505543140 + 41768);
  EXPECT_EQ(t.cuda_api().external_id[*api], 112);
  EXPECT_EQ(t.cuda_api().cbid[*api], 211);
}

TEST(KinetoImport, IntegerMicrosecondTracesAreMarkedSo) {
  Trace t = import_kineto(kineto("critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz"));
  EXPECT_EQ(t.meta_value("kineto.ts_precision"), "us");
  for (TimeNs s : t.gpu_ops().start) EXPECT_EQ(s % 1000, 0);
}

TEST(KinetoImport, CorrelationLinksMtiaLaunchToItsKernel) {
  // HTA's launch stats for correlation 423: cpu 434, gpu 124 µs after its rounding.
  Trace t = import_kineto(kineto("mtia_trace_single_rank/mtia_rank_0.json.gz"));
  auto api = t.cuda_api_with_correlation(423);
  ASSERT_TRUE(api);
  EXPECT_EQ(api_row(t, *api),
            "runtime 'runFunction - job_prep_and_submit_for_execution' tid 3100453 [3605054909792482, "
            "3605054910227682) corr 423 ext -9223372036854775808");
  auto ops = t.gpu_ops_with_correlation(423);
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(gpu_op_row(t, ops[0]),
            "kernel 'aten::cat.out-dtype_Int-extraKey_2' device 9 stream 1 [3605054910132773, 3605054910257541) corr 423");
  EXPECT_EQ(t.arg_text(ops[0], "row"), "0");
}

TEST(KinetoImport, MtiaDmaRequestsAreCopiesAndStreamlessOnesStayApart) {
  Trace t = import_kineto(kineto("mtia_trace_single_rank/mtia_rank_0.json.gz"));
  std::map<std::int64_t, std::size_t> per_stream; // HTA: streams 1 and 102, and 137 events without a stream
  for (GpuOpIndex i{0}; i < t.gpu_ops().size(); ++i) per_stream[t.tracks()[t.gpu_ops().track[i]].stream]++;
  EXPECT_EQ(per_stream, (std::map<std::int64_t, std::size_t>{{kNoValue, 137}, {1, 25629}, {102, 48}}));
  auto dma = gpu_ops_named(t, "dma_request");
  ASSERT_FALSE(dma.empty());
  EXPECT_EQ(t.gpu_ops().kind[dma[0]], GpuOpKind::Memcpy);
  EXPECT_NE(static_cast<CopyKind>(t.gpu_ops().subkind[dma[0]]), CopyKind::Unknown);
}

TEST(KinetoImport, DevicePropertiesFillTheDeviceTable) {
  Trace t = import_kineto(kineto("nccl_parser_config/nccl_data.json.gz"));
  ASSERT_EQ(t.devices().size(), 8u);
  const DeviceInfo& d = t.devices()[0];
  EXPECT_EQ(d.ordinal, 0);
  EXPECT_EQ(d.name, "NVIDIA A100-PG509-200");
  EXPECT_EQ(d.sm_count, 108);
  EXPECT_EQ(d.global_memory_bytes, 42297524224);
  EXPECT_EQ(d.compute_capability_major, 8);
  EXPECT_EQ(d.compute_capability_minor, 0);
  EXPECT_EQ(d.process, 0u);
  EXPECT_EQ(t.meta_value("rank"), "0");
  EXPECT_EQ(t.processes().at(0).name, "python3.10");
}

TEST(KinetoImport, NcclCollectiveMetadataIsReachableThroughArgs) {
  Trace t = import_kineto(kineto("nccl_parser_config/nccl_data.json.gz"));
  auto nccl = gpu_ops_named(t, "ncclKernel");
  ASSERT_EQ(nccl.size(), 21u);
  auto longest = *std::max_element(nccl.begin(), nccl.end(), [&](GpuOpIndex a, GpuOpIndex b) {
    return t.gpu_ops().end[a] - t.gpu_ops().start[a] < t.gpu_ops().end[b] - t.gpu_ops().start[b];
  });
  EXPECT_EQ(t.gpu_ops().end[longest] - t.gpu_ops().start[longest], 5993392);
  EXPECT_EQ(t.gpu_ops().correlation[longest], 56027);
  EXPECT_EQ(t.tracks()[t.gpu_ops().track[longest]].stream, 40);
  EXPECT_EQ(t.arg_int(longest, "In msg nelems"), 2049000);
  EXPECT_EQ(t.arg_int(longest, "Out msg nelems"), 2049000);
  EXPECT_EQ(t.arg_text(longest, "Collective name"), "allreduce");
  EXPECT_EQ(t.arg_text(longest, "Process Group Ranks"), "[0, 1]");
  const LaunchConfig& c = t.launch_configs()[t.gpu_ops().launch[longest]];
  EXPECT_EQ(c, (LaunchConfig{.grid = {8, 1, 1}, .block = {544, 1, 1}, .registers_per_thread = 96,
                             .shared_memory_static = 87568}));
}

TEST(KinetoImport, CuptiRangeProfilerCountersAreReachableThroughArgs) {
  Trace t = import_kineto(kineto("cupti_profiler/benchmark_result_924719_1679055439_trace.json.gz"));
  auto ranges = annotations_in_category(t, "cuda_profiler_range");
  ASSERT_EQ(ranges.size(), 77u);
  std::stable_sort(ranges.begin(), ranges.end(), [&](AnnotationIndex a, AnnotationIndex b) {
    return t.annotations().start[a] < t.annotations().start[b];
  });
  EXPECT_EQ(t.annotations().start[ranges[5]], 1679055454652209000);
  EXPECT_EQ(t.arg_int(ranges[5], "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum"), 86114304);
  EXPECT_EQ(t.tracks()[t.annotations().track[ranges[5]]].kind, TrackKind::GpuStream);
}

TEST(KinetoImport, TritonKernelBackendAndDriverLaunch) {
  Trace t = import_kineto(kineto("triton_example/triton_example.json.gz"));
  std::vector<std::string> backends;
  for (AnnotationIndex i{0}; i < t.annotations().size(); ++i) {
    if (auto b = t.arg_text(i, "kernel_backend")) {
      backends.push_back(std::string(t.str(t.annotations().name[i])) + " " + *b);
    }
  }
  EXPECT_EQ(backends, std::vector<std::string>{"triton_poi_fused_add_cos_sin_0 triton"});
  auto api = t.cuda_api_with_correlation(35);
  ASSERT_TRUE(api);
  EXPECT_EQ(t.cuda_api().kind[*api], ApiKind::Driver);
  EXPECT_EQ(t.str(t.cuda_api().name[*api]), "cuLaunchKernel");
  ASSERT_EQ(t.gpu_ops_with_correlation(35).size(), 1u);
}

TEST(KinetoImport, Old2022FormatLowerCaseExternalIdAndAsyncGpuFlows) {
  Trace t = import_kineto(kineto("trace_file_list/inference_rank_1.json.gz"));
  auto api = t.cuda_api_with_correlation(538871);
  ASSERT_TRUE(api);
  EXPECT_EQ(t.cuda_api().external_id[*api], 6294);
  ASSERT_EQ(t.flows().size(), 4u);
  for (const FlowRecord& f : t.flows()) {
    EXPECT_EQ(t.str(f.kind), "async_gpu");
    EXPECT_EQ(t.tracks()[f.from_track].kind, TrackKind::CpuThread);
    EXPECT_EQ(t.tracks()[f.to_track].kind, TrackKind::GpuStream);
  }
}

TEST(KinetoImport, AmdHexStreamStaysAnArgAndKernelsLand) {
  Trace t = import_kineto(kineto("amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz"));
  std::size_t hip_launches = 0;
  for (CudaApiIndex i{0}; i < t.cuda_api().size(); ++i) {
    if (t.str(t.cuda_api().name[i]) != "hipLaunchKernel") continue;
    ++hip_launches;
    EXPECT_EQ(t.cuda_api().stream[i], kNoValue);
    EXPECT_EQ(t.arg_text(i, "stream"), "0x0");
    EXPECT_EQ(t.gpu_ops_with_correlation(t.cuda_api().correlation[i]).size(), 1u);
  }
  EXPECT_GT(hip_launches, 0u);
  for (GpuOpIndex i{0}; i < t.gpu_ops().size(); ++i) {
    const TrackInfo& tr = t.tracks()[t.gpu_ops().track[i]];
    EXPECT_EQ(t.devices()[tr.device].ordinal, 2);
    EXPECT_EQ(tr.stream, 0);
  }
}

TEST(KinetoImport, SyncEventsKeepTheirKindAndEvent) {
  Trace t = import_kineto(kineto("critical_path/cuda_event_sync/event_sync_trace.json.gz"));
  std::vector<std::string> rows;
  for (GpuOpIndex i{0}; i < t.gpu_ops().size(); ++i) {
    if (t.gpu_ops().kind[i] != GpuOpKind::Sync) continue;
    rows.push_back(std::string(to_string(static_cast<SyncKind>(t.gpu_ops().subkind[i]))) + " stream " +
                   std::to_string(t.tracks()[t.gpu_ops().track[i]].stream) + " event " +
                   std::to_string(t.gpu_ops().event[i]));
  }
  std::sort(rows.begin(), rows.end());
  // Kineto puts Event Sync and Context Sync at stream -1 here (HTA then counts them as CPU).
  EXPECT_EQ(rows, (std::vector<std::string>{
                      "context_synchronize stream -1 event -9223372036854775808",
                      "event_synchronize stream -1 event 8",
                      "event_synchronize stream -1 event 8",
                      "stream_synchronize stream 7 event -9223372036854775808",
                  }));
}

// A wait's sync record names the cudaEventRecord it waits on (by correlation id) and that
// record's stream; the importer writes both onto the calls, which name neither.
TEST(KinetoImport, EventWaitsGiveTheirCallsTheRecordAndItsStream) {
  struct Call {
    std::string name;
    std::int64_t stream, event;
    bool operator==(const Call&) const = default;
  };
  auto call = [](const Trace& t, std::int64_t correlation) {
    const CudaApiIndex row = t.cuda_api_with_correlation(correlation).value();
    return Call{std::string(t.str(t.cuda_api().name[row])), t.cuda_api().stream[row], t.cuda_api().event[row]};
  };
  const Trace alexnet = import_kineto(kineto("critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz"));
  // Stream Wait Event on stream 20, correlation 5170, wait_on_cuda_event_record_corr_id 5169, wait_on_stream 7.
  EXPECT_EQ(call(alexnet, 5170), (Call{"cudaStreamWaitEvent", 20, 5169}));
  EXPECT_EQ(call(alexnet, 5169), (Call{"cudaEventRecord", 7, 5169}));
  const Trace event_sync = import_kineto(kineto("critical_path/cuda_event_sync/event_sync_trace.json.gz"));
  // Event Sync at stream -1 (no stream for the wait), correlation 1536, on the record 1533 on stream 7.
  EXPECT_EQ(call(event_sync, 1536), (Call{"cudaEventSynchronize", kNoValue, 1533}));
  EXPECT_EQ(call(event_sync, 1533), (Call{"cudaEventRecord", 7, 1533}));
}

TEST(KinetoImport, GpuUserAnnotationsSitOnTheirStream) {
  Trace t = import_kineto(kineto("ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"));
  auto gpu = annotations_in_category(t, "gpu_user_annotation");
  ASSERT_EQ(gpu.size(), 15u);
  for (AnnotationIndex i : gpu) {
    const TrackInfo& tr = t.tracks()[t.annotations().track[i]];
    EXPECT_EQ(tr.kind, TrackKind::GpuStream);
    EXPECT_EQ(tr.stream, 7);
  }
}

TEST(KinetoImport, RoundTripThroughTheTraceFileIsIdentical) {
  TempDir dir;
  for (const char* file : {"nccl_parser_config/nccl_data.json.gz", "cupti_profiler/benchmark_result_924719_1679055439_trace.json.gz",
                           "triton_example/triton_example.json.gz"}) {
    SCOPED_TRACE(file);
    Trace a = import_kineto(kineto(file));
    write_trace(a, dir / "t.db");
    Trace b = read_trace(dir / "t.db");
    EXPECT_EQ(b.event_count(), a.event_count());
    EXPECT_EQ(b.tracks(), a.tracks());
    EXPECT_EQ(b.devices(), a.devices());
    EXPECT_EQ(b.processes(), a.processes());
    EXPECT_EQ(b.flows().size(), a.flows().size());
    EXPECT_EQ(b.arg_count(), a.arg_count());
    for (CudaApiIndex i{0}; i < a.cuda_api().size(); ++i) {
      CudaApiRecord ra = a.cuda_api().row(i), rb = b.cuda_api().row(i);
      ASSERT_EQ(a.str(ra.name), b.str(rb.name));
      ra.name = rb.name = 0;
      ASSERT_EQ(ra, rb);
    }
    for (GpuOpIndex i{0}; i < a.gpu_ops().size(); ++i) {
      ASSERT_EQ(gpu_op_row(a, i), gpu_op_row(b, i));
      ASSERT_EQ(a.launch_configs()[a.gpu_ops().launch[i]], b.launch_configs()[b.gpu_ops().launch[i]]);
      ASSERT_EQ(a.gpu_ops().bytes[i], b.gpu_ops().bytes[i]);
    }
    for (AnnotationIndex i{0}; i < a.annotations().size(); ++i) {
      ASSERT_EQ(a.str(a.annotations().name[i]), b.str(b.annotations().name[i]));
      ASSERT_EQ(a.annotations().start[i], b.annotations().start[i]);
      ASSERT_EQ(a.annotations().end[i], b.annotations().end[i]);
      ASSERT_EQ(a.annotations().external_id[i], b.annotations().external_id[i]);
    }
    for (auto table : {EventTable::CudaApi, EventTable::GpuOp, EventTable::Annotation}) {
      const std::size_t rows = table == EventTable::CudaApi ? a.cuda_api().size()
                               : table == EventTable::GpuOp ? a.gpu_ops().size()
                                                            : a.annotations().size();
      for (std::uint32_t i = 0; i < rows; ++i) {
        auto xa = a.args_of(EventRow{table, i}), xb = b.args_of(EventRow{table, i});
        ASSERT_EQ(xa.size(), xb.size());
        for (std::size_t k = 0; k < xa.size(); ++k) {
          ASSERT_EQ(a.str(xa[k].key), b.str(xb[k].key));
          ASSERT_EQ(xa[k].type, xb[k].type);
          ASSERT_EQ(xa[k].int_value, xb[k].int_value);
          ASSERT_EQ(xa[k].double_value, xb[k].double_value);
          ASSERT_EQ(a.str(xa[k].text), b.str(xb[k].text));
        }
      }
    }
    EXPECT_EQ(b.meta_value("kineto.ts_precision"), a.meta_value("kineto.ts_precision"));
  }
}

} // namespace
} // namespace dreamscope::test

namespace dreamscope::test {
namespace {

// A rank's file says its place in the job (distributedInfo); every process of it is that rank.
TEST(KinetoImport, DistributedInfoMakesTheFilesProcessesRanks) {
  const auto dlrm = std::filesystem::path(DREAMSCOPE_SHARED_DATA_DIR) / "wild" / "param-dlrm-v100x8-nccl";
  std::size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dlrm)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with("worker")) continue;
    ++files;
    const std::int64_t rank = name[6] - '0'; // workerN_step_...
    const Trace t = load_trace(entry.path());
    ASSERT_FALSE(t.processes().empty()) << name;
    for (const ProcessInfo& p : t.processes()) {
      EXPECT_EQ(p.rank, rank) << name;
      EXPECT_EQ(p.world_size, 8) << name;
    }
  }
  EXPECT_EQ(files, 8u);
  // No distributedInfo: a single run, no ranks.
  const Trace single = load_trace(kineto("triton_example/triton_example.json.gz"));
  for (const ProcessInfo& p : single.processes()) EXPECT_FALSE(p.is_rank());
}

} // namespace
} // namespace dreamscope::test
