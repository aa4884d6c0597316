// Initial values for variables, built as ops: Glorot (Xavier) uniform, the default of
// Keras's Dense and Conv2D layers.
//
//   auto w = ops::Variable(root.WithOpName("w"), {784, 64}, DataType::kFloat);
//   auto init = ops::Assign(root, w, GlorotUniform(root, {784, 64}, DataType::kFloat, 1));
//
// Graph-building: one thread per graph, as for every wrapper.
#pragma once

#include "graph/builder/ops.h"

namespace tessera {

// U(-limit, limit) with limit = sqrt(6 / (fan_in + fan_out)). For a matrix [in, out] the fans
// are in and out; for a convolution kernel [h, w, in, out], h*w*in and h*w*out; for a vector
// [n], both n. `seed` 0 draws a fresh value each session.
Output GlorotUniform(const Scope& scope, const TensorShape& shape, DataType dtype, int64_t seed = 0);

}  // namespace tessera
