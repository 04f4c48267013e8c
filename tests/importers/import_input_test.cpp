// The importer's input buffers (storage/src/importers/common/import_input.h): what discard_below gives back,
// what a BufferReuse keeps for the next import on its thread, and a text streamed as it is
// read (open_input), whose pages move ahead of the reader.
#include "importers/common/import_input.h"
#include "import_test_util.h"

#include <dreamscope/storage/trace_file.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <sys/mman.h>
#include <thread>
#include <vector>

namespace dreamscope {
namespace {

constexpr std::size_t kBufferBytes = std::size_t{8} << 20; // mapped: 2 MB or more

void fill(ByteBuffer& b, char c) { std::memset(b.data(), c, b.size()); }

// Whether this kernel moves pages and leaves fresh ones behind in one call (Linux 5.7 on).
bool kernel_moves_pages() {
  ByteBuffer b;
  b.resize(kBufferBytes);
  return b.move_pages(0, kBufferBytes / 2, 4096);
}

TEST(ByteBufferReuse, WithoutItDiscardedPagesAreGivenBack) {
  ByteBuffer b;
  b.resize(kBufferBytes);
  fill(b, 'x');
  b.discard_below(kBufferBytes / 2);
  EXPECT_EQ(b.data()[0], 0) << "the discarded page still holds its bytes";
  EXPECT_EQ(b.data()[kBufferBytes - 1], 'x');
}

TEST(ByteBufferReuse, TheNextBufferOnTheThreadIsTheLastOnesMemoryWithItsPages) {
  const BufferReuse reuse;
  const char* first = nullptr;
  {
    ByteBuffer b;
    b.resize(kBufferBytes);
    fill(b, 'x');
    b.discard_below(kBufferBytes); // kept: the next import writes over it
    EXPECT_EQ(b.data()[0], 'x');
    first = b.data();
  }
  ByteBuffer next;
  next.resize(kBufferBytes - 4096);
  EXPECT_EQ(next.data(), first);
  EXPECT_EQ(next.data()[0], 'x') << "the pages were given back, and come back zeroed";
  // A larger buffer does not fit the one kept: a mapping of its own.
  ByteBuffer larger;
  larger.resize(2 * kBufferBytes);
  EXPECT_NE(larger.data(), first);
}

TEST(ByteBufferReuse, KeepsTheTwoLargestAndSmallBuffersAreNotMapped) {
  const BufferReuse reuse;
  const char *small_mapping = nullptr, *large_mapping = nullptr;
  {
    ByteBuffer gzip_bytes, json, tiny;
    gzip_bytes.resize(kBufferBytes);
    json.resize(4 * kBufferBytes);
    tiny.resize(100); // not mapped: never kept
    small_mapping = gzip_bytes.data();
    large_mapping = json.data();
  }
  // The next file's JSON takes the large mapping, its gzip bytes the small one.
  ByteBuffer json, gzip_bytes;
  json.resize(3 * kBufferBytes);
  gzip_bytes.resize(kBufferBytes / 2);
  EXPECT_EQ(json.data(), large_mapping);
  EXPECT_EQ(gzip_bytes.data(), small_mapping);
}

TEST(ByteBufferMovePages, TheBytesMoveAndTheirOldPlaceReadsZeros) {
  if (!kernel_moves_pages()) GTEST_SKIP() << "this kernel has no MREMAP_DONTUNMAP (Linux < 5.7): pages are discarded, not moved";
  ByteBuffer b;
  b.resize(kBufferBytes);
  fill(b, 'x');
  std::memset(b.data(), 'a', kBufferBytes / 4);
  ASSERT_TRUE(b.move_pages(0, kBufferBytes / 2, kBufferBytes / 4));
  EXPECT_EQ(b.data()[kBufferBytes / 2], 'a');
  EXPECT_EQ(b.data()[kBufferBytes * 3 / 4 - 1], 'a');
  EXPECT_EQ(b.data()[kBufferBytes * 3 / 4], 'x');
  EXPECT_EQ(b.data()[0], 0);
  EXPECT_EQ(b.data()[kBufferBytes / 4 - 1], 0);
  EXPECT_EQ(b.data()[kBufferBytes / 4], 'x');
  // Overlapping ranges, or past the mapping: nothing moves.
  EXPECT_FALSE(b.move_pages(0, 4096, 8192));
  EXPECT_FALSE(b.move_pages(0, kBufferBytes, 4096));
  // A buffer kept for reuse keeps its pages where they are; a small one has none to move.
  const BufferReuse reuse;
  ByteBuffer kept, small;
  kept.resize(kBufferBytes);
  small.resize(100);
  EXPECT_FALSE(kept.move_pages(0, kBufferBytes / 2, 4096));
  EXPECT_FALSE(small.move_pages(0, 0, 0));
}

// Moving pages never leaves a hole in the buffer that another mapping could take: the pages
// moved from are replaced in the same call. Another thread tries, while pages move, to map
// the very range being moved from, where nothing may be mapped (MAP_FIXED_NOREPLACE): it
// never can. When the move took two calls (mremap, then mmap over the range moved from), the
// range was unmapped between them, a mapping made there in that moment (a large malloc, the
// sanitizer's allocator) was overwritten with zeros by the second call: the sanitizer saw
// its own chunk header zeroed when the streamed import's reading thread freed a buffer.
TEST(ByteBufferMovePages, TheRangeMovedFromIsNeverUnmapped) {
  if (!kernel_moves_pages()) GTEST_SKIP() << "this kernel has no MREMAP_DONTUNMAP (Linux < 5.7): pages are discarded, not moved";
  constexpr std::size_t kChunk = 64 * 1024;
  ByteBuffer b;
  b.resize(kBufferBytes);
  std::memset(b.data(), 'x', kBufferBytes);
  std::atomic<char*> watched{nullptr};
  std::atomic<bool> moving{true};
  std::atomic<std::size_t> holes{0}, probes{0};
  std::thread prober([&] {
    while (moving.load()) {
      char* const range = watched.load();
      if (!range) continue;
      void* p = ::mmap(range, kChunk, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
      ++probes;
      if (p == MAP_FAILED) continue;
      if (p == range) ++holes;
      ::munmap(p, kChunk);
    }
  });
  // Chunks move back and forth between the two halves of the buffer.
  std::size_t moves = 0;
  for (bool there = true; moves + kBufferBytes / 2 / kChunk <= ByteBuffer::kMaxPageMoves; there = !there) {
    for (std::size_t c = 0; c < kBufferBytes / 2; c += kChunk) {
      const std::size_t from = there ? c : kBufferBytes / 2 + c, to = there ? kBufferBytes / 2 + c : c;
      watched = b.data() + from;
      // Let the prober be at it before the move.
      for (const std::size_t seen = probes.load(); probes.load() < seen + 2;) {
      }
      ASSERT_TRUE(b.move_pages(from, to, kChunk));
      ++moves;
    }
  }
  moving = false;
  prober.join();
  EXPECT_EQ(holes.load(), 0u) << "the range moved from was found unmapped " << holes.load() << " times in " << moves
                              << " moves";
  // A move past the limit moves nothing: the caller discards pages instead.
  EXPECT_FALSE(b.move_pages(0, kBufferBytes / 2, kChunk));
}

// Streams files of any size, in chunks of 4 kB, while a test runs.
class StreamedInput : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("DREAMSCOPE_IMPORT_STREAM_FROM", "0", 1);
    ::setenv("DREAMSCOPE_IMPORT_STREAM_CHUNK", "4096", 1);
  }
  void TearDown() override {
    ::unsetenv("DREAMSCOPE_IMPORT_STREAM_FROM");
    ::unsetenv("DREAMSCOPE_IMPORT_STREAM_CHUNK");
  }
  // Text that does not repeat within a page, so that a page in the wrong place shows.
  static std::string text_of(std::size_t bytes) {
    std::string t;
    t.reserve(bytes + 32);
    for (std::size_t i = 0; t.size() < bytes; ++i) t += std::to_string(i * 2654435761u % 1000003u) + ",";
    t.resize(bytes);
    return t;
  }
  test::TempDir dir;
};

TEST_F(StreamedInput, ReadingAsItArrivesAndGivingBackGivesEveryByteOfPlainAndGzipFiles) {
  const std::string text = text_of(6u << 20);
  for (const auto& path : {dir.write("plain.json", text), dir.write_gzip("packed.json.gz", text)}) {
    SCOPED_TRACE(path.string());
    if (path.extension() == ".gz" && !streams_gzip()) {
      std::cout << "[ SKIPPED  ] gzip: this build has no ISA-L to stream it with\n";
      continue;
    }
    InputBuffer input = open_input(path, {});
    ASSERT_TRUE(input.streamed());
    ASSERT_EQ(input.size, text.size());
    EXPECT_EQ(input.was_gzip, path.extension() == ".gz");
    // As a reader goes: a step asked for, the step checked, what lies 256 kB behind given back.
    std::size_t checked = 0;
    for (std::size_t asked = 100'000;; asked += 100'000) {
      const std::size_t readable = input.ensure(asked);
      ASSERT_GE(readable, std::min(asked, text.size()));
      ASSERT_EQ(std::string_view(input.data() + checked, readable - checked),
                std::string_view(text).substr(checked, readable - checked))
          << "bytes " << checked << " to " << readable;
      checked = readable;
      if (checked >= (1u << 18)) input.give_back_below(checked - (1u << 18));
      if (readable == text.size()) break;
    }
    for (std::size_t i = 0; i < simdjson::SIMDJSON_PADDING; ++i) ASSERT_EQ(input.data()[text.size() + i], 0);
  }
}

std::size_t mappings_of_this_process() {
  std::ifstream maps("/proc/self/maps");
  std::size_t n = 0;
  for (std::string line; std::getline(maps, line);) ++n;
  return n;
}

// Pages moved from a range are replaced there in the same call (MREMAP_DONTUNMAP), and the
// moved pages stay a mapping of their own each time they move again: a few mappings for
// every chunk's width of text the reader keeps behind it. A buffer moves pages at most
// kMaxPageMoves times, then discards them, so that a 100 GB trace does not near Linux's
// default limit of 65530 mappings. 3072 chunks of 4 kB here: 1024 moved, the rest discarded.
TEST_F(StreamedInput, MovedPagesStayBoundedMappingsAndTheTextIsWhole) {
  ::setenv("DREAMSCOPE_IMPORT_STREAM_CHUNK", "4096", 1);
  const std::string text = text_of(12u << 20);
  const auto path = dir.write("many_chunks.json", text);
  const std::size_t before = mappings_of_this_process();
  InputBuffer input = open_input(path, {});
  ASSERT_TRUE(input.streamed());
  std::size_t checked = 0;
  for (std::size_t asked = 1u << 16;; asked += 1u << 16) {
    const std::size_t readable = input.ensure(asked);
    ASSERT_EQ(std::string_view(input.data() + checked, readable - checked),
              std::string_view(text).substr(checked, readable - checked));
    checked = readable;
    if (readable >= (1u << 20)) input.give_back_below(readable - (1u << 20));
    if (readable == text.size()) break;
  }
  EXPECT_LT(mappings_of_this_process() - before, ByteBuffer::kMaxPageMoves / 8);
}

TEST_F(StreamedInput, AGzipStreamOtherThanItsTrailerSaysIsAMismatchAndTheWholeFileDecides) {
  if (!streams_gzip()) GTEST_SKIP() << "this build has no ISA-L to stream gzip with";
  const std::string text = "{\"traceEvents\": [" + text_of(1u << 20) + "]}";
  const std::string member = [&] {
    const auto p = dir.write_gzip("member.gz", text);
    std::ifstream in(p, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), {});
  }();
  auto stream_all = [](const std::filesystem::path& p) {
    InputBuffer input = open_input(p, {});
    input.ensure(input.size);
  };
  // Two members: the trailer gives the second one's size, and the stream holds both.
  const auto twice = dir.write("twice.json.gz", member + member);
  EXPECT_THROW(stream_all(twice), StreamedInputMismatch);
  EXPECT_EQ(read_input(twice, {}).size, 2 * text.size());
  // A trailer whose size is off by one, and one whose CRC is wrong: the whole file's
  // inflating says what is wrong, streamed or not.
  for (std::size_t at : {member.size() - 4, member.size() - 8}) {
    std::string damaged = member;
    damaged[at] = static_cast<char>(damaged[at] + 1);
    const auto p = dir.write("damaged.json.gz", damaged);
    EXPECT_THROW(stream_all(p), StreamedInputMismatch);
    std::string streamed_error, whole_error;
    try {
      load_trace(p);
    } catch (const TraceError& e) {
      streamed_error = e.what();
    }
    ::setenv("DREAMSCOPE_IMPORT_STREAM_FROM", "999999999999", 1);
    try {
      load_trace(p);
    } catch (const TraceError& e) {
      whole_error = e.what();
    }
    ::setenv("DREAMSCOPE_IMPORT_STREAM_FROM", "0", 1);
    EXPECT_NE(whole_error, "");
    EXPECT_EQ(streamed_error, whole_error);
  }
}

} // namespace
} // namespace dreamscope
