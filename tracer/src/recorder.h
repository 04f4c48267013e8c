// The tracer's process-wide state: configuration from the environment, the string,
// domain and category tables shared with the hot path, the registry of per-thread buffers,
// and the session that owns this process's part file and its writer thread.
//
// A session is one part file (<dir>/<pid>-<time>-<n>.dslog, a trace log): it starts when the tracer loads, again
// in a fork child, and again after a failed exec; it ends at exit, _exit or exec.
#pragma once

#include "clock.h"
#include "event_buffer.h"

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace dreamscope::tracer {

struct Config {
  std::string output_dir;      // DREAMSCOPE_OUTPUT_DIR: where part files go
  bool nvtx = true;            // DREAMSCOPE_TRACE contains "nvtx"
  bool cuda = true;            // DREAMSCOPE_TRACE contains "cuda"
  bool cuda_api_all = false;   // DREAMSCOPE_CUDA_API=all
  std::int64_t job_start_ns = 0;  // DREAMSCOPE_JOB_START_NS: the window's origin
  std::int64_t delay_ns = 0;      // DREAMSCOPE_DELAY_NS
  std::int64_t duration_ns = -1;  // DREAMSCOPE_DURATION_NS (-1: to the end)
  // DREAMSCOPE_BUFFER_MB: the cap on the memory of every thread's buffered events together.
  std::size_t buffer_bytes = std::size_t{512} << 20;
  // DREAMSCOPE_CUPTI_FLUSH_MS: how often the writer asks CUPTI for the activity records it
  // has completed (0: only when buffers fill and at exit).
  std::int64_t cupti_flush_ms = 100;
  std::string command;            // DREAMSCOPE_COMMAND: the job's command line
};

Config config_from_environment();

// Interned strings shared by every thread; ids start at 1. The hot path enters only on a
// miss of its per-thread cache.
class StringTable {
 public:
  std::uint32_t intern(std::string_view s);
  std::string get(std::uint32_t id);
  std::mutex& mutex() { return mu_; }

 private:
  std::mutex mu_;
  std::deque<std::string> strings_{""};
  std::unordered_map<std::string_view, std::uint32_t> ids_;
};

// NVTX domains (index 0 is the default domain, "nvtx") and their named categories.
class DomainTable {
 public:
  DomainTable();
  std::uint16_t create(std::string_view name);
  void name_category(std::uint16_t domain, std::uint32_t category, std::string_view name);
  std::string domain_name(std::uint16_t domain);
  // "" for category 0, the registered name, else the number.
  std::string category_name(std::uint16_t domain, std::uint32_t category);
  std::mutex& mutex() { return mu_; }

 private:
  std::mutex mu_;
  std::vector<std::string> domains_;
  std::map<std::pair<std::uint16_t, std::uint32_t>, std::string> categories_;
};

struct ThreadState;

// What the hot path needs, in one place.
struct HotState {
  bool use_tsc = false;
  // Set while CUPTI records: NVTX pushes then also push an external correlation id.
  std::atomic<void (*)(std::uint64_t)> external_push{nullptr};
  std::atomic<void (*)()> external_pop{nullptr};
};
extern HotState g_hot;

ThreadState& thread_state();
ThreadBuffer& thread_buffer();
std::uint32_t intern_ascii(const char* s);
StringTable& strings();
DomainTable& domains();

// Lifecycle, called from the process hooks (process_hooks.cpp) and NVTX/CUPTI entry points.
bool tracer_start();          // at load; false when the tracer could not start at all
bool tracer_enabled();
void tracer_end_session(bool clean, std::int64_t exit_status, const char* why, bool restore_signals);
void tracer_restart_session(); // after a failed exec
// Async-signal-safe: asks the writer to flush (or, given a termination signal, to close the
// part cleanly) and waits for it a little.
void tracer_flush_from_signal(int close_with_signal);
void tracer_add_warning(const std::string& w);
void tracer_add_dropped(std::uint64_t n);
// nvtxNameOsThread: the thread's track takes this name, also if it was written already.
void tracer_name_os_thread(std::int64_t tid, std::string name);
const Config& tracer_config();
bool is_writer_thread();

} // namespace dreamscope::tracer
