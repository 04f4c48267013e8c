// Reading an importer's input file into memory, gunzipping it when it is gzip, with the
// zero padding after the end that simdjson needs to parse it in place.
#pragma once

#include "dreamscope/importers.h"

#include <simdjson.h>

#include <cstring>
#include <filesystem>
#include <memory>
#include <string>

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

 private:
  void release() noexcept;
  char* bytes_ = nullptr;
  std::size_t size_ = 0, capacity_ = 0;
  std::size_t discarded_ = 0; // bytes from the start given back by discard_below
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

struct InputBuffer {
  ByteBuffer storage; // size() >= size + simdjson::SIMDJSON_PADDING
  std::size_t size = 0;
  bool was_gzip = false;

  const char* data() const { return storage.data(); }
};

// Throws TraceError naming the file: missing, unreadable, a damaged or truncated gzip stream.
InputBuffer read_input(const std::filesystem::path& path, const ImportProgressFn& progress);

} // namespace dreamscope
