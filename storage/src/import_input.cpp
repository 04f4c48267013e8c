#include "import_input.h"

#include "dreamscope/trace_file.h"

#include <zlib.h>
#if DREAMSCOPE_HAVE_LIBDEFLATE
#include <libdeflate.h>
#endif

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
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
  discarded_ = 0;
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

InputBuffer read_input(const std::filesystem::path& path, const ImportProgressFn& progress) {
  InputBuffer buf;
  ByteBuffer raw = read_file(path, simdjson::SIMDJSON_PADDING);
  const std::size_t raw_size = raw.size() - simdjson::SIMDJSON_PADDING;
  if (is_gzip(raw.data(), raw_size)) {
    buf.was_gzip = true;
#if DREAMSCOPE_HAVE_LIBDEFLATE
    if (gunzip_whole(raw, raw_size, buf, progress)) return buf;
#endif
    gunzip(path, raw, raw_size, buf, progress);
    return buf;
  }
  buf.storage = std::move(raw);
  buf.size = raw_size;
  std::memset(buf.storage.data() + raw_size, 0, simdjson::SIMDJSON_PADDING);
  return buf;
}

} // namespace dreamscope
