// Children made by fork and by exec, and Python multiprocessing workers, all end up in the
// one output file with their own process rows.
#include "run_helpers.h"

#include <map>
#include <set>

namespace dreamscope::test {
namespace {

std::map<std::string, std::set<std::int64_t>> pids_by_name(const std::vector<Row>& rows) {
  std::map<std::string, std::set<std::int64_t>> m;
  for (const auto& r : rows) m[r.name].insert(r.pid);
  return m;
}

std::map<std::string, std::size_t> counts(const std::vector<Row>& rows) {
  std::map<std::string, std::size_t> m;
  for (const auto& r : rows) ++m[r.name];
  return m;
}

TEST(ProcessTree, ForkAndExecChildrenAreMerged) {
  const auto dir = scratch_dir("fork-exec");
  const auto out = dir / "tree.db";
  RunResult r = run(traced(out, {program("fork_exec")}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  Trace t = read_trace(out);
  EXPECT_TRUE(t.complete()) << t.meta_value("warnings");
  EXPECT_FALSE(std::filesystem::exists(out.string() + ".d")) << "parts are removed after merging";

  const auto rows = annotation_rows(t);
  auto n = counts(rows);
  EXPECT_EQ(n["parent-before"], 10u);
  EXPECT_EQ(n["parent-after"], 5u);
  EXPECT_EQ(n["child"], 20u);
  EXPECT_EQ(n["execd"], 30u);

  auto pids = pids_by_name(rows);
  ASSERT_EQ(pids["parent-before"].size(), 1u);
  ASSERT_EQ(pids["child"].size(), 1u);
  const std::int64_t parent = *pids["parent-before"].begin();
  const std::int64_t child = *pids["child"].begin();
  EXPECT_NE(parent, child);
  EXPECT_EQ(pids["parent-after"], std::set<std::int64_t>{parent});
  // exec keeps the pid: the new image is the same process, recorded as its own process row.
  EXPECT_EQ(pids["execd"], std::set<std::int64_t>{child});

  std::size_t parent_rows = 0, child_rows = 0;
  for (const auto& p : t.processes()) {
    if (p.pid == parent) {
      ++parent_rows;
      EXPECT_EQ(p.exit_status, 0);
    }
    if (p.pid == child) {
      ++child_rows;
      EXPECT_EQ(p.parent_pid, parent);
    }
  }
  EXPECT_EQ(parent_rows, 1u);
  EXPECT_EQ(child_rows, 2u) << "the forked image and the exec'd image";
  std::filesystem::remove_all(dir);
}

TEST(ProcessTree, PythonMultiprocessingWorkersWithTheCtypesModule) {
  if (std::system("python3 -c 'import multiprocessing' >/dev/null 2>&1") != 0) GTEST_SKIP() << "no python3";
  const auto dir = scratch_dir("python-mp");
  const auto out = dir / "mp.db";
  constexpr int kWorkers = 3, kBatches = 5;
  RunResult r = run(traced(out, {"python3", program("mp_workers.py"), std::to_string(kWorkers),
                                 std::to_string(kBatches)}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("traced"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("untraced"), std::string::npos) << r.output;
  Trace t = read_trace(out);
  EXPECT_TRUE(t.complete()) << t.meta_value("warnings");
  const auto rows = annotation_rows(t);

  std::multiset<std::int64_t> fetch_ids, prep_ids;
  std::set<std::int64_t> worker_pids;
  std::int64_t main_pid = 0;
  for (const auto& row : rows) {
    if (row.name == "fetch") {
      EXPECT_EQ(row.category, "fetch");
      EXPECT_EQ(row.domain, "dreamscope");
      fetch_ids.insert(row.payload);
      worker_pids.insert(row.pid);
    } else if (row.name == "prep") {
      prep_ids.insert(row.payload);
    } else if (row.name == "main") {
      EXPECT_EQ(row.category, "operation");
      main_pid = row.pid;
    }
  }
  std::multiset<std::int64_t> expected;
  for (int w = 0; w < kWorkers; ++w) {
    for (int b = 0; b < kBatches; ++b) expected.insert(w * 1000 + b);
  }
  EXPECT_EQ(fetch_ids, expected);
  EXPECT_EQ(prep_ids, expected);
  ASSERT_NE(main_pid, 0);
  EXPECT_EQ(worker_pids.count(main_pid), 0u) << "batches were loaded in the worker processes";
  // The pool hands tasks to whichever worker is free: at least one worker did the work,
  // and every part that recorded something is in the trace.
  EXPECT_GE(t.processes().size(), 2u);
  std::filesystem::remove_all(dir);
}

} // namespace
} // namespace dreamscope::test
