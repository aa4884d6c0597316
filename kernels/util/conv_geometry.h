// Where the windows of a 2-D convolution or pooling fall over an NHWC input, by
// TensorFlow's SAME and VALID rules, and the attributes and shape arguments of the ops that
// slide them. Shared by every device's convolution and pooling kernels, so that they accept
// and refuse the same graphs with the same messages.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "graph/tensor_shape.h"
#include "kernels/op_kernel.h"

namespace tessera {

struct Geometry {
  int64_t n = 0, h = 0, w = 0, c = 0;  // input
  int64_t kh = 0, kw = 0;              // window
  int64_t sh = 1, sw = 1;              // strides
  int64_t oh = 0, ow = 0;              // output
  int64_t pad_top = 0, pad_left = 0;
  // What the windows overhang the input past its last row and column (SAME only).
  int64_t pad_bottom() const { return std::max<int64_t>((oh - 1) * sh + kh - h - pad_top, 0); }
  int64_t pad_right() const { return std::max<int64_t>((ow - 1) * sw + kw - w - pad_left, 0); }
  TensorShape output_shape(int64_t channels) const { return TensorShape({n, oh, ow, channels}); }
};

StatusOr<Geometry> MakeGeometry(const TensorShape& input, int64_t kh, int64_t kw, const std::vector<int64_t>& strides,
                                const std::string& padding);

// Conv2D's, Conv2DBackpropInput's and Conv2DBackpropFilter's attributes: NHWC and no
// dilation, as every device here supports.
struct ConvAttrs {
  std::vector<int64_t> strides;
  std::string padding;
};
// A bad attribute sets `c`'s status (the kernel is then not made) and gives empty attrs.
ConvAttrs ReadConvAttrs(OpKernelConstruction* c);
// The geometry of input `in` and filter `f` [KH, KW, C, O], checked against each other.
StatusOr<Geometry> ConvGeometry(const ConvAttrs& attrs, const TensorShape& in, const TensorShape& f);

// MaxPool's, AvgPool's and their gradients' attributes.
struct PoolAttrs {
  std::vector<int64_t> ksize, strides;
  std::string padding;
};
// As ReadConvAttrs.
PoolAttrs ReadPoolAttrs(OpKernelConstruction* c);
inline StatusOr<Geometry> PoolGeometry(const PoolAttrs& attrs, const TensorShape& in) {
  return MakeGeometry(in, attrs.ksize[1], attrs.ksize[2], attrs.strides, attrs.padding);
}

// The geometry of a convolution's backprop, with `out_backprop` checked against it.
StatusOr<Geometry> ConvBackpropGeometry(const ConvAttrs& attrs, const TensorShape& in, const TensorShape& f,
                                        const Tensor& out_backprop);
// The geometry of a pooling gradient, with `grad` checked against it.
StatusOr<Geometry> PoolGradGeometry(const PoolAttrs& attrs, const TensorShape& in, const Tensor& grad);

// A shape given as a tensor (input_sizes, filter_sizes, orig_input_shape): a 4-vector.
StatusOr<TensorShape> ShapeArgument(const Tensor& t, std::string_view what);

}  // namespace tessera
