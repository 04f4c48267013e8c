// The hot path: one fixed-size record per NVTX call, appended to the calling thread's own
// single-producer / single-consumer chain of chunks. The producer never locks, never
// allocates and never blocks while its current chunk has room; the writer thread is the
// only consumer.
//
// A chain grows instead of wrapping: when a thread's chunk is full it links another one
// from the process's ChunkPool, so a burst that fits in memory is recorded whole. The
// writer drains chunk by chunk and gives every drained chunk back to the pool, which keeps
// a few of them mapped (and their pages faulted in) for the next burst. The pool's cap on
// mapped bytes (DREAMSCOPE_BUFFER_MB) is the only limit.
//
// Drops are whole ranges: a push is accepted only if the chain keeps room for it and for
// the pops of every range open on the thread, so an accepted range always gets its end,
// and a refused push makes its pop a no-op. `dropped` counts refused events exactly.
#pragma once

#include "clock.h"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

namespace dreamscope::tracer {

enum class EventKind : std::uint8_t {
  Push = 1,       // nvtxRangePush*, nvtxDomainRangePushEx
  Pop = 2,        // nvtxRangePop, nvtxDomainRangePop
  Start = 3,      // nvtxRangeStart*: `id` is the range id
  End = 4,        // nvtxRangeEnd: `id` is the range id
  Mark = 5,       // nvtxMark*
  // The tracer's own work on the thread: `ticks` .. `payload` (ticks) spent mapping a chunk
  // because the pool had none ready. Overhead correction removes it from the thread.
  BufferMap = 6,
  // The same for the counted ranges timed at the end of a probe step (nvtx_injection.cpp,
  // time_counted_ranges): ThreadBuffer::kTimedCountedRanges of them back to back.
  CountedTiming = 7,
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

// One mmap'ed block: this header, then the events. `next` is written by the producer before
// it publishes the first event past this chunk, and read by the consumer only after that.
struct Chunk {
  std::atomic<Chunk*> next{nullptr};
  Event* events() { return reinterpret_cast<Event*>(reinterpret_cast<char*>(this) + kHeaderBytes); }
  static constexpr std::size_t kHeaderBytes = sizeof(Event);
};

// Every chunk of the process. Chunks are mmap'ed, never malloc'ed (a traced thread may be
// inside malloc when it records), counted against a cap, and recycled: a drained chunk goes
// back on a bounded free list with its pages still faulted in, so steady recording costs no
// system call and no page fault; chunks past that bound are unmapped.
class ChunkPool {
 public:
  static constexpr std::size_t kDefaultChunkBytes = std::size_t{2} << 20; // 64 k events

  // chunk_bytes: a multiple of the page size; max_bytes: the cap on mapped chunks (at least
  // one chunk); keep_free: how many drained chunks stay mapped for reuse; use_tsc: the
  // clock of the BufferMap events the traced threads record (clock.h).
  ChunkPool(std::size_t chunk_bytes, std::size_t max_bytes, std::size_t keep_free, bool use_tsc = false);
  ~ChunkPool(); // unmaps the free list; chunks still held by buffers are theirs to release
  ChunkPool(const ChunkPool&) = delete;
  ChunkPool& operator=(const ChunkPool&) = delete;

  // A chunk from the free list, else a new mapping while under the cap, else nullptr.
  // `prefault`: map it with its pages already present (one system call instead of one
  // fault per page), for chunks that will be filled at once. `mapped` (optional) tells
  // whether it is a new mapping.
  Chunk* acquire(bool prefault, bool* mapped = nullptr);
  void release(Chunk* c);
  // Maps chunks until `n` are free (or the cap is reached): the writer thread calls it so
  // that the traced threads find the next chunk of a burst ready.
  void refill(std::size_t n);

  std::size_t chunk_events() const { return chunk_events_; }
  std::size_t chunk_bytes() const { return chunk_bytes_; }
  std::size_t mapped_chunks() const { return mapped_.load(std::memory_order_relaxed); }
  std::size_t max_chunks() const { return max_chunks_; }
  std::size_t free_chunks();
  bool use_tsc() const { return use_tsc_; }
  // Held across fork (fork_prepare), so that a child never inherits it locked.
  std::mutex& mutex() { return mu_; }

 private:
  Chunk* map_chunk(bool prefault);
  void unmap_chunk(Chunk* c);

  const std::size_t chunk_bytes_;
  const std::size_t chunk_events_;
  const std::size_t max_chunks_;
  const std::size_t keep_free_;
  const bool use_tsc_;
  std::atomic<std::size_t> mapped_{0};
  std::mutex mu_;
  Chunk* free_ = nullptr; // linked through Chunk::next
  std::size_t free_count_ = 0;
};

class ThreadBuffer {
 public:
  ThreadBuffer(ChunkPool& pool, std::uint32_t index, std::int64_t tid, std::uint64_t pthread_id);
  ~ThreadBuffer(); // gives every chunk back; only once the producer is gone
  ThreadBuffer(const ThreadBuffer&) = delete;
  ThreadBuffer& operator=(const ThreadBuffer&) = delete;

  // Producer side (the owning thread only).
  inline bool push(const Event& e) {
    if (depth_ >= kMaxDepth || !reserve(static_cast<std::uint64_t>(depth_) + 2)) {
      if (depth_ < kMaxDepth) {
        set_refused(depth_, true);
        set_counted(depth_, false);
      }
      ++depth_;
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    set_refused(depth_, false);
    set_counted(depth_, false);
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
  // A cost probe's push (nvtx_injection.cpp, counted_push): counted, not recorded, and its pop
  // skipped whenever it comes. Only a push inside two open ranges: a thread's two outermost
  // levels (a step and its phases: wait, fetch, prep, forward) are always recorded, since the
  // analyses read them whole. False: record it.
  static constexpr std::uint32_t kCountedFromDepth = 2;
  // `steps`: 0 while a time-window probe runs; else one outermost range in `steps`, on average,
  // is a probe step, whose inner pushes are counted (probe_step_end says when it ends).
  inline bool count_push(std::uint32_t steps) {
    if (steps != 0) {
      if (depth_ == 0) {
        if (steps_left_ == 0) steps_left_ = draw_steps(steps);
        if (--steps_left_ == 0) {
          in_probe_step_ = true;
          step_counted_ = 0;
        }
        return false;
      }
      if (!in_probe_step_) return false;
    }
    if (depth_ < kCountedFromDepth || depth_ >= kMaxDepth) return false;
    set_refused(depth_, true);
    set_counted(depth_, true);
    ++depth_;
    if (timing_counted_) return true;
    ++step_counted_;
    // The pop comes later, counted where it comes. A probe step adds its count at its end
    // (probe_step_end), so that its counted calls do not touch probes_, on the consumer's line.
    if (steps == 0) probes_.store(probes_.load(std::memory_order_relaxed) + 2, std::memory_order_relaxed);
    return true;
  }
  // The pop of a counted push: nothing to record. False for every other pop, a refused push's
  // included (its pop still goes through pop(), which the CUPTI correlation stack relies on).
  inline bool skip_pop() {
    if (depth_ == 0 || depth_ > kMaxDepth || !counted(depth_ - 1)) return false;
    --depth_;
    set_counted(depth_, false);
    return true;
  }
  // At the end of a probe step, the counted path is timed on the thread (nvtx_injection.cpp,
  // time_counted_ranges): this many ranges, counted as a probe step counts them but left out of
  // probe_events, between begin_ and end_counted_timing.
  static constexpr int kTimedCountedRanges = 256;
  void begin_counted_timing() {
    depth_ += kCountedFromDepth;
    in_probe_step_ = true;
    timing_counted_ = true;
  }
  void end_counted_timing() {
    depth_ -= kCountedFromDepth;
    in_probe_step_ = false;
    timing_counted_ = false;
  }
  // After a pop: whether it ended a probe step, and then how many pushes the step counted.
  // A step that counted nothing (a thread whose ranges nest less than three deep) measured
  // nothing: no mark, no timing.
  inline bool probe_step_end(std::uint32_t& counted) {
    if (!in_probe_step_ || depth_ != 0) [[likely]] return false;
    in_probe_step_ = false;
    counted = step_counted_;
    probes_.store(probes_.load(std::memory_order_relaxed) + 2 * std::uint64_t{counted}, std::memory_order_relaxed);
    return counted > 0;
  }
  // Consumer: the calls counted and not recorded so far (a counted push and its pop: 2).
  std::uint64_t probes() const { return probes_.load(std::memory_order_relaxed); }

  // In-run cost sampling. Start-up calibration times the hot path in a loop, in whatever state
  // the machine was in then; a run can later cost twice that (caches the job fills, a busy
  // sibling core). So the entry points time themselves in the run: one call in
  // kCostSampleEvery reads the clock again when its record is written and adds the ticks since
  // the call began to its kind's tally, which the writer reads for each window of the run.
  // The countdown costs a decrement and a branch per call; the sample, a clock read per 64.
  static constexpr std::uint32_t kCostSampleEvery = 64;
  struct CostTally {
    std::atomic<std::uint64_t> calls{0};
    std::atomic<std::uint64_t> ticks{0};
  };
  static constexpr std::size_t kCostKinds = 5; // EventKind Push .. Mark
  // A timed call that took longer than `cap` ticks was preempted or mapped a chunk: the first
  // is the scheduler's (thread_load's runqueue time), the second an overhead record of its
  // own; either would count twice, and one such call among a window's few hundred samples
  // would swamp their mean. The next countdown is drawn from 32..95 (64 on average) by a
  // xorshift generator: a fixed period would time the same kind of call forever in a loop of
  // push/pop pairs, and the clock's low bits are not random enough on every machine.
  inline void sample_cost(EventKind kind, std::uint64_t call_start, bool use_tsc, std::uint64_t cap) {
    if (--cost_countdown_ != 0) return;
    const std::uint64_t now = ticks(use_tsc);
    cost_random_ ^= cost_random_ << 13;
    cost_random_ ^= cost_random_ >> 7;
    cost_random_ ^= cost_random_ << 17;
    cost_countdown_ = kCostSampleEvery / 2 + static_cast<std::uint32_t>(cost_random_ % kCostSampleEvery);
    if (now - call_start <= cap) add_cost(kind, now - call_start);
  }
  // Producer only: plain read-modify-write, published with relaxed stores for the writer.
  inline void add_cost(EventKind kind, std::uint64_t ticks) {
    CostTally& c = cost_[static_cast<std::size_t>(kind) - 1];
    c.calls.store(c.calls.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    c.ticks.store(c.ticks.load(std::memory_order_relaxed) + ticks, std::memory_order_relaxed);
  }
  // Consumer: the tally of a kind so far (calls, ticks).
  std::pair<std::uint64_t, std::uint64_t> cost_tally(EventKind kind) const {
    const CostTally& c = cost_[static_cast<std::size_t>(kind) - 1];
    return {c.calls.load(std::memory_order_relaxed), c.ticks.load(std::memory_order_relaxed)};
  }

  // Records published and not yet drained (consumer side).
  std::uint64_t pending() const {
    return head_.load(std::memory_order_acquire) - tail_.load(std::memory_order_relaxed);
  }
  // Absolute position of the next record: with the thread index, a process-unique id.
  std::uint64_t position() const { return head_.load(std::memory_order_relaxed); }

  // Consumer side (the writer thread). Calls f(event, absolute position) for every
  // published record, then gives the chunks it emptied back to the pool.
  template <class F>
  std::size_t drain(F&& f) {
    const std::uint64_t head = head_.load(std::memory_order_acquire);
    std::uint64_t tail = tail_.load(std::memory_order_relaxed);
    const std::size_t n = static_cast<std::size_t>(head - tail);
    while (tail != head) {
      if (tail == read_end_) {
        // The producer wrote past this chunk, so it linked the next one before publishing.
        Chunk* next = read_ ? read_->next.load(std::memory_order_acquire) : first_.load(std::memory_order_acquire);
        if (read_) pool_.release(read_);
        read_ = next;
        read_end_ += chunk_events_;
      }
      Event* events = read_->events();
      const std::uint64_t base = read_end_ - chunk_events_;
      const std::uint64_t stop = head < read_end_ ? head : read_end_;
      for (; tail != stop; ++tail) f(events[tail - base], tail);
    }
    tail_.store(tail, std::memory_order_release);
    return n;
  }

  // Forget everything (a fork child keeps the forking thread's buffer but not its records).
  void reset_after_fork(std::int64_t tid);
  // Hands over every chunk and leaves the buffer holding none. For a fork child, which frees
  // the buffers of threads it did not inherit: fork may have caught such a thread in the
  // middle of linking its spare, so a chunk can appear twice (the caller removes duplicates).
  std::vector<Chunk*> take_chunks();

  std::uint32_t index() const { return index_; }
  std::int64_t tid() const { return tid_; }
  std::uint64_t pthread_id() const { return pthread_id_; }
  // The thread's name when it registered (its first event); the writer prefers the name
  // the thread has when first drained, and falls back to this one once it has exited.
  const char* registered_name() const { return name_; }
  void set_registered_name(const char* n);
  std::uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  // Chunks this buffer holds: its chain plus a spare taken ahead of need.
  std::size_t chunks_held() const;

  // Set by the thread's exit; the writer frees the buffer once drained.
  std::atomic<bool> retired{false};
  // The thread's schedstat (CPU time, time waiting for a core) read by the thread itself as it
  // exits, when its /proc entry is about to go: written before `retired`, read after it.
  std::int64_t exit_cpu_ns = INT64_MIN;
  std::int64_t exit_runqueue_ns = INT64_MIN;

 private:
  static constexpr std::uint32_t kMaxDepth = 256;

  // Room for `needed` more events: what is left of the current chunk, plus the spare.
  inline bool reserve(std::uint64_t needed) {
    const std::uint64_t head = head_.load(std::memory_order_relaxed);
    if (head + needed <= write_end_) return true;
    return reserve_slow(head + needed);
  }
  bool reserve_slow(std::uint64_t until);
  inline void put(const Event& e) {
    const std::uint64_t head = head_.load(std::memory_order_relaxed);
    if (head == write_end_) advance();
    write_[head - (write_end_ - chunk_events_)] = e;
    head_.store(head + 1, std::memory_order_release);
  }
  // Moves the producer onto its spare chunk (reserve() made sure there is one).
  void advance();
  void release_chain();
  bool refused(std::uint32_t d) const { return (refused_[d >> 6] >> (d & 63)) & 1u; }
  bool counted(std::uint32_t d) const { return (counted_[d >> 6] >> (d & 63)) & 1u; }
  void set_counted(std::uint32_t d, bool v) {
    const std::uint64_t bit = std::uint64_t{1} << (d & 63);
    counted_[d >> 6] = v ? (counted_[d >> 6] | bit) : (counted_[d >> 6] & ~bit);
  }
  void set_refused(std::uint32_t d, bool v) {
    const std::uint64_t bit = std::uint64_t{1} << (d & 63);
    refused_[d >> 6] = v ? (refused_[d >> 6] | bit) : (refused_[d >> 6] & ~bit);
  }

  // Producer: the hot fields first, on their own cache line.
  alignas(64) std::atomic<std::uint64_t> head_{0};
  std::uint64_t write_end_ = 0; // absolute position where the current chunk ends
  Event* write_ = nullptr;      // the current chunk's events
  std::uint32_t depth_ = 0;
  bool in_probe_step_ = false; // beside depth_: every pop reads both (probe_step_end)
  std::uint32_t cost_countdown_ = kCostSampleEvery;
  std::uint64_t cost_random_ = 0x9E3779B97F4A7C15ull;
  std::uint64_t refused_[kMaxDepth / 64] = {};
  std::uint64_t counted_[kMaxDepth / 64] = {}; // of the refused: counted by a cost probe
  // Probe steps: outermost ranges until the next, and the pushes the open one counted.
  // Drawn from half to 1.5 times the mean apart, so that a job whose steps repeat with that
  // period does not meet the probe in one kind of step every time.
  std::uint32_t steps_left_ = 0;
  std::uint32_t step_counted_ = 0;
  bool timing_counted_ = false;
  std::uint64_t step_random_ = 0xD1B54A32D192ED03ull;
  std::uint32_t draw_steps(std::uint32_t mean) {
    step_random_ ^= step_random_ << 13;
    step_random_ ^= step_random_ >> 7;
    step_random_ ^= step_random_ << 17;
    return std::max<std::uint32_t>(1, mean / 2 + static_cast<std::uint32_t>(step_random_ % std::max<std::uint32_t>(1, mean)));
  }
  Chunk* current_ = nullptr;
  Chunk* spare_ = nullptr;
  ChunkPool& pool_;
  const std::uint64_t chunk_events_;
  // The first chunk of the chain, for the consumer's first read.
  std::atomic<Chunk*> first_{nullptr};
  // Consumer.
  alignas(64) std::atomic<std::uint64_t> tail_{0};
  Chunk* read_ = nullptr;
  std::uint64_t read_end_ = 0;
  std::atomic<std::uint64_t> dropped_{0};
  std::atomic<std::uint64_t> probes_{0};
  CostTally cost_[kCostKinds];
  std::uint32_t index_;
  std::int64_t tid_;
  std::uint64_t pthread_id_;
  char name_[16] = {};
};

} // namespace dreamscope::tracer
