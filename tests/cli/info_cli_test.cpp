// `dreamscope info` end to end: the real binary on real files, good and bad.
#include "../storage/test_traces.h"
#include "run_command.h"

#include <dreamscope/storage/trace_file.h>

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <fstream>

namespace dreamscope {
namespace {

using test::dreamscope_bin;
using test::run_command;

TEST(InfoCli, PrintsTheSummary) {
  test::ScratchDir dir;
  write_trace(test::make_full_trace(), dir / "t.db");
  auto r = run_command(dreamscope_bin() + " info " + (dir / "t.db").string());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  for (const char* expected : {"source            tracer", "command           python train.py --epochs 1",
                               "complete          yes", "dropped events    3", "cpu cores         16",
                               "tracer writer     1.500 us of CPU (", "pid 100", "pid 101",
                               "exit 137 (killed by signal 9)", "thread 105", "NVIDIA H100 80GB HBM3",
                               "132 SMs", "stream 7", "kernels                    1",
                               "2.500 us         1x  ampere_sgemm_128x64_tn"}) {
    EXPECT_NE(r.out.find(expected), std::string::npos) << "missing '" << expected << "' in\n" << r.out;
  }
}

TEST(InfoCli, JsonForMachines) {
  test::ScratchDir dir;
  write_trace(test::make_full_trace(), dir / "t.db");
  auto r = run_command(dreamscope_bin() + " info --json " + (dir / "t.db").string());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  for (const char* expected : {"\"complete\": true", "\"kernel\": 1", "\"runtime_api\": 2", "\"driver_api\": 1",
                               "\"total_ns\": 2500", "\"sm_count\": 132", "\"dropped_events\": 3",
                               "\"cpu_cores\": 16", "\"tracer_writer_cpu_ns\": 1500"}) {
    EXPECT_NE(r.out.find(expected), std::string::npos) << "missing '" << expected << "' in\n" << r.out;
  }
}

// Per process, the CPU its threads used (thread_load rows), and apart that of threads that
// recorded no events (an OpenMP pool): the tracer's windows of both kinds.
TEST(InfoCli, ThreadsThatUsedCpuAndHowMuch) {
  TraceBuilder b;
  b.set_source(TraceSource::Tracer);
  const auto p = b.add_process({.pid = 200, .name = "python3", .command = "python3 train.py"});
  const TrackId main = b.thread_track(p, 200, "python3"), omp = b.thread_track(p, 201, "omp-worker");
  b.add(AnnotationRecord{.track = main, .start = 0, .end = 9'000'000, .name = b.intern("forward"),
                         .domain = b.intern("nvtx")});
  b.add(ThreadLoadRecord{.track = main, .start = 0, .end = 10'000'000, .cpu_ns = 5'000'000, .runqueue_ns = 500,
                         .events = 2});
  b.add(ThreadLoadRecord{.track = omp, .start = 0, .end = 10'000'000, .cpu_ns = 2'000'000, .runqueue_ns = 0});
  b.add(ThreadLoadRecord{.track = omp, .start = 10'000'000, .end = 20'000'000, .cpu_ns = 3'000'000,
                         .runqueue_ns = 1'000'000});
  test::ScratchDir dir;
  write_trace(std::move(b).build(), dir / "t.db");
  auto r = run_command(dreamscope_bin() + " info " + (dir / "t.db").string());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  for (const char* expected :
       {"    cpu 10.000 ms on 2 threads, 5.000 ms of it on 1 that recorded no events\n",
        "    thread 200      python3                  1 events  cpu 5.000 ms, waited 500 ns for a core\n",
        "    thread 201      omp-worker               0 events  cpu 5.000 ms, waited 1.000 ms for a core\n",
        // The tracer's cost: the recording threads' windows alone.
        "threads waited 500 ns for a core"}) {
    EXPECT_NE(r.out.find(expected), std::string::npos) << "missing '" << expected << "' in\n" << r.out;
  }
  r = run_command(dreamscope_bin() + " info --json " + (dir / "t.db").string());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  for (const char* expected : {"\"cpu_ns\": 5000000", "\"runqueue_ns\": 1000000", "\"threads_cpu_ns\": 5000000"}) {
    EXPECT_NE(r.out.find(expected), std::string::npos) << "missing '" << expected << "' in\n" << r.out;
  }
}

TEST(InfoCli, HelpSaysHowToUseIt) {
  auto r = run_command(dreamscope_bin() + " --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("info"), std::string::npos);
  r = run_command(dreamscope_bin() + " info --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("--json"), std::string::npos);
  EXPECT_NE(r.out.find("Example"), std::string::npos);
}

TEST(InfoCli, UsageErrorsExitWithTwo) {
  EXPECT_EQ(run_command(dreamscope_bin()).exit_code, 2);
  EXPECT_EQ(run_command(dreamscope_bin() + " info").exit_code, 2);
  EXPECT_EQ(run_command(dreamscope_bin() + " info --no-such-flag x.db").exit_code, 2);
}

// Each bad input: one line naming the file and the problem, exit code 1, no crash.
TEST(InfoCli, BadInputsGetOneLineErrors) {
  test::ScratchDir dir;
  std::ofstream(dir / "notes.txt") << "hello\n";
  std::ofstream(dir / "empty.db");
  {
    sqlite3* db = nullptr;
    sqlite3_open((dir / "other.db").c_str(), &db);
    sqlite3_exec(db, "CREATE TABLE t(x)", nullptr, nullptr, nullptr);
    sqlite3_close(db);
  }
  write_trace(test::make_full_trace(), dir / "future.db");
  {
    sqlite3* db = nullptr;
    sqlite3_open((dir / "future.db").c_str(), &db);
    sqlite3_exec(db, "UPDATE meta SET value = '2' WHERE key = 'schema_version'", nullptr, nullptr, nullptr);
    sqlite3_close(db);
  }
  write_trace(test::make_full_trace(), dir / "cut.db");
  std::filesystem::resize_file(dir / "cut.db", std::filesystem::file_size(dir / "cut.db") / 2);

  struct Case {
    std::string file, problem;
  };
  for (const Case& c : std::vector<Case>{
           {"missing.db", "no such file"},
           {"notes.txt", "not"},
           {"empty.db", "empty file"},
           {"other.db", "not a dreamscope trace"},
           {"future.db", "trace schema version 2 is not one this dreamscope reads (it reads version 1)"},
           {"cut.db", "damaged or truncated"},
       }) {
    const std::string path = (dir / c.file).string();
    auto r = run_command(dreamscope_bin() + " info " + path);
    EXPECT_EQ(r.exit_code, 1) << c.file << ": " << r.out;
    EXPECT_NE(r.out.find(path), std::string::npos) << c.file << ": " << r.out;
    EXPECT_NE(r.out.find(c.problem), std::string::npos) << c.file << ": " << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << c.file << ": " << r.out;
  }
}

TEST(InfoCli, UnwritableOutputPath) {
  test::ScratchDir dir;
  write_trace(test::make_full_trace(), dir / "t.db");
  const std::string out = (dir / "no-such-dir" / "info.txt").string();
  auto r = run_command(dreamscope_bin() + " info " + (dir / "t.db").string() + " -o " + out);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find(out + ": cannot write: No such file or directory"), std::string::npos) << r.out;
}

} // namespace
} // namespace dreamscope
