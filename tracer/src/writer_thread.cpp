// The writer thread of a session: wakes every 10 ms (or when a signal asks), drains every
// thread's published events into the part file, hands CUPTI's completed buffers to the
// decoder, and flushes the file every 100 ms so that a killed process loses little.
#include "cupti_session.h"
#include "tracer_state.h"

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <string>

namespace dreamscope::tracer {

namespace {

StringId trace_string(Session& s, std::uint32_t id) {
  if (id == 0) return 0;
  if (id >= s.string_ids.size()) s.string_ids.resize(id + 1024, 0);
  StringId& sid = s.string_ids[id];
  if (sid == 0) sid = s.writer->intern(g_tracer->strings.get(id));
  return sid;
}

StringId trace_domain(Session& s, std::uint16_t d) {
  if (d >= s.domain_ids.size()) s.domain_ids.resize(d + 16, 0);
  StringId& sid = s.domain_ids[d];
  if (sid == 0) sid = s.writer->intern(g_tracer->domains.domain_name(d));
  return sid;
}

StringId trace_category(Session& s, std::uint16_t d, std::uint8_t c) {
  if (c == 0) return 0;
  auto [it, inserted] = s.category_ids.try_emplace({d, c}, 0);
  // Re-resolved until named: a category may be named after its first use.
  if (inserted || it->second == 0) {
    it->second = s.writer->intern(g_tracer->domains.category_name(d, c));
  }
  return it->second;
}

std::string thread_name(std::int64_t tid) {
  return trim_newline(read_proc_file("/proc/self/task/" + std::to_string(tid) + "/comm"));
}

void process_event(Session& s, ThreadSink& sink, std::uint32_t thread_index, const Event& e, std::uint64_t pos,
                   bool with_external_ids) {
  const std::int64_t t = g_tracer->clock.to_ns(e.ticks);
  s.last_time = std::max(s.last_time, t);
  switch (static_cast<EventKind>(e.kind)) {
    case EventKind::Push:
      sink.stack.push_back(OpenRange{t, e.payload,
                                     with_external_ids ? (std::uint64_t{thread_index} << 40) | pos : 0, e.name,
                                     e.domain, e.category, sink.track});
      break;
    case EventKind::Pop:
      if (!sink.stack.empty()) {
        write_range(s, sink.stack.back(), t);
        sink.stack.pop_back();
      }
      break;
    case EventKind::Mark:
      write_range(s, OpenRange{t, e.payload, 0, e.name, e.domain, e.category, sink.track}, t);
      break;
    case EventKind::Start:
      s.open_starts[e.id] = OpenRange{t, e.payload, 0, e.name, e.domain, e.category, sink.track};
      break;
    case EventKind::End:
      if (auto it = s.open_starts.find(e.id); it != s.open_starts.end()) {
        write_range(s, it->second, t);
        s.open_starts.erase(it);
      }
      break;
    case EventKind::BufferMap:
      if (!s.target->in_window(t)) {
        ++s.target->rows_skipped_by_window;
        break;
      }
      if (s.buffer_map_kind == 0) s.buffer_map_kind = s.writer->intern("tracer_buffer_map");
      s.writer->add(OverheadRecord{.track = sink.track, .start = t,
                                   .end = std::max(t, g_tracer->clock.to_ns(static_cast<std::uint64_t>(e.payload))),
                                   .kind = s.buffer_map_kind});
      break;
  }
}

// nvtxNameOsThread calls made since the last drain, applied to the tracks.
void apply_thread_names(Session& s) {
  Tracer& t = *g_tracer;
  const std::uint64_t changes = t.thread_names_changes.load();
  if (!s.target || changes == s.thread_names_applied) return;
  s.thread_names_applied = changes;
  std::lock_guard lock(t.thread_names_mu);
  for (const auto& [tid, name] : t.thread_names) s.target->name_thread(tid, name);
}

std::uint64_t total_dropped() {
  Tracer& t = *g_tracer;
  std::lock_guard lock(t.registry_mu);
  std::uint64_t n = t.retired_dropped + t.extra_dropped.load();
  for (ThreadBuffer* b : t.buffers) n += b->dropped();
  return n;
}

// Free chunks the writer keeps mapped for the traced threads: two bursts' worth of head
// start (a chunk holds 64 k events, 2 ms of the fastest burst measured).
constexpr std::size_t kReadyChunks = 2;

} // namespace

void drain_all(Session& s, bool final) {
  Tracer& t = *g_tracer;
  std::vector<ThreadBuffer*> buffers;
  {
    std::lock_guard lock(t.registry_mu);
    buffers = t.buffers;
  }
  t.clock.refine();
  const bool with_external_ids = cupti_active();
  if (with_external_ids) ensure_writer(s);
  apply_thread_names(s); // before the tracks of this drain are made: they take the names
  std::vector<ThreadBuffer*> finished;
  for (ThreadBuffer* b : buffers) {
    // Read before draining: a buffer seen retired is drained completely afterwards.
    const bool retired = b->retired.load(std::memory_order_acquire);
    ThreadSink& sink = s.sinks[b->index()];
    if (s.failed) {
      b->drain([](const Event&, std::uint64_t) {});
    } else {
      b->drain([&](const Event& e, std::uint64_t pos) {
        if (!ensure_writer(s)) return;
        if (!sink.has_track) {
          std::string name = thread_name(b->tid());
          if (name.empty()) name = b->registered_name();
          sink.track = s.target->thread_track(b->tid(), b->pthread_id(), name);
          sink.has_track = true;
        }
        process_event(s, sink, b->index(), e, pos, with_external_ids);
      });
    }
    if (retired) finished.push_back(b);
  }
  apply_thread_names(s); // tracks made in this drain: renamed
  if (!finished.empty()) {
    std::lock_guard lock(t.registry_mu);
    for (ThreadBuffer* b : finished) {
      t.retired_dropped += b->dropped();
      t.buffers.erase(std::find(t.buffers.begin(), t.buffers.end(), b));
      s.sinks.erase(b->index());
      delete b;
    }
  }
  if (!s.failed && s.target) t.extra_dropped.fetch_add(cupti_drain(*s.target, t.config.cuda_api_all, final));
}

void write_range(Session& s, const OpenRange& r, std::int64_t end) {
  if (!s.target->in_window(r.start)) {
    ++s.target->rows_skipped_by_window;
    return;
  }
  s.writer->add(AnnotationRecord{.track = r.track, .start = r.start, .end = std::max(end, r.start),
                                 .name = trace_string(s, r.name), .domain = trace_domain(s, r.domain),
                                 .category = trace_category(s, r.domain, r.category), .payload = r.payload,
                                 .external_id = r.external_id == 0 ? kNoValue
                                                                   : static_cast<std::int64_t>(r.external_id)});
}

void write_status(Session& s) {
  const std::uint64_t dropped = total_dropped();
  if (dropped != s.dropped_written) {
    s.writer->set_meta("dropped_events", std::to_string(dropped));
    s.dropped_written = dropped;
  }
  std::string joined;
  {
    std::lock_guard lock(g_tracer->warnings_mu);
    for (const auto& w : g_tracer->warnings) joined += (joined.empty() ? "" : "; ") + w;
  }
  if (joined != s.warnings_written) {
    s.writer->set_meta("warnings", joined);
    s.warnings_written = joined;
  }
  if (const std::int64_t cpu = s.writer_cpu_ns.load(); cpu != s.writer_cpu_written) {
    s.writer->set_meta("tracer_writer_cpu_ns", std::to_string(cpu));
    s.writer_cpu_written = cpu;
  }
}

void writer_loop(Session* s) {
  Tracer& t = *g_tracer;
  t.writer_tid.store(gettid_now());
  // Asynchronous termination signals belong to the traced program's threads: its handlers,
  // and ours that ask this thread to flush, must run there.
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, SIGCHLD}) sigaddset(&set, sig);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  pthread_setname_np(pthread_self(), "dreamscope-wr");

  auto last_flush = std::chrono::steady_clock::now();
  auto last_cupti_flush = last_flush;
  while (!s->stop.load()) {
    {
      std::unique_lock lock(s->wake_mu);
      s->wake.wait_for(lock, std::chrono::milliseconds(10), [&] {
        return s->stop.load() || t.flush_requested.load() != t.flush_done.load();
      });
    }
    if (s->stop.load()) break;
    const std::uint64_t requested = t.flush_requested.load();
    // GPU records wait in CUPTI's buffers until asked for; asking often bounds what a
    // SIGKILL loses on the GPU side as the part's own flush does for the CPU side. Not
    // under work_mu: CUPTI hands the buffers over on this thread, and a flush must not
    // hold a tracer lock (Kineto documents a deadlock otherwise). Not on a signal's
    // request: the process may be crashing inside CUDA.
    if (t.config.cupti_flush_ms > 0 && requested == t.flush_done.load() &&
        std::chrono::steady_clock::now() - last_cupti_flush >= std::chrono::milliseconds(t.config.cupti_flush_ms)) {
      cupti_flush_completed();
      last_cupti_flush = std::chrono::steady_clock::now();
    }
    std::lock_guard work(t.work_mu);
    if (const int sig = t.close_signal.load(); sig != 0 && requested != t.flush_done.load()) {
      // A termination signal: the process is about to die in good order, so its part
      // ends complete, with the status the signal will give it.
      finish_session(*s, true, 128 + sig, "signal");
      t.flush_done.store(requested);
      return;
    }
    const auto now = std::chrono::steady_clock::now();
    try {
      // A signal's request: the process is about to die, so API rows waiting for a later
      // CUPTI buffer are written now.
      drain_all(*s, requested != t.flush_done.load());
      // The next chunks of a burst, mapped here rather than by the traced thread that
      // fills its chunk first; only once the process records at all.
      if (s->writer) t.pool->refill(kReadyChunks);
      // 100 ms keeps a SIGKILLed process's loss under the 200 ms the design allows.
      if (!s->failed && s->writer && (now - last_flush >= std::chrono::milliseconds(100) || requested != t.flush_done.load())) {
        write_status(*s);
        s->writer->flush();
        last_flush = now;
      }
    } catch (const std::exception& e) {
      fail_session(*s, e);
    }
    s->writer_cpu_ns.store(thread_cpu_ns());
    t.flush_done.store(requested);
  }
}

} // namespace dreamscope::tracer
