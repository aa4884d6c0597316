// CRC-32C (Castagnoli), the checksum of TensorFlow's checkpoints and of the LevelDB tables
// their index files are, with the masking they store it under. Pure functions, thread-safe.
//
//   uint32_t crc = crc32c::Extend(0, data, n);   // crc32c::Value(data, n) is the same
//   stored = crc32c::Mask(crc);                   // what a file holds
#pragma once

#include <cstddef>
#include <cstdint>

namespace tessera::crc32c {

// The CRC-32C of `data` appended to bytes whose CRC-32C was `crc` (0 for none).
uint32_t Extend(uint32_t crc, const void* data, size_t n);
inline uint32_t Value(const void* data, size_t n) { return Extend(0, data, n); }

// A CRC stored beside data that may itself hold CRCs is masked (LevelDB's rule: the CRC of
// a string that contains its own CRC is then not degenerate).
inline uint32_t Mask(uint32_t crc) {
  constexpr uint32_t kMaskDelta = 0xa282ead8u;
  return ((crc >> 15) | (crc << 17)) + kMaskDelta;
}
inline uint32_t Unmask(uint32_t masked) {
  constexpr uint32_t kMaskDelta = 0xa282ead8u;
  const uint32_t rotated = masked - kMaskDelta;
  return (rotated >> 17) | (rotated << 15);
}

}  // namespace tessera::crc32c
