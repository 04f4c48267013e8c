// A distributed job traced: dist_train's ranks (real processes meeting in shared memory)
// under `dreamscope trace` and the preloaded tracer. Each process says its rank, local rank,
// world size and host as its launcher set them; each rank has its steps and its collectives;
// the collectives truly waited for every rank; a rank slowed on purpose makes the others wait.
// Structure and orderings only: the machine may be loaded.
#include "run_helpers.h"

#include <dreamscope/storage/job.h>

#include <unistd.h>

#include <algorithm>
#include <map>
#include <set>

namespace dreamscope::test {
namespace {

constexpr int kRanks = 4, kSteps = 12, kBuckets = 3;
constexpr std::int64_t kBucketBytes = 262144;

std::string host_name() {
  char buf[256] = {};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

// The launcher's variables cleared: a test must not inherit a rank from whatever runs it.
std::map<std::string, std::string> without_ranks(std::map<std::string, std::string> env = {}) {
  for (const char* v : {"RANK", "LOCAL_RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
                        "OMPI_COMM_WORLD_SIZE", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS", "PMI_RANK",
                        "PMI_SIZE"}) {
    env.emplace(v, "");
  }
  return env;
}

std::vector<std::string> dist_train(int ranks, std::vector<std::string> extra = {}) {
  std::vector<std::string> cmd{bin("dist_train"), "--launch",        std::to_string(ranks),
                               "--steps",         std::to_string(kSteps), "--buckets", std::to_string(kBuckets),
                               "--bucket-bytes",  std::to_string(kBucketBytes)};
  cmd.insert(cmd.end(), extra.begin(), extra.end());
  return cmd;
}

// Per rank, its rows of one category in time order.
std::map<std::int64_t, std::vector<Row>> by_rank(const Trace& t, const std::string& category) {
  std::map<std::int64_t, std::int64_t> rank_of_pid;
  for (const auto& p : t.processes()) {
    if (p.is_rank()) rank_of_pid[p.pid] = p.rank;
  }
  std::map<std::int64_t, std::vector<Row>> out;
  for (const Row& r : annotation_rows(t)) {
    if (r.category != category) continue;
    auto it = rank_of_pid.find(r.pid);
    EXPECT_NE(it, rank_of_pid.end()) << r.name << " in pid " << r.pid << ", a process of no rank";
    if (it != rank_of_pid.end()) out[it->second].push_back(r);
  }
  for (auto& [rank, rows] : out) {
    std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.start < b.start; });
  }
  return out;
}

TEST(MultiRankTrace, EveryRankWithItsPlaceStepsAndCollectives) {
  const auto dir = scratch_dir("multirank");
  const auto out = dir / "job.db";
  RunResult r = run(traced(out, dist_train(kRanks)), without_ranks());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // Every rank ends with the same weights: the all-reduce summed every rank's gradient.
  std::set<std::string> weights;
  for (std::size_t at = r.output.find("weights "); at != std::string::npos; at = r.output.find("weights ", at + 1)) {
    weights.insert(r.output.substr(at + 8, 16));
  }
  EXPECT_EQ(weights.size(), 1u) << r.output;
  EXPECT_NE(r.output.find("\nmedian_step_ns "), std::string::npos) << r.output;

  Trace t = read_trace(out);
  EXPECT_TRUE(t.complete()) << t.meta_value("warnings");
  EXPECT_EQ(t.dropped_events(), 0);
  // The ranks, and the launcher, which is not one.
  std::set<std::int64_t> ranks;
  std::size_t others = 0;
  for (const ProcessInfo& p : t.processes()) {
    if (!p.is_rank()) {
      ++others;
      EXPECT_EQ(p.world_size, kNoValue);
      continue;
    }
    EXPECT_TRUE(ranks.insert(p.rank).second) << "rank " << p.rank << " twice";
    EXPECT_EQ(p.local_rank, p.rank);
    EXPECT_EQ(p.world_size, kRanks);
    EXPECT_EQ(p.host, host_name());
    EXPECT_EQ(p.exit_status, 0);
  }
  EXPECT_EQ(ranks, (std::set<std::int64_t>{0, 1, 2, 3}));
  EXPECT_LE(others, 1u) << "only the launcher is not a rank";
  const std::vector<JobRank> job = job_ranks(t);
  ASSERT_EQ(job.size(), static_cast<std::size_t>(kRanks));
  for (const JobRank& jr : job) EXPECT_EQ(jr.processes.size(), 1u) << "rank " << jr.rank;

  const auto steps = by_rank(t, "step");
  const auto collectives = by_rank(t, "collective");
  ASSERT_EQ(steps.size(), static_cast<std::size_t>(kRanks));
  ASSERT_EQ(collectives.size(), static_cast<std::size_t>(kRanks));
  for (int rank = 0; rank < kRanks; ++rank) {
    const auto& s = steps.at(rank);
    ASSERT_EQ(s.size(), static_cast<std::size_t>(kSteps)) << "rank " << rank;
    for (int i = 0; i < kSteps; ++i) EXPECT_EQ(s[static_cast<std::size_t>(i)].payload, i);
    const auto& c = collectives.at(rank);
    ASSERT_EQ(c.size(), static_cast<std::size_t>(kSteps * kBuckets)) << "rank " << rank;
    for (std::size_t k = 0; k < c.size(); ++k) {
      EXPECT_EQ(c[k].name, "all_reduce");
      EXPECT_EQ(c[k].domain, "dreamscope");
      EXPECT_EQ(c[k].payload, kBucketBytes);
      // Inside its step, on the rank's training thread.
      const Row& step = s[k / kBuckets];
      EXPECT_LE(step.start, c[k].start);
      EXPECT_LE(c[k].end, step.end);
      EXPECT_EQ(c[k].tid, step.tid);
    }
  }
  // Each all-reduce waited for every rank: it returned on each rank only after it had begun
  // on every other.
  for (std::size_t k = 0; k < static_cast<std::size_t>(kSteps * kBuckets); ++k) {
    for (int a = 0; a < kRanks; ++a) {
      for (int b = 0; b < kRanks; ++b) {
        EXPECT_GT(collectives.at(a)[k].end, collectives.at(b)[k].start)
            << "all-reduce " << k << ": rank " << a << " returned before rank " << b << " entered";
      }
    }
  }
  // The compute and the data pipeline of each step are there too.
  for (const char* category : {"operation", "fetch", "prep"}) {
    const auto rows = by_rank(t, category);
    EXPECT_EQ(rows.size(), static_cast<std::size_t>(kRanks)) << category;
  }
  // Batch ids deal the global batch sequence out: rank r takes step * world + r.
  const auto fetches = by_rank(t, "fetch");
  for (const auto& [rank, rows] : fetches) {
    ASSERT_EQ(rows.size(), static_cast<std::size_t>(kSteps));
    for (int i = 0; i < kSteps; ++i) EXPECT_EQ(rows[static_cast<std::size_t>(i)].payload, i * kRanks + rank);
  }
  std::filesystem::remove_all(dir);
}

std::map<std::int64_t, TimeNs> collective_time(const Trace& t) {
  std::map<std::int64_t, TimeNs> total;
  for (const auto& [rank, rows] : by_rank(t, "collective")) {
    for (const Row& r : rows) total[rank] += r.end - r.start;
  }
  return total;
}

TEST(MultiRankTrace, TheOtherRanksWaitForASlowRank) {
  const auto dir = scratch_dir("multirank-slow");
  const auto out = dir / "slow.db";
  constexpr int kSlow = 1;
  RunResult r = run(traced(out, dist_train(kRanks, {"--slow-rank", std::to_string(kSlow), "--slow-factor", "4"})),
                    without_ranks());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto waited = collective_time(read_trace(out));
  ASSERT_EQ(waited.size(), static_cast<std::size_t>(kRanks));
  for (const auto& [rank, ns] : waited) {
    if (rank != kSlow) {
      EXPECT_GT(ns, waited.at(kSlow)) << "rank " << rank << " waited less than the slow rank";
    }
  }
  std::filesystem::remove_all(dir);
}

TEST(MultiRankTrace, ASlowInputPipelineMakesTheOtherRanksWait) {
  const auto dir = scratch_dir("multirank-slow-data");
  const auto out = dir / "slow-data.db";
  constexpr int kSlow = 2;
  RunResult r = run(traced(out, dist_train(kRanks, {"--slow-data-rank", std::to_string(kSlow), "--slow-data-us",
                                                    "20000"})),
                    without_ranks());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Trace t = read_trace(out);
  const auto waited = collective_time(t);
  for (const auto& [rank, ns] : waited) {
    if (rank != kSlow) {
      EXPECT_GT(ns, waited.at(kSlow)) << "rank " << rank;
    }
  }
  // The slow rank's fetches are the long ones: each sleeps 20 ms more.
  const auto fetches = by_rank(t, "fetch");
  ASSERT_TRUE(fetches.count(kSlow));
  for (const Row& f : fetches.at(kSlow)) EXPECT_GE(f.end - f.start, 20'000'000);
  std::filesystem::remove_all(dir);
}

// A rank that dies stops the job instead of hanging it; the trace still has every rank.
TEST(MultiRankTrace, ARankThatFailsStopsTheJobAndTheTraceIsWritten) {
  const auto dir = scratch_dir("multirank-crash");
  const auto out = dir / "crash.db";
  RunResult r = run(traced(out, dist_train(3, {"--crash-rank", "1", "--crash-step", "2", "--timeout-s", "300"})),
                    without_ranks());
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("dist_train: rank 1 (pid "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("exited with status 3; stopping the job"), std::string::npos) << r.output;
  // The survivors stop, naming the rank that failed (seen by the launcher or by themselves).
  for (int survivor : {0, 2}) {
    EXPECT_NE(r.output.find("dist_train rank " + std::to_string(survivor) + ": rank 1 "), std::string::npos)
        << r.output;
  }
  const Trace t = read_trace(out);
  std::map<std::int64_t, std::int64_t> status;
  for (const ProcessInfo& p : t.processes()) {
    if (p.is_rank()) status[p.rank] = p.exit_status;
  }
  EXPECT_EQ(status, (std::map<std::int64_t, std::int64_t>{{0, 1}, {1, 3}, {2, 1}}));
  const auto steps = by_rank(t, "step");
  EXPECT_EQ(steps.at(1).size(), 2u); // steps 0 and 1; it exits before step 2
  std::filesystem::remove_all(dir);
}

// What the tracer reads in every process, wherever the process came from: the forked child
// inherits its parent's rank, the exec'd image reads it again.
TEST(MultiRankTrace, TheTracerReadsTheLauncherVariablesInEveryProcess) {
  const auto dir = scratch_dir("rank-env");
  const auto out = dir / "tree.db";
  RunResult r = run(traced(out, {program("fork_exec")}),
                    without_ranks({{"OMPI_COMM_WORLD_RANK", "6"},
                                   {"OMPI_COMM_WORLD_LOCAL_RANK", "2"},
                                   {"OMPI_COMM_WORLD_SIZE", "8"},
                                   {"SLURM_PROCID", "1"},
                                   {"SLURM_NTASKS", "2"}}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  Trace t = read_trace(out);
  ASSERT_EQ(t.processes().size(), 3u); // the parent, its fork child, the child's exec'd image
  for (const ProcessInfo& p : t.processes()) {
    EXPECT_EQ(p.rank, 6) << p.pid << " " << p.command;
    EXPECT_EQ(p.local_rank, 2);
    EXPECT_EQ(p.world_size, 8);
    EXPECT_EQ(p.host, host_name());
  }
  EXPECT_EQ(t.meta_value("warnings").find("ignored"), std::string::npos) << t.meta_value("warnings");
  std::filesystem::remove_all(dir);
}

TEST(MultiRankTrace, InvalidValuesAreIgnoredWithAWarningAndTheProgramRuns) {
  const auto dir = scratch_dir("rank-env-bad");
  const auto out = dir / "bad.db";
  RunResult r = run(traced(out, {program("fork_exec")}),
                    without_ranks({{"RANK", "-3"}, {"WORLD_SIZE", "4"}, {"PMI_RANK", "1"}, {"PMI_SIZE", "x"}}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("dreamscope: RANK='-3' is not a rank"), std::string::npos) << r.output;
  Trace t = read_trace(out);
  ASSERT_EQ(t.processes().size(), 3u);
  for (const ProcessInfo& p : t.processes()) {
    EXPECT_EQ(p.rank, 1);
    EXPECT_EQ(p.local_rank, kNoValue);
    EXPECT_EQ(p.world_size, kNoValue);
  }
  const std::string warnings = t.meta_value("warnings");
  EXPECT_NE(warnings.find("RANK='-3' is not a rank (a whole number below 2^24): ignored"), std::string::npos)
      << warnings;
  EXPECT_NE(warnings.find("PMI_SIZE='x' is not a world size"), std::string::npos) << warnings;
  // Each warning once, however many processes said it.
  EXPECT_EQ(warnings.find("RANK='-3'"), warnings.rfind("RANK='-3'")) << warnings;
  std::filesystem::remove_all(dir);
}

// No launcher variable: a single process, not a rank.
TEST(MultiRankTrace, ASingleProcessRunHasNoRanks) {
  const auto dir = scratch_dir("rank-none");
  const auto out = dir / "single.db";
  RunResult r = run(traced(out, {bin("dist_train"), "--steps", "3"}), without_ranks());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  Trace t = read_trace(out);
  ASSERT_EQ(t.processes().size(), 1u);
  EXPECT_FALSE(t.processes()[0].is_rank());
  EXPECT_EQ(t.processes()[0].host, host_name());
  EXPECT_TRUE(job_ranks(t).empty());
  // One process still all-reduces with itself: the collectives are there.
  std::size_t collectives = 0;
  for (const Row& row : annotation_rows(t)) collectives += row.category == "collective";
  EXPECT_EQ(collectives, 3u * 4u);
  std::filesystem::remove_all(dir);
}

bool have_python() { return std::system("python3 -c 'import ctypes' >/dev/null 2>&1") == 0; }

// torchrun's way: a Python agent without a rank starts the workers with subprocess.Popen and
// an environment of their own (dist_train finds its job from TORCHELASTIC_RUN_ID).
TEST(MultiRankTrace, ATorchrunLikeAgentIsNotARank) {
  if (!have_python()) GTEST_SKIP() << "no python3";
  const auto dir = scratch_dir("torchrun-like");
  const auto out = dir / "job.db";
  RunResult r = run(traced(out, {"python3", program("torchrun_like.py"), "3", bin("dist_train"), "--steps", "4"}),
                    without_ranks());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  Trace t = read_trace(out);
  EXPECT_TRUE(t.complete()) << t.meta_value("warnings");
  std::set<std::int64_t> ranks;
  for (const ProcessInfo& p : t.processes()) {
    if (p.is_rank()) {
      ranks.insert(p.rank);
      EXPECT_EQ(p.world_size, 3);
      EXPECT_EQ(p.local_rank, p.rank);
    } else {
      EXPECT_NE(p.command.find("torchrun_like.py"), std::string::npos) << "only the agent is not a rank: " << p.command;
    }
  }
  EXPECT_EQ(ranks, (std::set<std::int64_t>{0, 1, 2}));
  const auto collectives = by_rank(t, "collective");
  ASSERT_EQ(collectives.size(), 3u);
  for (const auto& [rank, rows] : collectives) EXPECT_EQ(rows.size(), 4u * 4u) << "rank " << rank;
  std::filesystem::remove_all(dir);
}

TEST(MultiRankTrace, PythonCollectiveAnnotation) {
  if (!have_python()) GTEST_SKIP() << "no python3";
  const auto dir = scratch_dir("py-collective");
  const auto out = dir / "py.db";
  RunResult r = run(traced(out, {"python3", program("collective.py")}), without_ranks({{"RANK", "0"}, {"WORLD_SIZE", "1"}}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("traced"), std::string::npos) << r.output;
  Trace t = read_trace(out);
  std::vector<Row> collectives;
  for (const Row& row : annotation_rows(t)) {
    if (row.category == "collective") collectives.push_back(row);
  }
  ASSERT_EQ(collectives.size(), 3u);
  std::sort(collectives.begin(), collectives.end(), [](const Row& a, const Row& b) { return a.start < b.start; });
  EXPECT_EQ(collectives[0].name, "all_reduce");
  EXPECT_EQ(collectives[0].payload, 4096);
  EXPECT_EQ(collectives[1].name, "broadcast");
  EXPECT_EQ(collectives[1].payload, 64);
  EXPECT_EQ(collectives[2].name, "barrier");
  EXPECT_EQ(collectives[2].payload, kNoValue);
  EXPECT_EQ(t.processes()[0].rank, 0);
  EXPECT_EQ(t.processes()[0].world_size, 1);
  // Untraced, the same script runs with no-ops.
  RunResult plain = run({"python3", program("collective.py")},
                        {{"PYTHONPATH", std::string(DREAMSCOPE_SOURCE_DIR) + "/annotations/python"},
                         {"NVTX_INJECTION64_PATH", ""}});
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  EXPECT_NE(plain.output.find("untraced"), std::string::npos) << plain.output;
  std::filesystem::remove_all(dir);
}

} // namespace
} // namespace dreamscope::test
