// Reading an importer's input file into memory, gunzipping it when it is gzip, with the
// padding after the end that simdjson needs to parse it in place: the whole file at once
// (read_input), or a piece at a time as the importer reads it (open_input).
#pragma once

#include "dreamscope/storage/importers.h"

#include <simdjson.h>

#include <cstring>
#include <filesystem>
#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace dreamscope {

// Bytes that are not zeroed when allocated or grown: a trace is tens to hundreds of MB, and
// zeroing what the file or the decompressor overwrites at once costs a pass over it. A buffer
// of 2 MB or more is mapped with transparent huge pages where the kernel offers them
// (madvise mode, Debian's default): faulting in 87 MB of JSON 4 kB at a time was a fifth of
// importing the MTIA trace.
class ByteBuffer {
 public:
  ByteBuffer() = default;
  ByteBuffer(ByteBuffer&& o) noexcept { *this = std::move(o); }
  ByteBuffer& operator=(ByteBuffer&& o) noexcept;
  ByteBuffer(const ByteBuffer&) = delete;
  ByteBuffer& operator=(const ByteBuffer&) = delete;
  ~ByteBuffer() { release(); }

  std::size_t size() const { return size_; }
  char* data() { return bytes_; }
  const char* data() const { return bytes_; }
  // Keeps the first min(size, n) bytes; the rest is uninitialized.
  void resize(std::size_t n);
  // Gives the memory of the whole pages below data() + n back to the system, where the buffer
  // is mapped (else nothing): the caller reads none of those bytes again, and they would read
  // as zeros. An importer that has read the first n bytes of a large file need not hold them.
  void discard_below(std::size_t n);
  // Moves the memory of the `length` bytes at `from` to `to`, both page-aligned offsets of a
  // mapped buffer, without copying or zeroing it: the bytes at `to` become those that were at
  // `from`, which read as zeros afterwards. Pages a reader is done with then serve the bytes
  // still to come, which would otherwise be faulted in as fresh zeroed pages. False, with
  // nothing moved, where the buffer is not mapped or is kept for reuse (its pages are there),
  // where the kernel cannot move pages and leave fresh ones behind in one call (Linux < 5.7),
  // or once kMaxPageMoves moves were made: pages moved so can stay a mapping of their own (a
  // few in all when chunks move in the order they were given back, as InputBuffer moves them;
  // one every other move in another order), and Linux allows a process 65530 mappings.
  bool move_pages(std::size_t from, std::size_t to, std::size_t length);
  static constexpr std::size_t kMaxPageMoves = 1024;
  bool pages_movable() const { return mapped_ && !reused_; }

 private:
  void release() noexcept;
  char* bytes_ = nullptr;
  std::size_t size_ = 0, capacity_ = 0;
  std::size_t discarded_ = 0; // bytes from the start given back by discard_below
  std::size_t page_moves_ = 0; // calls of move_pages that moved pages
  bool mapped_ = false;
  bool reused_ = false; // mapped while a BufferReuse was alive on the allocating thread
};

// While one is alive on a thread, the mapped buffers of imports on that thread keep their
// pages: discard_below gives nothing back, and a released buffer waits, mapped, for the next
// import on the thread (two at most: a gzip file's bytes and its JSON). A loader that imports
// file after file (a job's ranks) then writes each file into memory the kernel has already
// zeroed and mapped; on the 2-core VM, faulting in and zeroing 87 MB of fresh huge pages per
// MTIA-sized rank was 13 % of the job's CPU. The price is the whole text of the file being
// imported, held until its import ends, instead of the run being read. Not for imports that
// run once in a process. The buffers it kept are unmapped when it goes.
class BufferReuse {
 public:
  BufferReuse();
  ~BufferReuse();
  BufferReuse(const BufferReuse&) = delete;
  BufferReuse& operator=(const BufferReuse&) = delete;
};

// Where the bytes of a streamed input come from: a gzip stream being inflated, or a file.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Up to `n` (> 0) bytes of the text into `out`: how many, 0 where the text ended or the
  // data is damaged (then at_end() says which).
  virtual std::size_t read(char* out, std::size_t n) = 0;
  // Whether the text ended cleanly where the reading stopped, with nothing after it.
  virtual bool at_end() = 0;
};

// A streamed input turned out other than its size said: a concatenation of gzip members
// (the trailer gives the last one's size), a trailer that lies, damaged data, a file that
// changed while read. The importer then reads the file whole (read_input), which says what
// is wrong, if anything. Not a std::exception, so that no handler of those takes it for the
// importer's own failure.
struct StreamedInputMismatch {};

// The text of an input file, padded. Read whole, it is all there from the start; streamed
// (open_input), it arrives as the reader asks for it with ensure(), and the pages of what
// the reader gave back serve the bytes still to come.
struct InputBuffer {
  ByteBuffer storage; // size() >= size + simdjson::SIMDJSON_PADDING
  std::size_t size = 0;
  bool was_gzip = false;

  const char* data() const { return storage.data(); }
  char* data() { return storage.data(); }
  bool streamed() const { return stream_ != nullptr; }
  // Makes the first min(n, size) bytes readable: how many bytes are readable now (at least
  // that many). Throws StreamedInputMismatch where the stream holds fewer or more bytes than
  // `size`. One thread at a time, the thread that reads the text.
  std::size_t ensure(std::size_t n) {
    const std::size_t ready = available_.load(std::memory_order_acquire);
    return n <= ready ? ready : fill(n);
  }
  // From a thread other than the reading one, while it waits for the reader: one step of
  // the stream made readable ahead of what the reader asked for last (up to a few MB
  // ahead). False where there is nothing to do: the text is all there, far enough ahead,
  // or the reader is making it readable itself. Throws as ensure() does.
  bool read_ahead();
  // The text below byte n is not read again: its pages go back to the system, or serve the
  // bytes still to come. Any thread.
  void give_back_below(std::size_t n);

  InputBuffer() = default;
  InputBuffer(InputBuffer&& o) noexcept;
  InputBuffer& operator=(InputBuffer&& o) noexcept;

 private:
  friend InputBuffer open_input(const std::filesystem::path& path, const ImportProgressFn& progress);
  std::size_t fill(std::size_t n);
  std::size_t fill_locked(std::size_t n);
  void back_pages_to(std::size_t end);

  std::atomic<std::size_t> available_{0}; // of a streamed input; a whole one has all `size`
  std::atomic<std::size_t> asked_{0}; // the most the reader asked for
  std::mutex fill_mutex_;             // one thread at a time makes text readable
  std::unique_ptr<ByteSource> stream_; // null: the whole text is in storage
  std::size_t step_ = 0;               // bytes asked of the stream at a time
  std::size_t chunk_ = 0;              // pages move in chunks of this many bytes
  std::size_t backed_ = 0;             // [0, backed_) has had memory; chunk-aligned
  std::mutex given_back_mutex_;
  std::size_t given_back_ = 0;           // chunks below this are the reader's no more
  // Offsets of such chunks whose pages can move, oldest first: moved in the order they were
  // given back, each lands next to the one before it and the kernel keeps them a few mappings
  // (6 for 1024 moves in MovedPagesStayBoundedMappingsAndTheTextIsWhole; newest first, 548).
  std::deque<std::size_t> free_chunks_;
  std::atomic<bool> moving_{false};      // false: given-back pages are discarded, not moved
};

// The whole text at once. Throws TraceError naming the file: missing, unreadable, a damaged
// or truncated gzip stream.
InputBuffer read_input(const std::filesystem::path& path, const ImportProgressFn& progress);

// The text a piece at a time where the file is large enough for that to pay (8 MB of text,
// or DREAMSCOPE_IMPORT_STREAM_FROM bytes) and its size is known up front: a plain file, or a
// gzip file whose trailer gives a plausible size, inflated with ISA-L where dreamscope was
// built with it. Faulting in fresh zeroed memory for the whole text of the MTIA trace cost
// 17 to 190 ms on the 2-core VM, more than inflating it; streamed, the text takes a few
// chunks of memory that move ahead of the reader. Else read_input's whole text.
InputBuffer open_input(const std::filesystem::path& path, const ImportProgressFn& progress);

// Whether this build streams gzip files (it was built with ISA-L); plain files always stream.
bool streams_gzip();

} // namespace dreamscope
