#include "launcher.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <thread>

extern char** environ;

namespace dist_train {

namespace {

// The ranks, for the signal handler: what the launcher is asked to stop, it passes on.
constexpr int kMaxRanks = 4096;
volatile pid_t g_ranks[kMaxRanks];
volatile int g_rank_count = 0;

void forward_signal(int sig) {
  for (int r = 0; r < g_rank_count; ++r) {
    if (g_ranks[r] > 0) kill(g_ranks[r], sig);
  }
}

bool is_rank_variable(std::string_view entry) {
  for (std::string_view name : {"RANK=", "LOCAL_RANK=", "WORLD_SIZE=", "LOCAL_WORLD_SIZE=", "DIST_TRAIN_JOB_ID="}) {
    if (entry.substr(0, name.size()) == name) return true;
  }
  return false;
}

std::string describe(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const char* abbrev = sigabbrev_np(WTERMSIG(status));
    return "was killed by signal " + std::to_string(WTERMSIG(status)) + (abbrev ? std::string(" (SIG") + abbrev + ")" : "");
  }
  return "ended with wait status " + std::to_string(status);
}

int exit_code(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

} // namespace

int launch(int ranks, const std::string& job_id, const JobShape& shape, const std::vector<std::string>& rank_args) {
  JobSegment segment = JobSegment::create(job_id, shape);

  // Each rank gets this environment without any rank variables of our own, plus its own.
  std::vector<std::string> common;
  for (char** e = environ; e && *e; ++e) {
    if (!is_rank_variable(*e)) common.emplace_back(*e);
  }
  // Built before any fork: the child only calls execve.
  std::vector<std::vector<std::string>> envs(static_cast<std::size_t>(ranks), common);
  for (int r = 0; r < ranks; ++r) {
    auto& env = envs[static_cast<std::size_t>(r)];
    env.push_back("RANK=" + std::to_string(r));
    env.push_back("LOCAL_RANK=" + std::to_string(r));
    env.push_back("WORLD_SIZE=" + std::to_string(ranks));
    env.push_back("LOCAL_WORLD_SIZE=" + std::to_string(ranks));
    env.push_back("DIST_TRAIN_JOB_ID=" + job_id);
  }
  std::vector<char*> argv;
  for (const auto& a : rank_args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  // This very program, by its own name: the ranks' processes are called dist_train, not exe.
  char exe[4096] = {};
  if (readlink("/proc/self/exe", exe, sizeof exe - 1) <= 0) std::strcpy(exe, "/proc/self/exe");

  struct sigaction forward{};
  forward.sa_handler = forward_signal;
  sigemptyset(&forward.sa_mask);
  forward.sa_flags = SA_RESTART;
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &forward, nullptr);

  using clock = std::chrono::steady_clock;
  clock::time_point kill_at{};
  std::vector<pid_t> pids(static_cast<std::size_t>(ranks), 0);
  int first_failure = 0;
  int running = 0;
  for (int r = 0; r < ranks; ++r) {
    std::vector<char*> envp;
    for (auto& v : envs[static_cast<std::size_t>(r)]) envp.push_back(v.data());
    envp.push_back(nullptr);
    const pid_t pid = fork();
    if (pid < 0) {
      std::fprintf(stderr, "dist_train: cannot start rank %d: fork: %s\n", r, std::strerror(errno));
      segment.abort_job(r);
      first_failure = 1;
      kill_at = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      break;
    }
    if (pid == 0) {
      execve(exe, argv.data(), envp.data());
      std::fprintf(stderr, "dist_train: cannot start rank %d: %s\n", r, std::strerror(errno));
      _exit(127);
    }
    pids[static_cast<std::size_t>(r)] = pid;
    g_ranks[r] = pid;
    g_rank_count = r + 1;
    ++running;
  }

  // Until a rank fails, wait; after that, give the others 10 s to notice and stop.
  while (running > 0) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, first_failure ? WNOHANG : 0);
    if (pid < 0 && errno == EINTR) continue;
    if (pid < 0) break;
    if (pid == 0) {
      if (clock::now() >= kill_at) {
        std::fprintf(stderr, "dist_train: %d rank(s) still running 10 s after the failure; killing them\n", running);
        for (pid_t p : pids) {
          if (p > 0) kill(p, SIGKILL);
        }
        kill_at = clock::now() + std::chrono::hours(1);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    int rank = -1;
    for (int r = 0; r < ranks; ++r) {
      if (pids[static_cast<std::size_t>(r)] == pid) rank = r;
    }
    if (rank < 0) continue; // not ours (a process re-parented to us)
    pids[static_cast<std::size_t>(rank)] = 0;
    g_ranks[rank] = 0;
    --running;
    const bool failed = !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    if (failed && first_failure == 0) {
      first_failure = exit_code(status);
      std::fprintf(stderr, "dist_train: rank %d (pid %d) %s; stopping the job\n", rank, static_cast<int>(pid),
                   describe(status).c_str());
      segment.abort_job(rank);
      kill_at = clock::now() + std::chrono::seconds(10);
    }
  }
  segment.unlink_name();
  return first_failure;
}

} // namespace dist_train
