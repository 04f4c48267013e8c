// `dreamscope import`, `export` and `info` on imported formats, end to end through the
// built binary.
#include "import_test_util.h"

#include "../cli/run_command.h"

#include <dreamscope/storage/trace_file.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <vector>

namespace dreamscope::test {
namespace {

TEST(ImportCli, ImportPrintsThroughputAndWarningsAndWritesATrace) {
  TempDir dir;
  const std::string in = kineto("nccl_parser_config/nccl_data.json.gz").string();
  const std::string out = (dir / "nccl.db").string();
  auto r = run_command(dreamscope_bin() + " import " + in + " -o " + out);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(^Loaded 9\.8 MB in [0-9.]+ s \([0-9]+ MB/s\): 31249 of 40573 events kept)")))
      << r.out;
  EXPECT_NE(r.out.find("warning: 88 x flow start without a finish (dropped)"), std::string::npos) << r.out;
  // Not a terminal: no progress output.
  EXPECT_EQ(r.out.find('\r'), std::string::npos);
  Trace t = read_trace(out);
  EXPECT_EQ(t.source(), TraceSource::Kineto);
  EXPECT_EQ(t.event_count(), 26932u);

  auto info = run_command(dreamscope_bin() + " info " + out);
  EXPECT_EQ(info.exit_code, 0) << info.out;
  EXPECT_NE(info.out.find("NVIDIA A100-PG509-200"), std::string::npos);
}

TEST(ImportCli, QuietPrintsOnlyWarnings) {
  TempDir dir;
  auto r = run_command(dreamscope_bin() + " import -q " + kineto("triton_example/triton_example.json.gz").string() +
                       " -o " + (dir / "t.db").string());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  // The line names the issue by its stable id (import_issues.h) beside the message.
  EXPECT_EQ(r.out,
            "  warning: 1 x flow start without a finish (dropped) [kineto_flow_start_without_finish]; e.g. event #10, "
            "ac2g id 39\n");
}

TEST(ImportCli, InfoAndExportReadEveryFormatDirectly) {
  TempDir dir;
  const std::string in = kineto("critical_path/simple_add/benchmark_result_493459_1694039959_trace.json.gz").string();
  auto info = run_command(dreamscope_bin() + " info " + in);
  ASSERT_EQ(info.exit_code, 0) << info.out;
  EXPECT_NE(info.out.find("source            kineto"), std::string::npos) << info.out;
  auto exp = run_command(dreamscope_bin() + " export " + in + " --chrome " + (dir / "t.json").string());
  ASSERT_EQ(exp.exit_code, 0) << exp.out;
  EXPECT_EQ(exp.out, "Wrote 837 events and 139 flows to " + (dir / "t.json").string() + "\n");
  Trace back = load_trace(dir / "t.json");
  EXPECT_EQ(back.event_count(), 837u);
}

TEST(ImportCli, BadInputGetsOneLineNamingTheFile) {
  TempDir dir;
  auto p = dir.write("notes.json", "{ not json");
  auto r = run_command(dreamscope_bin() + " import " + p.string() + " -o " + (dir / "x.db").string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(r.out.starts_with("dreamscope import: " + p.string() + ": not valid JSON")) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  auto db = dir / "t.db";
  write_trace(TraceBuilder().build(), db);
  r = run_command(dreamscope_bin() + " import " + db.string() + " -o " + (dir / "y.db").string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "dreamscope import: " + db.string() + ": already a dreamscope trace; nothing to import\n");
}

TEST(ImportCli, EveryCommandRefusesAnImportThatKeptNothingUnlessAllowed) {
  TempDir dir;
  // PyTorch 1.8-1.10 ids are numeric strings and import; these are not numbers at all.
  auto p = dir.write("nothing.json", R"json({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "a", "pid": "main", "tid": "x", "ts": 1, "dur": 2}]})json");
  const std::string expected = p.string() +
                               ": the import kept none of the 1 events in the file (1 x kineto_bad_pid_tid); nothing "
                               "to analyze (--allow-empty goes on anyway)\n";
  const std::vector<std::string> commands = {"info", "analyze", "replay", "whatif -s amp",
                                             "export --chrome " + (dir / "x.json").string(),
                                             "import -o " + (dir / "x.db").string()};
  for (const std::string& cmd : commands) {
    SCOPED_TRACE(cmd);
    auto r = run_command(dreamscope_bin() + " " + cmd + " " + p.string());
    EXPECT_EQ(r.exit_code, 1) << r.out;
    const std::string name = cmd.substr(0, cmd.find(' '));
    EXPECT_EQ(r.out, "dreamscope " + name + ": " + expected);
  }
  auto r = run_command(dreamscope_bin() + " info --allow-empty " + p.string());
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("complete          no: 1 of 1 events in the file dropped on import (1 x kineto_bad_pid_tid)"),
            std::string::npos)
      << r.out;
}

TEST(ImportCli, FuzzReproducersEndWithOneLineOrACorrectResult) {
  const std::filesystem::path fuzz = std::filesystem::path(DREAMSCOPE_SHARED_DATA_DIR) / "fuzz";
  for (const char* name : {"kineto_missing_comma_after_traceEvents.json", "gz_truncated.json.gz",
                           "gz_isize_ffffffff.json.gz"}) {
    SCOPED_TRACE(name);
    auto r = run_command(dreamscope_bin() + " info " + (fuzz / name).string());
    EXPECT_EQ(r.exit_code, 1) << r.out;
    EXPECT_TRUE(r.out.starts_with("dreamscope info: " + (fuzz / name).string() + ": ")) << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  }
  auto r = run_command(dreamscope_bin() + " info " + (fuzz / "kineto_time_span_overflow.json").string());
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("time span         1.000 us"), std::string::npos) << r.out;
  TempDir dir;
  r = run_command(dreamscope_bin() + " export " + (fuzz / "kineto_bad_number_token_export.json").string() +
                  " --chrome " + (dir / "t.json").string());
  EXPECT_EQ(r.exit_code, 0) << r.out;
  std::ifstream f(dir / "t.json");
  std::stringstream text;
  text << f.rdbuf();
  EXPECT_NE(text.str().find(R"("n":"512c")"), std::string::npos) << text.str();
}

TEST(ImportCli, InfoListsOnlyProcessesWithEventsAndNamesTheContextWideStream) {
  const auto nsys = std::filesystem::path(DREAMSCOPE_SHARED_DATA_DIR) / "wild" / "nvfuser-h200-nvtx" / "report1.sqlite";
  auto r = run_command(dreamscope_bin() + " info " + nsys.string());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("processes (2; 109 more without events, not listed)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("stream all    context-wide sync (all streams)"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("4294967295   "), std::string::npos) << r.out;
}

// PyTorch without Kineto (tests/data/importers/kineto/autograd-legacy, recorded with Debian's
// python3-torch 1.13.1): every command reads the bare array of cat-less events.
TEST(ImportCli, EveryCommandReadsTheExportOfPyTorchWithoutKineto) {
  TempDir dir;
  const auto legacy = std::filesystem::path(DREAMSCOPE_TEST_DATA_DIR) / "importers" / "kineto" / "autograd-legacy";
  const std::string steps = (legacy / "profiler-schedule-steps.json").string();
  auto r = run_command(dreamscope_bin() + " info " + steps);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  // 310 events, all on thread 1 of the pseudo-process "CPU functions", which has no pid.
  EXPECT_NE(r.out.find("complete          yes"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  pid ?        CPU functions"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("    thread 1        -                        310 events"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  annotations              310"), std::string::npos) << r.out;
  // The steps are ProfilerStep#1 (1046 µs in the file) and #2 (756 µs); the TensorBoard
  // plugin's breakdown counts their operators as CPU Exec.
  r = run_command(dreamscope_bin() + " analyze " + steps + " --only steps,cross-stack");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(\n  ProfilerStep#1 +1\.046 ms .* [1-9][0-9.]* us +[0-9.]+ us\n)"))) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(\n  ProfilerStep#2 +756\.000 us )"))) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(\n  aten::addmm +4 )"))) << r.out;
  for (const std::string& cmd : std::vector<std::string>{"replay", "whatif -s amp", "export --chrome " + (dir / "x.json").string(),
                                                         "import -o " + (dir / "x.db").string()}) {
    SCOPED_TRACE(cmd);
    r = run_command(dreamscope_bin() + " " + cmd + " " + steps);
    EXPECT_EQ(r.exit_code, 0) << r.out;
  }
  EXPECT_EQ(read_trace(dir / "x.db").annotations().size(), 310u);
  // The export is a Kineto document: the categories told at import, a pid of its own.
  const Trace back = load_trace(dir / "x.json");
  EXPECT_EQ(back.annotations().size(), 310u);
  EXPECT_EQ(back.processes().at(0).pid, 1);
  EXPECT_EQ(back.processes().at(0).name, "CPU functions");
  // use_cuda kernels (tid: the device) are on their device's row, which has no stream.
  r = run_command(dreamscope_bin() + " info " + (legacy / "handwritten-1.7-use-cuda.json").string());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("  gpu 1 stream none   -                1 events"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  pid ?        CPU functions, node_id:1"), std::string::npos) << r.out;
  // A quote the exporter did not escape: the events before it, and a warning.
  r = run_command(dreamscope_bin() + " import " + (legacy / "autograd-profile-quote-in-name.json").string() + " -o " +
                  (dir / "q.db").string());
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("11 of 12 events kept"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[kineto_damaged_json]"), std::string::npos) << r.out;
  // An empty profile is written "[]": one line naming the file, as any empty import.
  const auto empty = dir.write("empty.json", "[]");
  r = run_command(dreamscope_bin() + " info " + empty.string());
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_EQ(r.out, "dreamscope info: " + empty.string() +
                       ": the import kept none of the 0 events in the file; nothing to analyze (--allow-empty goes on "
                       "anyway)\n");
}

} // namespace
} // namespace dreamscope::test
