#include "event_buffer.h"

#include "clock.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <new>

namespace dreamscope::tracer {

ChunkPool::ChunkPool(std::size_t chunk_bytes, std::size_t max_bytes, std::size_t keep_free, bool use_tsc)
    : chunk_bytes_(chunk_bytes),
      chunk_events_((chunk_bytes - Chunk::kHeaderBytes) / sizeof(Event)),
      max_chunks_(std::max<std::size_t>(1, max_bytes / chunk_bytes)),
      keep_free_(keep_free),
      use_tsc_(use_tsc) {}

ChunkPool::~ChunkPool() {
  while (free_) {
    Chunk* c = free_;
    free_ = c->next.load(std::memory_order_relaxed);
    unmap_chunk(c);
  }
}

namespace {

constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;

// A chunk that will be filled at once, ready to be written by any thread of the process.
// MAP_POPULATE is not enough for that everywhere: a guest under shadow paging (the
// development VM) builds the mapping a process uses at the process's first access to each
// page, not when the kernel populates it, and charged ~5 us a page, 2.5 ms a 2 MiB chunk,
// to the first thread that wrote there: a traced thread in the middle of a burst, in no
// record. So the mapper touches every page itself. The chunk is aligned to a huge page and
// advised as one, so that where transparent huge pages are enabled (even only on madvise)
// the touches fault once per chunk: 62-85 us for the whole chunk on that VM
// (bench/tracer/chunk_pool_bench.cpp). Where the kernel compacts memory to find a huge page
// for advised regions (transparent_hugepage/defrag "madvise", the usual default), the mapper
// may wait for it; a traced thread that maps its own chunk records that wait like the rest
// of the mapping, as a tracer_buffer_map overhead row.
void* map_ready(std::size_t bytes) {
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  const bool huge = bytes % kHugePageBytes == 0;
  const std::size_t slack = huge ? kHugePageBytes - page : 0;
  void* raw = mmap(nullptr, bytes + slack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return raw;
  char* const begin = static_cast<char*>(raw);
  char* const p = huge ? reinterpret_cast<char*>((reinterpret_cast<std::uintptr_t>(begin) + kHugePageBytes - 1) &
                                                 ~(kHugePageBytes - 1))
                       : begin;
  if (p > begin) munmap(begin, static_cast<std::size_t>(p - begin));
  if (begin + bytes + slack > p + bytes) munmap(p + bytes, static_cast<std::size_t>(begin + bytes + slack - (p + bytes)));
  if (huge) madvise(p, bytes, MADV_HUGEPAGE);
  // The kernel populates the pages first (as huge pages where it can; Linux >= 5.14, else
  // the touches fault them in): without huge pages, populating and then touching took half
  // the time of touches alone (2.5 ms a chunk against 5.4 on that VM).
#ifdef MADV_POPULATE_WRITE
  madvise(p, bytes, MADV_POPULATE_WRITE);
#endif
  // Writes, not reads: a read of an untouched private page would map the shared zero page,
  // and the first event written there would fault again.
  for (std::size_t at = 0; at < bytes; at += page) reinterpret_cast<volatile char*>(p)[at] = 0;
  return p;
}

} // namespace

// mmap rather than new: malloc is never entered from a traced thread, and the pages of a
// chunk that was never filled cost no resident memory.
Chunk* ChunkPool::map_chunk(bool prefault) {
  std::size_t n = mapped_.load(std::memory_order_relaxed);
  do {
    if (n >= max_chunks_) return nullptr;
  } while (!mapped_.compare_exchange_weak(n, n + 1, std::memory_order_relaxed));
  void* p = prefault ? map_ready(chunk_bytes_)
                     : mmap(nullptr, chunk_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    mapped_.fetch_sub(1, std::memory_order_relaxed);
    return nullptr;
  }
  return new (p) Chunk();
}

void ChunkPool::unmap_chunk(Chunk* c) {
  munmap(c, chunk_bytes_);
  mapped_.fetch_sub(1, std::memory_order_relaxed);
}

Chunk* ChunkPool::acquire(bool prefault, bool* mapped) {
  if (mapped) *mapped = false;
  {
    std::lock_guard lock(mu_);
    if (Chunk* c = free_) {
      free_ = c->next.load(std::memory_order_relaxed);
      --free_count_;
      c->next.store(nullptr, std::memory_order_relaxed);
      return c;
    }
  }
  Chunk* c = map_chunk(prefault);
  if (mapped) *mapped = c != nullptr;
  return c;
}

void ChunkPool::release(Chunk* c) {
  {
    std::lock_guard lock(mu_);
    if (free_count_ < keep_free_) {
      c->next.store(free_, std::memory_order_relaxed);
      free_ = c;
      ++free_count_;
      return;
    }
  }
  unmap_chunk(c);
}

void ChunkPool::refill(std::size_t n) {
  for (;;) {
    {
      std::lock_guard lock(mu_);
      if (free_count_ >= std::min(n, keep_free_)) return;
    }
    Chunk* c = map_chunk(true);
    if (!c) return;
    std::lock_guard lock(mu_);
    c->next.store(free_, std::memory_order_relaxed);
    free_ = c;
    ++free_count_;
  }
}

std::size_t ChunkPool::free_chunks() {
  std::lock_guard lock(mu_);
  return free_count_;
}

ThreadBuffer::ThreadBuffer(ChunkPool& pool, std::uint32_t index, std::int64_t tid, std::uint64_t pthread_id)
    : pool_(pool), chunk_events_(pool.chunk_events()), index_(index), tid_(tid), pthread_id_(pthread_id) {}

ThreadBuffer::~ThreadBuffer() { release_chain(); }

bool ThreadBuffer::reserve_slow(std::uint64_t until) {
  if (!spare_) {
    // A thread's first chunk fills slowly or never: its pages are faulted in on use. Any
    // later chunk is a burst in progress, which one populating mmap serves faster.
    const std::uint64_t before = ticks(pool_.use_tsc());
    bool mapped = false;
    spare_ = pool_.acquire(current_ != nullptr, &mapped);
    if (!spare_) return false;
    // Faulting in 2 MiB costs from under a millisecond to several, depending on how the
    // machine backs fresh memory (a VM's host may fault each page in again): more than the
    // thousands of events the chunk then holds cost to record, and nothing a calibration
    // at start-up can foresee. The interval is recorded so that correction removes it.
    if (mapped && until + 1 <= write_end_ + chunk_events_) {
      put(Event{before, static_cast<std::int64_t>(ticks(pool_.use_tsc())), 0, 0, 0,
                static_cast<std::uint8_t>(EventKind::BufferMap), 0});
      ++until; // the caller's room now starts one record later
    }
  }
  return until <= write_end_ + (spare_ ? chunk_events_ : 0);
}

void ThreadBuffer::advance() {
  Chunk* c = spare_;
  spare_ = nullptr;
  c->next.store(nullptr, std::memory_order_relaxed);
  if (current_) {
    current_->next.store(c, std::memory_order_release);
  } else {
    first_.store(c, std::memory_order_release);
  }
  current_ = c;
  write_ = c->events();
  write_end_ += chunk_events_;
}

void ThreadBuffer::release_chain() {
  Chunk* c = read_ ? read_ : first_.load(std::memory_order_relaxed);
  while (c) {
    Chunk* next = c->next.load(std::memory_order_relaxed);
    pool_.release(c);
    c = next;
  }
  if (spare_) pool_.release(spare_);
  spare_ = current_ = read_ = nullptr;
  first_.store(nullptr, std::memory_order_relaxed);
  write_ = nullptr;
}

std::vector<Chunk*> ThreadBuffer::take_chunks() {
  std::vector<Chunk*> out;
  for (Chunk* c = read_ ? read_ : first_.load(std::memory_order_relaxed); c; c = c->next.load(std::memory_order_relaxed)) {
    out.push_back(c);
    if (c == current_) break; // whatever a half-done link points to is the spare, below
  }
  if (spare_) out.push_back(spare_);
  spare_ = current_ = read_ = nullptr;
  first_.store(nullptr, std::memory_order_relaxed);
  write_ = nullptr;
  return out;
}

std::size_t ThreadBuffer::chunks_held() const {
  std::size_t n = spare_ ? 1 : 0;
  for (Chunk* c = read_ ? read_ : first_.load(std::memory_order_relaxed); c; c = c->next.load(std::memory_order_relaxed)) ++n;
  return n;
}

void ThreadBuffer::reset_after_fork(std::int64_t tid) {
  // The parent's undrained records belong to the parent's trace: keep one chunk to write
  // into and give the rest of the chain back.
  for (Chunk* c = read_ ? read_ : first_.load(std::memory_order_relaxed); c && c != current_;) {
    Chunk* next = c->next.load(std::memory_order_relaxed);
    pool_.release(c);
    c = next;
  }
  head_.store(0, std::memory_order_relaxed);
  tail_.store(0, std::memory_order_relaxed);
  read_ = nullptr;
  read_end_ = 0;
  if (current_) {
    current_->next.store(nullptr, std::memory_order_relaxed);
    write_end_ = chunk_events_;
  } else {
    write_end_ = 0;
  }
  first_.store(current_, std::memory_order_relaxed);
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
