// A session: one part file of this process and the writer thread that fills it. Opened at
// start, in a fork child and after a failed exec; the file itself is created with the
// first thing to record; closed at exit, _exit, exec or a termination signal.
#include "cupti_session.h"
#include "tracer_state.h"

#include <sched.h>
#include <unistd.h>


#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <string>

namespace dreamscope::tracer {

namespace {

std::string own_command_line() {
  std::string raw = read_proc_file("/proc/self/cmdline");
  while (!raw.empty() && raw.back() == '\0') raw.pop_back();
  std::replace(raw.begin(), raw.end(), '\0', ' ');
  return raw;
}

std::filesystem::path part_path(const Config& c) {
  const int n = g_tracer->session_counter.fetch_add(1);
  return std::filesystem::path(c.output_dir) /
         (std::to_string(getpid()) + "-" + std::to_string(monotonic_ns()) + "-" + std::to_string(n) + ".dslog");
}

} // namespace

void finish_session(Session& s, bool clean, std::int64_t exit_status, const char* why) {
  if (s.closed || s.failed) return;
  s.closed = true;
  try {
    drain_all(s, true);
    if (!s.writer) return; // nothing was ever recorded: no part
    const std::int64_t end = std::max(s.last_time, monotonic_ns());
    // Ranges still open at exit end with the process: the outer step of a loop that
    // called exit() is real time the program spent.
    for (auto& [index, sink] : s.sinks) end_open_ranges(s, sink, open_ranges_end(s, sink, end));
    if (!s.pauses.empty()) write_pauses(s, end);
    s.info.end = end;
    s.info.exit_status = exit_status;
    s.writer->update_process(s.process, s.info);
    if (why) s.writer->set_meta("ended_by", why);
    s.writer->set_meta("end", std::to_string(end));
    // Whether the cuda_api calibration timed anything CUPTI recorded (0: it did not).
    if (s.cupti_calibrated) s.writer->set_meta("cuda_api_calibration_calls", std::to_string(cupti_calibration_calls()));
    write_status(s);
    if (clean) {
      s.writer->close();
    } else {
      s.writer->flush();
    }
  } catch (const std::exception& e) {
    fail_session(s, e);
  }
}

// The part file is created when the process first has something to record: a process
// that never annotates nor uses CUDA (a shell, a launcher script) costs no file at all.
bool ensure_writer(Session& s) {
  if (s.writer) return true;
  if (s.failed) return false;
  Tracer& t = *g_tracer;
  try {
    s.writer = std::make_unique<TraceLogWriter>(part_path(t.config));
    s.writer->set_meta("source", "tracer");
    s.writer->set_meta("command", t.config.command.empty() ? s.info.command : t.config.command);
    s.writer->set_meta("host", t.host);
    // The cores this process may run on: what overhead correction shares among the job's
    // threads once it has taken out their waits for a core (a part opened on its own, without
    // `dreamscope trace`, says it too).
    if (cpu_set_t cpus; sched_getaffinity(0, sizeof cpus, &cpus) == 0) {
      s.writer->set_meta("cpu_cores", std::to_string(CPU_COUNT(&cpus)));
    }
    s.writer->set_meta("start", std::to_string(s.info.start));
    s.writer->set_meta("clock", t.clock.uses_tsc() ? "CLOCK_MONOTONIC (TSC-interpolated)" : "CLOCK_MONOTONIC");
    s.process = s.writer->add_process(s.info);
    s.target = std::make_unique<TraceTarget>(*s.writer, s.process);
    if (t.config.job_start_ns > 0 && (t.config.delay_ns > 0 || t.config.duration_ns >= 0)) {
      const std::int64_t from = t.config.job_start_ns + t.config.delay_ns;
      const std::int64_t to = t.config.duration_ns >= 0 ? from + t.config.duration_ns : INT64_MAX;
      s.target->set_window(from, to);
      s.writer->set_meta("window_from_ns", std::to_string(from));
      if (to != INT64_MAX) s.writer->set_meta("window_to_ns", std::to_string(to));
    }
    for (const auto& c : t.calibration) s.writer->add(c);
    return true;
  } catch (const std::exception& e) {
    tracer_add_warning(std::string("cannot create the trace file in ") + t.config.output_dir + ": " + e.what() +
                       "; recording stopped");
    s.target.reset();
    s.writer.reset();
    s.failed = true;
    return false;
  }
}

void fail_session(Session& s, const std::exception& e) {
  s.failed = true;
  tracer_add_warning(std::string("cannot write the trace, recording stopped: ") + e.what());
}

Session* open_session(std::int64_t parent_pid) {
  Tracer& t = *g_tracer;
  auto s = std::make_unique<Session>();
  s->info = ProcessInfo{.pid = getpid(), .parent_pid = parent_pid,
                        .name = trim_newline(read_proc_file("/proc/self/comm")), .command = own_command_line(),
                        .start = monotonic_ns(), .rank = t.placement.rank, .local_rank = t.placement.local_rank,
                        .world_size = t.placement.world_size, .host = t.host};
  // Checked now so that an unwritable folder turns tracing off before NVTX is hooked; the
  // file itself is created with the first event (ensure_writer).
  std::error_code ec;
  std::filesystem::create_directories(t.config.output_dir, ec);
  if (ec || access(t.config.output_dir.c_str(), W_OK) != 0) {
    const std::string why = ec ? ec.message() : std::strerror(errno);
    tracer_add_warning("cannot create the trace file in " + t.config.output_dir + ": " + why +
                       "; the program runs untraced");
    s->failed = true;
  }
  Session* raw = s.release();
  raw->thread = std::thread(writer_loop, raw);
  return raw;
}

void tracer_drain_now(bool wait) {
  Session* s = g_tracer ? g_tracer->session : nullptr;
  if (!s || is_writer_thread()) return;
  std::uint64_t ticket;
  {
    std::lock_guard lock(s->wake_mu);
    ticket = s->drains_requested.fetch_add(1) + 1;
  }
  s->wake.notify_all();
  if (!wait) return;
  // The writer answers within a drain and a write (ms); a writer stopped or stuck is not
  // waited for past 2 s.
  const timespec pause{0, 50'000};
  for (int i = 0; i < 40'000 && s->drains_done.load() < ticket && !s->stop.load(); ++i) nanosleep(&pause, nullptr);
}

void close_session(Session* s, bool clean, std::int64_t exit_status, const char* why) {
  Tracer& t = *g_tracer;
  s->stop.store(true);
  s->wake.notify_all();
  if (s->thread.joinable()) {
    if (s->thread.get_id() == std::this_thread::get_id()) {
      s->thread.detach();
    } else {
      s->thread.join();
    }
  }
  std::lock_guard work(t.work_mu);
  finish_session(*s, clean, exit_status, why);
}

} // namespace dreamscope::tracer
