#include "png.h"

#include <zlib.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace dreamscope::test {

namespace {

std::uint32_t be32(const unsigned char* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | p[3];
}

int paeth(int a, int b, int c) {
  const int p = a + b - c;
  const int pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
  if (pa <= pb && pa <= pc) return a;
  return pb <= pc ? b : c;
}

} // namespace

Rgb parse_colour(const std::string& hex) {
  const auto v = std::stoul(hex.substr(1), nullptr, 16);
  return {static_cast<std::uint8_t>(v >> 16), static_cast<std::uint8_t>(v >> 8), static_cast<std::uint8_t>(v)};
}

Image read_png(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<unsigned char> data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto fail = [&](const std::string& why) { return std::runtime_error(path.string() + ": " + why); };
  static const unsigned char kSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (data.size() < 8 || !std::equal(kSignature, kSignature + 8, data.begin())) throw fail("not a PNG file");

  Image img;
  int channels = 0;
  std::vector<unsigned char> compressed;
  for (std::size_t pos = 8; pos + 12 <= data.size();) {
    const std::uint32_t len = be32(&data[pos]);
    const std::string type(reinterpret_cast<const char*>(&data[pos + 4]), 4);
    if (pos + 12 + len > data.size()) throw fail("truncated chunk " + type);
    const unsigned char* body = &data[pos + 8];
    if (type == "IHDR") {
      img.width = static_cast<int>(be32(body));
      img.height = static_cast<int>(be32(body + 4));
      const int depth = body[8], colour = body[9], interlace = body[12];
      if (depth != 8 || (colour != 2 && colour != 6) || interlace != 0) throw fail("only 8-bit RGB(A), not interlaced");
      channels = colour == 2 ? 3 : 4;
    } else if (type == "IDAT") {
      compressed.insert(compressed.end(), body, body + len);
    } else if (type == "IEND") {
      break;
    }
    pos += 12 + len;
  }
  if (channels == 0) throw fail("no IHDR");

  const std::size_t stride = static_cast<std::size_t>(img.width) * static_cast<std::size_t>(channels);
  std::vector<unsigned char> raw((stride + 1) * static_cast<std::size_t>(img.height));
  uLongf raw_size = raw.size();
  if (uncompress(raw.data(), &raw_size, compressed.data(), compressed.size()) != Z_OK || raw_size != raw.size()) {
    throw fail("bad image data");
  }
  std::vector<unsigned char> previous(stride, 0), row(stride);
  img.pixels.resize(static_cast<std::size_t>(img.width) * static_cast<std::size_t>(img.height));
  for (int y = 0; y < img.height; ++y) {
    const unsigned char* line = &raw[static_cast<std::size_t>(y) * (stride + 1)];
    const int filter = line[0];
    for (std::size_t i = 0; i < stride; ++i) {
      const int a = i >= static_cast<std::size_t>(channels) ? row[i - static_cast<std::size_t>(channels)] : 0;
      const int b = previous[i];
      const int c = i >= static_cast<std::size_t>(channels) ? previous[i - static_cast<std::size_t>(channels)] : 0;
      int predictor = 0;
      switch (filter) {
        case 0: predictor = 0; break;
        case 1: predictor = a; break;
        case 2: predictor = b; break;
        case 3: predictor = (a + b) / 2; break;
        case 4: predictor = paeth(a, b, c); break;
        default: throw fail("bad filter type");
      }
      row[i] = static_cast<unsigned char>(line[1 + i] + predictor);
    }
    for (int x = 0; x < img.width; ++x) {
      const unsigned char* p = &row[static_cast<std::size_t>(x) * static_cast<std::size_t>(channels)];
      img.pixels[static_cast<std::size_t>(y) * static_cast<std::size_t>(img.width) + static_cast<std::size_t>(x)] = {p[0], p[1], p[2]};
    }
    previous.swap(row);
  }
  return img;
}

} // namespace dreamscope::test
