// The hot path: one fixed-size record per NVTX call, written into the calling thread's
// own single-producer / single-consumer ring. The producer never locks, never allocates
// and never blocks; the writer thread is the only consumer.
//
// Drops are whole ranges: a push is accepted only if the ring keeps room for it and for the
// pops of every range open on the thread, so an accepted range always gets its end, and a
// refused push makes its pop a no-op. `dropped` counts refused events exactly.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace dreamscope::tracer {

enum class EventKind : std::uint8_t {
  Push = 1,       // nvtxRangePush*, nvtxDomainRangePushEx
  Pop = 2,        // nvtxRangePop, nvtxDomainRangePop
  Start = 3,      // nvtxRangeStart*: `id` is the range id
  End = 4,        // nvtxRangeEnd: `id` is the range id
  Mark = 5,       // nvtxMark*
};

// Names: an interned string id (the tracer's string table), or 0 for none.
struct Event {
  std::uint64_t ticks;   // raw clock (clock.h)
  std::int64_t payload;  // batch id / step / any integer payload; kNoPayload when absent
  std::uint64_t id;      // Start/End: the range id
  std::uint32_t name;    // string id
  std::uint16_t domain;  // domain index (0 = the default NVTX domain)
  std::uint8_t kind;     // EventKind
  std::uint8_t category; // category number within the domain (truncated past 255)
};
static_assert(sizeof(Event) == 32, "Event is the hot path's unit: keep it one half cache line");

inline constexpr std::int64_t kNoPayload = INT64_MIN;

class ThreadBuffer {
 public:
  // capacity: a power of two.
  ThreadBuffer(std::uint32_t index, std::int64_t tid, std::uint64_t pthread_id, std::size_t capacity);
  ~ThreadBuffer();
  ThreadBuffer(const ThreadBuffer&) = delete;
  ThreadBuffer& operator=(const ThreadBuffer&) = delete;

  // Producer side (the owning thread only).
  inline bool push(const Event& e) {
    if (depth_ >= kMaxDepth || !reserve(static_cast<std::uint64_t>(depth_) + 2)) {
      if (depth_ < kMaxDepth) set_refused(depth_, true);
      ++depth_;
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    set_refused(depth_, false);
    ++depth_;
    put(e);
    return true;
  }
  inline void pop(const Event& e) {
    if (depth_ == 0) return; // an unbalanced pop: nothing is open on this thread
    --depth_;
    if (depth_ >= kMaxDepth || refused(depth_)) return;
    put(e); // room was reserved by the push
  }
  // A standalone event (mark, start, end): needs room beyond the reserved pops.
  inline bool add(const Event& e) {
    if (!reserve(static_cast<std::uint64_t>(depth_) + 1)) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    put(e);
    return true;
  }
  // Records published and not yet drained (consumer side).
  std::uint64_t pending() const {
    return head_.load(std::memory_order_acquire) - tail_.load(std::memory_order_relaxed);
  }
  // Absolute position of the next record: with the thread index, a process-unique id.
  std::uint64_t position() const { return head_.load(std::memory_order_relaxed); }

  // Consumer side (the writer thread). Calls f(event, absolute position) for every
  // published record, then frees their slots.
  template <class F>
  std::size_t drain(F&& f) {
    const std::uint64_t head = head_.load(std::memory_order_acquire);
    std::uint64_t tail = tail_.load(std::memory_order_relaxed);
    const std::size_t n = static_cast<std::size_t>(head - tail);
    for (; tail != head; ++tail) f(ring_[tail & mask_], tail);
    tail_.store(tail, std::memory_order_release);
    return n;
  }

  // Forget everything (a fork child keeps the forking thread's buffer but not its records).
  void reset_after_fork(std::int64_t tid);

  std::uint32_t index() const { return index_; }
  std::int64_t tid() const { return tid_; }
  std::uint64_t pthread_id() const { return pthread_id_; }
  // The thread's name when it registered (its first event); the writer prefers the name
  // the thread has when first drained, and falls back to this one once it has exited.
  const char* registered_name() const { return name_; }
  void set_registered_name(const char* n);
  std::uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  std::size_t capacity() const { return mask_ + 1; }

  // Set by the thread's exit; the writer frees the buffer once drained.
  std::atomic<bool> retired{false};

 private:
  static constexpr std::uint32_t kMaxDepth = 256;

  inline bool reserve(std::uint64_t needed) {
    const std::uint64_t head = head_.load(std::memory_order_relaxed);
    if (head - cached_tail_ + needed <= capacity()) return true;
    cached_tail_ = tail_.load(std::memory_order_acquire);
    return head - cached_tail_ + needed <= capacity();
  }
  inline void put(const Event& e) {
    const std::uint64_t head = head_.load(std::memory_order_relaxed);
    ring_[head & mask_] = e;
    head_.store(head + 1, std::memory_order_release);
  }
  bool refused(std::uint32_t d) const { return (refused_[d >> 6] >> (d & 63)) & 1u; }
  void set_refused(std::uint32_t d, bool v) {
    const std::uint64_t bit = std::uint64_t{1} << (d & 63);
    refused_[d >> 6] = v ? (refused_[d >> 6] | bit) : (refused_[d >> 6] & ~bit);
  }

  alignas(64) std::atomic<std::uint64_t> head_{0};
  std::uint64_t cached_tail_ = 0;
  std::uint32_t depth_ = 0;
  std::uint64_t refused_[kMaxDepth / 64] = {};
  Event* ring_;
  std::size_t mask_;
  alignas(64) std::atomic<std::uint64_t> tail_{0};
  std::atomic<std::uint64_t> dropped_{0};
  std::uint32_t index_;
  std::int64_t tid_;
  std::uint64_t pthread_id_;
  char name_[16] = {};
};

} // namespace dreamscope::tracer
