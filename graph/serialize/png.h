// PNG encoding of 8-bit images, for image summaries (TensorBoard shows PNGs). Pure function,
// thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "graph/platform/status.h"

namespace tessera {

// `pixels` holds height rows of width pixels of `channels` bytes each (1 gray, 2 gray and
// alpha, 3 RGB, 4 RGBA). InvalidArgument for other channel counts, an empty image or one
// larger than PNG's 2^31 - 1 rows or columns.
StatusOr<std::string> EncodePng(const uint8_t* pixels, int64_t height, int64_t width, int channels);

}  // namespace tessera
