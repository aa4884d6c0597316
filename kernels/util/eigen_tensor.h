// Eigen TensorMap views of a Tensor, for kernels built on Eigen Tensor expressions.
// Include only from kernel translation units: Eigen's Tensor module is heavy to compile.
//
//   auto c = EigenMatrix<float>(*out);
//   AssignOnPool(*ctx->intra_op_pool(), c, a.contract(b, dims));
#pragma once

#define EIGEN_USE_THREADS
#include <unsupported/Eigen/CXX11/Tensor>

#include "graph/tensor.h"
#include "kernels/thread_pool.h"

namespace tessera {

template <typename T>
using EigenMatrixMap = Eigen::TensorMap<Eigen::Tensor<T, 2, Eigen::RowMajor, Eigen::Index>>;
template <typename T>
using ConstEigenMatrixMap =
    Eigen::TensorMap<Eigen::Tensor<const T, 2, Eigen::RowMajor, Eigen::Index>>;
template <typename T>
using EigenFlatMap = Eigen::TensorMap<Eigen::Tensor<T, 1, Eigen::RowMajor, Eigen::Index>>;

// Precondition: t.rank() == 2 and T matches t.dtype().
template <typename T>
EigenMatrixMap<T> EigenMatrix(const Tensor& t) {
  return EigenMatrixMap<T>(t.data<T>(), t.dim(0), t.dim(1));
}
template <typename T>
ConstEigenMatrixMap<T> ConstEigenMatrix(const Tensor& t) {
  return ConstEigenMatrixMap<T>(t.data<T>(), t.dim(0), t.dim(1));
}
template <typename T>
EigenFlatMap<T> EigenFlat(const Tensor& t) {
  return EigenFlatMap<T>(t.data<T>(), t.NumElements());
}

// dst = expr, spread over `pool`; on the calling thread when that is one of the pool's own
// (a kernel continued inline by an async op's completion there), since a pool thread that
// blocks waiting on its own pool can leave no thread to do the work.
template <typename Dst, typename Expr>
void AssignOnPool(const ThreadPool& pool, Dst&& dst, const Expr& expr) {
  if (pool.CurrentThreadId() >= 0) {
    dst = expr;
  } else {
    dst.device(pool.eigen_device()) = expr;
  }
}

}  // namespace tessera
