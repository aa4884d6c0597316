// What the GPU tests share: whether this machine has a GPU to run them on.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "runtime/gpu/gpu_device.h"

namespace tessera::testing {

// Empty when a GPU is there; otherwise why not.
inline std::string NoGpuReason() {
  StatusOr<std::vector<PhysicalGpu>> gpus = ListPhysicalGpus();
  if (!gpus.ok()) return std::string(gpus.status().message());
  if (gpus->empty()) return "the CUDA driver sees no GPU";
  return "";
}

}  // namespace tessera::testing

// Skips the test, with the reason, on a machine without a GPU.
#define TESSERA_SKIP_WITHOUT_GPU()                                  \
  do {                                                              \
    const std::string no_gpu = ::tessera::testing::NoGpuReason();   \
    if (!no_gpu.empty()) GTEST_SKIP() << "needs a GPU: " << no_gpu; \
  } while (0)
