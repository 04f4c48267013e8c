// The Kineto and gzip reproducers of ../shared/data/fuzz (issue 13): each must end with a
// one-line error naming the file, or with a correct result, in bounded time and memory.
#include "import_test_util.h"

#include <dreamscope/storage/exporters.h>
#include <dreamscope/storage/trace_file.h>
#include <dreamscope/storage/trace_summary.h>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

namespace dreamscope::test {
namespace {

std::filesystem::path fuzz(const std::string& name) {
  return std::filesystem::path(DREAMSCOPE_SHARED_DATA_DIR) / "fuzz" / name;
}

std::string load_error(const std::filesystem::path& p) {
  try {
    load_trace(p);
  } catch (const TraceError& e) {
    return e.what();
  }
  return "";
}

// How much the peak resident memory grows while `load_trace(p)` runs, in MB (up to 255),
// measured in a child process so that what earlier tests touched does not count.
int peak_growth_mb(const std::filesystem::path& p) {
  const pid_t child = fork();
  if (child == 0) {
    rusage before{}, after{};
    getrusage(RUSAGE_SELF, &before);
    try {
      load_trace(p);
    } catch (const std::exception&) {
    }
    getrusage(RUSAGE_SELF, &after);
    _exit(static_cast<int>(std::min<long>((after.ru_maxrss - before.ru_maxrss) / 1024, 255)));
  }
  int status = 0;
  waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 255;
}

TEST(KinetoFuzz, SyntaxErrorAfterTraceEventsIsAnErrorNotACrash) {
  // {"traceEvents": [] "a": 1}: simdjson's next field is unusable after the missing comma.
  const auto p = fuzz("kineto_missing_comma_after_traceEvents.json");
  const std::string e = load_error(p);
  EXPECT_TRUE(e.starts_with(p.string() + ": not valid JSON")) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
}

TEST(KinetoFuzz, GzipTrailerSizeIsNotTrusted) {
  // Both claim 4 GB of JSON in their trailer; the buffer must follow the data, not the claim.
  for (const char* name : {"gz_truncated.json.gz", "gz_isize_ffffffff.json.gz"}) {
    SCOPED_TRACE(name);
    const auto p = fuzz(name);
    const std::string e = load_error(p);
    EXPECT_TRUE(e.starts_with(p.string() + ": ")) << e;
    EXPECT_NE(e.find("gzip"), std::string::npos) << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
    EXPECT_LT(peak_growth_mb(p), 50) << "MB to read a 1.6 kB file";
  }
}

TEST(KinetoFuzz, TimestampsNearTheInt64LimitAreDroppedNotWrapped) {
  // ts = -1e15 µs and 9e15 µs: 9e18 ns is past the ±4e18 ns a trace may hold.
  ImportStats stats;
  Trace t = load_trace(fuzz("kineto_time_span_overflow.json"), &stats);
  ASSERT_EQ(t.annotations().size(), 1u);
  EXPECT_EQ(stats.issues.at("kineto_time_out_of_range").count, 1);
  EXPECT_GT(t.end_time(), t.begin_time());
  EXPECT_EQ(t.end_time() - t.begin_time(), 1000);
  // The drop is not silent: info says the trace is not complete, and why.
  const TraceSummary s = summarize(t);
  EXPECT_FALSE(s.complete);
  EXPECT_EQ(s.import_events_dropped, 1);
}

TEST(KinetoFuzz, UnparsableNumberTokenIsKeptAsAStringAndExportsValidJson) {
  ImportStats stats;
  Trace t = load_trace(fuzz("kineto_bad_number_token_export.json"), &stats);
  EXPECT_EQ(stats.issues.at("kineto_bad_number_token").count, 1);
  ASSERT_EQ(t.annotations().size(), 1u);
  bool found = false;
  for (const EventArg& a : t.args_of(AnnotationIndex{0})) {
    if (t.str(a.key) != "n") continue;
    found = true;
    EXPECT_EQ(a.type, ArgType::String);
    EXPECT_EQ(t.str(a.text), "512c");
  }
  EXPECT_TRUE(found);
  // Exported and read back, the file is clean JSON: no bad token, the value a string.
  TempDir dir;
  export_chrome(t, dir / "out.json");
  ImportStats again;
  Trace back = load_trace(dir / "out.json", &again);
  EXPECT_EQ(again.issues.count("kineto_bad_number_token"), 0u) << again.summary();
  EXPECT_EQ(back.annotations().size(), 1u);
}

TEST(KinetoFuzz, BadTokensInsideCompoundArgsAreCaughtToo) {
  TempDir dir;
  auto p = dir.write("nested.json", R"json({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 2,
     "args": {"dims": [[512c, 1]], "ok": [[1, 2.5e3, -0.5], {"x": "y\"]"}], "t": true}}]})json");
  ImportStats stats;
  Trace t = load_trace(p, &stats);
  EXPECT_EQ(stats.issues.at("kineto_bad_number_token").count, 1);
  for (const EventArg& a : t.args_of(AnnotationIndex{0})) {
    if (t.str(a.key) == "ok") {
      EXPECT_EQ(a.type, ArgType::Json);
    }
    if (t.str(a.key) == "dims") {
      EXPECT_EQ(a.type, ArgType::String);
    }
  }
}

TEST(KinetoFuzz, AnyInt64PidHashesWithoutOverflow) {
  // fuzz_kineto_import (UBSan): the (pid, tid) hash multiplied a signed pid, which overflows
  // for pids past 2^63 / 1000003. The sanitizer build of this test aborts on that.
  TempDir dir;
  auto p = dir.write("huge_pid.json", R"json({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "a", "pid": 5555555555555555557, "tid": 7, "ts": 1, "dur": 2},
    {"ph": "X", "cat": "cpu_op", "name": "b", "pid": -5555555555555555557, "tid": -7, "ts": 3, "dur": 2}]})json");
  const Trace t = load_trace(p);
  ASSERT_EQ(t.annotations().size(), 2u);
  EXPECT_NE(t.annotations().track[0], t.annotations().track[1]);
}

} // namespace
} // namespace dreamscope::test
