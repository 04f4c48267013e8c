// Reading an importer's input file into memory, gunzipping it when it is gzip, with the
// zero padding after the end that simdjson needs to parse it in place.
#pragma once

#include "dreamscope/importers.h"

#include <simdjson.h>

#include <filesystem>
#include <string>

namespace dreamscope {

struct InputBuffer {
  std::string storage; // size() >= size + simdjson::SIMDJSON_PADDING
  std::size_t size = 0;
  bool was_gzip = false;

  const char* data() const { return storage.data(); }
};

// Throws TraceError naming the file: missing, unreadable, a damaged or truncated gzip stream.
InputBuffer read_input(const std::filesystem::path& path, const ImportProgressFn& progress);

} // namespace dreamscope
