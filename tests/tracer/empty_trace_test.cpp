// Issue 33, item 6: no silent empty success from our own tracer. A job that recorded no event
// (no NVTX range or mark, CUDA API call or GPU work) still gets its trace, and `dreamscope trace`
// says so after "wrote", with why; every analysis then refuses the file by name, unless
// --allow-empty; `info` shows it and says it holds nothing to analyze.
#include "run_helpers.h"

#include <dreamscope/storage/trace_summary.h>

#include <algorithm>

namespace dreamscope::test {
// Named, not anonymous: the tests of this folder are built as one unit.
namespace empty_trace {

const std::string kNoEvents = "the trace holds no events (no NVTX range or mark, CUDA API call or GPU work): ";
const std::string kNoNvtx = "no process of the job made an NVTX call; ";

// The line of `output` that starts with `prefix` (empty if none).
std::string line_starting(const std::string& output, const std::string& prefix) {
  const std::size_t at = output.find(prefix);
  if (at == std::string::npos) return {};
  return output.substr(at, output.find('\n', at) - at);
}

// What every analysis of an empty trace must do: one line naming the file and why, exit 1;
// the old behaviour (exit 0) with --allow-empty.
void expect_refused_unless_allowed(const std::filesystem::path& db, const std::string& why,
                                   const std::filesystem::path& dir) {
  const std::string path = db.string();
  const std::string chrome = (dir / "chrome.json").string();
  const std::vector<std::vector<std::string>> commands = {
      {"analyze", path},
      {"replay", path},
      {"whatif", path, "-s", "data", "-p", "workers=4"},
      {"diff", path, path},
      {"export", "--chrome", chrome, path},
  };
  for (const auto& args : commands) {
    SCOPED_TRACE(args.front());
    std::vector<std::string> argv{bin("dreamscope")};
    argv.insert(argv.end(), args.begin(), args.end());
    RunResult r = run(argv);
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_EQ(r.output, "dreamscope " + args.front() + ": " + path + ": " + kNoEvents + why +
                            "; nothing to analyze (--allow-empty goes on anyway)\n");
    argv.push_back("--allow-empty");
    r = run(argv);
    EXPECT_EQ(r.exit_code, 0) << r.output;
  }
}

TEST(EmptyTrace, AProgramThatRecordsNothingIsWrittenSaidAndRefusedByTheAnalyses) {
  const auto dir = scratch_dir("empty-true");
  const auto out = dir / "true.db";
  RunResult r = run(traced(out, {"/bin/true"}));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  // Said after "wrote": the trace is there, and it is no recording to analyze.
  const std::size_t wrote = r.output.find("dreamscope trace: wrote " + out.string() + " (1 process, 0 events)\n");
  ASSERT_NE(wrote, std::string::npos) << r.output;
  const std::string said = line_starting(r.output, "dreamscope trace: " + out.string() + ": " + kNoEvents);
  ASSERT_FALSE(said.empty()) << r.output;
  EXPECT_GT(r.output.find(said), wrote) << r.output;
  // Nothing annotated; CUDA asked for and none recorded, for a reason the machine decides
  // (no driver here; on a GPU machine, no process initialised CUDA).
  const std::string why = said.substr(said.find(kNoEvents) + kNoEvents.size());
  EXPECT_EQ(why.rfind(kNoNvtx, 0), 0u) << said;
  const std::string cuda = why.substr(kNoNvtx.size());
  EXPECT_TRUE(cuda == "no CUDA driver on this machine (libcuda.so.1 not loadable)" ||
              cuda == "no CUDA work was recorded: no process of the job initialised CUDA, or CUPTI could not record it")
      << said;
  EXPECT_NE(r.output.find("dreamscope trace: analyze, whatif, replay, diff and export refuse it (--allow-empty goes "
                          "on). To record something: NVTX ranges in the program"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("docs/tracing.md, \"A trace with no events\""), std::string::npos) << r.output;

  // Nothing recorded is lost: the process, the meta, and why, for the commands that read it.
  const Trace t = read_trace(out);
  EXPECT_TRUE(t.complete());
  ASSERT_EQ(t.processes().size(), 1u);
  EXPECT_EQ(t.processes()[0].exit_status, 0);
  EXPECT_EQ(t.meta_value("no_events"), why);
  EXPECT_TRUE(holds_no_events(t));

  expect_refused_unless_allowed(out, why, dir);

  // `info` shows it, and says plainly that it holds nothing to analyze.
  r = run({bin("dreamscope"), "info", out.string()});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("complete          yes\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("analyzable        NO: " + kNoEvents + why +
                          "; analyze, replay, whatif, diff and export refuse it without --allow-empty\n"),
            std::string::npos)
      << r.output;
  r = run({bin("dreamscope"), "info", "--json", out.string()});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("\"nothing_to_analyze\": \"" + kNoEvents + why + "\""), std::string::npos) << r.output;
  std::filesystem::remove_all(dir);
}

// The exit status stays the command's own; what --trace left out is named as the reason.
TEST(EmptyTrace, TheCommandsExitStatusStaysAndWhatWasNotAskedForIsNamed) {
  const auto dir = scratch_dir("empty-exit");
  const auto out = dir / "exit3.db";
  RunResult r = run(traced(out, {"sh", "-c", "exit 3"}, {"--trace", "nvtx"}));
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("dreamscope trace: " + out.string() + ": " + kNoEvents + kNoNvtx +
                          "CUDA was not recorded (--trace nvtx)\n"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(read_trace(out).processes().at(0).exit_status, 3);
  std::filesystem::remove_all(dir);
}

// Ranges made before the --delay window are not recorded: the program did annotate, and the
// reason says the window took them.
TEST(EmptyTrace, RangesOutsideTheWindowAreNamedAsTheReason) {
  const auto dir = scratch_dir("empty-window");
  const auto out = dir / "window.db";
  RunResult r = run(traced(out, {program("nvtx_names")}, {"--trace", "nvtx", "--delay", "100"}));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const std::string why =
      "no NVTX range or mark fell in the --delay/--duration window; CUDA was not recorded (--trace nvtx)";
  EXPECT_NE(r.output.find("dreamscope trace: " + out.string() + ": " + kNoEvents + why + "\n"), std::string::npos)
      << r.output;
  expect_refused_unless_allowed(out, why, dir);
  std::filesystem::remove_all(dir);
}

// A program that annotates is traced, analyzed and replayed as before: nothing said, nothing refused.
TEST(EmptyTrace, ATraceWithRangesIsUnaffected) {
  const auto dir = scratch_dir("empty-not");
  const auto out = dir / "names.db";
  RunResult r = run(traced(out, {program("nvtx_names")}));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("holds no events"), std::string::npos) << r.output;
  const Trace t = read_trace(out);
  EXPECT_GT(t.annotations().size(), 0u);
  EXPECT_EQ(t.meta_value("no_events"), "");
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"analyze", out.string()}, {"replay", out.string()}, {"whatif", out.string(), "-s", "data", "-p", "workers=4"}}) {
    std::vector<std::string> argv{bin("dreamscope")};
    argv.insert(argv.end(), args.begin(), args.end());
    r = run(argv);
    EXPECT_EQ(r.exit_code, 0) << args.front() << ": " << r.output;
  }
  r = run({bin("dreamscope"), "info", out.string()});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("analyzable"), std::string::npos) << r.output;
  EXPECT_GT(std::count(r.output.begin(), r.output.end(), '\n'), 10) << r.output;
  std::filesystem::remove_all(dir);
}

} // namespace empty_trace
} // namespace dreamscope::test
