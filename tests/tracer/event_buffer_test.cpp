// The per-thread chunk chains: growth past one chunk, the memory cap with whole-range drops
// counted exactly, chunk recycling, concurrent draining, and the fork child's reset.
#include "event_buffer.h"

#include <gtest/gtest.h>

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace dreamscope::tracer {
namespace {

constexpr std::size_t kSmallChunk = 64 * 1024; // 2047 events: bursts cross chunks quickly

Event ev(EventKind kind, std::int64_t payload, std::uint32_t name = 1) {
  return Event{static_cast<std::uint64_t>(payload), payload, 0, name, 0, static_cast<std::uint8_t>(kind), 0};
}

// Replays drained events as a thread's stack would: every pop must close an open push. The
// tracer's records of its own chunk mappings are counted apart from the thread's events.
struct Replay {
  std::vector<std::int64_t> open;
  std::size_t ranges = 0, events = 0, buffer_maps = 0;
  std::uint64_t next_position = 0;
  bool balanced = true, positions_in_order = true, map_intervals_ordered = true;

  void operator()(const Event& e, std::uint64_t pos) {
    positions_in_order = positions_in_order && pos == next_position;
    next_position = pos + 1;
    if (e.kind == static_cast<std::uint8_t>(EventKind::BufferMap)) {
      ++buffer_maps;
      map_intervals_ordered = map_intervals_ordered && e.ticks <= static_cast<std::uint64_t>(e.payload);
      return;
    }
    ++events;
    if (e.kind == static_cast<std::uint8_t>(EventKind::Push)) {
      open.push_back(e.payload);
    } else if (e.kind == static_cast<std::uint8_t>(EventKind::Pop)) {
      if (open.empty()) {
        balanced = false;
      } else {
        open.pop_back();
        ++ranges;
      }
    }
  }
};

TEST(ChunkChain, ABurstLargerThanOneChunkIsRecordedWhole) {
  ChunkPool pool(kSmallChunk, 64 << 20, 4);
  ThreadBuffer b(pool, 1, 1, 1);
  constexpr int kRanges = 50'000; // 100 k events: about 49 chunks, none drained meanwhile
  for (int i = 0; i < kRanges; ++i) {
    ASSERT_TRUE(b.push(ev(EventKind::Push, i)));
    b.pop(ev(EventKind::Pop, i));
  }
  EXPECT_EQ(b.dropped(), 0u);
  // Every chunk was a new mapping, made by the recording thread itself: each left a record
  // of the time it took, for overhead correction.
  const std::size_t mapped = pool.mapped_chunks();
  EXPECT_EQ(b.pending(), 2u * kRanges + mapped);
  EXPECT_GE(b.chunks_held(), (2 * kRanges + pool.chunk_events() - 1) / pool.chunk_events());
  std::vector<std::int64_t> payloads;
  Replay r;
  b.drain([&](const Event& e, std::uint64_t pos) {
    r(e, pos);
    if (e.kind == static_cast<std::uint8_t>(EventKind::Push)) payloads.push_back(e.payload);
  });
  EXPECT_EQ(r.ranges, static_cast<std::size_t>(kRanges));
  EXPECT_TRUE(r.balanced);
  EXPECT_TRUE(r.positions_in_order);
  EXPECT_EQ(r.buffer_maps, mapped);
  EXPECT_TRUE(r.map_intervals_ordered);
  ASSERT_EQ(payloads.size(), static_cast<std::size_t>(kRanges));
  for (int i = 0; i < kRanges; ++i) ASSERT_EQ(payloads[i], i);
  // Drained, the chain is down to the chunk being written.
  EXPECT_EQ(b.chunks_held(), 1u);
}

TEST(ChunkChain, PastTheCapWholeRangesAreDroppedAndCountedExactly) {
  ChunkPool pool(kSmallChunk, 3 * kSmallChunk, 4); // three chunks in all
  ThreadBuffer b(pool, 1, 1, 1);
  // Outer ranges, each with two nested ranges, until well past what three chunks hold.
  constexpr int kOuter = 4'000; // 12 k ranges, 24 k events: four times the cap
  for (int i = 0; i < kOuter; ++i) {
    b.push(ev(EventKind::Push, 3 * i));
    b.push(ev(EventKind::Push, 3 * i + 1));
    b.pop(ev(EventKind::Pop, 0));
    b.push(ev(EventKind::Push, 3 * i + 2));
    b.pop(ev(EventKind::Pop, 0));
    b.pop(ev(EventKind::Pop, 0));
  }
  EXPECT_EQ(pool.mapped_chunks(), 3u);
  Replay r;
  b.drain(r);
  EXPECT_TRUE(r.balanced);
  EXPECT_TRUE(r.open.empty()) << "an accepted range lost its end";
  EXPECT_TRUE(r.positions_in_order);
  EXPECT_GT(b.dropped(), 0u);
  EXPECT_EQ(r.ranges + b.dropped(), 3u * kOuter);
  // Nearly all of the three chunks was used: the cap, not a smaller limit, refused the rest.
  EXPECT_GE(r.events + 2 * 3, 3 * pool.chunk_events() - 3);

  // Drained, the chunks come back and recording resumes.
  const std::uint64_t dropped = b.dropped();
  for (int i = 0; i < 1000; ++i) {
    ASSERT_TRUE(b.push(ev(EventKind::Push, i)));
    b.pop(ev(EventKind::Pop, i));
  }
  EXPECT_EQ(b.dropped(), dropped);
}

TEST(ChunkChain, MarksPastTheCapAreCountedAndLeaveRoomForOpenRangesToEnd) {
  ChunkPool pool(kSmallChunk, kSmallChunk, 0); // one chunk
  ThreadBuffer b(pool, 1, 1, 1);
  ASSERT_TRUE(b.push(ev(EventKind::Push, -1)));
  std::size_t marks = 0;
  for (int i = 0; i < 5000; ++i) marks += b.add(ev(EventKind::Mark, i)) ? 1 : 0;
  b.pop(ev(EventKind::Pop, -1));
  EXPECT_EQ(marks + b.dropped(), 5000u);
  // The chunk also holds the push, the room kept for its pop, and the record of its mapping.
  EXPECT_EQ(marks, pool.chunk_events() - 3);
  Replay r;
  b.drain(r);
  EXPECT_EQ(r.ranges, 1u);
  EXPECT_TRUE(r.open.empty());
}

TEST(ChunkChain, DrainedChunksAreRecycledNotRemapped) {
  ChunkPool pool(kSmallChunk, 64 << 20, 4);
  ThreadBuffer b(pool, 1, 1, 1);
  std::size_t mapped_after_first = 0;
  Replay later_rounds;
  for (int round = 0; round < 20; ++round) {
    for (std::size_t i = 0; i < 3 * pool.chunk_events(); ++i) b.add(ev(EventKind::Mark, 0));
    b.drain([&](const Event& e, std::uint64_t pos) {
      if (round > 1) later_rounds(e, pos);
    });
    // The first two rounds map what the chain needs: the chunk being written stays with it.
    if (round == 1) mapped_after_first = pool.mapped_chunks();
  }
  EXPECT_EQ(b.dropped(), 0u);
  // From then on every chunk comes off the free list: no new mapping, and so no time spent
  // mapping for the thread to be charged.
  EXPECT_EQ(pool.mapped_chunks(), mapped_after_first);
  EXPECT_EQ(later_rounds.buffer_maps, 0u);
  EXPECT_EQ(later_rounds.events, 18 * 3 * pool.chunk_events());
  EXPECT_LE(pool.free_chunks(), 4u);
}

TEST(ChunkChain, AFreeListLongerThanItsBoundIsUnmapped) {
  ChunkPool pool(kSmallChunk, 64 << 20, 2);
  {
    ThreadBuffer b(pool, 1, 1, 1);
    // Ten chunks: each holds the record of its own mapping and chunk_events() - 1 marks.
    for (std::size_t i = 0; i < 10 * (pool.chunk_events() - 1); ++i) b.add(ev(EventKind::Mark, 0));
    EXPECT_EQ(pool.mapped_chunks(), 10u);
  }
  EXPECT_EQ(pool.free_chunks(), 2u);
  EXPECT_EQ(pool.mapped_chunks(), 2u);
}

// Pages of [p, p + bytes) the kernel has resident, by mincore.
std::size_t resident_pages(const void* p, std::size_t bytes) {
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> in((bytes + page - 1) / page);
  if (mincore(const_cast<void*>(p), bytes, in.data()) != 0) return 0;
  return static_cast<std::size_t>(std::count_if(in.begin(), in.end(), [](unsigned char c) { return c & 1; }));
}

// The VmFlags of the mapping that holds `p`, from /proc/self/smaps ("" if not found).
std::string vm_flags_at(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    std::uintptr_t lo = 0, hi = 0;
    // A mapping's first line starts "lo-hi "; its fields ("Rss:", "VmFlags:") never do.
    if (std::sscanf(line.c_str(), "%" SCNxPTR "-%" SCNxPTR " ", &lo, &hi) == 2) {
      inside = lo <= at && at < hi;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return line;
    }
  }
  return "";
}

// A chunk mapped ahead of a burst is written by whichever thread takes it. Its pages must be
// resident and already touched by the mapper (a guest under shadow paging otherwise charges
// ~5 us a page to that thread: the pool's benchmark shows it), and a 2 MiB chunk is aligned
// and advised as a huge page, so that touching it faults once where the kernel grants one.
// A thread's first chunk, which may never fill, stays unpopulated.
TEST(ChunkChain, ChunksMappedAheadAreResidentAlignedAndAdvisedAsHugePages) {
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  ChunkPool pool(ChunkPool::kDefaultChunkBytes, 8 * ChunkPool::kDefaultChunkBytes, 4);
  pool.refill(2);
  Chunk* ready[2] = {pool.acquire(false), pool.acquire(false)};
  for (Chunk* c : ready) {
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(c) % ChunkPool::kDefaultChunkBytes, 0u);
    EXPECT_EQ(resident_pages(c, ChunkPool::kDefaultChunkBytes), ChunkPool::kDefaultChunkBytes / page);
    const std::string flags = vm_flags_at(c);
    if (!flags.empty()) {
      EXPECT_NE(flags.find(" hg"), std::string::npos) << flags;
    }
  }
  // The free list is empty now: a chunk taken without prefault is a new, lazy mapping.
  bool mapped = false;
  Chunk* lazy = pool.acquire(false, &mapped);
  ASSERT_NE(lazy, nullptr);
  EXPECT_TRUE(mapped);
  // Its header's page only, unless the kernel backs every aligned anonymous mapping with a
  // huge page at its first touch (transparent huge pages "always"): then the header's write
  // brings in the whole chunk, and this is no check of the pool's.
  std::ifstream thp("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string thp_mode;
  std::getline(thp, thp_mode);
  if (thp_mode.find("[always]") == std::string::npos) {
    EXPECT_LE(resident_pages(lazy, ChunkPool::kDefaultChunkBytes), 1u);
  }
  // A burst's chunk mapped by the thread itself is ready the same way.
  Chunk* burst = pool.acquire(true, &mapped);
  ASSERT_NE(burst, nullptr);
  EXPECT_TRUE(mapped);
  EXPECT_EQ(resident_pages(burst, ChunkPool::kDefaultChunkBytes), ChunkPool::kDefaultChunkBytes / page);
  for (Chunk* c : {ready[0], ready[1], lazy, burst}) pool.release(c);
  EXPECT_EQ(pool.mapped_chunks(), 4u);

  // Chunks that are not a multiple of a huge page are populated and touched all the same.
  ChunkPool small(kSmallChunk, 64 << 20, 2);
  small.refill(1);
  Chunk* c = small.acquire(false);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(resident_pages(c, kSmallChunk), kSmallChunk / page);
  small.release(c);
}

// Producers on their own threads, one consumer draining all of them meanwhile, as the
// writer thread does: every thread's events arrive whole and in order.
TEST(ChunkChain, ConcurrentProducersAndOneConsumer) {
  ChunkPool pool(kSmallChunk, 256 << 20, 4);
  constexpr int kThreads = 4;
  constexpr int kRanges = 200'000;
  std::vector<std::unique_ptr<ThreadBuffer>> buffers;
  for (int t = 0; t < kThreads; ++t) buffers.push_back(std::make_unique<ThreadBuffer>(pool, t + 1, t + 1, 0));
  std::atomic<int> done{0};
  std::vector<std::thread> producers;
  for (int t = 0; t < kThreads; ++t) {
    producers.emplace_back([&, t] {
      ThreadBuffer& b = *buffers[t];
      for (int i = 0; i < kRanges; ++i) {
        b.push(ev(EventKind::Push, i));
        b.pop(ev(EventKind::Pop, i));
      }
      done.fetch_add(1);
    });
  }
  std::vector<std::int64_t> expected(kThreads, 0);
  std::vector<Replay> replays(kThreads);
  bool in_order = true;
  auto drain_all = [&] {
    for (int t = 0; t < kThreads; ++t) {
      buffers[t]->drain([&](const Event& e, std::uint64_t pos) {
        replays[t](e, pos);
        if (e.kind == static_cast<std::uint8_t>(EventKind::Push)) {
          in_order = in_order && e.payload == expected[t];
          expected[t] = e.payload + 1;
        }
      });
    }
  };
  while (done.load() < kThreads) drain_all();
  for (auto& p : producers) p.join();
  drain_all();
  EXPECT_TRUE(in_order);
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(buffers[t]->dropped(), 0u);
    EXPECT_EQ(replays[t].ranges, static_cast<std::size_t>(kRanges)) << "thread " << t;
    EXPECT_TRUE(replays[t].balanced);
    EXPECT_TRUE(replays[t].positions_in_order);
  }
}

// Threads that come and go, as in a job with a thread pool: each retired buffer is drained
// and freed by the consumer, and its chunks serve the threads that start after it. No
// chunk is ever in two chains at once: every thread's events are its own, in order.
TEST(ChunkChain, RetiredThreadsHandTheirChunksOn) {
  ChunkPool pool(kSmallChunk, 512 << 20, 4);
  constexpr int kThreads = 64;
  constexpr int kRanges = 3000; // about three chunks each
  struct Slot {
    std::unique_ptr<ThreadBuffer> buffer;
    std::int64_t expected = 0;
    Replay replay;
    bool in_order = true;
  };
  std::vector<Slot> slots(kThreads);
  std::mutex mu;
  std::vector<ThreadBuffer*> live;
  std::atomic<int> started{0};
  std::vector<std::thread> producers;
  for (int t = 0; t < kThreads; ++t) {
    producers.emplace_back([&, t] {
      auto b = std::make_unique<ThreadBuffer>(pool, t + 1, t + 1, 0);
      ThreadBuffer* raw = b.get();
      {
        std::lock_guard lock(mu);
        slots[t].buffer = std::move(b);
        live.push_back(raw);
      }
      started.fetch_add(1);
      for (int i = 0; i < kRanges; ++i) {
        raw->push(ev(EventKind::Push, (std::int64_t{t} << 32) | i));
        raw->pop(ev(EventKind::Pop, (std::int64_t{t} << 32) | i));
      }
      raw->retired.store(true, std::memory_order_release);
    });
  }
  std::size_t freed = 0;
  while (freed < kThreads) {
    std::vector<ThreadBuffer*> now;
    {
      std::lock_guard lock(mu);
      now = live;
    }
    for (ThreadBuffer* b : now) {
      const bool retired = b->retired.load(std::memory_order_acquire);
      Slot& slot = slots[b->index() - 1];
      b->drain([&](const Event& e, std::uint64_t pos) {
        slot.replay(e, pos);
        if (e.kind == static_cast<std::uint8_t>(EventKind::Push)) {
          const std::int64_t want = (std::int64_t{static_cast<std::int64_t>(b->index()) - 1} << 32) | slot.expected;
          slot.in_order = slot.in_order && e.payload == want;
          ++slot.expected;
        }
      });
      if (retired) {
        std::lock_guard lock(mu);
        live.erase(std::find(live.begin(), live.end(), b));
        slot.buffer.reset();
        ++freed;
      }
    }
  }
  for (auto& p : producers) p.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_TRUE(slots[t].in_order) << "thread " << t << " read another thread's events";
    EXPECT_EQ(slots[t].replay.ranges, static_cast<std::size_t>(kRanges)) << "thread " << t;
    EXPECT_TRUE(slots[t].replay.balanced);
  }
  EXPECT_LE(pool.mapped_chunks(), 4u);
}

// A fork child frees the buffers of the threads it did not inherit by taking their chunks.
TEST(ChunkChain, TakenChunksAreEveryChunkOnceAndTheBufferKeepsNone) {
  ChunkPool pool(kSmallChunk, 64 << 20, 16);
  std::vector<Chunk*> taken;
  {
    ThreadBuffer b(pool, 1, 1, 1);
    for (std::size_t i = 0; i < 3 * pool.chunk_events() + 5; ++i) b.add(ev(EventKind::Mark, 0));
    b.drain([](const Event&, std::uint64_t) {}); // the consumer is past the first chunks
    for (std::size_t i = 0; i < pool.chunk_events(); ++i) b.add(ev(EventKind::Mark, 0));
    const std::size_t held = b.chunks_held();
    taken = b.take_chunks();
    EXPECT_EQ(taken.size(), held);
    EXPECT_EQ(b.chunks_held(), 0u);
  }
  std::vector<Chunk*> distinct = taken;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  EXPECT_EQ(distinct.size(), taken.size());
  // The destroyed buffer gave nothing back: the taken chunks are the caller's.
  const std::size_t free_before = pool.free_chunks();
  for (Chunk* c : taken) pool.release(c);
  EXPECT_EQ(pool.free_chunks(), free_before + taken.size());
}

// A fork child keeps the forking thread's buffer, emptied: none of the parent's records,
// one chunk, positions from 0, and the pops of ranges opened before the fork are silent.
TEST(ChunkChain, ForkChildStartsFromAnEmptyBuffer) {
  ChunkPool pool(kSmallChunk, 64 << 20, 4);
  ThreadBuffer b(pool, 1, 1, 1);
  ASSERT_TRUE(b.push(ev(EventKind::Push, -1))); // open across the fork
  for (std::size_t i = 0; i < 3 * pool.chunk_events(); ++i) b.add(ev(EventKind::Mark, 0));
  ASSERT_GT(b.chunks_held(), 3u);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int failures = 0;
    auto check = [&](bool ok) { failures += ok ? 0 : 1; };
    b.reset_after_fork(getpid());
    check(b.pending() == 0);
    check(b.chunks_held() == 1);
    check(b.position() == 0);
    check(b.dropped() == 0);
    b.pop(ev(EventKind::Pop, -1)); // the parent's range: its pop must not be recorded
    check(b.pending() == 0);
    check(b.push(ev(EventKind::Push, 7)));
    b.pop(ev(EventKind::Pop, 7));
    Replay r;
    b.drain(r);
    check(r.ranges == 1 && r.balanced && r.positions_in_order && r.events == 2);
    for (std::size_t i = 0; i < 2 * pool.chunk_events(); ++i) b.add(ev(EventKind::Mark, 0));
    Replay more;
    more.next_position = 2;
    b.drain(more);
    check(more.events == 2 * pool.chunk_events() && more.positions_in_order && b.dropped() == 0);
    _exit(failures);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "checks failed in the child";
  // The parent's buffer is untouched by the child's reset.
  Replay r;
  b.drain(r);
  EXPECT_EQ(r.events, 1 + 3 * pool.chunk_events());
}

} // namespace
} // namespace dreamscope::tracer
