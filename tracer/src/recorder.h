// The tracer's process-wide interface: what the NVTX entry points, the process hooks and
// the CUPTI session call. Behind it, by responsibility:
//   environment_config.cpp  the configuration a launcher set (dreamscope/storage/tracer_environment.h)
//   rank_environment.cpp    the process's rank in a distributed job (dreamscope/tracer/rank_environment.h)
//   string_tables.cpp       interned names, NVTX domains and categories
//   thread_state.cpp        the hot path's per-thread state: buffer and name cache
//   session.cpp             a part file's life: opened, written on first use, closed
//   writer_thread.cpp       the thread that drains the buffers into the part file
//   fork_handlers.cpp       a fork child's own part, without its parent's locks
//   self_calibration.cpp    what recording an event costs on this machine
//   recorder.cpp            start-up, and the session changes at exit, exec and signals
//
// A session is one part file (<dir>/<pid>-<time>-<n>.dslog, a trace log): it starts when
// the tracer loads, again in a fork child, and again after a failed exec; it ends at exit,
// _exit or exec.
#pragma once

#include "clock.h"
#include "environment_config.h"
#include "event_buffer.h"
#include "string_tables.h"

#include <atomic>
#include <cstdint>
#include <string>

namespace dreamscope::tracer {

// What the hot path needs, in one place.
struct HotState {
  bool use_tsc = false;
  // The longest call the in-run cost sampling keeps, in ticks (5 µs; nvtx_injection.cpp).
  std::uint64_t cost_sample_cap = 5'000;
  // Set while CUPTI records: NVTX pushes then also push an external correlation id.
  std::atomic<void (*)(std::uint64_t)> external_push{nullptr};
  std::atomic<void (*)()> external_pop{nullptr};
  // Set by the writer while a cost probe runs: every recorded call records itself twice
  // (writer_thread.cpp, "Cost probes").
  std::atomic<bool> cost_probe{false};
  // Probe steps (writer_thread.cpp, "Cost probes"): one outermost range in this many, on
  // average, is a probe step; 0: a probe is a time window, while cost_probe is set.
  std::atomic<std::uint32_t> cost_probe_steps{0};
};
extern HotState g_hot;

// The last names a thread recorded (thread_state.cpp).
struct NameCache;
// The hot path's per-thread state (thread_state.cpp): two pointers in the initial-exec model,
// constant-initialised so that reaching it is one load, inline, with no call.
struct ThreadState {
  ThreadBuffer* buffer;
  NameCache* names;
};
extern constinit __attribute__((tls_model("initial-exec"))) thread_local ThreadState t_state;
ThreadBuffer& register_thread_buffer();
// The calling thread's event buffer, registered on its first event.
inline ThreadBuffer& thread_buffer() {
  ThreadBuffer* b = t_state.buffer;
  return b ? *b : register_thread_buffer();
}
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
// Wakes the writer to drain and write what was recorded so far, now rather than at its next
// tick, and (with `wait`) waits for it, for at most 2 s: at a pause of recording, so that the
// writer's work on what came before stays out of the paused steps (recording_pause.h).
void tracer_drain_now(bool wait);
void tracer_add_dropped(std::uint64_t n);
// nvtxNameOsThread: the thread's track takes this name, also if it was written already.
void tracer_name_os_thread(std::int64_t tid, std::string name);
const Config& tracer_config();
bool is_writer_thread();

} // namespace dreamscope::tracer
