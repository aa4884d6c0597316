// MatMul through Eigen's tensor contraction on the device's intra-op pool (the same path
// TensorFlow takes on CPU). Its own translation unit: the contraction is slow to compile.
#include <algorithm>

#include "kernels/cpu/register.h"
#include "kernels/eigen_tensor.h"

namespace tessera::cpu {
namespace {

template <typename T>
class MatMulOp : public OpKernel {
 public:
  explicit MatMulOp(OpKernelConstruction* c) : OpKernel(c) {
    Status s = c->GetAttr("transpose_a", &transpose_a_);
    if (s.ok()) s = c->GetAttr("transpose_b", &transpose_b_);
    if (!s.ok()) c->SetStatus(s);
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& a = ctx->input(0);
    const Tensor& b = ctx->input(1);
    OP_REQUIRES(ctx, a.rank() == 2 && b.rank() == 2,
                errors::InvalidArgument("In[0] and In[1] must be matrices, got shapes ",
                                        a.shape().DebugString(), " and ", b.shape().DebugString()));
    const int64_t m = a.dim(transpose_a_ ? 1 : 0), k = a.dim(transpose_a_ ? 0 : 1);
    const int64_t kb = b.dim(transpose_b_ ? 1 : 0), n = b.dim(transpose_b_ ? 0 : 1);
    OP_REQUIRES(ctx, k == kb,
                errors::InvalidArgument("Matrix size-incompatible: In[0]: ", a.shape().DebugString(),
                                        ", In[1]: ", b.shape().DebugString()));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({m, n}), &out));
    if (out->NumElements() == 0) return;
    if (k == 0) {
      std::fill(out->data<T>(), out->data<T>() + out->NumElements(), T(0));
      return;
    }
    Eigen::array<Eigen::IndexPair<Eigen::Index>, 1> dims;
    dims[0] = Eigen::IndexPair<Eigen::Index>(transpose_a_ ? 0 : 1, transpose_b_ ? 1 : 0);
    // A contraction cannot be interrupted, so a product past about 2^31 flops runs as panels
    // of rows, with the step's cancellation checked between them.
    constexpr int64_t kPanelFlops = int64_t{1} << 31;
    const int64_t panel_rows = std::max<int64_t>(1, kPanelFlops / (2 * n * k));
    if (panel_rows >= m) {
      AssignOnPool(*ctx->intra_op_pool(), EigenMatrix<T>(*out),
                   ConstEigenMatrix<T>(a).contract(ConstEigenMatrix<T>(b), dims));
      return;
    }
    // Panels of a transposed `a` are columns: copied out, row-major, they contract as rows.
    Tensor a_panel;
    if (transpose_a_) OP_REQUIRES_OK(ctx, ctx->allocate_temp(a.dtype(), TensorShape({panel_rows, k}), &a_panel));
    dims[0] = Eigen::IndexPair<Eigen::Index>(1, transpose_b_ ? 1 : 0);
    for (int64_t r0 = 0; r0 < m; r0 += panel_rows) {
      OP_REQUIRES(ctx, !ctx->IsCancelled(), errors::Cancelled("Step was cancelled"));
      const int64_t rows = std::min(panel_rows, m - r0);
      const T* rows_of_a = a.data<T>() + r0 * k;
      if (transpose_a_) {
        T* dst = a_panel.data<T>();
        for (int64_t r = 0; r < rows; ++r) {
          for (int64_t j = 0; j < k; ++j) dst[r * k + j] = a.data<T>()[j * m + r0 + r];
        }
        rows_of_a = dst;
      }
      AssignOnPool(*ctx->intra_op_pool(), EigenMatrixMap<T>(out->data<T>() + r0 * n, rows, n),
                   ConstEigenMatrixMap<T>(rows_of_a, rows, k).contract(ConstEigenMatrix<T>(b), dims));
    }
  }

 private:
  bool transpose_a_ = false;
  bool transpose_b_ = false;
};

}  // namespace

void RegisterMatMulKernels(KernelRegistry& r) {
  ForEachType<float, double, int32_t, int64_t>([&](auto zero) {
    using T = decltype(zero);
    r.Register<MatMulOp<T>>(KernelDefBuilder("MatMul").Device(kDeviceCpu).TypeConstraint<T>("T"));
  });
}

}  // namespace tessera::cpu
