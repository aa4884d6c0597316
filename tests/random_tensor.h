// Test inputs drawn at random, the same for the same seed.
#pragma once

#include <cstdint>
#include <random>

#include "graph/tensor.h"

namespace tessera::testing {

// A float32 tensor of values drawn uniformly from [low, high).
inline Tensor Uniform(const TensorShape& shape, uint32_t seed, float low = -1, float high = 1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(low, high);
  Tensor t(DataType::kFloat, shape);
  for (float& v : t.flat<float>()) v = u(rng);
  return t;
}

}  // namespace tessera::testing
