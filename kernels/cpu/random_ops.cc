// RandomUniform, RandomStandardNormal and TruncatedNormal. Each kernel keeps one generator
// for its lifetime, seeded from (seed, seed2) when either is set, so a seeded op gives the
// same sequence of tensors in every session, and a new tensor each step.
#include <mutex>
#include <random>

#include "kernels/cpu/register.h"

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
    std::lock_guard<std::mutex> lock(mu_);
    if constexpr (kDist == Distribution::kUniform) {
      std::uniform_real_distribution<T> d(0, 1);
      for (int64_t i = 0; i < out->NumElements(); ++i) p[i] = d(rng_);
    } else {
      std::normal_distribution<T> d(0, 1);
      for (int64_t i = 0; i < out->NumElements(); ++i) {
        T v = d(rng_);
        // TensorFlow's truncation: values beyond two standard deviations are drawn again.
        if constexpr (kDist == Distribution::kTruncatedNormal) {
          while (v < -2 || v > 2) v = d(rng_);
        }
        p[i] = v;
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
