#include "importers/common/import_input.h"

#include "dreamscope/storage/trace_file.h"

#include <zlib.h>
#if DREAMSCOPE_HAVE_LIBDEFLATE
#include <libdeflate.h>
#endif
#if DREAMSCOPE_HAVE_ISAL
#include <isa-l/igzip_lib.h>
#endif

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <utility>

namespace dreamscope {

namespace {

// The mappings a BufferReuse keeps on its thread.
struct KeptMappings {
  struct Mapping {
    char* bytes = nullptr;
    std::size_t capacity = 0;
  };
  static constexpr std::size_t kKept = 2;
  Mapping kept[kKept];
  KeptMappings* outer = nullptr; // a BufferReuse alive when this one began

  // The smallest kept mapping of at least `n` bytes, taken; {} if none.
  Mapping take(std::size_t n) {
    Mapping* best = nullptr;
    for (Mapping& m : kept) {
      if (m.bytes && m.capacity >= n && (!best || m.capacity < best->capacity)) best = &m;
    }
    return best ? std::exchange(*best, Mapping{}) : Mapping{};
  }
  // Keeps `m` in a free slot, or in place of a smaller one (unmapped); else unmaps `m`.
  void keep(Mapping m) {
    Mapping* slot = &kept[0];
    for (Mapping& k : kept) {
      if (k.capacity < slot->capacity) slot = &k;
    }
    if (slot->capacity >= m.capacity) return void(::munmap(m.bytes, m.capacity));
    if (slot->bytes) ::munmap(slot->bytes, slot->capacity);
    *slot = m;
  }
};

thread_local KeptMappings* t_kept = nullptr;

} // namespace

BufferReuse::BufferReuse() { t_kept = new KeptMappings{.outer = t_kept}; }

BufferReuse::~BufferReuse() {
  KeptMappings* k = t_kept;
  for (const auto& m : k->kept) {
    if (m.bytes) ::munmap(m.bytes, m.capacity);
  }
  t_kept = k->outer;
  delete k;
}

ByteBuffer& ByteBuffer::operator=(ByteBuffer&& o) noexcept {
  if (this != &o) {
    release();
    bytes_ = std::exchange(o.bytes_, nullptr);
    size_ = std::exchange(o.size_, 0);
    capacity_ = std::exchange(o.capacity_, 0);
    mapped_ = std::exchange(o.mapped_, false);
    reused_ = std::exchange(o.reused_, false);
    discarded_ = std::exchange(o.discarded_, 0);
    page_moves_ = std::exchange(o.page_moves_, 0);
  }
  return *this;
}

void ByteBuffer::release() noexcept {
  if (mapped_ && reused_ && t_kept) {
    t_kept->keep({bytes_, capacity_});
  } else if (mapped_) {
    ::munmap(bytes_, capacity_);
  } else {
    delete[] bytes_;
  }
  bytes_ = nullptr;
  size_ = capacity_ = 0;
  discarded_ = page_moves_ = 0;
  mapped_ = false;
  reused_ = false;
}

void ByteBuffer::discard_below(std::size_t n) {
  constexpr std::size_t kPage = 4096; // the mapping is page-aligned; huge pages split as needed
  n = std::min(n, size_) / kPage * kPage;
  if (!mapped_ || reused_ || n <= discarded_) return;
  ::madvise(bytes_ + discarded_, n - discarded_, MADV_DONTNEED);
  discarded_ = n;
}

bool ByteBuffer::move_pages(std::size_t from, std::size_t to, std::size_t length) {
  if (!mapped_ || reused_ || length == 0 || from + length > capacity_ || to + length > capacity_) return false;
  if ((from < to ? to - from : from - to) < length) return false; // overlapping
  if (page_moves_ == kMaxPageMoves) return false;
  // MREMAP_DONTUNMAP leaves `from` mapped, reading as fresh zeroed pages, in the same call:
  // moving the pages and mapping fresh ones at `from` in two calls left `from` unmapped between
  // them, and another thread's mmap (a large malloc, the sanitizer's allocator) could be placed
  // in the hole and then be overwritten with zeros by the second call. Where the kernel lacks
  // it (before Linux 5.7), nothing moves and the caller discards pages instead.
  if (::mremap(bytes_ + from, length, length, MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP, bytes_ + to) ==
      MAP_FAILED) {
    return false;
  }
  ++page_moves_;
  return true;
}

void ByteBuffer::resize(std::size_t n) {
  if (n > capacity_) {
    constexpr std::size_t kHugePage = std::size_t{2} << 20;
    char* grown = nullptr;
    std::size_t capacity = n;
    bool mapped = false;
    const bool reused = n >= kHugePage && t_kept;
    if (reused) {
      if (const auto kept = t_kept->take(n); kept.bytes) {
        grown = kept.bytes;
        capacity = kept.capacity;
        mapped = true;
      }
    }
    if (!grown && n >= kHugePage) {
      const std::size_t length = (n + kHugePage - 1) / kHugePage * kHugePage;
      void* p = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p != MAP_FAILED) {
        ::madvise(p, length, MADV_HUGEPAGE); // advice only: without THP the pages are 4 kB
        grown = static_cast<char*>(p);
        capacity = length;
        mapped = true;
      }
    }
    if (!grown) grown = new char[n];
    if (size_ > 0) std::memcpy(grown, bytes_, size_);
    const std::size_t keep = size_;
    release();
    bytes_ = grown;
    size_ = keep;
    capacity_ = capacity;
    mapped_ = mapped;
    reused_ = reused && mapped;
  }
  size_ = n;
}

namespace {

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& what) {
  throw TraceError(path.string() + ": " + what);
}

ByteBuffer read_file(const std::filesystem::path& path, std::size_t padding) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) fail(path, "no such file");
  if (std::filesystem::is_directory(path, ec)) fail(path, "is a directory, not a trace file");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, std::string("cannot open: ") + std::strerror(errno));
  const auto size = static_cast<std::size_t>(std::filesystem::file_size(path, ec));
  if (ec) fail(path, "cannot read its size: " + ec.message());
  ByteBuffer data;
  data.resize(size + padding);
  in.read(data.data(), static_cast<std::streamsize>(size));
  if (static_cast<std::size_t>(in.gcount()) != size) fail(path, "cannot read the whole file");
  return data;
}

// The largest uncompressed/compressed ratio for which the gzip trailer's size is believed
// (JSON traces compress 10-30x; deflate's own limit is about 1032x).
constexpr std::size_t kMaxTrustedRatio = 64;

bool is_gzip(const char* data, std::size_t size) {
  return size >= 2 && static_cast<unsigned char>(data[0]) == 0x1f && static_cast<unsigned char>(data[1]) == 0x8b;
}

// Gunzips every member of the stream (gzip files may be concatenations).
void gunzip(const std::filesystem::path& path, const ByteBuffer& in, std::size_t in_size, InputBuffer& out,
            const ImportProgressFn& progress) {
  // The gzip trailer holds the uncompressed size mod 2^32: a first guess for the buffer, but
  // only a guess, since a damaged or hostile file can claim 4 GB in a 1.5 kB file. Trusted up
  // to kMaxTrustedRatio times the input (JSON traces compress 10-30x); past that the buffer
  // starts at 8x and grows with the data actually inflated.
  std::size_t guess = 0;
  if (in_size >= 18) {
    std::uint32_t isize = 0;
    std::memcpy(&isize, in.data() + in_size - 4, 4);
    guess = isize;
  }
  if (guess < in_size * 2 || guess > in_size * kMaxTrustedRatio) guess = in_size * 8;
  out.storage.resize(guess + simdjson::SIMDJSON_PADDING);

  z_stream zs{};
  if (inflateInit2(&zs, 15 + 16) != Z_OK) fail(path, "cannot start gzip decompression");
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  std::size_t in_done = 0, out_done = 0;
  int rc = Z_OK;
  for (;;) {
    if (out.storage.size() - simdjson::SIMDJSON_PADDING - out_done == 0) {
      // Grow by half: the data so far proves the size, and a buffer far larger than the
      // JSON would only raise the peak memory of the import.
      out.storage.resize(out.storage.size() + out.storage.size() / 2);
    }
    const std::size_t in_chunk = std::min<std::size_t>(in_size - in_done, 1u << 30);
    const std::size_t out_chunk = std::min<std::size_t>(out.storage.size() - simdjson::SIMDJSON_PADDING - out_done, 1u << 30);
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data() + in_done));
    zs.avail_in = static_cast<uInt>(in_chunk);
    zs.next_out = reinterpret_cast<Bytef*>(out.storage.data() + out_done);
    zs.avail_out = static_cast<uInt>(out_chunk);
    rc = inflate(&zs, Z_NO_FLUSH);
    in_done += in_chunk - zs.avail_in;
    out_done += out_chunk - zs.avail_out;
    if (progress) progress(ImportProgress{in_done, in_size, "decompressing"});
    if (rc == Z_STREAM_END) {
      if (in_done < in_size && is_gzip(in.data() + in_done, in_size - in_done)) {
        inflateReset(&zs);
        continue;
      }
      break;
    }
    if (rc == Z_OK) continue;
    if (rc == Z_BUF_ERROR && zs.avail_out == 0) continue;
    std::string why = rc == Z_BUF_ERROR ? "" : (zs.msg ? zs.msg : "error " + std::to_string(rc));
    inflateEnd(&zs);
    if (rc == Z_BUF_ERROR) {
      fail(path, "truncated gzip file: the compressed data ends early (after " + std::to_string(out_done) +
                     " bytes of JSON); the file was cut off while being written or copied");
    }
    fail(path, "damaged gzip data (zlib: " + why + ")");
  }
  inflateEnd(&zs);
  out.size = out_done;
  std::memset(out.storage.data() + out_done, 0, simdjson::SIMDJSON_PADDING);
}

#if DREAMSCOPE_HAVE_LIBDEFLATE
// The whole buffer in one call with libdeflate, when the trailer's size is plausible (see
// gunzip): the output buffer is exactly that size. False (and nothing promised about `out`)
// when the data does not fit it or is damaged: then zlib's streaming path decides, and
// says what is wrong.
bool gunzip_whole(const ByteBuffer& in, std::size_t in_size, InputBuffer& out, const ImportProgressFn& progress) {
  if (in_size < 18) return false;
  std::uint32_t isize = 0;
  std::memcpy(&isize, in.data() + in_size - 4, 4);
  if (isize < in_size || isize > in_size * kMaxTrustedRatio) return false;
  out.storage.resize(isize + simdjson::SIMDJSON_PADDING);
  libdeflate_decompressor* d = libdeflate_alloc_decompressor();
  if (!d) return false;
  std::size_t used_in = 0, used_out = 0;
  const auto rc = libdeflate_gzip_decompress_ex(d, in.data(), in_size, out.storage.data(), isize, &used_in, &used_out);
  libdeflate_free_decompressor(d);
  // A concatenation of members (the trailer gives only the last one's size) goes to zlib.
  if (rc != LIBDEFLATE_SUCCESS || used_in != in_size || used_out != isize) return false;
  out.size = used_out;
  std::memset(out.storage.data() + used_out, 0, simdjson::SIMDJSON_PADDING);
  if (progress) progress(ImportProgress{in_size, in_size, "decompressing"});
  return true;
}
#endif

} // namespace

namespace {

// The whole text of a file already read into `raw`.
InputBuffer whole_text(const std::filesystem::path& path, ByteBuffer raw, std::size_t raw_size,
                       const ImportProgressFn& progress) {
  InputBuffer buf;
  if (is_gzip(raw.data(), raw_size)) {
    buf.was_gzip = true;
#if DREAMSCOPE_HAVE_LIBDEFLATE
    if (!gunzip_whole(raw, raw_size, buf, progress))
#endif
      gunzip(path, raw, raw_size, buf, progress);
  } else {
    buf.storage = std::move(raw);
    buf.size = raw_size;
    std::memset(buf.storage.data() + raw_size, 0, simdjson::SIMDJSON_PADDING);
  }
  return buf;
}

// A size from the environment (tests make small files stream, in small chunks), else `fallback`.
std::size_t size_from_env(const char* name, std::size_t fallback) {
  const char* text = std::getenv(name);
  if (!text || !*text) return fallback;
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text, &end, 10);
  return end && *end == '\0' ? static_cast<std::size_t>(value) : fallback;
}

// A plain file, read as it is asked for.
class FileSource final : public ByteSource {
 public:
  explicit FileSource(int fd) : fd_(fd) {}
  ~FileSource() override { ::close(fd_); }
  FileSource(const FileSource&) = delete;
  FileSource& operator=(const FileSource&) = delete;

  std::size_t read(char* out, std::size_t n) override {
    for (;;) {
      const ssize_t got = ::read(fd_, out, n);
      if (got >= 0) return static_cast<std::size_t>(got);
      if (errno != EINTR) return 0;
    }
  }
  bool at_end() override {
    char byte;
    return read(&byte, 1) == 0; // a file that grew while read is read again whole
  }

 private:
  int fd_;
};

#if DREAMSCOPE_HAVE_ISAL
// A gzip stream inflated with ISA-L (Debian libisal-dev), which streams about as fast as
// libdeflate inflates a whole buffer (29 against 35 ms for the MTIA trace; zlib streams it in
// 95 ms). ISA-L keeps the last 32 kB of history itself, so what it wrote may be read and
// given back (its pages moved) before the next call.
class GzipSource final : public ByteSource {
 public:
  GzipSource(ByteBuffer compressed, std::size_t size) : compressed_(std::move(compressed)) {
    isal_inflate_init(state_.get());
    state_->crc_flag = ISAL_GZIP;
    state_->next_in = reinterpret_cast<std::uint8_t*>(compressed_.data());
    state_->avail_in = static_cast<std::uint32_t>(size); // open_input streams files under 4 GB
  }

  std::size_t read(char* out, std::size_t n) override {
    if (failed_ || state_->block_state == ISAL_BLOCK_FINISH) return 0;
    std::size_t produced = 0;
    while (produced < n) {
      const std::size_t ask = std::min<std::size_t>(n - produced, std::uint32_t{1} << 30);
      state_->next_out = reinterpret_cast<std::uint8_t*>(out + produced);
      state_->avail_out = static_cast<std::uint32_t>(ask);
      const int rc = isal_inflate(state_.get());
      produced += ask - state_->avail_out;
      if (rc != ISAL_DECOMP_OK) {
        failed_ = true; // damaged or cut short: read_input words what is wrong
        break;
      }
      if (state_->block_state == ISAL_BLOCK_FINISH) break;
      if (state_->avail_out == ask && state_->avail_in == 0) break; // nothing more to come
    }
    return produced;
  }
  bool at_end() override {
    if (!failed_ && state_->block_state != ISAL_BLOCK_FINISH) {
      char extra[64]; // the trailer may still be to read; any text after the expected end is a mismatch
      if (read(extra, sizeof extra) != 0) return false;
    }
    // A second member (a concatenation) holds more text: the whole path reads every member.
    const bool more_members = state_->avail_in >= 2 && state_->next_in[0] == 0x1f && state_->next_in[1] == 0x8b;
    return !failed_ && state_->block_state == ISAL_BLOCK_FINISH && !more_members;
  }

 private:
  ByteBuffer compressed_;
  std::unique_ptr<inflate_state> state_ = std::make_unique<inflate_state>();
  bool failed_ = false;
};
#endif

constexpr std::size_t kStreamFrom = std::size_t{8} << 20;
constexpr std::size_t kStreamChunk = std::size_t{2} << 20; // a huge page
constexpr std::size_t kStreamStep = std::size_t{1} << 20;
// How far read_ahead goes past what the reader asked for: a few runs of events.
constexpr std::size_t kReadAhead = std::size_t{4} << 20;

} // namespace

InputBuffer::InputBuffer(InputBuffer&& o) noexcept { *this = std::move(o); }

InputBuffer& InputBuffer::operator=(InputBuffer&& o) noexcept {
  if (this != &o) {
    storage = std::move(o.storage);
    size = std::exchange(o.size, 0);
    was_gzip = std::exchange(o.was_gzip, false);
    available_.store(o.available_.exchange(0));
    asked_.store(o.asked_.exchange(0));
    stream_ = std::move(o.stream_);
    step_ = std::exchange(o.step_, 0);
    chunk_ = std::exchange(o.chunk_, 0);
    backed_ = std::exchange(o.backed_, 0);
    given_back_ = std::exchange(o.given_back_, 0);
    free_chunks_ = std::move(o.free_chunks_);
    moving_.store(o.moving_.exchange(false));
  }
  return *this;
}

std::size_t InputBuffer::fill(std::size_t n) {
  if (!stream_) return size; // all there
  n = std::min(n, size);
  for (std::size_t asked = asked_.load(); asked < n && !asked_.compare_exchange_weak(asked, n);) {
  }
  std::lock_guard lock(fill_mutex_);
  return fill_locked(n);
}

bool InputBuffer::read_ahead() {
  if (!stream_) return false;
  const std::size_t ready = available_.load(std::memory_order_acquire);
  const std::size_t ahead = std::min(size, asked_.load() + kReadAhead);
  if (ready >= ahead) return false;
  std::unique_lock lock(fill_mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return false; // the reader is at it
  fill_locked(std::min(ahead, available_.load(std::memory_order_relaxed) + step_));
  return true;
}

std::size_t InputBuffer::fill_locked(std::size_t n) {
  std::size_t ready = available_.load(std::memory_order_relaxed);
  if (ready == size) return ready;
  while (ready < n) {
    // A step at a time, so that what the reader gives back meanwhile serves the next step.
    const std::size_t want = std::min(size, std::max(n, std::min(ready + step_, asked_.load() + kReadAhead)));
    back_pages_to(want);
    const std::size_t got = stream_->read(storage.data() + ready, want - ready);
    if (got == 0) throw StreamedInputMismatch{}; // the text ended before `size`, or is damaged
    ready += got;
    if (ready == size) {
      if (!stream_->at_end()) throw StreamedInputMismatch{};
      back_pages_to(size + simdjson::SIMDJSON_PADDING);
      std::memset(storage.data() + size, 0, simdjson::SIMDJSON_PADDING);
      // The source (with the compressed bytes) stays until the input goes, on the thread that
      // opened it: a reading thread has no BufferReuse to keep its memory for the next file.
    }
    available_.store(ready, std::memory_order_release);
  }
  return ready;
}

// Gives [backed_, end) memory ahead of the stream: the pages of chunks the reader gave back,
// moved there, where there are any; else the kernel faults in fresh ones as the stream writes.
void InputBuffer::back_pages_to(std::size_t end) {
  while (backed_ < end && moving_.load(std::memory_order_relaxed)) {
    std::size_t from = SIZE_MAX;
    {
      std::lock_guard lock(given_back_mutex_);
      if (!free_chunks_.empty()) {
        from = free_chunks_.front();
        free_chunks_.pop_front();
      }
    }
    if (from == SIZE_MAX) break; // none to move: fresh pages
    if (!storage.move_pages(from, backed_, chunk_)) {
      moving_.store(false); // the last chunk (past the mapping), or mremap refused: discard instead
      break;
    }
    backed_ += chunk_;
  }
  // Chunks reached without a page to move get fresh pages as the stream writes them.
  if (chunk_ > 0 && backed_ < end) backed_ = (end + chunk_ - 1) / chunk_ * chunk_;
}

void InputBuffer::give_back_below(std::size_t n) {
  if (moving_.load(std::memory_order_relaxed)) {
    std::lock_guard lock(given_back_mutex_);
    while (given_back_ + chunk_ <= n) {
      free_chunks_.push_back(given_back_);
      given_back_ += chunk_;
    }
    return;
  }
  storage.discard_below(n);
}

InputBuffer read_input(const std::filesystem::path& path, const ImportProgressFn& progress) {
  ByteBuffer raw = read_file(path, simdjson::SIMDJSON_PADDING);
  const std::size_t raw_size = raw.size() - simdjson::SIMDJSON_PADDING;
  return whole_text(path, std::move(raw), raw_size, progress);
}

bool streams_gzip() {
#if DREAMSCOPE_HAVE_ISAL
  return true;
#else
  return false;
#endif
}

InputBuffer open_input(const std::filesystem::path& path, const ImportProgressFn& progress) {
  const std::size_t from = size_from_env("DREAMSCOPE_IMPORT_STREAM_FROM", kStreamFrom);
  std::error_code ec;
  const std::size_t file_size = std::filesystem::is_regular_file(path, ec) ? std::filesystem::file_size(path, ec) : 0;
  if (ec || file_size < 18) return read_input(path, progress); // which says what is wrong, if anything
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return read_input(path, progress);
  unsigned char magic[2] = {0, 0};
  const bool gzip = ::pread(fd, magic, 2, 0) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  std::unique_ptr<ByteSource> source;
  std::size_t size = 0;
  if (!gzip) {
    if (file_size < from) {
      ::close(fd);
      return read_input(path, progress);
    }
    source = std::make_unique<FileSource>(fd);
    size = file_size;
  } else {
    ::close(fd);
    ByteBuffer raw = read_file(path, simdjson::SIMDJSON_PADDING);
    const std::size_t raw_size = raw.size() - simdjson::SIMDJSON_PADDING;
    std::uint32_t isize = 0;
    std::memcpy(&isize, raw.data() + raw_size - 4, 4);
#if DREAMSCOPE_HAVE_ISAL
    const bool plausible = isize >= raw_size && isize <= raw_size * kMaxTrustedRatio;
    if (plausible && isize >= from && raw_size < (std::size_t{1} << 32)) {
      source = std::make_unique<GzipSource>(std::move(raw), raw_size);
      size = isize;
    }
#endif
    if (!source) return whole_text(path, std::move(raw), raw_size, progress);
  }
  InputBuffer buf;
  buf.was_gzip = gzip;
  buf.size = size;
  buf.storage.resize(size + simdjson::SIMDJSON_PADDING);
  buf.stream_ = std::move(source);
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  buf.chunk_ = std::max(page, size_from_env("DREAMSCOPE_IMPORT_STREAM_CHUNK", kStreamChunk) / page * page);
  buf.step_ = std::min(kStreamStep, buf.chunk_);
  buf.moving_.store(buf.storage.pages_movable());
  return buf;
}

} // namespace dreamscope
