#include "graph/serialize/png.h"

#include <zlib.h>

#include <limits>
#include <vector>

namespace tessera {
namespace {

void PutBigEndian32(std::string* out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out->push_back(static_cast<char>((v >> shift) & 0xff));
}

// length, type, data, CRC-32 of type and data.
void PutChunk(std::string* out, const char type[4], const std::string& data) {
  PutBigEndian32(out, static_cast<uint32_t>(data.size()));
  const size_t start = out->size();
  out->append(type, 4);
  out->append(data);
  const auto* typed = reinterpret_cast<const Bytef*>(out->data() + start);
  PutBigEndian32(out, static_cast<uint32_t>(::crc32(0, typed, static_cast<uInt>(out->size() - start))));
}

}  // namespace

StatusOr<std::string> EncodePng(const uint8_t* pixels, int64_t height, int64_t width, int channels) {
  // PNG's colour types for 1-4 channels of 8 bits.
  static constexpr uint8_t kColorType[] = {0, 0, 4, 2, 6};
  if (channels < 1 || channels > 4) {
    return errors::InvalidArgument("A PNG has 1 to 4 channels, not ", channels);
  }
  constexpr int64_t kMaxSide = std::numeric_limits<int32_t>::max();
  if (height < 1 || width < 1 || height > kMaxSide || width > kMaxSide) {
    return errors::InvalidArgument("A PNG is 1 to 2^31-1 pixels on a side, not ", height, "x", width);
  }
  // Each row starts with its filter type: 0, none (deflate does the work).
  const int64_t row_bytes = width * channels;
  if (height > std::numeric_limits<int64_t>::max() / (row_bytes + 1)) {
    return errors::InvalidArgument("A ", height, "x", width, " image is too large to encode");
  }
  std::vector<uint8_t> rows(static_cast<size_t>(height * (row_bytes + 1)));
  for (int64_t y = 0; y < height; ++y) {
    uint8_t* row = rows.data() + y * (row_bytes + 1);
    row[0] = 0;
    std::copy(pixels + y * row_bytes, pixels + (y + 1) * row_bytes, row + 1);
  }
  uLongf deflated_size = ::compressBound(rows.size());
  std::string deflated(deflated_size, '\0');
  if (::compress2(reinterpret_cast<Bytef*>(deflated.data()), &deflated_size, rows.data(), rows.size(),
                  Z_DEFAULT_COMPRESSION) != Z_OK) {
    return errors::ResourceExhausted("zlib could not compress a ", height, "x", width, " image");
  }
  deflated.resize(deflated_size);

  std::string header;
  PutBigEndian32(&header, static_cast<uint32_t>(width));
  PutBigEndian32(&header, static_cast<uint32_t>(height));
  header += {8, static_cast<char>(kColorType[channels]), 0, 0, 0};  // depth, colour, zlib, filters, no interlace
  std::string png = "\x89PNG\r\n\x1a\n";
  PutChunk(&png, "IHDR", header);
  PutChunk(&png, "IDAT", deflated);
  PutChunk(&png, "IEND", "");
  return png;
}

}  // namespace tessera
