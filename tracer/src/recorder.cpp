// Start-up of the tracer and the changes of session that exit, exec and signals make; the
// rest of the recorder is split by responsibility (recorder.h lists the files).
#include "recorder.h"

#include "cupti_session.h"
#include "tracer_state.h"

#include <dreamscope/storage/tracer_environment.h>

#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace dreamscope::tracer {

HotState g_hot;
Tracer* g_tracer = nullptr;

std::int64_t gettid_now() { return static_cast<std::int64_t>(syscall(SYS_gettid)); }

std::string read_proc_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string trim_newline(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\0')) s.pop_back();
  return s;
}

namespace {

// Drained chunks kept for reuse instead of unmapped: at least 16 MiB, and an eighth of the
// cap. A writer that falls behind (a busy machine, a writer sharing a core) drains a backlog
// of chunks at once; unmapping them only to map and fault in fresh ones for the next burst
// would make the traced threads pay page faults again, which on a VM can cost more per
// event than recording it.
constexpr std::size_t kKeptChunks = 8;
std::size_t kept_chunks(std::size_t buffer_bytes) {
  return std::max(kKeptChunks, buffer_bytes / ChunkPool::kDefaultChunkBytes / 8);
}

} // namespace

StringTable& strings() { return g_tracer->strings; }
DomainTable& domains() { return g_tracer->domains; }
const Config& tracer_config() { return g_tracer->config; }
bool tracer_enabled() { return g_tracer && g_tracer->enabled.load(); }
bool is_writer_thread() { return g_tracer && g_tracer->writer_tid.load() == gettid_now(); }

void tracer_add_warning(const std::string& w) {
  if (!g_tracer) return;
  std::lock_guard lock(g_tracer->warnings_mu);
  for (const auto& x : g_tracer->warnings) {
    if (x == w) return;
  }
  g_tracer->warnings.push_back(w);
  std::fprintf(stderr, "dreamscope: %s\n", w.c_str());
}

void tracer_name_os_thread(std::int64_t tid, std::string name) {
  if (!g_tracer) return;
  {
    std::lock_guard lock(g_tracer->thread_names_mu);
    g_tracer->thread_names[tid] = std::move(name);
  }
  g_tracer->thread_names_changes.fetch_add(1);
}

void tracer_add_dropped(std::uint64_t n) {
  if (g_tracer) g_tracer->extra_dropped.fetch_add(n);
}

bool tracer_start() {
  if (g_tracer) return g_tracer->enabled.load();
  auto* t = new Tracer();
  g_tracer = t;
  t->config = config_from_environment();
  t->placement = rank_from_environment();
  for (const auto& w : t->placement.warnings) tracer_add_warning(w);
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  t->host = host;
  if (t->config.output_dir.empty()) {
    // Standalone LD_PRELOAD use: one folder per job, shared with every child through the
    // environment they inherit.
    t->config.output_dir = "dreamscope-" + std::to_string(getpid()) + ".d";
    setenv(tracer_environment::kOutputDir, t->config.output_dir.c_str(), 1);
  }
  g_hot.use_tsc = tsc_is_invariant();
  t->clock.start(g_hot.use_tsc);
  g_hot.cost_sample_cap = static_cast<std::uint64_t>(5'000.0 / std::max(1e-6, t->clock.ns_per_tick()));
  t->pool = std::make_unique<ChunkPool>(ChunkPool::kDefaultChunkBytes, t->config.buffer_bytes,
                                        kept_chunks(t->config.buffer_bytes), g_hot.use_tsc);
  pthread_key_create(&t->exit_key, on_thread_exit);
  t->calibration = self_calibrate(*t);
  t->session = open_session(getppid());
  t->enabled.store(!t->session->failed);
  install_fork_handlers();
  return t->enabled.load();
}

void tracer_end_session(bool clean, std::int64_t exit_status, const char* why, bool restore_signals) {
  if (!g_tracer || !g_tracer->session) return;
  cupti_flush_all();
  Session* s = g_tracer->session;
  // A termination signal arriving on this thread mid-close could only wait for itself:
  // it stays pending until the part is closed. The process is ending (exit, _exit) and
  // keeps it blocked; before an exec the caller unblocks it again.
  sigset_t terminate, previous;
  sigemptyset(&terminate);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&terminate, sig);
  pthread_sigmask(SIG_BLOCK, &terminate, &previous);
  g_tracer->closing.store(true);
  g_tracer->session = nullptr;
  close_session(s, clean, exit_status, why);
  g_tracer->closing.store(false);
  if (restore_signals) pthread_sigmask(SIG_SETMASK, &previous, nullptr);
}

void tracer_restart_session() {
  if (!g_tracer || g_tracer->session) return;
  g_tracer->session = open_session(getppid());
}

void tracer_flush_from_signal(int close_with_signal) {
  Tracer* t = g_tracer;
  if (!t || t->writer_tid.load() == gettid_now()) return;
  timespec pause{0, 1'000'000};
  if (!t->session) {
    // The signal interrupted exit's own close of the part (a pool terminating workers that
    // were already exiting): let that close finish, for at most 2 s.
    for (int i = 0; i < 2000 && t->closing.load(); ++i) nanosleep(&pause, nullptr);
    return;
  }
  if (close_with_signal) t->close_signal.store(close_with_signal);
  const std::uint64_t want = t->flush_requested.fetch_add(1) + 1;
  // The writer wakes every 10 ms on its own; wait for it for at most 2 s.
  for (int i = 0; i < 2000 && t->flush_done.load() < want; ++i) nanosleep(&pause, nullptr);
}

} // namespace dreamscope::tracer
