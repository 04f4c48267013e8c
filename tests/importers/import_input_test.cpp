// The importer's input buffers (storage/src/import_input.h): what discard_below gives back,
// what a BufferReuse keeps for the next import on its thread, and a text streamed as it is
// read (open_input), whose pages move ahead of the reader.
#include "import_input.h"
#include "import_test_util.h"

#include <dreamscope/trace_file.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>

namespace dreamscope {
namespace {

constexpr std::size_t kBufferBytes = std::size_t{8} << 20; // mapped: 2 MB or more

void fill(ByteBuffer& b, char c) { std::memset(b.data(), c, b.size()); }

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

// Pages move chunk by chunk; moved in the order they were given back, each lands next to the
// one before it and the kernel keeps them one mapping. In another order a 100 GB trace would
// need 50k mappings, near Linux's default limit of 65530.
TEST_F(StreamedInput, MovedPagesStayAFewMappings) {
  ::setenv("DREAMSCOPE_IMPORT_STREAM_CHUNK", "65536", 1);
  const std::string text = text_of(12u << 20);
  const auto path = dir.write("many_chunks.json", text);
  const std::size_t before = mappings_of_this_process();
  InputBuffer input = open_input(path, {});
  ASSERT_TRUE(input.streamed());
  for (std::size_t asked = 1u << 16;; asked += 1u << 16) {
    const std::size_t readable = input.ensure(asked);
    if (readable >= (1u << 20)) input.give_back_below(readable - (1u << 20));
    if (readable == text.size()) break;
  }
  // About 170 chunks of 64 kB moved.
  EXPECT_LT(mappings_of_this_process(), before + 12);
  EXPECT_EQ(std::string_view(input.data() + text.size() - 1000, 1000), std::string_view(text).substr(text.size() - 1000));
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
