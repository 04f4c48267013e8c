#include "recorder.h"

#include "trace_target.h"
#if DREAMSCOPE_HAVE_CUPTI
#include "cupti_session.h"
#endif

#include <dreamscope/trace_log.h>

#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>

namespace dreamscope::tracer {

HotState g_hot;

namespace {

std::int64_t env_int(const char* name, std::int64_t fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  long long x = std::strtoll(v, &end, 10);
  return end && *end == 0 ? x : fallback;
}

std::int64_t gettid_now() { return static_cast<std::int64_t>(syscall(SYS_gettid)); }

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string trim_newline(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\0')) s.pop_back();
  return s;
}

std::string own_command_line() {
  std::string raw = read_file("/proc/self/cmdline");
  while (!raw.empty() && raw.back() == '\0') raw.pop_back();
  std::replace(raw.begin(), raw.end(), '\0', ' ');
  return raw;
}

std::string host_name() {
  char buf[256] = {};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

} // namespace

Config config_from_environment() {
  Config c;
  if (const char* d = std::getenv("DREAMSCOPE_OUTPUT_DIR"); d && *d) c.output_dir = d;
  if (const char* t = std::getenv("DREAMSCOPE_TRACE"); t && *t) {
    std::string s = t;
    c.nvtx = s.find("nvtx") != std::string::npos;
    c.cuda = s.find("cuda") != std::string::npos;
  }
  if (const char* a = std::getenv("DREAMSCOPE_CUDA_API"); a && std::strcmp(a, "all") == 0) c.cuda_api_all = true;
  c.job_start_ns = env_int("DREAMSCOPE_JOB_START_NS", 0);
  c.delay_ns = env_int("DREAMSCOPE_DELAY_NS", 0);
  c.duration_ns = env_int("DREAMSCOPE_DURATION_NS", -1);
  const std::int64_t mb = env_int("DREAMSCOPE_BUFFER_MB", 512);
  c.buffer_bytes = static_cast<std::size_t>(std::clamp<std::int64_t>(mb, 1, std::int64_t{1} << 20)) << 20;
  c.cupti_flush_ms = std::max<std::int64_t>(0, env_int("DREAMSCOPE_CUPTI_FLUSH_MS", 100));
  if (const char* cmd = std::getenv("DREAMSCOPE_COMMAND"); cmd && *cmd) c.command = cmd;
  return c;
}

std::uint32_t StringTable::intern(std::string_view s) {
  std::lock_guard lock(mu_);
  auto it = ids_.find(s);
  if (it != ids_.end()) return it->second;
  strings_.emplace_back(s);
  const auto id = static_cast<std::uint32_t>(strings_.size() - 1);
  ids_.emplace(strings_.back(), id);
  return id;
}

std::string StringTable::get(std::uint32_t id) {
  std::lock_guard lock(mu_);
  return id < strings_.size() ? strings_[id] : std::string();
}

DomainTable::DomainTable() : domains_{"nvtx"} {}

std::uint16_t DomainTable::create(std::string_view name) {
  std::lock_guard lock(mu_);
  for (std::size_t i = 0; i < domains_.size(); ++i) {
    if (domains_[i] == name) return static_cast<std::uint16_t>(i);
  }
  if (domains_.size() >= 0xffff) return 0;
  domains_.emplace_back(name);
  return static_cast<std::uint16_t>(domains_.size() - 1);
}

void DomainTable::name_category(std::uint16_t domain, std::uint32_t category, std::string_view name) {
  std::lock_guard lock(mu_);
  categories_[{domain, category}] = std::string(name);
}

std::string DomainTable::domain_name(std::uint16_t domain) {
  std::lock_guard lock(mu_);
  return domain < domains_.size() ? domains_[domain] : std::string("nvtx");
}

std::string DomainTable::category_name(std::uint16_t domain, std::uint32_t category) {
  if (category == 0) return {};
  std::lock_guard lock(mu_);
  auto it = categories_.find({domain, category});
  return it != categories_.end() ? it->second : std::to_string(category);
}

// ---------------------------------------------------------------------------------------
// Per-thread state. The TLS slot is two pointers in the initial-exec model, so the hot path
// reaches it without a call; everything bigger lives behind the pointers.

struct NameCache {
  static constexpr std::size_t kSlots = 64;
  static constexpr std::size_t kMaxLen = 47;
  struct Slot {
    const char* ptr;
    std::uint32_t id;
    char text[kMaxLen + 1];
  };
  Slot slots[kSlots] = {};
};

struct ThreadState {
  ThreadBuffer* buffer;
  NameCache* names;
};

namespace {

__attribute__((tls_model("initial-exec"))) thread_local ThreadState t_state{nullptr, nullptr};

struct Tracer;
Tracer* g_tracer = nullptr;

struct OpenRange {
  std::int64_t start;
  std::int64_t payload;
  std::uint64_t external_id;
  std::uint32_t name;
  std::uint16_t domain;
  std::uint8_t category;
  TrackId track;
};

struct ThreadSink {
  TrackId track = 0;
  bool has_track = false;
  std::vector<OpenRange> stack;
};

// One part file and the thread that writes it.
struct Session {
  std::unique_ptr<TraceLogWriter> writer;
  std::unique_ptr<TraceTarget> target;
  std::uint32_t process = 0;
  ProcessInfo info;
  std::thread thread;
  std::atomic<bool> stop{false};
  std::mutex wake_mu;
  std::condition_variable wake;
  bool failed = false; // the file could not be written: records are drained and discarded
  std::unordered_map<std::uint32_t, ThreadSink> sinks;
  std::unordered_map<std::uint64_t, OpenRange> open_starts;
  std::vector<StringId> string_ids;                       // tracer string id -> trace string id
  std::vector<StringId> domain_ids;                       // domain index -> trace string id
  std::map<std::pair<std::uint16_t, std::uint8_t>, StringId> category_ids;
  // What the log holds already: a log appends every set_meta, so unchanged values are skipped.
  std::uint64_t dropped_written = ~std::uint64_t{0};
  std::string warnings_written;
  std::int64_t last_time = 0;
  StringId buffer_map_kind = 0; // "tracer_buffer_map", interned on first use (0: not yet)
  // CPU time of this session's writer thread so far: CPU the tracer took from the machine
  // beside what it cost the traced threads (meta tracer_writer_cpu_ns).
  std::atomic<std::int64_t> writer_cpu_ns{0};
  std::int64_t writer_cpu_written = -1;
  std::uint64_t thread_names_applied = 0; // Tracer::thread_names_changes when last applied
  bool closed = false;
};

struct Tracer {
  Config config;
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

void on_thread_exit(void* p) {
  auto* b = static_cast<ThreadBuffer*>(p);
  b->retired.store(true, std::memory_order_release);
  t_state.buffer = nullptr;
  delete t_state.names;
  t_state.names = nullptr;
}

ThreadBuffer* register_thread() {
  Tracer& t = *g_tracer;
  auto* names = t_state.names ? t_state.names : new NameCache();
  ThreadBuffer* b;
  {
    std::lock_guard lock(t.registry_mu);
    b = new ThreadBuffer(*t.pool, t.next_thread_index++, gettid_now(), static_cast<std::uint64_t>(pthread_self()));
    t.buffers.push_back(b);
  }
  char name[16] = {};
  prctl(PR_GET_NAME, name);
  b->set_registered_name(name);
  pthread_setspecific(t.exit_key, b);
  t_state.buffer = b;
  t_state.names = names;
  return b;
}

} // namespace

ThreadState& thread_state() { return t_state; }

ThreadBuffer& thread_buffer() {
  ThreadBuffer* b = t_state.buffer;
  return b ? *b : *register_thread();
}

std::uint32_t intern_ascii(const char* s) {
  if (!s) return 0;
  NameCache* cache = t_state.names;
  if (!cache) {
    thread_buffer();
    cache = t_state.names;
  }
  // Keyed by address, confirmed by content: callers (Python's ctypes among them) may reuse
  // an address for another name.
  auto& slot = cache->slots[(reinterpret_cast<std::uintptr_t>(s) >> 3) & (NameCache::kSlots - 1)];
  if (slot.ptr == s && std::strncmp(slot.text, s, NameCache::kMaxLen + 1) == 0) return slot.id;
  const std::size_t len = std::strlen(s);
  const std::uint32_t id = g_tracer->strings.intern(std::string_view(s, len));
  if (len <= NameCache::kMaxLen) {
    slot.ptr = s;
    slot.id = id;
    std::memcpy(slot.text, s, len + 1);
  }
  return id;
}

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

namespace {

// ---------------------------------------------------------------------------------------
// The writer thread.

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
  return trim_newline(read_file("/proc/self/task/" + std::to_string(tid) + "/comm"));
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

std::filesystem::path part_path(const Config& c) {
  const int n = g_tracer->session_counter.fetch_add(1);
  return std::filesystem::path(c.output_dir) /
         (std::to_string(getpid()) + "-" + std::to_string(monotonic_ns()) + "-" + std::to_string(n) + ".dslog");
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
    s.writer->set_meta("host", host_name());
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

// nvtxNameOsThread calls made since the last drain, applied to the tracks.
void apply_thread_names(Session& s) {
  Tracer& t = *g_tracer;
  const std::uint64_t changes = t.thread_names_changes.load();
  if (!s.target || changes == s.thread_names_applied) return;
  s.thread_names_applied = changes;
  std::lock_guard lock(t.thread_names_mu);
  for (const auto& [tid, name] : t.thread_names) s.target->name_thread(tid, name);
}

// Moves every published record into the part file (or discards it when writing failed).
void drain_all(Session& s, bool final = false) {
  Tracer& t = *g_tracer;
  std::vector<ThreadBuffer*> buffers;
  {
    std::lock_guard lock(t.registry_mu);
    buffers = t.buffers;
  }
  t.clock.refine();
#if DREAMSCOPE_HAVE_CUPTI
  const bool with_external_ids = cupti_active();
#else
  const bool with_external_ids = false;
#endif
#if DREAMSCOPE_HAVE_CUPTI
  if (cupti_active()) ensure_writer(s);
#endif
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
#if DREAMSCOPE_HAVE_CUPTI
  if (!s.failed && s.target) t.extra_dropped.fetch_add(cupti_drain(*s.target, t.config.cuda_api_all, final));
#endif
}

std::uint64_t total_dropped() {
  Tracer& t = *g_tracer;
  std::lock_guard lock(t.registry_mu);
  std::uint64_t n = t.retired_dropped + t.extra_dropped.load();
  for (ThreadBuffer* b : t.buffers) n += b->dropped();
  return n;
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

// Writing failed (disk full, file removed): keep the traced process running, drop the rest.
void fail_session(Session& s, const std::exception& e) {
  s.failed = true;
  tracer_add_warning(std::string("cannot write the trace, recording stopped: ") + e.what());
}

// The last drain and the close of a part file; the caller holds work_mu.
void finish_session(Session& s, bool clean, std::int64_t exit_status, const char* why) {
  if (s.closed || s.failed) return;
  s.closed = true;
  try {
    drain_all(s, true);
    if (!s.writer) return; // nothing was ever recorded: no part
    const std::int64_t end = std::max(s.last_time, monotonic_ns());
    // Ranges still open at exit end with the process: the outer step of a loop that
    // called exit() is real time the program spent.
    for (auto& [index, sink] : s.sinks) {
      while (!sink.stack.empty()) {
        write_range(s, sink.stack.back(), end);
        sink.stack.pop_back();
      }
    }
    s.info.end = end;
    s.info.exit_status = exit_status;
    s.writer->update_process(s.process, s.info);
    if (why) s.writer->set_meta("ended_by", why);
    s.writer->set_meta("end", std::to_string(end));
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

// Free chunks the writer keeps mapped for the traced threads: two bursts' worth of head
// start (a chunk holds 64 k events, 2 ms of the fastest burst measured).
constexpr std::size_t kReadyChunks = 2;
// Drained chunks kept for reuse instead of unmapped: at least 16 MiB, and an eighth of the
// cap. A writer that falls behind (a busy machine, a writer sharing a core) drains a backlog
// of chunks at once; unmapping them only to map and fault in fresh ones for the next burst
// would make the traced threads pay page faults again, which on a VM can cost more per
// event than recording it.
constexpr std::size_t kKeptChunks = 8;
std::size_t kept_chunks(std::size_t buffer_bytes) {
  return std::max(kKeptChunks, buffer_bytes / ChunkPool::kDefaultChunkBytes / 8);
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
#if DREAMSCOPE_HAVE_CUPTI
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
#endif
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

Session* open_session(std::int64_t parent_pid) {
  Tracer& t = *g_tracer;
  auto s = std::make_unique<Session>();
  s->info = ProcessInfo{.pid = getpid(), .parent_pid = parent_pid,
                        .name = trim_newline(read_file("/proc/self/comm")), .command = own_command_line(),
                        .start = monotonic_ns()};
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

// Measures what the hot path costs on this machine: the same code the NVTX entry points
// run, into a scratch buffer that no writer drains.
void self_calibrate() {
  Tracer& t = *g_tracer;
  ThreadBuffer scratch(*t.pool, 0, 0, 0);
  const std::uint32_t name = t.strings.intern("calibration");
  constexpr int kRounds = 5, kPerRound = 1000;
  auto median_cost = [&](auto&& body) {
    std::vector<double> costs;
    for (int r = 0; r < kRounds; ++r) {
      scratch.drain([](const Event&, std::uint64_t) {});
      const std::int64_t a = monotonic_ns();
      for (int i = 0; i < kPerRound; ++i) body(i);
      costs.push_back(static_cast<double>(monotonic_ns() - a) / kPerRound);
    }
    std::sort(costs.begin(), costs.end());
    return costs[costs.size() / 2];
  };
  const bool tsc = g_hot.use_tsc;
  // The rounds run in a chunk mapped with its pages present: page faults of a fresh chunk
  // are a one-time cost per thread, not a per-event one. Afterwards the chunk goes back to
  // the free list, where the first thread that records finds it.
  t.pool->refill(1);
  const double range = median_cost([&](int i) {
    scratch.push(Event{ticks(tsc), i, 0, name, 0, static_cast<std::uint8_t>(EventKind::Push), 0});
    scratch.pop(Event{ticks(tsc), kNoPayload, 0, 0, 0, static_cast<std::uint8_t>(EventKind::Pop), 0});
  });
  const double mark = median_cost([&](int i) {
    scratch.add(Event{ticks(tsc), i, 0, name, 0, static_cast<std::uint8_t>(EventKind::Mark), 0});
  });
  const std::string method = "self-calibration at tracer start: median of 5 x 1000 calls into a scratch buffer";
  t.calibration = {CalibrationRecord{"nvtx_range", range, kRounds * kPerRound, method},
                   CalibrationRecord{"nvtx_mark", mark, kRounds * kPerRound, method}};
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

void fork_prepare() {
  if (!g_tracer) return;
#if DREAMSCOPE_HAVE_CUPTI
  cupti_flush_mutex().lock();
#endif
  g_tracer->work_mu.lock();
#if DREAMSCOPE_HAVE_CUPTI
  cupti_queue_mutex().lock();
#endif
  g_tracer->registry_mu.lock();
  g_tracer->pool->mutex().lock();
  g_tracer->strings.mutex().lock();
  g_tracer->domains.mutex().lock();
  g_tracer->warnings_mu.lock();
  g_tracer->thread_names_mu.lock();
}

void fork_parent() {
  if (!g_tracer) return;
  g_tracer->thread_names_mu.unlock();
  g_tracer->warnings_mu.unlock();
  g_tracer->domains.mutex().unlock();
  g_tracer->strings.mutex().unlock();
  g_tracer->pool->mutex().unlock();
  g_tracer->registry_mu.unlock();
#if DREAMSCOPE_HAVE_CUPTI
  cupti_queue_mutex().unlock();
#endif
  g_tracer->work_mu.unlock();
#if DREAMSCOPE_HAVE_CUPTI
  cupti_flush_mutex().unlock();
#endif
}

// The child: the parent's part file and writer thread belong to the parent. Leak them
// untouched (closing would write the parent's buffered records into the parent's file a
// second time), keep only the forking thread's buffer, emptied, and start a part file of
// our own. The other threads' chunks go back to the pool.
void fork_child() {
  if (!g_tracer) return;
  Tracer& t = *g_tracer;
  fork_parent();
  const std::int64_t parent = t.session ? t.session->info.pid : getppid();
  // The old Session is leaked whole: its std::thread names a thread that does not exist here.
  t.session = nullptr;
  {
    std::lock_guard lock(t.registry_mu);
    ThreadBuffer* mine = t_state.buffer;
    std::vector<Chunk*> orphans;
    for (ThreadBuffer* b : t.buffers) {
      if (b == mine) continue;
      for (Chunk* c : b->take_chunks()) orphans.push_back(c);
      delete b;
    }
    std::sort(orphans.begin(), orphans.end());
    orphans.erase(std::unique(orphans.begin(), orphans.end()), orphans.end());
    for (Chunk* c : orphans) t.pool->release(c);
    t.buffers.clear();
    t.retired_dropped = 0;
    if (mine) {
      mine->reset_after_fork(gettid_now());
      t.buffers.push_back(mine);
    }
  }
  t.extra_dropped.store(0);
  t.thread_names.clear(); // the parent's threads; the child's own have other ids
  t.flush_requested.store(0);
  t.flush_done.store(0);
  t.writer_tid.store(0);
#if DREAMSCOPE_HAVE_CUPTI
  cupti_forget_after_fork();
#endif
  t.session = open_session(parent);
}

} // namespace

bool tracer_start() {
  if (g_tracer) return g_tracer->enabled.load();
  auto* t = new Tracer();
  g_tracer = t;
  t->config = config_from_environment();
  if (t->config.output_dir.empty()) {
    // Standalone LD_PRELOAD use: one folder per job, shared with every child through the
    // environment they inherit.
    t->config.output_dir = "dreamscope-" + std::to_string(getpid()) + ".d";
    setenv("DREAMSCOPE_OUTPUT_DIR", t->config.output_dir.c_str(), 1);
  }
  g_hot.use_tsc = tsc_is_invariant();
  t->clock.start(g_hot.use_tsc);
  t->pool = std::make_unique<ChunkPool>(ChunkPool::kDefaultChunkBytes, t->config.buffer_bytes, kept_chunks(t->config.buffer_bytes), g_hot.use_tsc);
  pthread_key_create(&t->exit_key, on_thread_exit);
  self_calibrate();
  t->session = open_session(getppid());
  t->enabled.store(!t->session->failed);
  pthread_atfork(fork_prepare, fork_parent, fork_child);
  return t->enabled.load();
}

void tracer_end_session(bool clean, std::int64_t exit_status, const char* why, bool restore_signals) {
  if (!g_tracer || !g_tracer->session) return;
#if DREAMSCOPE_HAVE_CUPTI
  cupti_flush_all();
#endif
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
