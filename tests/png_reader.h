// A reader of the PNGs Tessera writes (8-bit, unfiltered rows, one zlib stream over the
// IDAT chunks), for tests: it checks every chunk's CRC, and that each row's filter is none.
#pragma once

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdint>
#include <string>
#include <vector>

namespace tessera::testing {

struct DecodedPng {
  uint32_t width = 0, height = 0;
  int color_type = -1;
  std::vector<uint8_t> pixels;  // rows of width * channels bytes
};

inline uint32_t ReadBigEndian32(const std::string& s, size_t at) {
  uint32_t v = 0;
  for (size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<uint8_t>(s[at + i]);
  return v;
}

inline DecodedPng DecodePng(const std::string& png, int channels) {
  DecodedPng out;
  EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  std::string deflated;
  for (size_t at = 8; at + 12 <= png.size();) {
    const uint32_t length = ReadBigEndian32(png, at);
    const std::string type = png.substr(at + 4, 4);
    const std::string data = png.substr(at + 8, length);
    const auto* typed = reinterpret_cast<const Bytef*>(png.data() + at + 4);
    EXPECT_EQ(ReadBigEndian32(png, at + 8 + length), ::crc32(0, typed, length + 4)) << type;
    if (type == "IHDR") {
      out.width = ReadBigEndian32(data, 0);
      out.height = ReadBigEndian32(data, 4);
      EXPECT_EQ(data[8], 8);
      out.color_type = data[9];
    } else if (type == "IDAT") {
      deflated += data;
    }
    at += 12 + length;
  }
  const size_t row = out.width * channels + 1;
  std::vector<uint8_t> rows(out.height * row);
  uLongf size = rows.size();
  EXPECT_EQ(::uncompress(rows.data(), &size, reinterpret_cast<const Bytef*>(deflated.data()), deflated.size()), Z_OK);
  EXPECT_EQ(size, rows.size());
  for (uint32_t y = 0; y < out.height; ++y) {
    EXPECT_EQ(rows[y * row], 0) << "row " << y << "'s filter";
    out.pixels.insert(out.pixels.end(), rows.begin() + y * row + 1, rows.begin() + (y + 1) * row);
  }
  return out;
}

}  // namespace tessera::testing
