// GradientBuckets: which gradients travel together in one all-reduce. Many small tensors
// each paying a ring's per-message cost is slow; fused into buckets of about
// `bucket_bytes` (the idea of PyTorch DDP's buckets and Horovod's fusion buffer) they share
// one ring pass. Each bucket holds gradients of one dtype, in the order given; a gradient
// larger than a bucket travels alone.
//
//   auto buckets = AssignGradientBuckets({{DataType::kFloat, 4096}, {DataType::kFloat, 40}}, 1 << 20);
//   // -> {{0, 1}}
//
// Pure function; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/types.h"

namespace tessera {

struct GradientSize {
  DataType dtype = DataType::kFloat;
  int64_t bytes = 0;
};

// Indexes into `gradients`, one list per bucket, in the order the buckets fill up.
// bucket_bytes <= 0 puts every gradient in a bucket of its own.
std::vector<std::vector<int>> AssignGradientBuckets(const std::vector<GradientSize>& gradients,
                                                    int64_t bucket_bytes);

}  // namespace tessera
