// A traced program that crashes, aborts, is SIGKILLed or cannot have its trace written:
// its exit status passes through, and the trace holds what was flushed, marked incomplete.
#include "run_helpers.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <set>
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

std::set<std::filesystem::path> temporary_part_folders() {
  std::set<std::filesystem::path> found;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/tmp", ec)) {
    if (e.path().filename().string().starts_with("dreamscope-parts-")) found.insert(e.path());
  }
  return found;
}

std::size_t lines_in(const std::string& text) { return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')); }

// Issue 13: the output's folder is missing. The trace could go nowhere, so the program is
// not started: one line naming the path, exit status 1, nothing left behind.
TEST(UnwritableOutput, AMissingOutputFolderFailsBeforeTheProgramStarts) {
  const auto dir = scratch_dir("unwritable");
  const auto out = dir / "no-such-folder" / "x.db";
  const auto marker = dir / "the-program-ran";
  const auto before = temporary_part_folders();
  RunResult r = run(traced(out, {"sh", "-c", "touch \"$0\"", marker.string()}, {"--trace", "nvtx"}));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(r.output, "dreamscope trace: cannot write " + out.string() + ": folder " +
                          (dir / "no-such-folder").string() + " does not exist\n");
  EXPECT_FALSE(std::filesystem::exists(marker));
  EXPECT_FALSE(std::filesystem::exists(dir / "no-such-folder"));
  EXPECT_EQ(temporary_part_folders(), before);
  std::filesystem::remove_all(dir);
}

TEST(UnwritableOutput, AReadOnlyOutputFolderFailsBeforeTheProgramStarts) {
  if (geteuid() == 0) GTEST_SKIP() << "root writes into a read-only folder";
  const auto dir = scratch_dir("read-only");
  std::filesystem::create_directories(dir / "ro");
  std::filesystem::permissions(dir / "ro", std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
  const auto marker = dir / "the-program-ran";
  RunResult r = run(traced(dir / "ro" / "x.db", {"sh", "-c", "touch \"$0\"", marker.string()}, {"--trace", "nvtx"}));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(r.output.rfind("dreamscope trace: cannot write " + (dir / "ro" / "x.db").string() + ": ", 0), 0u)
      << r.output;
  EXPECT_EQ(lines_in(r.output), 1u) << r.output;
  EXPECT_FALSE(std::filesystem::exists(marker));
  std::filesystem::permissions(dir / "ro", std::filesystem::perms::owner_all);
  std::filesystem::remove_all(dir);
}

// Issue 13: a program that cannot be started is said so, as a shell would, and leaves no
// trace: an empty one would read as a job that recorded nothing.
TEST(ProgramNotStarted, AMissingProgramExits127AndWritesNoTrace) {
  const auto dir = scratch_dir("no-program");
  const auto out = dir / "x.db";
  const std::string missing = (dir / "no-such-program").string();
  RunResult r = run(traced(out, {missing, "--flag"}, {"--trace", "nvtx"}));
  EXPECT_EQ(r.exit_code, 127) << r.output;
  EXPECT_EQ(r.output, "dreamscope trace: cannot run " + missing + ": No such file or directory; no trace written\n");
  EXPECT_FALSE(std::filesystem::exists(out));
  EXPECT_FALSE(std::filesystem::exists(out.string() + ".d"));
  // Not found on PATH either; with CUDA asked for too, the line is still the only one (the
  // warning of a machine without a CUDA driver is for a program that runs).
  r = run(traced(out, {"dreamscope-no-such-command-anywhere"}));
  EXPECT_EQ(r.exit_code, 127) << r.output;
  EXPECT_EQ(r.output,
            "dreamscope trace: cannot run dreamscope-no-such-command-anywhere: No such file or directory; no trace "
            "written\n");
  EXPECT_FALSE(std::filesystem::exists(out));
  std::filesystem::remove_all(dir);
}

TEST(ProgramNotStarted, AFileThatIsNotExecutableExits126AndWritesNoTrace) {
  const auto dir = scratch_dir("not-executable");
  const auto out = dir / "x.db";
  const auto script = dir / "script.sh";
  std::ofstream(script) << "#!/bin/sh\nexit 0\n";
  std::filesystem::permissions(script, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  RunResult r = run(traced(out, {script.string()}, {"--trace", "nvtx"}));
  EXPECT_EQ(r.exit_code, 126) << r.output;
  EXPECT_EQ(r.output, "dreamscope trace: cannot run " + script.string() + ": Permission denied; no trace written\n");
  EXPECT_FALSE(std::filesystem::exists(out));
  std::filesystem::remove_all(dir);
}

// A program that started and itself exits 127 is a job like any other: its trace is written.
TEST(ProgramNotStarted, AProgramThatExits127ItselfIsTraced) {
  const auto dir = scratch_dir("exit-127");
  const auto out = dir / "x.db";
  RunResult r = run(traced(out, {"sh", "-c", "exit 127"}, {"--trace", "nvtx"}));
  EXPECT_EQ(r.exit_code, 127) << r.output;
  EXPECT_EQ(r.output.find("cannot run"), std::string::npos) << r.output;
  Trace t = read_trace(out);
  ASSERT_EQ(t.processes().size(), 1u);
  EXPECT_EQ(t.processes()[0].exit_status, 127);
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
  const std::string lib = bin("../lib/libdreamscope-tracer.so");
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
