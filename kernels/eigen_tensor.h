// Eigen TensorMap views of a Tensor, for kernels built on Eigen Tensor expressions.
// Include only from kernel translation units: Eigen's Tensor module is heavy to compile.
//
//   auto c = EigenMatrix<float>(*out);
//   c.device(ctx->intra_op_pool()->eigen_device()) = a.contract(b, dims);
#pragma once

#define EIGEN_USE_THREADS
#include <unsupported/Eigen/CXX11/Tensor>

#include "graph/tensor.h"

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

}  // namespace tessera
