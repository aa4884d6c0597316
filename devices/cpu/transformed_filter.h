#pragma once
// A constant filter in a layout of one of our own kernels (winograd_conv.h), made on first
// use and kept: a kernel whose filter input is a Const holds one, so that a frozen model's
// filters are transformed once, not on every call.
//
// Thread safety: Get may run concurrently. What it returns shares the transform's buffer,
// which stays alive while the caller holds it, whatever Get makes later.

#include <cstdint>
#include <functional>
#include <mutex>

#include "graph/allocator.h"
#include "graph/tensor.h"

namespace tessera::cpu {

class TransformedFilter {
 public:
  // `filter` transformed by `make` into `floats` floats: made again if `filter` is another
  // buffer than last time (a kernel's constant is always the same one).
  StatusOr<Tensor> Get(const float* filter, int64_t floats, const std::function<void(float*)>& make) {
    std::lock_guard<std::mutex> lock(mu_);
    if (source_ != filter || transformed_.NumElements() != floats) {
      ASSIGN_OR_RETURN(Tensor made, Tensor::Allocate(CpuAllocator(), DataType::kFloat, TensorShape({floats})));
      make(made.data<float>());
      transformed_ = std::move(made);
      source_ = filter;
    }
    return transformed_;
  }

 private:
  std::mutex mu_;
  const float* source_ = nullptr;  // guarded by mu_
  Tensor transformed_;             // guarded by mu_
};

}  // namespace tessera::cpu
