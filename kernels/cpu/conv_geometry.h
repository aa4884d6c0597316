// Where the windows of a 2-D convolution or pooling fall over an NHWC input, by
// TensorFlow's SAME and VALID rules. Shared by the Eigen and oneDNN convolution paths.
#pragma once

#include <string>
#include <vector>

#include "graph/shape_inference.h"
#include "graph/tensor_shape.h"

namespace tessera::cpu {

struct Geometry {
  int64_t n = 0, h = 0, w = 0, c = 0;  // input
  int64_t kh = 0, kw = 0;              // window
  int64_t sh = 1, sw = 1;              // strides
  int64_t oh = 0, ow = 0;              // output
  int64_t pad_top = 0, pad_left = 0;
  // What the windows overhang the input past its last row and column (SAME only).
  int64_t pad_bottom() const { return std::max<int64_t>((oh - 1) * sh + kh - h - pad_top, 0); }
  int64_t pad_right() const { return std::max<int64_t>((ow - 1) * sw + kw - w - pad_left, 0); }
};

inline StatusOr<Geometry> MakeGeometry(const TensorShape& input, int64_t kh, int64_t kw,
                                       const std::vector<int64_t>& strides, const std::string& padding) {
  if (input.rank() != 4) return errors::InvalidArgument("input must be 4-D (NHWC), got ", input.DebugString());
  if (strides.size() != 4 || strides[0] != 1 || strides[3] != 1 || strides[1] < 1 || strides[2] < 1) {
    return errors::InvalidArgument("strides must be [1, sh, sw, 1] with sh, sw >= 1");
  }
  Geometry g;
  g.n = input.dim(0), g.h = input.dim(1), g.w = input.dim(2), g.c = input.dim(3);
  g.kh = kh, g.kw = kw, g.sh = strides[1], g.sw = strides[2];
  RETURN_IF_ERROR(WindowedOutputSize(g.h, kh, g.sh, padding, &g.oh, &g.pad_top));
  RETURN_IF_ERROR(WindowedOutputSize(g.w, kw, g.sw, padding, &g.ow, &g.pad_left));
  return g;
}

}  // namespace tessera::cpu
