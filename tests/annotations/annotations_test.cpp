// dreamscope annotations from C, C++ and Python, traced: domain, categories, names and
// payloads as the tracer records them; and the same programs untraced.
#include "../tracer/run_helpers.h"

#include <algorithm>

namespace dreamscope::test {
namespace {

std::vector<Row> with_name(const std::vector<Row>& rows, const std::string& name) {
  std::vector<Row> out;
  std::copy_if(rows.begin(), rows.end(), std::back_inserter(out), [&](const Row& r) { return r.name == name; });
  std::sort(out.begin(), out.end(), [](const Row& a, const Row& b) { return a.start < b.start; });
  return out;
}

TEST(Annotations, CAndCppScopesCarryCategoryAndPayload) {
  const auto dir = scratch_dir("annotate-cpp");
  const auto out = dir / "a.db";
  RunResult r = run(traced(out, {std::string(ANNOTATE_DEMO)}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("traced"), std::string::npos);
  const auto rows = annotation_rows(read_trace(out));
  for (const auto& row : rows) EXPECT_EQ(row.domain, "dreamscope") << row.name;

  const auto steps = with_name(rows, "step");
  ASSERT_EQ(steps.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(steps[i].category, "step");
    EXPECT_EQ(steps[i].payload, i);
  }
  const auto waits = with_name(rows, "wait");
  ASSERT_EQ(waits.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(waits[i].category, "wait");
    EXPECT_EQ(waits[i].payload, 100 + i);
    EXPECT_GE(waits[i].start, steps[i].start);
    EXPECT_LE(waits[i].end, steps[i].end);
  }
  const auto forward = with_name(rows, "forward");
  const auto matmul = with_name(rows, "matmul");
  ASSERT_EQ(forward.size(), 3u);
  ASSERT_EQ(matmul.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(forward[i].category, "operation");
    EXPECT_EQ(forward[i].payload, kNoValue);
    EXPECT_GE(matmul[i].start, forward[i].start);
    EXPECT_LE(matmul[i].end, forward[i].end);
  }
  const auto fetch = with_name(rows, "fetch");
  const auto prep = with_name(rows, "prep");
  ASSERT_EQ(fetch.size(), 1u);
  ASSERT_EQ(prep.size(), 1u);
  EXPECT_EQ(fetch[0].payload, 7);
  EXPECT_EQ(fetch[0].category, "fetch");
  EXPECT_EQ(prep[0].payload, 7);
  EXPECT_EQ(prep[0].category, "prep");
  // Each ends with a `cpu` mark: the thread's CPU time in it. The fetch slept 5 ms; the prep
  // computed for 5 ms of CPU time.
  const auto cpu = with_name(rows, "cpu");
  ASSERT_EQ(cpu.size(), 2u);
  for (const auto& m : cpu) {
    EXPECT_EQ(m.category, "cpu");
    EXPECT_EQ(m.start, m.end);
  }
  EXPECT_GE(cpu[0].start, fetch[0].start);
  EXPECT_LE(cpu[0].start, fetch[0].end);
  EXPECT_GE(cpu[0].payload, 0);
  EXPECT_LT(cpu[0].payload, 5'000'000);
  EXPECT_GE(fetch[0].end - fetch[0].start, 5'000'000);
  EXPECT_GE(cpu[1].start, prep[0].start);
  EXPECT_LE(cpu[1].start, prep[0].end);
  EXPECT_GE(cpu[1].payload, 5'000'000);
  EXPECT_LE(cpu[1].payload, prep[0].end - prep[0].start);

  const auto mark = with_name(rows, "checkpoint");
  ASSERT_EQ(mark.size(), 1u);
  EXPECT_EQ(mark[0].start, mark[0].end);
  EXPECT_EQ(mark[0].payload, 42);

  // Started on the main thread, ended on another: recorded on the starting thread.
  const auto handoff = with_name(rows, "handoff");
  ASSERT_EQ(handoff.size(), 1u);
  EXPECT_EQ(handoff[0].tid, handoff[0].pid);
  EXPECT_EQ(handoff[0].payload, 9);
  EXPECT_GE(handoff[0].end, handoff[0].start);
  std::filesystem::remove_all(dir);
}

TEST(Annotations, UntracedProgramRunsAndKnowsIt) {
  RunResult r = run({std::string(ANNOTATE_DEMO)});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("untraced"), std::string::npos) << r.output;
}

bool have_python() { return std::system("python3 -c 'import ctypes' >/dev/null 2>&1") == 0; }

TEST(Annotations, PythonModuleTraced) {
  if (!have_python()) GTEST_SKIP() << "no python3";
  const auto dir = scratch_dir("annotate-py");
  const auto out = dir / "py.db";
  RunResult r = run(traced(out, {"python3", std::string(PYTHON_DEMO)}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("untraced"), std::string::npos) << r.output;
  const auto rows = annotation_rows(read_trace(out));

  // data_loader: one wait per batch (ids 0..3), and one more that ends with the loader.
  const auto waits = with_name(rows, "wait");
  ASSERT_EQ(waits.size(), 5u);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(waits[i].payload, i);
    EXPECT_EQ(waits[i].category, "wait");
  }
  const auto steps = with_name(rows, "step");
  ASSERT_EQ(steps.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(steps[i].payload, i);
    // The wait for batch i comes before step i.
    EXPECT_LE(waits[i].end, steps[i].start);
  }
  EXPECT_EQ(with_name(rows, "forward").size(), 4u);
  const auto updates = with_name(rows, "update");
  ASSERT_EQ(updates.size(), 4u);
  EXPECT_EQ(updates[0].category, "operation");
  EXPECT_EQ(with_name(rows, "fetch").at(0).payload, 5);
  EXPECT_EQ(with_name(rows, "prep").at(0).payload, 5);
  // The C library measures the CPU time of fetch and prep for Python too.
  EXPECT_EQ(with_name(rows, "cpu").size(), 2u);
  const auto done = with_name(rows, "done");
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].payload, 1);
  std::filesystem::remove_all(dir);
}

TEST(Annotations, PythonModuleUntracedIsANoOp) {
  if (!have_python()) GTEST_SKIP() << "no python3";
  RunResult r = run({"python3", std::string(PYTHON_DEMO)},
                    {{"PYTHONPATH", std::string(DREAMSCOPE_SOURCE_DIR) + "/annotations/python"},
                     {"NVTX_INJECTION64_PATH", ""}});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("untraced"), std::string::npos) << r.output;
}

} // namespace
} // namespace dreamscope::test
