#include "event_buffer.h"

#include <sys/mman.h>

#include <cstring>
#include <new>

namespace dreamscope::tracer {

// The ring is mmap'ed rather than new'ed: pages are touched only as the ring fills, so an
// idle thread costs no resident memory, and malloc is never entered from a traced thread.
ThreadBuffer::ThreadBuffer(std::uint32_t index, std::int64_t tid, std::uint64_t pthread_id, std::size_t capacity)
    : mask_(capacity - 1), index_(index), tid_(tid), pthread_id_(pthread_id) {
  void* p = mmap(nullptr, capacity * sizeof(Event), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  ring_ = static_cast<Event*>(p);
}

ThreadBuffer::~ThreadBuffer() { munmap(ring_, capacity() * sizeof(Event)); }

void ThreadBuffer::reset_after_fork(std::int64_t tid) {
  head_.store(0, std::memory_order_relaxed);
  tail_.store(0, std::memory_order_relaxed);
  cached_tail_ = 0;
  dropped_.store(0, std::memory_order_relaxed);
  // Ranges opened before the fork end in the child too; their pushes went to the parent's
  // trace, so the child's pops must be dropped silently.
  for (std::uint32_t d = 0; d < depth_ && d < kMaxDepth; ++d) set_refused(d, true);
  tid_ = tid;
}

void ThreadBuffer::set_registered_name(const char* n) {
  std::strncpy(name_, n, sizeof name_ - 1);
  name_[sizeof name_ - 1] = 0;
}

} // namespace dreamscope::tracer
