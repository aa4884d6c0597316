// RandomUniform, RandomStandardNormal and TruncatedNormal on the GPU (devices/gpu/random.cu).
// As on the CPU, a seeded op gives the same sequence of tensors in every session and a new
// tensor each step; the GPU's numbers are its own (Philox, not the CPU's Mersenne twister).
#include <atomic>
#include <random>

#include "devices/gpu/gpu_op_kernel.h"
#include "devices/gpu/launch.h"

namespace tessera::gpu {
namespace {

uint64_t KeyOf(int64_t seed, int64_t seed2) {
  if (seed == 0 && seed2 == 0) {
    std::random_device device;
    return (uint64_t{device()} << 32) | device();
  }
  // Mixes the two seeds so that (a, b) and (b, a) differ (splitmix64's finaliser).
  uint64_t z = static_cast<uint64_t>(seed) * 0x9E3779B97F4A7C15ull ^ static_cast<uint64_t>(seed2);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

template <typename T, RandomDistribution kDist>
class RandomOp : public GpuOpKernel {
 public:
  explicit RandomOp(OpKernelConstruction* c) : GpuOpKernel(c) {
    int64_t seed = 0, seed2 = 0;
    Status s = c->GetAttr("seed", &seed);
    if (s.ok()) s = c->GetAttr("seed2", &seed2);
    if (!s.ok()) c->SetStatus(s);
    key_ = KeyOf(seed, seed2);
  }
  void ComputeOnGpu(OpKernelContext* ctx, const GpuDeviceContext& gpu) override {
    const Tensor& shape_t = ctx->input(0);
    OP_REQUIRES(ctx, shape_t.rank() == 1,
                errors::InvalidArgument("shape must be a vector, got ", shape_t.shape().DebugString()));
    StatusOr<TensorShape> shape = TensorShape::Make(IntTensorValues(shape_t));
    OP_REQUIRES_OK(ctx, shape.status());
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *shape, &out));
    // Each call takes the next n counters, so concurrent steps draw disjoint numbers.
    const uint64_t offset = next_.fetch_add(static_cast<uint64_t>(out->NumElements()));
    OP_REQUIRES_OK(ctx, CudaStatus(Random<T>(kDist, key_, offset, MutableDevicePtr<T>(out), out->NumElements(),
                                             gpu.compute_stream()),
                                   type_string()));
  }

 private:
  uint64_t key_ = 0;
  std::atomic<uint64_t> next_{0};
};

}  // namespace

void RegisterRandomKernels(KernelRegistry& r) {
  auto types = [&r](auto zero) {
    using T = decltype(zero);
    const std::vector<DataType> t = {DataTypeToEnum<T>::value};
    r.Register<RandomOp<T, RandomDistribution::kUniform>>(
        KernelDefBuilder("RandomUniform").Device(kDeviceGpu).TypeConstraint("dtype", t).HostMemory("shape"));
    r.Register<RandomOp<T, RandomDistribution::kNormal>>(
        KernelDefBuilder("RandomStandardNormal").Device(kDeviceGpu).TypeConstraint("dtype", t).HostMemory("shape"));
    r.Register<RandomOp<T, RandomDistribution::kTruncatedNormal>>(
        KernelDefBuilder("TruncatedNormal").Device(kDeviceGpu).TypeConstraint("dtype", t).HostMemory("shape"));
  };
  types(float{});
  types(double{});
}

}  // namespace tessera::gpu
