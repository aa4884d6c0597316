// A batch cut into one contiguous run of images per intra-op thread (never more runs than
// images), for kernels whose parts each make one library call or keep their own sums: the
// oneDNN convolutions (dnnl_conv.h) and the max pool's gradient from its argmax.
//
//   BatchParts parts(ctx, n);
//   parts.ForEach([&](int64_t part, int64_t first, int64_t count) { ... });
//
// ForEach runs the parts on the intra-op pool and returns when all are done.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/op_kernel.h"

namespace tessera::cpu {

class BatchParts {
 public:
  BatchParts(OpKernelContext* ctx, int64_t images)
      : ctx_(ctx),
        images_(images),
        count_(std::max<int64_t>(1, std::min<int64_t>(ctx->intra_op_pool()->NumThreads(), images))),
        per_part_((images + count_ - 1) / count_) {}

  int64_t count() const { return count_; }
  // Images in `part`; zero for a trailing part the rounding left empty.
  int64_t size(int64_t part) const { return std::clamp<int64_t>(images_ - part * per_part_, 0, per_part_); }

  // fn(part, first image, image count) for every part that has images.
  template <typename F>
  void ForEach(F fn) const {
    ctx_->ParallelFor(count_, int64_t{1} << 30, [&](int64_t begin, int64_t end) {
      for (int64_t part = begin; part < end; ++part) {
        if (size(part) > 0) fn(part, part * per_part_, size(part));
      }
    });
  }

 private:
  OpKernelContext* ctx_;
  int64_t images_, count_, per_part_;
};

}  // namespace tessera::cpu
