// MatMul: float32 on oneDNN's sgemm, the faster of the two libraries linked (bench/
// matmul_bench), but for products of a few rows or columns; a single row (one image through
// a dense layer) by a matrix-vector product of our own, the rest through Eigen's tensor
// contraction; all on the device's intra-op pool. Its own translation unit: the
// contraction is slow to compile.
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <type_traits>
#include <vector>

#include "devices/cpu/cpu_kernels.h"
#include "devices/cpu/onednn_threads.h"
#include "kernels/util/eigen_tensor.h"
#include "kernels/util/fused_ops.h"

namespace tessera::cpu {
namespace {

// Below this much work a hop to another thread costs more than it saves.
constexpr double kMinFlopsPerThread = 4e6;

// What _FusedMatMul adds to each row of the product as it is made, and whether it then
// applies ReLU.
struct Epilogue {
  const float* bias = nullptr;  // [n], or none
  bool relu = false;
};

// Rows [0, rows) and columns [c0, c1) of c (leading dimension n): the epilogue, while the
// block is still in cache.
void ApplyEpilogue(const Epilogue& e, float* c, int64_t n, int64_t rows, int64_t c0, int64_t c1) {
  if (e.bias == nullptr) return;
  for (int64_t r = 0; r < rows; ++r) {
    float* __restrict row = c + r * n;
    const float* __restrict bias = e.bias;
    for (int64_t j = c0; j < c1; ++j) {
      const float v = row[j] + bias[j];
      row[j] = e.relu && v < 0 ? 0.f : v;
    }
  }
}

// c [m, n] = op(a) op(b), all row-major with the given leading dimensions, by oneDNN's
// sgemm: a block of rows per thread of the intra-op pool (of columns, for a product with
// more columns than rows: each thread then reads its share of b only), each single-threaded,
// then the epilogue on that block. The CNN's dense input gradient (128 x 1600 from k = 64)
// took 104-113 us at two threads cut by rows, 90-91 by columns, as oneDNN's own threading.
Status Sgemm(OpKernelContext* ctx, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
             const float* b, int64_t ldb, float* c, const Epilogue& epilogue) {
  const int64_t threads = ctx->intra_op_pool()->NumThreads();
  const int64_t parts = std::clamp<int64_t>(static_cast<int64_t>(2.0 * m * n * k / kMinFlopsPerThread), 1, threads);
  const bool by_rows = m >= n;
  const int64_t extent = by_rows ? m : n, per_part = (extent + parts - 1) / parts;
  std::vector<dnnl_status_t> status(parts, dnnl_success);
  ctx->ParallelFor(parts, int64_t{1} << 30, [&](int64_t begin, int64_t end) {
    OneDnnOnThisThreadOnly();
    for (int64_t part = begin; part < end; ++part) {
      const int64_t first = part * per_part, count = std::min(per_part, extent - first);
      if (count <= 0) continue;
      const float* pa = a;
      const float* pb = b;
      if (by_rows) {
        pa = ta ? a + first : a + first * lda;
      } else {
        pb = tb ? b + first * ldb : b + first;
      }
      status[part] = dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', by_rows ? count : m, by_rows ? n : count, k, 1.f, pa,
                                lda, pb, ldb, 0.f, by_rows ? c + first * n : c + first, n);
      if (by_rows) {
        ApplyEpilogue(epilogue, c + first * n, n, count, 0, n);
      } else {
        ApplyEpilogue(epilogue, c, n, m, first, first + count);
      }
    }
  });
  for (dnnl_status_t s : status) {
    if (s != dnnl_success) return errors::Internal("oneDNN's sgemm failed with status ", static_cast<int>(s));
  }
  return Status::OK();
}

// c [1, n] = a [1, k] b [k, n] (one image through a dense layer): whole rows of b streamed
// through once, each adding a multiple of itself to c; the rows of b in parts across the
// intra-op pool, each part's sums apart until they are added up. The product is bound by
// reading b, which one core alone does at ~18 GB/s here: Eigen's matrix-vector product ran
// on one thread (MobileNetV2's classifier, 1280 x 1000: 320-335 us at one and two threads
// alike). A part's sums are as large as c, so each part has at least 8 rows of b.
Status RowTimesMatrix(OpKernelContext* ctx, int64_t n, int64_t k, const float* a, const float* b, float* c,
                      const Epilogue& epilogue) {
  constexpr int64_t kMinBytesPerThread = 256 << 10;
  const int64_t most = std::max<int64_t>(1, std::min<int64_t>(ctx->intra_op_pool()->NumThreads(), k / 8));
  const int64_t parts =
      std::clamp<int64_t>(k * n * static_cast<int64_t>(sizeof(float)) / kMinBytesPerThread, 1, most);
  Tensor partial;  // the sums of the parts after the first, which sums into c
  if (parts > 1) RETURN_IF_ERROR(ctx->allocate_temp(DataType::kFloat, TensorShape({parts - 1, n}), &partial));
  ctx->ParallelFor(parts, int64_t{1} << 30, [&](int64_t begin, int64_t end) {
    for (int64_t part = begin; part < end; ++part) {
      float* __restrict sums = part == 0 ? c : partial.data<float>() + (part - 1) * n;
      std::fill_n(sums, n, 0.f);
      for (int64_t i = part * k / parts; i < (part + 1) * k / parts; ++i) {
        if (i % 4096 == 0 && ctx->IsCancelled()) return;  // b may be gigabytes
        const float* __restrict row = b + i * n;
        const float x = a[i];
        for (int64_t j = 0; j < n; ++j) sums[j] += x * row[j];
      }
    }
  });
  if (ctx->IsCancelled()) return errors::Cancelled("Step was cancelled");
  for (int64_t part = 1; part < parts; ++part) {
    const float* __restrict sums = partial.data<float>() + (part - 1) * n;
    for (int64_t j = 0; j < n; ++j) c[j] += sums[j];
  }
  ApplyEpilogue(epilogue, c, n, 1, 0, n);
  return Status::OK();
}

// MatMul, and as _FusedMatMul (float32 only) MatMul then BiasAdd (then Relu).
template <typename T>
class MatMulOp : public OpKernel {
 public:
  explicit MatMulOp(OpKernelConstruction* c) : OpKernel(c) {
    Status s = c->GetAttr("transpose_a", &transpose_a_);
    if (s.ok()) s = c->GetAttr("transpose_b", &transpose_b_);
    if (s.ok() && type_string() == "_FusedMatMul") {
      fused_ = true;
      s = ReadFusedOps(c, &relu_);
    }
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
    Epilogue epilogue;
    if (fused_) {
      OP_REQUIRES(ctx, num_inputs() == 3, errors::InvalidArgument("_FusedMatMul with BiasAdd takes one arg, the bias"));
      const Tensor& bias = ctx->input(2);
      OP_REQUIRES(ctx, bias.shape() == TensorShape({n}),
                  errors::InvalidArgument("Must provide as many biases as the last dimension of the input tensor: ",
                                          bias.shape().DebugString(), " vs. ", n));
      epilogue = {bias.data<float>(), relu_};
    }
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({m, n}), &out));
    if (out->NumElements() == 0) return;
    if (k == 0) {
      std::fill(out->data<T>(), out->data<T>() + out->NumElements(), T(0));
      if constexpr (std::is_same_v<T, float>) ApplyEpilogue(epilogue, out->data<float>(), n, m, 0, n);
      return;
    }
    // A product cannot be interrupted, so one past about 2^31 flops runs as panels of rows,
    // with the step's cancellation checked between them.
    constexpr int64_t kPanelFlops = int64_t{1} << 31;
    const int64_t panel_rows = std::max<int64_t>(1, kPanelFlops / (2 * n * k));
    // oneDNN's sgemm packs its operands on every call: for a product of a few rows or columns
    // that costs more than Eigen's matrix product.
    constexpr int64_t kMinSgemmSide = 16;
    if constexpr (std::is_same_v<T, float>) {
      if (m == 1 && !transpose_b_) {  // a's one row reads the same transposed or not
        OP_REQUIRES_OK(ctx, RowTimesMatrix(ctx, n, k, a.data<float>(), b.data<float>(), out->data<float>(), epilogue));
        return;
      }
      if (m >= kMinSgemmSide && n >= kMinSgemmSide) {
        for (int64_t r0 = 0; r0 < m; r0 += panel_rows) {
          OP_REQUIRES(ctx, r0 == 0 || !ctx->IsCancelled(), errors::Cancelled("Step was cancelled"));
          const int64_t rows = std::min(panel_rows, m - r0);
          const float* pa = transpose_a_ ? a.data<float>() + r0 : a.data<float>() + r0 * k;
          OP_REQUIRES_OK(ctx, Sgemm(ctx, transpose_a_, transpose_b_, rows, n, k, pa, transpose_a_ ? m : k,
                                    b.data<float>(), transpose_b_ ? k : n, out->data<float>() + r0 * n, epilogue));
        }
        return;
      }
    }
    EigenProduct(ctx, a, b, out, m, k, panel_rows);
    if (!ctx->status().ok()) return;
    if constexpr (std::is_same_v<T, float>) ApplyEpilogue(epilogue, out->data<float>(), n, m, 0, n);
  }

 private:
  // out = op(a) op(b) by Eigen's contraction, in panels of `panel_rows` rows.
  void EigenProduct(OpKernelContext* ctx, const Tensor& a, const Tensor& b, Tensor* out, int64_t m, int64_t k,
                    int64_t panel_rows) {
    const int64_t n = out->dim(1);
    Eigen::array<Eigen::IndexPair<Eigen::Index>, 1> dims;
    dims[0] = Eigen::IndexPair<Eigen::Index>(transpose_a_ ? 0 : 1, transpose_b_ ? 1 : 0);
    if (panel_rows >= m) {
      AssignOnPool(*ctx->intra_op_pool(), EigenMatrix<T>(*out),
                   ConstEigenMatrix<T>(a).contract(ConstEigenMatrix<T>(b), dims));
      return;
    }
    // Panels of a transposed `a` are columns: copied out, row-major, they contract as rows.
    Tensor a_panel;
    if (transpose_a_) {
      Status s = ctx->allocate_temp(a.dtype(), TensorShape({panel_rows, k}), &a_panel);
      if (!s.ok()) {
        ctx->SetStatus(s);
        return;
      }
    }
    dims[0] = Eigen::IndexPair<Eigen::Index>(1, transpose_b_ ? 1 : 0);
    for (int64_t r0 = 0; r0 < m; r0 += panel_rows) {
      if (ctx->IsCancelled()) {
        ctx->SetStatus(errors::Cancelled("Step was cancelled"));
        return;
      }
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

  bool transpose_a_ = false;
  bool transpose_b_ = false;
  bool fused_ = false;
  bool relu_ = false;
};

}  // namespace

void RegisterMatMulKernels(KernelRegistry& r) {
  ForEachType<float, double, int32_t, int64_t>([&](auto zero) {
    using T = decltype(zero);
    r.Register<MatMulOp<T>>(KernelDefBuilder("MatMul").Device(kDeviceCpu).TypeConstraint<T>("T"));
  });
  r.Register<MatMulOp<float>>(KernelDefBuilder("_FusedMatMul").Device(kDeviceCpu).TypeConstraint<float>("T"));
}

}  // namespace tessera::cpu
