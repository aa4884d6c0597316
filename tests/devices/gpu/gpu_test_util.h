// What the GPU tests share: whether this machine has a GPU to run them on.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "devices/linked/linked_providers.h"

// Skips the test, with the reason, on a machine without a GPU.
#define TESSERA_SKIP_WITHOUT_GPU()                                  \
  do {                                                              \
    const std::string no_gpu = ::tessera::NoGpuReason();   \
    if (!no_gpu.empty()) GTEST_SKIP() << "needs a GPU: " << no_gpu; \
  } while (0)
