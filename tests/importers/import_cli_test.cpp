// `dreamscope import`, `export` and `info` on imported formats, end to end through the
// built binary.
#include "import_test_util.h"

#include "../cli/run_command.h"

#include <dreamscope/trace_file.h>

#include <regex>

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

} // namespace
} // namespace dreamscope::test
