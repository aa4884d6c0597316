// MatMul and _FusedMatMul (the remapper's MatMul, BiasAdd and Relu) through cuBLAS, the
// bias and ReLU in one pass after the product. cuBLAS is column-major: a row-major C = op(A) op(B) is the
// column-major C^T = op(B)^T op(A)^T, so the operands go in swapped, untransposed in memory.
// float32 computes in float32 unless the session allows TF32 (GpuDeviceContext).
#include <climits>

#include "devices/gpu/gpu_op_kernel.h"
#include "devices/gpu/launch.h"
#include "kernels/util/fused_ops.h"

namespace tessera::gpu {
namespace {

cublasStatus_t Gemm(const CublasLibrary& cublas, cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                    int n, int k, const float* a, int lda, const float* b, int ldb, float* c, int ldc) {
  const float one = 1, zero = 0;
  return cublas.sgemm(h, ta, tb, m, n, k, &one, a, lda, b, ldb, &zero, c, ldc);
}
cublasStatus_t Gemm(const CublasLibrary& cublas, cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                    int n, int k, const double* a, int lda, const double* b, int ldb, double* c, int ldc) {
  const double one = 1, zero = 0;
  return cublas.dgemm(h, ta, tb, m, n, k, &one, a, lda, b, ldb, &zero, c, ldc);
}

template <typename T>
class MatMulOp : public GpuOpKernel {
 public:
  explicit MatMulOp(OpKernelConstruction* c) : GpuOpKernel(c) {
    Status s = c->GetAttr("transpose_a", &transpose_a_);
    if (s.ok()) s = c->GetAttr("transpose_b", &transpose_b_);
    if (s.ok() && type_string() == "_FusedMatMul") {
      fused_ = true;
      s = ReadFusedOps(c, &relu_);
    }
    if (!s.ok()) c->SetStatus(s);
  }

  void ComputeOnGpu(OpKernelContext* ctx, const GpuDeviceContext& gpu) override {
    const Tensor& a = ctx->input(0);
    const Tensor& b = ctx->input(1);
    OP_REQUIRES(ctx, a.rank() == 2 && b.rank() == 2,
                errors::InvalidArgument("In[0] and In[1] must be matrices, got shapes ", a.shape().DebugString(),
                                        " and ", b.shape().DebugString()));
    const int64_t m = a.dim(transpose_a_ ? 1 : 0), k = a.dim(transpose_a_ ? 0 : 1);
    const int64_t kb = b.dim(transpose_b_ ? 1 : 0), n = b.dim(transpose_b_ ? 0 : 1);
    OP_REQUIRES(ctx, k == kb,
                errors::InvalidArgument("Matrix size-incompatible: In[0]: ", a.shape().DebugString(),
                                        ", In[1]: ", b.shape().DebugString()));
    OP_REQUIRES(ctx, m <= INT_MAX && n <= INT_MAX && k <= INT_MAX,
                errors::InvalidArgument("MatMul dimensions past 2^31-1 on the GPU: ", a.shape().DebugString(), " x ",
                                        b.shape().DebugString()));
    OP_REQUIRES(ctx, !fused_ || (num_inputs() == 3 && ctx->input(2).shape() == TensorShape({n})),
                errors::InvalidArgument("_FusedMatMul with BiasAdd takes one arg, a bias of ", n, " values"));
    const Tensor* bias = fused_ ? &ctx->input(2) : nullptr;
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({m, n}), &out));
    if (out->NumElements() == 0) return;
    if (k == 0) {
      OP_REQUIRES_OK(
          ctx, CudaStatus(Fill<T>(MutableDevicePtr<T>(out), T(0), out->NumElements(), gpu.compute_stream()), "MatMul"));
    } else {
      OP_REQUIRES_OK(ctx, Multiply(gpu, a, b, m, n, k, out));
    }
    if (fused_) {
      // The bias, and ReLU, in one pass over the product.
      OP_REQUIRES_OK(ctx, CudaStatus(BiasAdd<T>(DevicePtr<T>(*out), DevicePtr<T>(*bias), relu_, MutableDevicePtr<T>(out),
                                                out->NumElements(), n, 1, gpu.compute_stream()),
                                     type_string()));
    }
  }

 private:
  Status Multiply(const GpuDeviceContext& gpu, const Tensor& a, const Tensor& b, int64_t m, int64_t n, int64_t k,
                  Tensor* out) const {
    const auto op_a = transpose_a_ ? CUBLAS_OP_T : CUBLAS_OP_N;
    const auto op_b = transpose_b_ ? CUBLAS_OP_T : CUBLAS_OP_N;
    const int lda = static_cast<int>(transpose_a_ ? m : k);
    const int ldb = static_cast<int>(transpose_b_ ? k : n);
    return gpu.WithCublas([&](const CublasLibrary& cublas, cublasHandle_t h) {
      return CublasStatus(
          Gemm(cublas, h, op_b, op_a, static_cast<int>(n), static_cast<int>(m), static_cast<int>(k), DevicePtr<T>(b), ldb,
               DevicePtr<T>(a), lda, MutableDevicePtr<T>(out), static_cast<int>(n)),
          type_string());
    });
  }

  bool transpose_a_ = false;
  bool transpose_b_ = false;
  bool fused_ = false;  // _FusedMatMul: BiasAdd after the product, then Relu when relu_
  bool relu_ = false;
};

}  // namespace

void RegisterMatMulKernels(KernelRegistry& r) {
  r.Register<MatMulOp<float>>(
      KernelDefBuilder("_FusedMatMul").Device(kDeviceGpu).TypeConstraint("T", {DataTypeToEnum<float>::value}));
  r.Register<MatMulOp<float>>(
      KernelDefBuilder("MatMul").Device(kDeviceGpu).TypeConstraint("T", {DataTypeToEnum<float>::value}));
  r.Register<MatMulOp<double>>(
      KernelDefBuilder("MatMul").Device(kDeviceGpu).TypeConstraint("T", {DataTypeToEnum<double>::value}));
}

}  // namespace tessera::gpu
