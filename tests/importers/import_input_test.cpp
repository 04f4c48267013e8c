// The importer's input buffers (storage/src/import_input.h): what discard_below gives back,
// and what a BufferReuse keeps for the next import on its thread.
#include "import_input.h"

#include <gtest/gtest.h>

#include <cstring>

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

} // namespace
} // namespace dreamscope
