// TensorFlow's StridedSlice spec (begin, end, strides and the five masks) resolved against a
// tensor's shape: for every dimension of the input the first index, the step and the number
// of elements taken, and the shape of the result. Shared by the op's shape function and its
// kernels. Thread-safe (pure functions).
#pragma once

#include <cstdint>
#include <vector>

#include "graph/tensor_shape.h"

namespace tessera {

struct StridedSliceMasks {
  int64_t begin = 0, end = 0, ellipsis = 0, new_axis = 0, shrink_axis = 0;
};

struct StridedSliceRange {
  std::vector<int64_t> begin;   // per input dimension
  std::vector<int64_t> stride;  // per input dimension, never 0
  std::vector<int64_t> size;    // per input dimension
  TensorShape result;           // after new axes are added and shrunk axes removed
  std::vector<int> result_source;  // per result dimension: the input dimension it slices, -1 for a new axis
};

// `input` must be fully defined. InvalidArgument for a zero stride, more than one ellipsis,
// specs of different lengths, or a shrunk index out of range.
StatusOr<StridedSliceRange> ResolveStridedSlice(const TensorShape& input, const std::vector<int64_t>& begin,
                                                const std::vector<int64_t>& end,
                                                const std::vector<int64_t>& strides, const StridedSliceMasks& masks);

}  // namespace tessera
