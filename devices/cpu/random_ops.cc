// RandomUniform, RandomStandardNormal and TruncatedNormal. Each kernel keeps one generator
// for its lifetime, seeded from (seed, seed2) when either is set, so a seeded op gives the
// same sequence of tensors in every session, and a new tensor each step.
#include <algorithm>
#include <mutex>
#include <random>

#include "devices/cpu/cpu_kernels.h"

namespace tessera::cpu {
namespace {

enum class Distribution { kUniform, kNormal, kTruncatedNormal };

template <typename T, Distribution kDist>
class RandomOp : public OpKernel {
 public:
  explicit RandomOp(OpKernelConstruction* c) : OpKernel(c) {
    int64_t seed = 0, seed2 = 0;
    Status s = c->GetAttr("seed", &seed);
    if (s.ok()) s = c->GetAttr("seed2", &seed2);
    if (!s.ok()) c->SetStatus(s);
    if (seed == 0 && seed2 == 0) {
      std::random_device device;
      rng_.seed((uint64_t{device()} << 32) | device());
    } else {
      std::seed_seq seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32), static_cast<uint32_t>(seed2),
                        static_cast<uint32_t>(seed2 >> 32)};
      rng_.seed(seq);
    }
  }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& shape_t = ctx->input(0);
    OP_REQUIRES(ctx, shape_t.rank() == 1, errors::InvalidArgument("shape must be a vector, got ", shape_t.shape().DebugString()));
    StatusOr<TensorShape> shape = TensorShape::Make(IntTensorValues(shape_t));
    OP_REQUIRES_OK(ctx, shape.status());
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *shape, &out));
    T* p = out->data<T>();
    // One generator, so one thread: the step's cancellation is checked every 2^16 values.
    constexpr int64_t kBetweenChecks = int64_t{1} << 16;
    std::lock_guard<std::mutex> lock(mu_);
    std::uniform_real_distribution<T> uniform(0, 1);
    std::normal_distribution<T> normal(0, 1);
    for (int64_t start = 0; start < out->NumElements(); start += kBetweenChecks) {
      OP_REQUIRES(ctx, !ctx->IsCancelled(), errors::Cancelled("Step was cancelled"));
      const int64_t end = std::min(out->NumElements(), start + kBetweenChecks);
      for (int64_t i = start; i < end; ++i) {
        if constexpr (kDist == Distribution::kUniform) {
          p[i] = uniform(rng_);
        } else {
          T v = normal(rng_);
          // TensorFlow's truncation: values beyond two standard deviations are drawn again.
          if constexpr (kDist == Distribution::kTruncatedNormal) {
            while (v < -2 || v > 2) v = normal(rng_);
          }
          p[i] = v;
        }
      }
    }
  }

 private:
  std::mutex mu_;
  std::mt19937_64 rng_;  // guarded by mu_
};

}  // namespace

void RegisterRandomKernels(KernelRegistry& r) {
  ForEachType<float, double>([&](auto zero) {
    using T = decltype(zero);
    r.Register<RandomOp<T, Distribution::kUniform>>(
        KernelDefBuilder("RandomUniform").Device(kDeviceCpu).TypeConstraint<T>("dtype"));
    r.Register<RandomOp<T, Distribution::kNormal>>(
        KernelDefBuilder("RandomStandardNormal").Device(kDeviceCpu).TypeConstraint<T>("dtype"));
    r.Register<RandomOp<T, Distribution::kTruncatedNormal>>(
        KernelDefBuilder("TruncatedNormal").Device(kDeviceCpu).TypeConstraint<T>("dtype"));
  });
}

}  // namespace tessera::cpu
