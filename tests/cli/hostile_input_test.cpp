// Every hostile input in ../shared/data/fuzz (minimized reproducers of crashes, hangs and
// memory blow-ups found by fuzzing the release binary) run through the real `dreamscope`
// commands: each must end with a correct result, or exit 1 with one line on stderr that names
// the file, without a signal, a hang or more than 200 MB of memory.
#include "../common/required_data.h"
#include <dreamscope/storage/limits.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <array>
#include <csignal>
#include <fcntl.h>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <spawn.h>
#include <string>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

extern char** environ;

namespace {

namespace fs = std::filesystem;

const fs::path kFuzz = fs::path(DREAMSCOPE_SHARED_DATA_DIR) / "fuzz";

struct Outcome {
  int exit_code = -1; // 128 + signal when killed
  bool timed_out = false;
  long max_rss_kb = 0;
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Runs `dreamscope args...` with stdout and stderr to files, measuring its peak memory with
// wait4(); killed after `timeout_s` (a hang, not a slow run: the bound is far above 1 s).
Outcome run(const std::vector<std::string>& args, int timeout_s = 30) {
  static int counter = 0;
  const fs::path dir = fs::temp_directory_path();
  const fs::path out_path = dir / ("dreamscope-hostile-" + std::to_string(::getpid()) + "-" + std::to_string(counter) + ".out");
  const fs::path err_path = dir / ("dreamscope-hostile-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + ".err");
  std::vector<std::string> argv_s = {std::string(DREAMSCOPE_BIN_DIR) + "/dreamscope"};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  Outcome o;
  if (posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ) != 0) return o;
  posix_spawn_file_actions_destroy(&actions);

  int status = 0;
  rusage usage{};
  for (int waited_ms = 0;; waited_ms += 10) {
    const pid_t r = ::wait4(pid, &status, WNOHANG, &usage);
    if (r == pid) break;
    if (waited_ms > timeout_s * 1000) {
      ::kill(pid, SIGKILL);
      ::wait4(pid, &status, 0, &usage);
      o.timed_out = true;
      break;
    }
    ::usleep(10000);
  }
  o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  o.max_rss_kb = usage.ru_maxrss;
  o.out = slurp(out_path);
  o.err = slurp(err_path);
  fs::remove(out_path);
  fs::remove(err_path);
  return o;
}

std::string describe(const std::vector<std::string>& args, const Outcome& o) {
  std::string cmd = "dreamscope";
  for (const auto& a : args) cmd += " " + a;
  return cmd + "\n  exit " + std::to_string(o.exit_code) + (o.timed_out ? " (timed out)" : "") + ", " +
         std::to_string(o.max_rss_kb / 1024) + " MB\n  stderr: " + o.err.substr(0, 600);
}

// A clear refusal: exit 1, one line on stderr, naming `names`; and bounded in memory.
void expect_one_line_error(const std::vector<std::string>& args, const std::string& names) {
  const Outcome o = run(args);
  SCOPED_TRACE(describe(args, o));
  EXPECT_FALSE(o.timed_out);
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_LT(o.max_rss_kb, 200 * 1024);
  ASSERT_FALSE(o.err.empty());
  EXPECT_EQ(o.err.find('\n'), o.err.size() - 1) << "more than one line";
  EXPECT_NE(o.err.find(names), std::string::npos) << "does not name " << names;
}

// Either a correct result (exit 0) or a clear refusal; never a crash, a hang or a blow-up.
void expect_bounded(const std::vector<std::string>& args, const std::string& file) {
  const Outcome o = run(args);
  SCOPED_TRACE(describe(args, o));
  EXPECT_FALSE(o.timed_out);
  EXPECT_LT(o.max_rss_kb, 200 * 1024);
  EXPECT_TRUE(o.exit_code == 0 || o.exit_code == 1);
  if (o.exit_code == 1) {
    EXPECT_EQ(o.err.find('\n'), o.err.size() - 1) << "more than one line";
    EXPECT_NE(o.err.find(file), std::string::npos) << "does not name the file";
  }
}

TEST(HostileInput, EveryFuzzTraceEndsCleanlyInEveryCommand) {
  ASSERT_TRUE(fs::is_directory(kFuzz)) << kFuzz;
  int traces = 0;
  for (const auto& entry : fs::directory_iterator(kFuzz)) {
    const std::string path = entry.path().string();
    if (entry.path().extension() == ".toml" || entry.path().extension() == ".md") continue;
    ++traces;
    for (const char* command : {"info", "analyze", "replay"}) expect_bounded({command, path}, path);
    expect_bounded({"whatif", path, "-s", "amp"}, path);
  }
  EXPECT_GE(traces, 14);
}

// A kernel name with bytes that are not UTF-8 (round2/summary_bad_utf8.summary.db): every
// report format comes out as valid UTF-8, the bad bytes shown as U+FFFD.
TEST(HostileInput, ReportsAreValidUtf8WhateverTheTraceHeld) {
  const fs::path input = kFuzz / "round2" / "summary_bad_utf8.summary.db";
  DREAMSCOPE_REQUIRE_DATA(input);
  for (const char* format : {"text", "md", "html", "json"}) {
    const Outcome o = run({"analyze", input.string(), "--format", format});
    SCOPED_TRACE(format);
    ASSERT_EQ(o.exit_code, 0) << o.err;
    EXPECT_TRUE(dreamscope::limits::is_valid_utf8(o.out));
    if (std::string(format) != "json") {
      EXPECT_NE(o.out.find("\xEF\xBF\xBD"), std::string::npos);
    }
  }
}

// A measured step of 0 ns (round2/zero_span.json: one operator of 0 µs) leaves the speedup
// undefined: said so, null in JSON, and a gate on it cannot decide, which fails it.
TEST(HostileInput, ASpeedupOverAZeroNanosecondStepIsUndefined) {
  const fs::path input = kFuzz / "round2" / "zero_span.json";
  DREAMSCOPE_REQUIRE_DATA(input);
  Outcome o = run({"whatif", input.string(), "-s", "amp"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("undefined"), std::string::npos) << o.out;
  EXPECT_EQ(o.out.find("0.000×"), std::string::npos) << o.out;
  o = run({"whatif", input.string(), "-s", "amp", "--format", "json"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("\"speedup\": null"), std::string::npos) << o.out;
  o = run({"whatif", input.string(), "-s", "amp", "--fail-if", "speedup < 1"});
  EXPECT_EQ(o.exit_code, 3);
  EXPECT_NE(o.err.find("gate cannot decide: speedup < 1 (speedup is undefined"), std::string::npos) << o.err;
  EXPECT_EQ(o.err.find('\n'), o.err.size() - 1);
  // A gate on a figure that is defined still decides.
  o = run({"whatif", input.string(), "-s", "amp", "--fail-if", "predicted_step_ms > 1000"});
  EXPECT_EQ(o.exit_code, 0) << o.err;
}

// A 4-rank job with one rank's first `step` missing (round2/negative_fetch_stall.db): with
// every fetch removed, the medians of the steps grew (a rank whose steps are one behind the
// others' starts a step sooner and waits in it), and the report said "fetch stall -1.946 ms".
// The breakdown then compares the runs' spans per step instead, and says so.
TEST(HostileInput, ADataStallIsNeverNegativeWhenStepsAreMisaligned) {
  const fs::path input = kFuzz / "round2" / "negative_fetch_stall.db";
  DREAMSCOPE_REQUIRE_DATA(input);
  Outcome o = run({"whatif", input.string(), "-s", "amp", "--format", "json"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const auto j = nlohmann::json::parse(o.out);
  const auto& d = j.at("data_stalls");
  EXPECT_EQ(d.at("basis"), "run span per step");
  EXPECT_GE(d.at("fetch_stall_ns").get<double>(), 0.0);
  EXPECT_GE(d.at("prep_stall_ns").get<double>(), 0.0);
  EXPECT_GE(d.at("traced_step_ns").get<double>(), d.at("cached_step_ns").get<double>());
  o = run({"whatif", input.string(), "-s", "amp"});
  EXPECT_NE(o.out.find("data stalls (DS-Analyzer, from three simulations; run span per step)"), std::string::npos)
      << o.out;
}

TEST(HostileInput, DamagedTraceDbsAreRefusedByName) {
  for (const char* name : {"string_id_negative.db", "db_string_id_2e63.db", "db_track_id_huge.db"}) {
    const std::string path = (kFuzz / name).string();
    expect_one_line_error({"info", path}, path);
  }
}

TEST(HostileInput, SparseButValidIdsLoadCorrectly) {
  // Ids of 3e8 and 2e9 and a row count of 1e11 in meta are odd but not wrong: the trace loads
  // with all its rows, in the memory its rows take.
  for (const char* name : {"db_string_id_2e9.db", "db_string_id_3e8.db", "db_rows_annotation_1e11.db"}) {
    const std::string path = (kFuzz / name).string();
    const Outcome o = run({"info", path});
    SCOPED_TRACE(describe({"info", path}, o));
    EXPECT_EQ(o.exit_code, 0);
    EXPECT_LT(o.max_rss_kb, 200 * 1024);
    EXPECT_NE(o.out.find("annotations               50"), std::string::npos) << o.out;
  }
}

TEST(HostileInput, ScenarioValuesAreCheckedWithTheirPosition) {
  const std::string trace = (kFuzz / "kineto_kernel_a32.json").string();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"toml_scale_ratio_inf.toml", ":5:9: 'ratio' must be a finite number >= 0, got inf"},
      {"toml_scale_ratio_nan.toml", ":5:9: 'ratio' must be a finite number >= 0, got nan"},
      {"toml_ratio_cost_inf.toml", ":5:35: 'ratio' must be a finite number >= 0, got inf"},
      {"toml_constant_negative.toml", ":5:44: 'duration_ns' must be a duration in ns, >= 0"},
      {"toml_scale_add_ns_negative.toml", ":6:10: 'add_ns' must be a duration in ns, >= 0"},
      {"toml_expr_nested_parens_10000.toml", ":5:9: 'ratio': in expression"},
  };
  for (const auto& [file, message] : cases) {
    const std::string path = (kFuzz / file).string();
    expect_one_line_error({"whatif", trace, "-s", path}, path + message);
  }
  expect_one_line_error({"whatif", trace, "-s", "amp", "-p", "memory_bound_ratio=inf"},
                        "'ratio' must be a finite number >= 0, got inf");
}

TEST(HostileInput, FiniteButHugeRatiosAndCostsSaturateAndAreRefused) {
  // Found by fuzz_scenario: a finite ratio of 1e300, or costs that add up past 2^63 ns along
  // a thread, overflowed the simulated clock (undefined behaviour, then nonsense predictions).
  const std::string trace = (kFuzz / "kineto_kernel_a32.json").string();
  const fs::path dir = fs::temp_directory_path() / ("dreamscope-hostile-huge-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::vector<std::pair<std::string, std::string>> scenarios = {
      {"ratio_1e300.toml", "name = \"huge\"\n[[transform]]\nop = \"scale\"\nselect = { kind = \"kernel\" }\nratio = 1e300\n"},
      {"add_2e62.toml", "name = \"huge\"\n[[transform]]\nop = \"scale\"\nselect = { kind = \"kernel\" }\n"
                        "ratio = 1.0\nadd_ns = 4611686018427387903\n"},
      {"set_2e62.toml", "name = \"huge\"\n[[transform]]\nop = \"set_duration\"\nselect = { kind = \"kernel\" }\n"
                        "cost = { model = \"ratio\", ratio = 1e300, add_ns = 4611686018427387903 }\n"},
  };
  for (const auto& [name, text] : scenarios) {
    const fs::path path = dir / name;
    std::ofstream(path) << text;
    expect_one_line_error({"whatif", trace, "-s", path.string()},
                          path.string() + ": the predicted run would end past 2^62 ns");
  }
  fs::remove_all(dir);
}

TEST(HostileInput, WorkerCountsAreBounded) {
  const std::string trace = (fs::path(DREAMSCOPE_TEST_DATA_DIR) / "cpu" / "fine_annotations.dslog").string();
  ASSERT_TRUE(fs::exists(trace)) << trace;
  expect_one_line_error({"whatif", trace, "-s", "data", "-p", "workers=1000000000"},
                        "'pool' must be a number of workers from 1 to 4096, got 1000000000");
  // Within the bound, a pool larger than the work costs what the work costs: the memory of
  // 4096 workers is that of 2.
  const Outcome two = run({"whatif", trace, "--no-data-stalls", "-s", "data", "-p", "workers=2"});
  const Outcome many = run({"whatif", trace, "--no-data-stalls", "-s", "data", "-p", "workers=4096"});
  SCOPED_TRACE(describe({"whatif", trace, "-s", "data", "-p", "workers=4096"}, many));
  EXPECT_EQ(two.exit_code, 0);
  EXPECT_EQ(many.exit_code, 0);
  EXPECT_LT(many.max_rss_kb, two.max_rss_kb + two.max_rss_kb / 10);
  EXPECT_NE(many.out.find("of them would have nothing to do"), std::string::npos) << many.out;
}

TEST(HostileInput, ABacktrackingPatternOnALongNameRunsInLinearTime) {
  const std::string trace = (kFuzz / "kineto_kernel_a32.json").string();
  const std::string scenario = (kFuzz / "toml_catastrophic_regex.toml").string();
  const Outcome o = run({"whatif", trace, "-s", scenario}, 20);
  SCOPED_TRACE(describe({"whatif", trace, "-s", scenario}, o));
  EXPECT_FALSE(o.timed_out);
  EXPECT_EQ(o.exit_code, 0);
  // The kernel's name is 32 a's and a '!', the input that makes a backtracking engine try
  // every way to split the a's: it does not match, and the answer comes at once.
  EXPECT_NE(o.out.find("redos"), std::string::npos) << o.out;
}

TEST(HostileInput, DeepExpressionsInFailIfAreRefused) {
  const std::string trace = (kFuzz / "kineto_kernel_a32.json").string();
  expect_one_line_error({"whatif", trace, "-s", "amp", "--fail-if", std::string(10000, '(') + "1" + std::string(10000, ')')},
                        "--fail-if: in expression '((((");
  expect_one_line_error({"whatif", trace, "-s", "amp", "--fail-if", std::string(100000, '!') + "true"},
                        "nested deeper than 256 levels");
  expect_one_line_error({"whatif", trace, "-s", "amp", "--fail-if", "9223372036854775807 + 1 > 0"},
                        "overflows a 64-bit integer");
}

TEST(HostileInput, FifosDevicesAndDirectoriesAreNotOpenedAsTraces) {
  const fs::path dir = fs::temp_directory_path() / ("dreamscope-fifo-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path fifo = dir / "trace.db";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  expect_one_line_error({"info", fifo.string()}, fifo.string() + ": is a FIFO, not a trace file");
  expect_one_line_error({"whatif", (kFuzz / "kineto_kernel_a32.json").string(), "-s", fifo.string()},
                        fifo.string() + ": not a regular file, so not a scenario");
  expect_one_line_error({"info", "/dev/null"}, "/dev/null: is a character device, not a trace file");
  // A folder is a distributed job's traces (docs/multi-rank.md); the FIFO in it is no trace
  // and is never opened.
  expect_one_line_error({"info", dir.string()}, dir.string() + ": a folder with no trace in it");
  fs::remove_all(dir);
}

TEST(HostileInput, OutputsThatAreNotFilesAreNeverReplaced) {
  // Writers replace the file at their output's path; with --force, run as root, that once
  // replaced /dev/null itself with a trace. A FIFO and a folder stand in for a device here.
  const fs::path dir = fs::temp_directory_path() / ("dreamscope-outputs-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path fifo = dir / "out.db";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const fs::path folder = dir / "folder.db";
  fs::create_directories(folder);
  const std::string input = (kFuzz / "kineto_kernel_a32.json").string();
  const std::string refused = ", not a file that can be written (an output is written by replacing the file at its path)";
  expect_one_line_error({"import", input, "-o", fifo.string(), "--force"}, fifo.string() + ": is a FIFO" + refused);
  expect_one_line_error({"import", input, "-o", folder.string(), "--force"},
                        folder.string() + ": is a directory" + refused);
  expect_one_line_error({"analyze", input, "--summary", "--rank", "0", "-o", fifo.string()},
                        fifo.string() + ": is a FIFO" + refused);
  expect_one_line_error({"trace", "--force", "-o", fifo.string(), "--", "/bin/true"}, fifo.string() + ": is a FIFO" + refused);
  EXPECT_TRUE(fs::is_fifo(fifo));
  EXPECT_TRUE(fs::is_directory(folder));
  fs::remove_all(dir);
}

TEST(HostileInput, AnUnreadableFileIsReportedAsUnreadable) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads every file: permission denied cannot happen";
  const fs::path file = fs::temp_directory_path() / ("dreamscope-unreadable-" + std::to_string(::getpid()) + ".json");
  std::ofstream(file) << "{\"traceEvents\": []}";
  fs::permissions(file, fs::perms::none);
  expect_one_line_error({"info", file.string()}, file.string() + ": cannot open: Permission denied");
  fs::remove(file);
}

TEST(HostileInput, TraceFilesAreNotReplacedWithoutForce) {
  const fs::path dir = fs::temp_directory_path() / ("dreamscope-force-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string input = (kFuzz / "kineto_kernel_a32.json").string();
  const std::string out = (dir / "a.db").string();
  EXPECT_EQ(run({"import", input, "-o", out}).exit_code, 0);
  expect_one_line_error({"import", input, "-o", out}, out + " exists (use --force to replace it)");
  EXPECT_EQ(run({"import", "--force", input, "-o", out}).exit_code, 0);
  expect_one_line_error({"whatif", input, "-s", "amp", "-o", out}, out + " exists (use --force to replace it)");
  EXPECT_EQ(run({"whatif", input, "-s", "amp", "-f", "-o", out}).exit_code, 0);
  expect_one_line_error({"import", input, "-o", (dir / "missing" / "b.db").string()},
                        "cannot write " + (dir / "missing" / "b.db").string() + ": folder " +
                            (dir / "missing").string() + " does not exist");
  fs::remove_all(dir);
}

} // namespace
