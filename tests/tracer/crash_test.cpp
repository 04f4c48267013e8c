// A traced program that crashes, aborts, is SIGKILLed or cannot have its trace written:
// its exit status passes through, and the trace holds what was flushed, marked incomplete.
#include "run_helpers.h"

#include <chrono>
#include <fstream>
#include <thread>

namespace dreamscope::test {
namespace {

std::size_t ranges_named(const Trace& t, const std::string& name) {
  std::size_t n = 0;
  for (const auto& r : annotation_rows(t)) n += r.name == name;
  return n;
}

TEST(Crash, SegfaultPassesThroughAndKeepsTheFlushedEvents) {
  const auto dir = scratch_dir("segv");
  const auto out = dir / "segv.db";
  RunResult r = run(traced(out, {program("crash"), "1000", "segv"}));
  EXPECT_EQ(r.exit_code, 128 + SIGSEGV) << r.output;
  EXPECT_NE(r.output.find("killed by signal 11"), std::string::npos) << r.output;
  Trace t = read_trace(out);
  EXPECT_FALSE(t.complete());
  EXPECT_EQ(ranges_named(t, "work"), 1000u);
  ASSERT_EQ(t.processes().size(), 1u);
  EXPECT_EQ(t.processes()[0].exit_status, 128 + SIGSEGV);
  std::filesystem::remove_all(dir);
}

TEST(Crash, AbortPassesThroughAndKeepsTheFlushedEvents) {
  const auto dir = scratch_dir("abort");
  const auto out = dir / "abort.db";
  RunResult r = run(traced(out, {program("crash"), "500", "abort"}));
  EXPECT_EQ(r.exit_code, 128 + SIGABRT) << r.output;
  Trace t = read_trace(out);
  EXPECT_FALSE(t.complete());
  EXPECT_EQ(ranges_named(t, "work"), 500u);
  std::filesystem::remove_all(dir);
}

// Runs `crash 2000 hang` under the CLI on another thread and sends `sig` to the program
// once its ranges are older than the tracer's flush interval.
RunResult kill_when_ready(const std::filesystem::path& dir, const std::filesystem::path& out, int sig) {
  const auto pidfile = dir / "pid";
  RunResult r;
  std::thread cli([&] { r = run(traced(out, {program("crash"), "2000", "hang", pidfile.string()})); });
  pid_t victim = 0;
  for (int i = 0; i < 1000 && victim == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::ifstream f(pidfile);
    f >> victim;
  }
  EXPECT_GT(victim, 0) << "the program never got ready";
  if (victim > 0) kill(victim, sig);
  cli.join();
  return r;
}

TEST(Crash, SigkillKeepsWhatWasFlushed) {
  const auto dir = scratch_dir("sigkill");
  const auto out = dir / "killed.db";
  RunResult r = kill_when_ready(dir, out, SIGKILL);
  EXPECT_EQ(r.exit_code, 128 + SIGKILL) << r.output;
  EXPECT_NE(r.output.find("killed by signal 9"), std::string::npos) << r.output;
  Trace t = read_trace(out);
  EXPECT_FALSE(t.complete());
  EXPECT_EQ(ranges_named(t, "work"), 2000u);
  EXPECT_NE(t.meta_value("warnings").find("did not close its trace"), std::string::npos) << t.meta_value("warnings");
  std::filesystem::remove_all(dir);
}

TEST(Crash, SigtermClosesThePartCleanly) {
  const auto dir = scratch_dir("sigterm");
  const auto out = dir / "terminated.db";
  RunResult r = kill_when_ready(dir, out, SIGTERM);
  EXPECT_EQ(r.exit_code, 128 + SIGTERM) << r.output;
  Trace t = read_trace(out);
  EXPECT_TRUE(t.complete()) << t.meta_value("warnings");
  EXPECT_EQ(ranges_named(t, "work"), 2000u);
  EXPECT_EQ(t.processes().at(0).exit_status, 128 + SIGTERM);
  std::filesystem::remove_all(dir);
}

TEST(Crash, ExitCodePassesThroughAndTheTraceIsComplete) {
  const auto dir = scratch_dir("exit-code");
  const auto out = dir / "exit.db";
  RunResult r = run(traced(out, {program("crash"), "10", "exit:7"}));
  EXPECT_EQ(r.exit_code, 7) << r.output;
  Trace t = read_trace(out);
  EXPECT_TRUE(t.complete());
  EXPECT_EQ(t.processes().at(0).exit_status, 7);
  EXPECT_EQ(ranges_named(t, "work"), 10u);
  std::filesystem::remove_all(dir);
}

TEST(UnwritableOutput, TheProgramRunsToCompletionAndTheProblemIsReported) {
  const auto dir = scratch_dir("unwritable");
  const auto out = dir / "no-such-folder" / "x.db";
  RunResult r = run(traced(out, {program("crash"), "10", "exit:5"}));
  EXPECT_EQ(r.exit_code, 5) << r.output;
  EXPECT_NE(r.output.find("cannot write"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("does not exist"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(out));
  // The parts were kept where the message says.
  const auto at = r.output.find("the parts are in ");
  ASSERT_NE(at, std::string::npos) << r.output;
  std::string parts = r.output.substr(at + 17);
  parts = parts.substr(0, parts.find_first_of("\n"));
  EXPECT_TRUE(std::filesystem::is_directory(parts)) << parts;
  std::filesystem::remove_all(parts);
  std::filesystem::remove_all(dir);
}

// A full disk while the job runs (a file-size limit, with SIGXFSZ ignored as a full disk
// sends none): the program runs to its end, the tracer says why recording stopped, and
// the part keeps everything written before.
TEST(UnwritableOutput, DiskFullStopsRecordingNotTheProgram) {
  const auto dir = scratch_dir("disk-full");
  const auto out = dir / "full.db";
  // 1 M ranges make a part of about 10 MB; the limit is 1 or 2 MiB (ulimit -f counts 512 or
  // 1024-byte blocks depending on the shell).
  RunResult r = run(traced(out, {"sh", "-c", "ulimit -f 2048; trap '' XFSZ; exec \"$0\" 1 1000000",
                                 program("nvtx_stress")}));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("dreamscope: cannot write the trace, recording stopped: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("File too large"), std::string::npos) << r.output;
  Trace t = read_trace(out);
  EXPECT_FALSE(t.complete());
  EXPECT_GT(ranges_named(t, "outer"), 10'000u);
  EXPECT_LT(ranges_named(t, "outer"), 500'000u);
  std::filesystem::remove_all(dir);
}

TEST(UnwritableOutput, TracerAloneWarnsAndTheProgramKeepsItsExitCode) {
  // Without the CLI: the part folder is under a regular file, so no part can be created.
  const std::string lib = std::string(DREAMSCOPE_BIN_DIR) + "/../lib/libdreamscope-tracer.so";
  RunResult r = run({program("crash"), "10", "exit:3"},
                    {{"LD_PRELOAD", lib}, {"NVTX_INJECTION64_PATH", lib}, {"DREAMSCOPE_OUTPUT_DIR", "/etc/hostname/parts"}});
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("dreamscope: cannot create the trace file"), std::string::npos) << r.output;
}

} // namespace
} // namespace dreamscope::test

namespace dreamscope::test {
namespace {

TEST(ProcessWithoutEvents, StillInTheTraceWithItsExitStatus) {
  const auto dir = scratch_dir("no-events");
  const auto out = dir / "quiet.db";
  RunResult r = run(traced(out, {"sh", "-c", "exit 4"}));
  EXPECT_EQ(r.exit_code, 4) << r.output;
  Trace t = read_trace(out);
  EXPECT_TRUE(t.complete());
  ASSERT_EQ(t.processes().size(), 1u);
  EXPECT_EQ(t.processes()[0].exit_status, 4);
  EXPECT_EQ(t.event_count(), 0u);
  std::filesystem::remove_all(dir);
}

} // namespace
} // namespace dreamscope::test
