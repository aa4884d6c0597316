// Launch helpers shared by the .cu files: grid-stride loops over int64 element counts.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

namespace tessera::gpu {

constexpr int kThreadsPerBlock = 256;

// Enough blocks to cover n once, capped: the grid-stride loop does the rest.
inline int BlocksFor(int64_t n) {
  const int64_t blocks = (n + kThreadsPerBlock - 1) / kThreadsPerBlock;
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(blocks, 65535 * 8)));
}

#define TESSERA_GRID_STRIDE_LOOP(i, n)                                                   \
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)

// The launch's own error (a bad configuration); errors of earlier asynchronous work stay
// for the stream's next synchronisation to report.
inline cudaError_t LaunchError() { return cudaGetLastError(); }

}  // namespace tessera::gpu
