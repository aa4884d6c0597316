#pragma once
// A constant filter in a layout of one of our own kernels (winograd_conv.h), made on first
// use and kept: a kernel whose filter input is a Const
// holds one, so that a frozen model's filters are transformed once, not on every call.
//
// Thread safety: Get may run concurrently; a pointer it returned stays valid until Get
// makes the transform again from another buffer.

#include <cstdint>
#include <functional>
#include <mutex>

#include "graph/tensor.h"

namespace tessera::cpu {

class TransformedFilter {
 public:
  // `filter` transformed by `make` into `floats` floats: made again if `filter` is another
  // buffer than last time (a kernel's constant is always the same one).
  const float* Get(const float* filter, int64_t floats, const std::function<void(float*)>& make) {
    std::lock_guard<std::mutex> lock(mu_);
    if (source_ != filter || transformed_.NumElements() != floats) {
      Tensor made(DataType::kFloat, TensorShape({floats}));
      make(made.data<float>());
      transformed_ = std::move(made);
      source_ = filter;
    }
    return transformed_.data<float>();
  }

 private:
  std::mutex mu_;
  const float* source_ = nullptr;  // guarded by mu_
  Tensor transformed_;             // guarded by mu_
};

}  // namespace tessera::cpu
