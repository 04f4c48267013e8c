// A small PNG reader for checking Chromium's screenshots: 8-bit RGB or RGBA, not interlaced.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace dreamscope::test {

struct Rgb {
  std::uint8_t r = 0, g = 0, b = 0;
  bool operator==(const Rgb&) const = default;
};

struct Image {
  int width = 0, height = 0;
  std::vector<Rgb> pixels; // row-major
  Rgb at(int x, int y) const { return pixels[static_cast<std::size_t>(y) * static_cast<std::size_t>(width) + static_cast<std::size_t>(x)]; }
};

// Throws std::runtime_error naming the file and what is unsupported or damaged.
Image read_png(const std::filesystem::path& path);

// "#4e79a7" -> {0x4e, 0x79, 0xa7}
Rgb parse_colour(const std::string& hex);

} // namespace dreamscope::test
