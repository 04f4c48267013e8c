// The Nsight Systems importer on the hand-written export in tests/data/nsys (schema and
// conventions in its README): every row the fixture holds, with its exact values.
#include "import_test_util.h"

#include <dreamscope/storage/trace_file.h>

#include <sqlite3.h>

#include <fstream>
#include <iterator>

namespace dreamscope::test {
namespace {

std::filesystem::path make_fixture(const TempDir& dir) {
  std::ifstream in(std::filesystem::path(DREAMSCOPE_TEST_DATA_DIR) / "nsys" / "small_export.sql");
  std::string sql((std::istreambuf_iterator<char>(in)), {});
  auto path = dir / "report.sqlite";
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
  return path;
}

TEST(NsysImport, DetectedByContent) {
  TempDir dir;
  auto path = make_fixture(dir);
  EXPECT_EQ(detect_trace_format(path), TraceFormat::NsysSqlite);
  EXPECT_EQ(load_trace(path).source(), TraceSource::Nsys);
}

TEST(NsysImport, EveryRowWithItsValues) {
  TempDir dir;
  ImportStats stats;
  Trace t = import_nsys(make_fixture(dir), &stats);
  EXPECT_EQ(count_kinds(t), (KindCounts{.runtime = 4, .driver = 1, .kernel = 2, .memcpy = 1, .memset = 1, .sync = 1,
                                        .annotation = 3}));
  ASSERT_EQ(t.processes().size(), 1u);
  EXPECT_EQ(t.processes()[0].pid, 4242);
  EXPECT_EQ(t.processes()[0].name, "python");

  std::vector<std::string> api;
  for (CudaApiIndex i{0}; i < t.cuda_api().size(); ++i) api.push_back(api_row(t, i));
  EXPECT_EQ(api, (std::vector<std::string>{
                     "runtime 'cudaLaunchKernel' tid 4242 [1000, 1400) corr 101 ext -9223372036854775808",
                     "runtime 'cudaMemcpyAsync' tid 4242 [1500, 1700) corr 102 ext -9223372036854775808",
                     "runtime 'cudaMemsetAsync' tid 4242 [1800, 1900) corr 103 ext -9223372036854775808",
                     "runtime 'cudaStreamSynchronize' tid 4242 [2000, 9000) corr 104 ext -9223372036854775808",
                     "driver 'cuLaunchKernel' tid 4250 [3000, 3100) corr 105 ext -9223372036854775808",
                 }));
  std::vector<std::string> gpu;
  for (GpuOpIndex i{0}; i < t.gpu_ops().size(); ++i) gpu.push_back(gpu_op_row(t, i));
  EXPECT_EQ(gpu, (std::vector<std::string>{
                     "sync 'Stream Sync' device 0 stream 7 [2000, 9000) corr 104",
                     "kernel 'void gemm_kernel<float>(float*, int)' device 0 stream 7 [2100, 5100) corr 101",
                     "memcpy 'Memcpy HtoD' device 0 stream 7 [5200, 6200) corr 102",
                     "memset 'Memset (Device)' device 0 stream 7 [6300, 6400) corr 103",
                     "kernel 'void gemm_kernel<float>(float*, int)' device 0 stream 13 [3200, 3900) corr 105",
                 }));
  auto k = t.gpu_ops_with_correlation(101);
  ASSERT_EQ(k.size(), 1u);
  EXPECT_EQ(t.launch_configs()[t.gpu_ops().launch[k[0]]],
            (LaunchConfig{.grid = {128, 2, 1}, .block = {256, 1, 1}, .registers_per_thread = 64,
                          .shared_memory_static = 4096, .shared_memory_dynamic = 1024}));
  auto m = t.gpu_ops_with_correlation(102);
  EXPECT_EQ(t.gpu_ops().bytes[m[0]], 1048576);
  EXPECT_EQ(static_cast<CopyKind>(t.gpu_ops().subkind[m[0]]), CopyKind::HtoD);
  auto s = t.gpu_ops_with_correlation(104);
  EXPECT_EQ(static_cast<SyncKind>(t.gpu_ops().subkind[s[0]]), SyncKind::StreamSynchronize);
  EXPECT_EQ(t.gpu_ops().event[s[0]], kNoValue);

  ASSERT_EQ(t.devices().size(), 1u);
  const DeviceInfo& d = t.devices()[0];
  EXPECT_EQ(d.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(d.sm_count, 132);
  EXPECT_EQ(d.core_clock_khz, 1980000);
  EXPECT_EQ(d.memory_bandwidth_bytes_per_s, 3352320000000);
  EXPECT_EQ(d.global_memory_bytes, 85520809984);
  EXPECT_EQ(d.compute_capability_major, 9);

  std::vector<std::string> ranges;
  for (AnnotationIndex i{0}; i < t.annotations().size(); ++i) {
    const auto& n = t.annotations();
    ranges.push_back(std::string(t.str(n.name[i])) + " " + std::string(t.str(n.domain[i])) + " tid " +
                     std::to_string(t.tracks()[n.track[i]].tid) + " [" + std::to_string(n.start[i]) + ", " +
                     std::to_string(n.end[i]) + ") depth " + std::to_string(n.depth[i]) + " payload " +
                     std::to_string(n.payload[i]));
  }
  EXPECT_EQ(ranges, (std::vector<std::string>{
                        "forward nvtx tid 4242 [900, 9500) depth 0 payload -9223372036854775808",
                        "step dreamscope tid 4242 [950, 9400) depth 1 payload 17",
                        "fetch dreamscope tid 4250 [2900, 3300) depth 0 payload 17",
                    }));
  EXPECT_EQ(t.tracks()[t.cuda_api().track[0]].name, "pt_main_thread");
  EXPECT_EQ(stats.issues.at("nsys_nvtx_range_never_ended").count, 1);
  EXPECT_EQ(stats.issues.at("nsys_nvtx_mark").count, 1);
  EXPECT_EQ(stats.events_kept, 13u);
}

TEST(NsysImport, ASqliteFileThatIsNeitherIsRefused) {
  TempDir dir;
  auto path = dir / "other.sqlite";
  sqlite3* db = nullptr;
  sqlite3_open(path.c_str(), &db);
  sqlite3_exec(db, "CREATE TABLE songs(title TEXT)", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  EXPECT_EQ(detect_trace_format(path), TraceFormat::Unknown);
  try {
    load_trace(path);
    FAIL() << "no error";
  } catch (const TraceError& e) {
    EXPECT_EQ(std::string(e.what()), path.string() + ": a SQLite database but not a dreamscope trace (it has no meta table)");
  }
}

} // namespace
} // namespace dreamscope::test
