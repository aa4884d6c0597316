// Sum, Mean and Max over any set of axes, with keep_dims, and ArgMax, on the GPU. Each
// reduced group of the ReductionPlan is one [outer, reduced, inner] pass, innermost first;
// a Mean of means over equal-sized groups is the Mean.
#include "devices/gpu/gpu_op_kernel.h"
#include "devices/gpu/launch.h"
#include "kernels/util/reduction_plan.h"

namespace tessera::gpu {
namespace {

template <typename T>
class ReductionOp : public GpuOpKernel {
 public:
  ReductionOp(OpKernelConstruction* c, ReduceFn fn) : GpuOpKernel(c), fn_(fn) {
    Status s = c->GetAttr("keep_dims", &keep_dims_);
    if (!s.ok()) c->SetStatus(s);
  }

  void ComputeOnGpu(OpKernelContext* ctx, const GpuDeviceContext& gpu) override {
    const Tensor& in = ctx->input(0);
    StatusOr<ReductionPlan> plan = MakeReductionPlan(in.shape(), ctx->input(1), keep_dims_);
    OP_REQUIRES_OK(ctx, plan.status());
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, plan->out_shape, &out));
    const int64_t n = out->NumElements();
    if (n == 0) return;
    cudaStream_t stream = gpu.compute_stream();
    if (plan->reduced_count == 0) {  // the reduction's identity
      OP_REQUIRES_OK(ctx, ReduceOnGpu<T>(ctx, gpu, fn_, nullptr, MutableDevicePtr<T>(out), n, 0, 1));
      return;
    }
    std::vector<int64_t> dims = plan->dims;
    int last = -1;  // the outermost reduced group: its pass writes the output
    for (size_t g = 0; g < dims.size(); ++g) {
      if (plan->reduced[g]) {
        last = static_cast<int>(g);
        break;
      }
    }
    if (last < 0) {
      OP_REQUIRES_OK(ctx, CudaStatus(cudaMemcpyAsync(out->raw_data(), in.raw_data(), in.TotalBytes(),
                                                     cudaMemcpyDeviceToDevice, stream),
                                     type_string()));
      return;
    }
    Tensor current = in;
    for (int g = static_cast<int>(dims.size()) - 1; g >= 0; --g) {
      if (!plan->reduced[g]) continue;
      int64_t outer = 1, inner = 1;
      for (int i = 0; i < g; ++i) outer *= dims[i];
      for (size_t i = g + 1; i < dims.size(); ++i) inner *= dims[i];
      Tensor next;
      if (g == last) {
        next = *out;
      } else {
        OP_REQUIRES_OK(ctx, ctx->allocate_temp(in.dtype(), TensorShape({outer * inner}), &next));
      }
      OP_REQUIRES_OK(ctx,
                     ReduceOnGpu<T>(ctx, gpu, fn_, DevicePtr<T>(current), MutableDevicePtr<T>(&next), outer, dims[g], inner));
      current = next;
      dims[g] = 1;
    }
  }

 private:
  const ReduceFn fn_;
  bool keep_dims_ = false;
};

template <typename T>
class ArgMaxOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  void ComputeOnGpu(OpKernelContext* ctx, const GpuDeviceContext& gpu) override {
    const Tensor& in = ctx->input(0);
    StatusOr<ArgMaxPlan> plan = MakeArgMaxPlan(in.shape(), ctx->input(1));  // dimension: in host memory
    OP_REQUIRES_OK(ctx, plan.status());
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, plan->out_shape, &out));
    OP_REQUIRES_OK(ctx, CudaStatus(ArgMax<T, int64_t>(DevicePtr<T>(in), MutableDevicePtr<int64_t>(out), plan->outer,
                                                      plan->n, plan->inner, gpu.compute_stream()),
                                   "ArgMax"));
  }
};

}  // namespace

void RegisterReductionKernels(KernelRegistry& r) {
  auto types = [&r](auto zero) {
    using T = decltype(zero);
    const std::pair<const char*, ReduceFn> reductions[] = {
        {"Sum", ReduceFn::kSum}, {"Mean", ReduceFn::kMean}, {"Max", ReduceFn::kMax}};
    for (const auto& [op, fn] : reductions) {
      r.Register(KernelDefBuilder(op)
                     .Device(kDeviceGpu)
                     .TypeConstraint("T", {DataTypeToEnum<T>::value})
                     .HostMemory("reduction_indices"),
                 [fn = fn](OpKernelConstruction* c) -> std::unique_ptr<OpKernel> {
                   return std::make_unique<ReductionOp<T>>(c, fn);
                 });
    }
    // An int32 index stays in host memory, as every int32 on the GPU.
    r.Register<ArgMaxOp<T>>(KernelDefBuilder("ArgMax")
                                .Device(kDeviceGpu)
                                .TypeConstraint("T", {DataTypeToEnum<T>::value})
                                .TypeConstraint("output_type", {DataTypeToEnum<int64_t>::value})
                                .HostMemory("dimension"));
  };
  types(float{});
  types(double{});
}

}  // namespace tessera::gpu
