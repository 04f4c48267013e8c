// The hot path's per-thread state. The TLS slot is two pointers in the initial-exec model,
// so the hot path reaches it without a call; everything bigger lives behind the pointers.
#include "tracer_state.h"

#include <pthread.h>
#include <sys/prctl.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace dreamscope::tracer {

// The last names a thread recorded, by address: a hit costs no lock and no hash of the text.
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

constinit __attribute__((tls_model("initial-exec"))) thread_local ThreadState t_state{nullptr, nullptr};

namespace {

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

bool read_schedstat(const char* path, std::int64_t& cpu_ns, std::int64_t& runqueue_ns) {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char text[96];
  const ssize_t n = ::read(fd, text, sizeof text - 1);
  ::close(fd);
  if (n <= 0) return false;
  text[n] = '\0';
  char* end = nullptr;
  const long long cpu = std::strtoll(text, &end, 10);
  if (end == text) return false;
  char* wait_end = nullptr;
  const long long wait = std::strtoll(end, &wait_end, 10);
  if (wait_end == end || cpu < 0 || wait < 0) return false;
  cpu_ns = cpu;
  runqueue_ns = wait;
  return true;
}

void on_thread_exit(void* p) {
  auto* b = static_cast<ThreadBuffer*>(p);
  // The last window of the thread's load (writer_thread.cpp) needs its schedstat, which the
  // writer can no longer read once the thread is gone.
  std::int64_t cpu = 0, wait = 0;
  if (read_schedstat("/proc/thread-self/schedstat", cpu, wait)) {
    b->exit_cpu_ns = cpu;
    b->exit_runqueue_ns = wait;
  }
  b->retired.store(true, std::memory_order_release);
  t_state.buffer = nullptr;
  delete t_state.names;
  t_state.names = nullptr;
}

ThreadBuffer* registered_thread_buffer() { return t_state.buffer; }

ThreadBuffer* exchange_thread_buffer(ThreadBuffer* b) {
  if (!t_state.names) t_state.names = new NameCache(); // register_thread() keeps it
  ThreadBuffer* previous = t_state.buffer;
  t_state.buffer = b;
  return previous;
}

ThreadBuffer& register_thread_buffer() { return *register_thread(); }

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

} // namespace dreamscope::tracer
