// The recorder's process-wide state and the parts of the recorder that share it (see
// recorder.h for which file does what). Internal to libdreamscope-tracer.so.
#pragma once

#include "recorder.h"
#include "recording_pause.h"
#include "trace_target.h"

#include <dreamscope/tracer/rank_environment.h>
#include <dreamscope/storage/trace_log.h>

#include <pthread.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace dreamscope::tracer {

// An NVTX range pushed or started and not yet ended.
struct OpenRange {
  std::int64_t start;
  std::int64_t payload;
  std::uint64_t external_id;
  std::uint32_t name;
  std::uint16_t domain;
  std::uint8_t category;
  TrackId track;
};

// A thread's counters where its current load window began (writer_thread.cpp).
struct LoadWindow {
  std::int64_t start = -1; // ns; -1: not begun
  std::uint64_t position = 0;
  std::uint64_t probes = 0;
  std::pair<std::uint64_t, std::uint64_t> cost[ThreadBuffer::kCostKinds] = {};
  std::int64_t cpu_ns = kNoValue;
  std::int64_t runqueue_ns = kNoValue;
  bool paused = false; // recording was paused when the window began
};

// What the writer keeps per traced thread: its track, its open ranges, its load window.
struct ThreadSink {
  TrackId track{0};
  bool has_track = false;
  std::vector<OpenRange> stack;
  LoadWindow window;
  std::size_t pause_index = 0; // Session::pauses: the first that began after the thread's last event
};

// The process's threads that have no buffer (they never recorded an event: an OpenMP or BLAS
// pool, PyTorch's autograd thread), as the writer read them where their current load window
// began. One window for all of them, ~100 ms (writer_thread.cpp, note_other_threads).
struct OtherThreads {
  struct Seen {
    std::int64_t cpu_ns = 0;
    std::int64_t runqueue_ns = 0;
    TrackId track{0};
    bool has_track = false;
    bool known = false;        // cpu_ns and runqueue_ns were read (the file may be missing)
    std::uint64_t listing = 0; // the last listing of /proc/self/task that had it
  };
  std::int64_t window_start = -1; // ns; -1: no window yet (the part file is not created)
  bool window_paused = false;     // recording was paused when the window began
  std::uint64_t listing = 0;      // listings of /proc/self/task so far
  std::unordered_map<std::int64_t, Seen> threads; // by OS thread id
  // Threads that had a buffer in this session, alive or exiting (their load is their buffer's),
  // with the last listing that had them.
  std::unordered_map<std::int64_t, std::uint64_t> recorded;
};

// The writer's busy time in slices: after each, it gives way to any of the job's threads waiting
// for its core (sched_yield). A drain of a busy process runs for milliseconds, and a thread of
// the job woken on the writer's core meanwhile (a loader its consumer let go) waits behind it:
// the scheduler does not move it to the other core in time, even where that core falls idle
// because its own thread now waits for that loader's batch. With `perf sched` on the 2-core
// development VM (cpu_train --workers 2, fine annotations), loaders waited 1-5 ms for a core 54
// times in a 2 s run, 154 ms in all, behind drains of up to 4.3 ms (docs/tracing.md, "The
// writer's slice"). With nothing waiting, sched_yield returns at once: under 1 us a slice.
class WriterPacing {
 public:
  void start(std::int64_t slice_ns);
  // An event drained: the clock is read every kCheckEvery.
  void event() {
    if (slice_ns_ > 0 && ++events_ % kCheckEvery == 0) check();
  }
  // Between two pieces of work: yields if the slice has run out.
  void check();
  std::uint64_t yields() const { return yields_; }

 private:
  static constexpr std::uint64_t kCheckEvery = 256;
  std::int64_t slice_ns_ = 0;
  std::int64_t since_ = 0;
  std::uint64_t events_ = 0;
  std::uint64_t yields_ = 0;
};

// One part file and the thread that writes it.
struct Session {
  std::unique_ptr<TraceLogWriter> writer;
  std::unique_ptr<TraceTarget> target;
  ProcessId process{0};
  ProcessInfo info;
  std::thread thread;
  std::atomic<bool> stop{false};
  std::mutex wake_mu;
  std::condition_variable wake;
  // A pause or resume of recording asks for a drain now, not at the next tick
  // (tracer_drain_now); the writer says which request its last drain and write answered.
  std::atomic<std::uint64_t> drains_requested{0};
  std::atomic<std::uint64_t> drains_done{0};
  bool failed = false; // the file could not be written: records are drained and discarded
  std::unordered_map<std::uint32_t, ThreadSink> sinks;
  OtherThreads others;
  std::unordered_map<std::uint64_t, OpenRange> open_starts;
  std::vector<StringId> string_ids;                       // tracer string id -> trace string id
  std::vector<StringId> domain_ids;                       // domain index -> trace string id
  std::map<std::pair<std::uint16_t, std::uint8_t>, StringId> category_ids;
  // What the log holds already: a log appends every set_meta, so unchanged values are skipped.
  std::uint64_t dropped_written = ~std::uint64_t{0};
  std::string warnings_written;
  std::int64_t last_time = 0;
  StringId buffer_map_kind = 0; // "tracer_buffer_map", interned on first use (0: not yet)
  StringId counted_timing_kind = 0; // "tracer_counted_ranges_timed", likewise
  StringId writer_busy_kind = 0;    // "tracer_writer_busy", likewise
  // The writer's previous busy spell (ns; start -1: none yet), written in the next drain on the
  // threads that recorded during it (writer_thread.cpp, note_writer_busy).
  std::int64_t busy_start = -1, busy_end = -1;
  WriterPacing pacing;
  // CPU time of this session's writer thread so far, while recording: CPU the tracer took
  // from the machine beside what it cost the traced threads (meta tracer_writer_cpu_ns). What
  // it used while recording was paused is apart (meta tracer_writer_cpu_paused_ns).
  std::atomic<std::int64_t> writer_cpu_ns{0};
  std::atomic<std::int64_t> writer_cpu_paused_ns{0};
  std::int64_t writer_cpu_written = -1;
  std::uint64_t writer_yields_written = 0;
  std::uint64_t thread_names_applied = 0; // Tracer::thread_names_changes when last applied
  // The program's pauses of recording (recording_pause.h), as of this drain, and the version
  // written to meta recording_paused.
  std::vector<PauseInterval> pauses;
  std::uint64_t pauses_version = 0;
  std::uint64_t pauses_written = 0;
  bool closed = false;
  // CUPTI's cost per call was timed and its calibration row written (cupti_calibrate_api_cost).
  bool cupti_calibrated = false;
  // The cost probes (writer_thread.cpp): whether one runs, when the writer next turns it on
  // or off (ns, CLOCK_MONOTONIC; -1 before the first drain), and the draw of the gaps.
  bool probe_on = false;
  std::int64_t probe_toggle_at = -1;
  std::uint64_t probe_random = 0x2545F4914F6CDD1Dull;
};

struct Tracer {
  Config config;
  // The process's place in a distributed job and its machine, read once at start: every part
  // of this process and of its fork children (a rank's loader workers) says them.
  RankPlacement placement;
  std::string host;
  TickConverter clock;
  StringTable strings;
  DomainTable domains;
  std::unique_ptr<ChunkPool> pool;
  std::mutex registry_mu;
  std::vector<ThreadBuffer*> buffers;
  std::uint32_t next_thread_index = 1;
  std::uint64_t retired_dropped = 0;
  pthread_key_t exit_key;
  // Held by the writer thread while it drains and writes, and by fork's prepare handler, so
  // that a fork child never inherits the writer mid-operation.
  std::mutex work_mu;
  Session* session = nullptr;
  std::atomic<std::int64_t> writer_tid{0};
  std::mutex warnings_mu;
  std::vector<std::string> warnings;
  // nvtxNameOsThread: OS thread id -> name, and a count of the calls, so that the writer
  // applies them only when one came.
  std::mutex thread_names_mu;
  std::unordered_map<std::int64_t, std::string> thread_names;
  std::atomic<std::uint64_t> thread_names_changes{0};
  std::atomic<std::uint64_t> extra_dropped{0};
  std::atomic<std::uint64_t> flush_requested{0};
  std::atomic<std::uint64_t> flush_done{0};
  // Set with a flush request when a termination signal should end the session cleanly.
  std::atomic<int> close_signal{0};
  // True while exit/_exit/exec closes the part: a signal arriving then waits for it.
  std::atomic<bool> closing{false};
  std::atomic<bool> enabled{false};
  std::vector<CalibrationRecord> calibration;
  std::atomic<int> session_counter{0};
};
extern Tracer* g_tracer;

std::int64_t gettid_now();
// A small /proc file, whole (empty if it cannot be read).
std::string read_proc_file(const std::string& path);
std::string trim_newline(std::string s);

// The kernel's schedstat of a thread (/proc/<...>/schedstat): CPU time it ran and time it sat
// runnable waiting for a core, in ns. False where the file is absent (a kernel without
// schedstats, a thread gone). No allocation: the exiting thread itself calls it.
bool read_schedstat(const char* path, std::int64_t& cpu_ns, std::int64_t& runqueue_ns);

// thread_state.cpp: called when a registered thread exits (the pthread key's destructor).
void on_thread_exit(void* buffer);
// The calling thread's buffer, or nullptr when it has recorded nothing yet.
ThreadBuffer* registered_thread_buffer();
// Makes `b` the calling thread's buffer and returns the one it had (self-calibration records
// through the real entry points into a scratch buffer, then puts the thread's back).
ThreadBuffer* exchange_thread_buffer(ThreadBuffer* b);

// nvtx_injection.cpp: the entry points NVTX calls for a push, a pop and a mark.
int calibration_push(const char* name);
int calibration_pop();
void calibration_mark(const char* name);

// session.cpp
Session* open_session(std::int64_t parent_pid);
// Creates the part file on the first thing to record; false once writing failed.
bool ensure_writer(Session& s);
// Writing failed (disk full, file removed): keep the traced process running, drop the rest.
void fail_session(Session& s, const std::exception& e);
// The last drain and the close of a part file; the caller holds work_mu.
void finish_session(Session& s, bool clean, std::int64_t exit_status, const char* why);
// Stops the writer thread, then drains and closes the part.
void close_session(Session* s, bool clean, std::int64_t exit_status, const char* why);

// writer_thread.cpp
void writer_loop(Session* s);
// Moves every published record into the part file (or discards it when writing failed).
void drain_all(Session& s, bool final);
void write_range(Session& s, const OpenRange& r, std::int64_t end);
// Writes the ranges still open on a thread, ending at `at`, innermost first.
void end_open_ranges(Session& s, ThreadSink& sink, std::int64_t at);
// Where the ranges still open on a thread end when its events stop at `end`: at the pause it
// had not yet passed, if one began since.
std::int64_t open_ranges_end(const Session& s, const ThreadSink& sink, std::int64_t end);
// meta recording_paused, with a pause not yet resumed ending at `still_paused_end`.
void write_pauses(Session& s, std::int64_t still_paused_end);
// Dropped events, warnings and the writer's CPU time into the part's meta, when changed.
void write_status(Session& s);

// self_calibration.cpp: what the hot path costs here (nvtx_range, nvtx_mark), and what its
// in-run timing reads in the same state (nvtx_range_timed, nvtx_mark_timed).
std::vector<CalibrationRecord> self_calibrate(Tracer& t);

// fork_handlers.cpp
void install_fork_handlers();

} // namespace dreamscope::tracer
