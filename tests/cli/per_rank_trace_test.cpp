// `dreamscope trace --per-rank`: each rank of a job started by srun or mpirun traces itself
// into a file of its own, named by its rank (%r), host (%h) and pid (%p). Here the launcher is
// the shell, starting four `dreamscope trace --per-rank` with RANK set, each running one rank
// of dist_train; the ranks meet in shared memory as they would under torchrun.
#include "run_command.h"

#include <dreamscope/storage/trace_file.h>

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <string>

namespace dreamscope {
namespace {

namespace fs = std::filesystem;
using test::dreamscope_bin;
using test::run_command;

// No launcher variable inherited from whatever runs the tests.
const std::string kClean =
    "env -u RANK -u LOCAL_RANK -u WORLD_SIZE -u OMPI_COMM_WORLD_RANK -u OMPI_COMM_WORLD_LOCAL_RANK "
    "-u OMPI_COMM_WORLD_SIZE -u SLURM_PROCID -u SLURM_LOCALID -u SLURM_NTASKS -u PMI_RANK -u PMI_SIZE ";

struct Scratch {
  fs::path dir;
  explicit Scratch(const std::string& name)
      : dir(fs::temp_directory_path() / ("dreamscope-per-rank-" + name + "-" + std::to_string(getpid()))) {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~Scratch() { fs::remove_all(dir); }
};

std::string host_name() {
  char buf[256] = {};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

std::string dist_train() { return std::string(DREAMSCOPE_BIN_DIR) + "/dist_train"; }

TEST(PerRankTrace, OneFilePerRankNamedByRankHostAndPid) {
  Scratch s("job");
  constexpr int kRanks = 4;
  const std::string job_id = "per-rank-test-" + std::to_string(getpid());
  std::string script = "cd " + s.dir.string() + " && (";
  for (int r = 0; r < kRanks; ++r) {
    script += kClean + "RANK=" + std::to_string(r) + " LOCAL_RANK=" + std::to_string(r) +
              " WORLD_SIZE=" + std::to_string(kRanks) + " " + dreamscope_bin() +
              " trace --per-rank -o 'trace-%r-%h-%p-%%.db' -- " + dist_train() + " --job-id " + job_id +
              " --steps 6 --buckets 2 --bucket-bytes 16384 > rank" + std::to_string(r) + ".log 2>&1 & ";
  }
  script += "wait) && cat rank*.log";
  auto r = run_command(script);
  ASSERT_EQ(r.exit_code, 0) << r.out;

  const std::regex name("trace-([0-9]+)-(.+)-([0-9]+)-%\\.db");
  std::map<std::int64_t, fs::path> files;
  for (const auto& e : fs::directory_iterator(s.dir)) {
    const std::string f = e.path().filename().string();
    if (f.ends_with(".log")) continue;
    std::smatch m;
    ASSERT_TRUE(std::regex_match(f, m, name)) << "unexpected file " << f << "\n" << r.out;
    EXPECT_EQ(m[2].str(), host_name());
    const std::int64_t rank = std::stoll(m[1].str());
    files[rank] = e.path();
    // One trace of one rank: the process `dreamscope trace` (pid %p) started.
    Trace t = read_trace(e.path());
    EXPECT_TRUE(t.complete()) << f << ": " << t.meta_value("warnings");
    ASSERT_EQ(t.processes().size(), 1u) << f;
    const ProcessInfo& p = t.processes()[0];
    EXPECT_EQ(p.rank, rank) << f;
    EXPECT_EQ(p.local_rank, rank) << f;
    EXPECT_EQ(p.world_size, kRanks) << f;
    EXPECT_EQ(p.host, host_name());
    EXPECT_EQ(p.parent_pid, std::stoll(m[3].str())) << f;
    std::size_t collectives = 0, steps = 0;
    const auto& a = t.annotations();
    for (std::size_t i = 0; i < a.size(); ++i) {
      collectives += t.str(a.category[i]) == "collective";
      steps += t.str(a.category[i]) == "step";
    }
    EXPECT_EQ(steps, 6u) << f;
    EXPECT_EQ(collectives, 12u) << f;
  }
  EXPECT_EQ(files.size(), static_cast<std::size_t>(kRanks)) << r.out;
  EXPECT_NE(r.out.find("median_step_ns "), std::string::npos) << r.out;
}

TEST(PerRankTrace, APatternWithTheRankNeedsARankVariable) {
  Scratch s("no-rank");
  const fs::path marker = s.dir / "ran";
  auto r = run_command("cd " + s.dir.string() + " && " + kClean + dreamscope_bin() +
                       " trace --per-rank -o 'trace-%r.db' -- touch " + marker.string());
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("dreamscope trace: --per-rank -o trace-%r.db: no rank in the environment (RANK, "
                       "OMPI_COMM_WORLD_RANK, SLURM_PROCID or PMI_RANK is not set)"),
            std::string::npos)
      << r.out;
  EXPECT_FALSE(fs::exists(marker)) << "the program must not start";
  EXPECT_TRUE(fs::is_empty(s.dir));
  // The default output names the rank too.
  r = run_command("cd " + s.dir.string() + " && " + kClean + dreamscope_bin() + " trace --per-rank -- touch " +
                  marker.string());
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_FALSE(fs::exists(marker));
  // An invalid rank is no rank: said, then refused.
  r = run_command("cd " + s.dir.string() + " && " + kClean + "RANK=minus1 " + dreamscope_bin() +
                  " trace --per-rank -o 'trace-%r.db' -- touch " + marker.string());
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("dreamscope trace: RANK='minus1' is not a rank"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(marker));
}

TEST(PerRankTrace, TheOutputMustTellTheRanksApart) {
  Scratch s("same-file");
  auto r = run_command("cd " + s.dir.string() + " && " + kClean + "RANK=1 " + dreamscope_bin() +
                       " trace --per-rank -o 'trace-%h.db' -- true");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("the output must name the rank (%r) or the pid (%p)"), std::string::npos) << r.out;
  // Without --per-rank, %r has no rank to stand for.
  r = run_command("cd " + s.dir.string() + " && " + kClean + "RANK=1 " + dreamscope_bin() +
                  " trace -o 'trace-%r.db' -- true");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("%r is the rank of a --per-rank trace (add --per-rank)"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::is_empty(s.dir));
}

TEST(PerRankTrace, EachLauncherVariableNamesTheFileAndForceReplacesIt) {
  Scratch s("force");
  const std::string trace = kClean + "OMPI_COMM_WORLD_RANK=3 OMPI_COMM_WORLD_SIZE=4 SLURM_PROCID=9 " +
                            dreamscope_bin() + " trace --per-rank ";
  const std::string job = " -- " + dist_train() + " --steps 2";
  // dist_train alone (no RANK) is a one-rank job; the tracer still says Open MPI's rank.
  auto r = run_command("cd " + s.dir.string() + " && " + trace + job);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const fs::path file = s.dir / "dreamscope-rank3.db";
  ASSERT_TRUE(fs::exists(file)) << r.out;
  EXPECT_EQ(read_trace(file).processes()[0].rank, 3);
  r = run_command("cd " + s.dir.string() + " && " + trace + job);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("dreamscope-rank3.db exists (use --force to replace it)"), std::string::npos) << r.out;
  r = run_command("cd " + s.dir.string() + " && " + trace + "--force" + job);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  // %% is a percent sign; a Slurm rank names the file where no Open MPI one is set.
  r = run_command("cd " + s.dir.string() + " && " + kClean + "SLURM_PROCID=5 SLURM_NTASKS=8 " + dreamscope_bin() +
                  " trace --per-rank -o '100%%-rank%r.db'" + job);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(fs::exists(s.dir / "100%-rank5.db")) << r.out;
}

} // namespace
} // namespace dreamscope
