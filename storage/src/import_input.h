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
// zeroing what the file or the decompressor overwrites at once costs a pass over it.
class ByteBuffer {
 public:
  std::size_t size() const { return size_; }
  char* data() { return bytes_.get(); }
  const char* data() const { return bytes_.get(); }
  // Keeps the first min(size, n) bytes; the rest is uninitialized.
  void resize(std::size_t n) {
    if (n > capacity_) {
      std::unique_ptr<char[]> grown(new char[n]);
      if (size_ > 0) std::memcpy(grown.get(), bytes_.get(), size_);
      bytes_ = std::move(grown);
      capacity_ = n;
    }
    size_ = n;
  }

 private:
  std::unique_ptr<char[]> bytes_;
  std::size_t size_ = 0, capacity_ = 0;
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
