#include "graph/builder/initializers.h"

#include <cmath>

namespace tessera {

Output GlorotUniform(const Scope& scope, const TensorShape& shape, DataType dtype, int64_t seed) {
  if (!shape.IsFullyDefined() || shape.rank() < 1) {
    scope.UpdateStatus(errors::InvalidArgument("GlorotUniform needs a fully defined shape of rank >= 1, got ",
                                               shape.DebugString()));
    return Output();
  }
  double receptive = 1;
  for (int d = 0; d + 2 < shape.rank(); ++d) receptive *= static_cast<double>(shape.dim(d));
  const double fan_in = shape.rank() == 1 ? shape.dim(0) : receptive * shape.dim(shape.rank() - 2);
  const double fan_out = receptive * shape.dim(shape.rank() - 1);
  const double limit = std::sqrt(6.0 / std::max(1.0, fan_in + fan_out));
  std::vector<int32_t> dims;
  for (int d = 0; d < shape.rank(); ++d) dims.push_back(static_cast<int32_t>(shape.dim(d)));
  // Only the result takes the scope's op name.
  Scope inner = scope.NewSubScope("glorot_uniform");
  Output u = ops::RandomUniform(inner, Tensor::FromVector(dims), dtype, {.seed = seed, .seed2 = 0});
  auto scalar = [&](double v) {
    return dtype == DataType::kDouble ? Input(v) : Input(static_cast<float>(v));
  };
  return ops::Sub(scope, ops::Mul(inner, u, scalar(2 * limit)), scalar(limit));
}

}  // namespace tessera
