// The writer thread of a session: wakes every 10 ms (or when a signal asks), drains every
// thread's published events into the part file, hands CUPTI's completed buffers to the
// decoder, and flushes the file every 100 ms so that a killed process loses little.
#include "cupti_session.h"
#include "tracer_state.h"

#include <dreamscope/storage/tracer_environment.h>

#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
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

// Before an event of this thread at `ticks`: each pause begun since the thread's previous event
// ends the ranges then open on it. False when the event lies inside a pause (a call that read
// its NVTX slot just before the pause emptied it): it is not kept, and since a pushed range
// is then never on the stack, its pop after the resume finds none there and is ignored.
bool past_pauses(Session& s, ThreadSink& sink, std::uint64_t ticks) {
  while (sink.pause_index < s.pauses.size() && ticks >= s.pauses[sink.pause_index].start) {
    const PauseInterval& p = s.pauses[sink.pause_index];
    end_open_ranges(s, sink, g_tracer->clock.to_ns(p.start));
    if (ticks < p.end) return false;
    ++sink.pause_index;
  }
  return true;
}

// A range started at `start` (ns) ends by the first pause after it, if one came.
std::int64_t end_by_pause(const Session& s, std::int64_t start, std::int64_t end) {
  for (const PauseInterval& p : s.pauses) {
    const std::int64_t at = g_tracer->clock.to_ns(p.start);
    if (at >= start) return std::min(end, at);
  }
  return end;
}

// The tracer's own work on a traced thread (a chunk mapped, counted ranges timed): `e` holds its
// start and, as its payload, its end in ticks. An overhead row of `kind`, interned on first use
// into `kind_id`, which correction removes.
void add_own_work(Session& s, ThreadSink& sink, const Event& e, TimeNs t, StringId& kind_id, const char* kind) {
  if (!s.target->in_window(t)) {
    ++s.target->rows_skipped_by_window;
    return;
  }
  if (kind_id == 0) kind_id = s.writer->intern(kind);
  s.writer->add(OverheadRecord{.track = sink.track, .start = t,
                               .end = std::max(t, g_tracer->clock.to_ns(static_cast<std::uint64_t>(e.payload))),
                               .kind = kind_id});
}

// The writer's previous busy spell, on a thread that recorded events since it began (its events
// of this drain came after the spell's start): what the thread ran beside the writer. Recorded
// so that correction can compare the thread's pace in and out of those spells: where the two
// share a core (two hyperthreads of one) the thread ran far slower in them (docs/simulation.md,
// "The writer's drains"). Not while recording is paused: no recorded step ran beside it. Only on
// a thread that recorded kSpellEvents events since: correction needs hundreds of gaps in the
// spells around one to measure it, so a sparser thread's rows would only fill the trace (a
// loader's few ranges a batch, 64 such threads for an hour: 23 M rows).
constexpr std::uint64_t kSpellEvents = 32;
void note_writer_busy(Session& s, ThreadSink& sink) {
  if (s.busy_start < 0 || s.busy_end <= s.busy_start || !s.target->in_window(s.busy_start)) return;
  if (!s.pauses.empty()) {
    const PauseInterval& last = s.pauses.back();
    if (last.end == PauseInterval::kStillPaused || g_tracer->clock.to_ns(last.end) > s.busy_start) return;
  }
  if (s.writer_busy_kind == 0) s.writer_busy_kind = s.writer->intern(tracer_environment::kWriterBusy);
  s.writer->add(OverheadRecord{.track = sink.track, .start = s.busy_start, .end = s.busy_end, .kind = s.writer_busy_kind});
}

void process_event(Session& s, ThreadSink& sink, std::uint32_t thread_index, const Event& e, std::uint64_t pos,
                   bool with_external_ids) {
  const bool kept = past_pauses(s, sink, e.ticks);
  // A started range's end comes even from inside a pause: the range ends at the pause.
  if (!kept && static_cast<EventKind>(e.kind) != EventKind::End) return;
  const std::int64_t t = g_tracer->clock.to_ns(e.ticks);
  s.last_time = std::max(s.last_time, t);
  switch (static_cast<EventKind>(e.kind)) {
    case EventKind::Push:
      sink.stack.push_back(OpenRange{t, e.payload,
                                     with_external_ids ? (std::uint64_t{thread_index} << 40) | pos : 0, e.name,
                                     e.domain, e.category, sink.track});
      break;
    case EventKind::Pop: {
      // The innermost open range of the pop's domain: PyTorch's operator ranges (default
      // domain) open and close around the autograd thread's `backward` (dreamscope.auto), and
      // a pop of one closed the other on the first GPU that ran both.
      auto open = std::find_if(sink.stack.rbegin(), sink.stack.rend(),
                               [&](const OpenRange& r) { return r.domain == e.domain; });
      if (open != sink.stack.rend()) {
        write_range(s, *open, t);
        sink.stack.erase(std::next(open).base());
      }
      break;
    }
    case EventKind::Mark:
      write_range(s, OpenRange{t, e.payload, 0, e.name, e.domain, e.category, sink.track}, t);
      break;
    case EventKind::Start:
      s.open_starts[e.id] = OpenRange{t, e.payload, 0, e.name, e.domain, e.category, sink.track};
      break;
    case EventKind::End:
      if (auto it = s.open_starts.find(e.id); it != s.open_starts.end()) {
        write_range(s, it->second, end_by_pause(s, it->second.start, t));
        s.open_starts.erase(it);
      }
      break;
    case EventKind::BufferMap:
      add_own_work(s, sink, e, t, s.buffer_map_kind, "tracer_buffer_map");
      break;
    case EventKind::CountedTiming:
      add_own_work(s, sink, e, t, s.counted_timing_kind, tracer_environment::kCountedRangesTimed);
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

// A thread's load is written per window of 100 ms: enough calls for the sampled costs to mean
// something (a thread recording 100 k events/s times 150 of them in a window), few enough rows
// for an hour's run (36 k per thread). A window ends sooner, after 10 ms at least, once the
// thread waited 1 ms for a core in it: such waits come in bursts (another process, the writer
// catching up), and correction looks for a window's wait among the window's longest tasks, so
// a burst must stay near where it happened. Telling that needs the thread's schedstat at each
// drain past 10 ms: a /proc read of a few µs per thread every 10 ms, for the writer.
constexpr std::int64_t kLoadWindowNs = 100'000'000;
constexpr std::int64_t kShortLoadWindowNs = 10'000'000;
constexpr std::int64_t kWaitThatEndsAWindowNs = 1'000'000;
// A thread that records densely ends its window after 10 ms too, once this many calls were
// timed in it: a machine's speed changes within tens of ms (the development VM's step times
// alternate between two levels in blocks of 10 to 50 ms, and what a range costs with them),
// and a window over both levels charges each its mean. 1000 timed calls are 64 k events.
constexpr std::uint64_t kSamplesThatEndAWindow = 1000;

void read_thread_schedstat(const ThreadBuffer& b, bool retired, std::int64_t& cpu, std::int64_t& wait) {
  cpu = wait = kNoValue;
  if (retired) {
    if (b.exit_cpu_ns != INT64_MIN) {
      cpu = b.exit_cpu_ns;
      wait = b.exit_runqueue_ns;
    }
    return;
  }
  const std::string path = "/proc/self/task/" + std::to_string(b.tid()) + "/schedstat";
  std::int64_t c = 0, w = 0;
  if (read_schedstat(path.c_str(), c, w)) {
    cpu = c;
    wait = w;
  }
}

// Whether recording is paused, as of this drain's view of the pauses.
bool paused_now(const Session& s) { return !s.pauses.empty() && s.pauses.back().end == PauseInterval::kStillPaused; }

// The counters are read together with the clock, so that the window's CPU time and its
// length are measured over the same interval.
void begin_window(LoadWindow& w, const ThreadBuffer& b, bool retired) {
  w.start = monotonic_ns();
  w.position = b.position();
  w.probes = b.probes();
  for (std::size_t k = 0; k < ThreadBuffer::kCostKinds; ++k) w.cost[k] = b.cost_tally(static_cast<EventKind>(k + 1));
  read_thread_schedstat(b, retired, w.cpu_ns, w.runqueue_ns);
}

// Ends the thread's load window when it is long enough, or when told to (the thread or the
// session ends, recording paused or resumed), and writes what the window saw; then the next
// window begins.
void note_thread_load(Session& s, ThreadSink& sink, const ThreadBuffer& b, bool retired, bool end_now) {
  LoadWindow& w = sink.window;
  if (w.start < 0) {
    begin_window(w, b, retired);
    w.paused = paused_now(s);
    return;
  }
  const std::int64_t length = monotonic_ns() - w.start;
  if (!end_now && length < kShortLoadWindowNs) return;
  LoadWindow next;
  begin_window(next, b, retired);
  next.paused = paused_now(s);
  std::uint64_t samples = 0;
  for (std::size_t k = 0; k < ThreadBuffer::kCostKinds; ++k) samples += next.cost[k].first - w.cost[k].first;
  if (!end_now && length < kLoadWindowNs && samples < kSamplesThatEndAWindow &&
      (w.runqueue_ns == kNoValue || next.runqueue_ns == kNoValue || next.runqueue_ns - w.runqueue_ns < kWaitThatEndsAWindowNs)) {
    return;
  }
  if (next.start <= w.start || !s.target->in_window(w.start)) {
    w = next;
    return;
  }
  ThreadLoadRecord r{.track = sink.track, .start = w.start, .end = next.start};
  if (w.cpu_ns != kNoValue && next.cpu_ns != kNoValue && next.cpu_ns >= w.cpu_ns && next.runqueue_ns >= w.runqueue_ns) {
    r.cpu_ns = next.cpu_ns - w.cpu_ns;
    r.runqueue_ns = next.runqueue_ns - w.runqueue_ns;
  }
  r.events = static_cast<std::int64_t>(next.position - w.position);
  r.probe_events = static_cast<std::int64_t>(next.probes - w.probes);
  const double ns_per_tick = g_tracer->clock.ns_per_tick();
  double mean[ThreadBuffer::kCostKinds];
  for (std::size_t k = 0; k < ThreadBuffer::kCostKinds; ++k) {
    const std::uint64_t calls = next.cost[k].first - w.cost[k].first;
    r.cost_samples += static_cast<std::int64_t>(calls);
    mean[k] = calls == 0 ? -1.0
                         : static_cast<double>(next.cost[k].second - w.cost[k].second) * ns_per_tick / static_cast<double>(calls);
  }
  auto kind = [](EventKind k) { return static_cast<std::size_t>(k) - 1; };
  if (mean[kind(EventKind::Push)] >= 0 && mean[kind(EventKind::Pop)] >= 0) {
    r.range_cost_ns = mean[kind(EventKind::Push)] + mean[kind(EventKind::Pop)];
  } else if (mean[kind(EventKind::Start)] >= 0 && mean[kind(EventKind::End)] >= 0) {
    r.range_cost_ns = mean[kind(EventKind::Start)] + mean[kind(EventKind::End)];
  }
  r.mark_cost_ns = mean[kind(EventKind::Mark)];
  // A window in which the thread recorded nothing has nothing to correct, but the CPU the
  // thread used is its load all the same (`info`, and the cores a what-if shares): written
  // when it ran, unless recording was paused (what ran then is not in the trace). Overhead
  // correction reads only the windows with events.
  if (r.events > 0 || (!w.paused && r.cpu_ns != kNoValue && r.cpu_ns > 0)) s.writer->add(r);
  w = next;
}

// The threads of the process that have no buffer (they never recorded an event: an OpenMP or
// BLAS pool, PyTorch's autograd thread, a thread the program spins up) do much of the work and
// compete for the cores, so their CPU time is in the trace too: a load row per thread and per
// window in which it ran, with no events. One window for all of them, of kLoadWindowNs, ended
// early by a pause or resume and by the end of the session, as the recorded threads' windows
// are: at its end the writer lists /proc/self/task and reads each such thread's schedstat (a
// listing and a few µs a thread every 100 ms). A thread first listed after the first window
// began ran only since the listing before: all its CPU time is the window's. A thread that
// exits between two listings loses the CPU of its last window; one that began and ended
// between two, all of it. The writer itself is left out (meta tracer_writer_cpu_ns has its
// CPU time), and so is every thread that ever had a buffer.

bool read_task_schedstat(std::int64_t tid, std::int64_t& cpu, std::int64_t& wait) {
  const std::string path = "/proc/self/task/" + std::to_string(tid) + "/schedstat";
  return read_schedstat(path.c_str(), cpu, wait);
}

// Writes what thread `tid` ran in the current window, up to `end`, from its counters then
// (`cpu`, `wait`) against those `seen` at the window's start: when it ran at all, and the
// window was recorded (not paused, inside --delay/--duration).
void write_other_load(Session& s, std::int64_t tid, OtherThreads::Seen& seen, std::int64_t end, std::int64_t cpu,
                      std::int64_t wait) {
  const OtherThreads& o = s.others;
  if (o.window_start < 0 || end <= o.window_start || o.window_paused || !s.target->in_window(o.window_start)) return;
  if (!seen.known) return; // not read where the window began
  // Lower than before: another thread got the id of one that exited.
  if (cpu <= seen.cpu_ns || wait < seen.runqueue_ns) return;
  if (!seen.has_track) {
    seen.track = s.target->thread_track(tid, 0, thread_name(tid));
    seen.has_track = true;
  }
  s.writer->add(ThreadLoadRecord{.track = seen.track, .start = o.window_start, .end = end, .cpu_ns = cpu - seen.cpu_ns,
                                 .runqueue_ns = wait - seen.runqueue_ns});
}

void note_other_threads(Session& s, const std::vector<ThreadBuffer*>& buffers, bool end_now) {
  OtherThreads& o = s.others;
  const std::int64_t now = monotonic_ns();
  for (ThreadBuffer* b : buffers) {
    if (!o.recorded.try_emplace(b->tid(), o.listing).second) continue;
    // A thread that began recording: from now on its load is its buffer's.
    auto it = o.threads.find(b->tid());
    if (it == o.threads.end()) continue;
    std::int64_t cpu = 0, wait = 0;
    if (read_task_schedstat(b->tid(), cpu, wait)) write_other_load(s, b->tid(), it->second, now, cpu, wait);
    o.threads.erase(it);
  }
  if (o.window_start >= 0 && !end_now && now - o.window_start < kLoadWindowNs) return;
  const bool first = o.window_start < 0;
  const std::int64_t writer = g_tracer->writer_tid.load();
  // Not listed (no file descriptor left in the process): the window goes on, and the next
  // drain tries again.
  DIR* dir = opendir("/proc/self/task");
  if (!dir) return;
  const std::uint64_t listing = ++o.listing;
  while (const dirent* e = readdir(dir)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    const std::int64_t tid = std::strtoll(e->d_name, nullptr, 10);
    if (tid == writer) continue;
    if (auto r = o.recorded.find(tid); r != o.recorded.end()) {
      r->second = listing;
      continue;
    }
    auto [it, fresh] = o.threads.try_emplace(tid);
    OtherThreads::Seen& seen = it->second;
    seen.listing = listing;
    std::int64_t cpu = 0, wait = 0;
    if (!read_task_schedstat(tid, cpu, wait)) {
      seen.known = false; // its next window, from counters not read, is left out
      continue;
    }
    // A thread new since the first window began ran only since the listing before: from 0.
    if (fresh && !first) seen.known = true;
    write_other_load(s, tid, seen, now, cpu, wait);
    seen.cpu_ns = cpu;
    seen.runqueue_ns = wait;
    seen.known = true;
  }
  closedir(dir);
  std::erase_if(o.threads, [&](const auto& t) { return t.second.listing != listing; });
  std::erase_if(o.recorded, [&](const auto& t) { return t.second != listing; });
  o.window_start = now;
  o.window_paused = paused_now(s);
}

// Cost probes. What a record costs the job is not all inside the call: its stores reach memory,
// and the job's lines are evicted, after the call has returned, and the call itself disturbs the
// work around it. On the development VM a range cost the job 31 ns where the call's own timing,
// less its clock read, read 25 to 73 (docs/simulation.md, "Overhead correction"); and a call
// repeated right after itself (a probe that records twice) costs only what a call back to back
// does, a third less than one among the job's work. So the tracer measures the cost where it
// lands by taking it away for a moment: for 2 ms every 100 ms on average, the pushes inside
// two open ranges are counted and not recorded, nor their pops (nvtx_injection.cpp,
// counted_push), and the thread's CPU time per call then, against the recorded windows on
// either side, is what recording a call costs it, in the machine's state of that moment.
// Overhead correction reads it from the thread_load rows, whose `probe_events` counts the calls
// a probe left out. What is not recorded: the ranges from the third level down pushed in those
// 2 ms (2 % of the run); a thread's two outermost levels (a step and its phases), marks and
// start/end ranges are recorded throughout. The gaps
// are drawn from 0.5 to 1.5 times their mean, so that a job whose steps repeat at that period
// does not meet the probe at one phase of its step every time. Off while recording is paused.
//
// Probe steps (--cost-probe-steps) take the probe to whole steps and to wall time: one outermost
// range in N on each thread counts its inner pushes, the thread itself choosing at its
// outermost pushes (event_buffer.h, count_push), and ends with a `cost probe step` mark that
// says how many. A step's own duration against its recorded neighbours' is the cost where it
// landed, whatever the thread's CPU time missed (docs/simulation.md, "Probe steps"). Here the
// writer only switches them on, once, after start-up calibration.
//
// Returns whether the probe was turned on or off by this drain, when every thread's load window
// ends with it.
bool schedule_cost_probe(Session& s, std::int64_t now) {
  if (const std::int64_t steps = g_tracer->config.cost_probe_steps; steps > 0) {
    // Probe steps: each thread picks its own at its outermost pushes, from the first drain on
    // (after start-up calibration, which counts calls with the time-window switch).
    if (s.failed || !s.writer || s.probe_on) return false;
    g_hot.cost_probe_steps.store(static_cast<std::uint32_t>(steps), std::memory_order_relaxed);
    s.probe_on = true;
    return true;
  }
  const std::int64_t mean_gap = g_tracer->config.cost_probe_ms * 1'000'000;
  if (mean_gap <= 0 || s.failed || !s.writer) return false;
  auto draw_gap = [&] {
    s.probe_random ^= s.probe_random << 13;
    s.probe_random ^= s.probe_random >> 7;
    s.probe_random ^= s.probe_random << 17;
    return mean_gap / 2 + static_cast<std::int64_t>(s.probe_random % static_cast<std::uint64_t>(mean_gap));
  };
  if (s.probe_toggle_at < 0) { // the first drain: the first probe after a gap
    s.probe_toggle_at = now + draw_gap();
    return false;
  }
  if (paused_now(s)) {
    if (!s.probe_on) return false;
    s.probe_on = false;
    s.probe_toggle_at = now + draw_gap();
    return true;
  }
  if (now < s.probe_toggle_at) return false;
  s.probe_on = !s.probe_on;
  s.probe_toggle_at = now + (s.probe_on ? g_tracer->config.cost_probe_length_ms * 1'000'000 : draw_gap());
  return true;
}

// Free chunks the writer keeps mapped for the traced threads: two bursts' worth of head
// start (a chunk holds 64 k events, 2 ms of the fastest burst measured).
constexpr std::size_t kReadyChunks = 2;

} // namespace

void WriterPacing::start(std::int64_t slice_ns) {
  slice_ns_ = slice_ns;
  since_ = monotonic_ns();
  events_ = 0;
}

void WriterPacing::check() {
  if (slice_ns_ <= 0 || monotonic_ns() - since_ < slice_ns_) return;
  sched_yield();
  ++yields_;
  since_ = monotonic_ns();
}

void drain_all(Session& s, bool final) {
  Tracer& t = *g_tracer;
  std::vector<ThreadBuffer*> buffers;
  {
    std::lock_guard lock(t.registry_mu);
    buffers = t.buffers;
  }
  t.clock.refine();
  // A thread's load window ends at a pause or resume: the runqueue waits of paused time
  // belong to no recorded task, and the costs of the two sides may differ.
  const bool pauses_changed = pauses_since(s.pauses_version, s.pauses);
  const bool with_external_ids = cupti_active();
  if (with_external_ids) ensure_writer(s);
  apply_thread_names(s); // before the tracks of this drain are made: they take the names
  // Before the buffers: a thread that began recording ends its window here, before its
  // buffer's first window begins.
  if (!s.failed && s.writer) note_other_threads(s, buffers, final || pauses_changed);
  // Turned on or off after the windows that end here have ended, so that they saw one state.
  const bool probe_changed = schedule_cost_probe(s, monotonic_ns());
  std::vector<ThreadBuffer*> finished;
  for (ThreadBuffer* b : buffers) {
    // Read before draining: a buffer seen retired is drained completely afterwards.
    const bool retired = b->retired.load(std::memory_order_acquire);
    ThreadSink& sink = s.sinks[b->index()];
    if (s.failed) {
      b->drain([](const Event&, std::uint64_t) {});
    } else {
      std::uint64_t drained = 0;
      b->drain([&](const Event& e, std::uint64_t pos) {
        ++drained;
        s.pacing.event();
        if (!ensure_writer(s)) return;
        if (!sink.has_track) {
          std::string name = thread_name(b->tid());
          if (name.empty()) name = b->registered_name();
          sink.track = s.target->thread_track(b->tid(), b->pthread_id(), name);
          sink.has_track = true;
        }
        process_event(s, sink, b->index(), e, pos, with_external_ids);
      });
      if (sink.has_track && s.writer) {
        if (drained >= kSpellEvents) note_writer_busy(s, sink);
        note_thread_load(s, sink, *b, retired, final || retired || pauses_changed || probe_changed);
      }
    }
    if (retired) finished.push_back(b);
    s.pacing.check();
  }
  apply_thread_names(s); // tracks made in this drain: renamed
  if (probe_changed || final) g_hot.cost_probe.store(s.probe_on && !final, std::memory_order_relaxed);
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

void end_open_ranges(Session& s, ThreadSink& sink, std::int64_t at) {
  while (!sink.stack.empty()) {
    write_range(s, sink.stack.back(), at);
    sink.stack.pop_back();
  }
}

std::int64_t open_ranges_end(const Session& s, const ThreadSink& sink, std::int64_t end) {
  if (sink.pause_index < s.pauses.size()) return std::min(end, g_tracer->clock.to_ns(s.pauses[sink.pause_index].start));
  return end;
}

// meta recording_paused: "pid start end" per pause, in ns, joined by "; "; a pause not yet
// resumed ends at `still_paused_end`. A fork child inherits its parent's pauses: those that
// ended before the child's session began are its parent's alone.
void write_pauses(Session& s, std::int64_t still_paused_end) {
  std::string text;
  for (const PauseInterval& p : s.pauses) {
    if (p.end != PauseInterval::kStillPaused && g_tracer->clock.to_ns(p.end) < s.info.start) continue;
    const std::int64_t start = std::max(s.info.start, g_tracer->clock.to_ns(p.start));
    const std::int64_t end = p.end == PauseInterval::kStillPaused ? std::max(start, still_paused_end) : g_tracer->clock.to_ns(p.end);
    if (!text.empty()) text += "; ";
    text += std::to_string(s.info.pid) + " " + std::to_string(start) + " " + std::to_string(end);
  }
  s.writer->set_meta("recording_paused", text);
  s.pauses_written = s.pauses_version;
}

void write_status(Session& s) {
  if (s.pauses_written != s.pauses_version) write_pauses(s, s.last_time);
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
    if (const std::int64_t paused = s.writer_cpu_paused_ns.load(); paused > 0) {
      s.writer->set_meta("tracer_writer_cpu_paused_ns", std::to_string(paused));
    }
  }
  if (const std::uint64_t yields = s.pacing.yields(); yields != s.writer_yields_written) {
    s.writer->set_meta("tracer_writer_yields", std::to_string(yields));
    s.writer_yields_written = yields;
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
      // A cost probe ends 2 ms after it began: the writer wakes for it (writer_thread.cpp).
      std::chrono::nanoseconds wait = std::chrono::milliseconds(10);
      if (s->probe_toggle_at >= 0) {
        wait = std::clamp(std::chrono::nanoseconds(s->probe_toggle_at - monotonic_ns()), std::chrono::nanoseconds(0), wait);
      }
      s->wake.wait_for(lock, wait, [&] {
        return s->stop.load() || s->drains_requested.load() != s->drains_done.load() ||
               t.flush_requested.load() != t.flush_done.load();
      });
    }
    // A pause or resume of recording: what came before it is drained and written now, so
    // that the writer's work does not land among the steps that follow.
    const std::uint64_t drain_ticket = s->drains_requested.load();
    const bool at_pause = drain_ticket != s->drains_done.load();
    if (s->stop.load()) break;
    const std::int64_t cpu_at_wake = thread_cpu_ns();
    const std::uint64_t wake_ticks = ticks(t.clock.uses_tsc());
    s->pacing.start(t.config.writer_slice_ns);
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
    // Timed outside the work lock (a few ms of driver calls) and by this thread, the one that
    // never calls CUDA otherwise, so that its calls are told apart from the job's.
    std::optional<CalibrationRecord> cupti_calibration;
    if (requested == t.flush_done.load() && cupti_active()) {
      if (!s->cupti_calibrated) cupti_calibration = cupti_calibrate_api_cost();
      cupti_keep_buffers_ready();
    }
    std::lock_guard work(t.work_mu);
    if (cupti_calibration && ensure_writer(*s)) {
      s->writer->add(*cupti_calibration);
      s->cupti_calibrated = true;
    }
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
      if (!s->failed && s->writer &&
          (now - last_flush >= std::chrono::milliseconds(100) || requested != t.flush_done.load() || at_pause)) {
        s->pacing.check();
        write_status(*s);
        s->writer->flush();
        last_flush = now;
      }
    } catch (const std::exception& e) {
      fail_session(*s, e);
    }
    // What the writer did while recording was paused (at the pause itself, while the program
    // waits for it) took no CPU from a recorded step: overhead correction must not remove it.
    const std::int64_t cpu = thread_cpu_ns();
    if (!s->pauses.empty() && s->pauses.back().end == PauseInterval::kStillPaused) {
      s->writer_cpu_paused_ns.store(s->writer_cpu_paused_ns.load() + cpu - cpu_at_wake);
    }
    s->writer_cpu_ns.store(cpu - s->writer_cpu_paused_ns.load());
    s->busy_start = t.clock.to_ns(wake_ticks);
    s->busy_end = t.clock.to_ns(ticks(t.clock.uses_tsc()));
    t.flush_done.store(requested);
    s->drains_done.store(drain_ticket);
  }
}

} // namespace dreamscope::tracer
