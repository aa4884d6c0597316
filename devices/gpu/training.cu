// The optimizers' in-place updates, with the formulas of devices/cpu/training_ops.cc.
#include <cmath>

#include "devices/gpu/cuda_launch_util.cuh"
#include "devices/gpu/launch.h"

namespace tessera::gpu {
namespace {

template <typename T>
__global__ void GradientDescentKernel(T* var, const T* lr, const T* grad, int64_t n) {
  const T alpha = *lr;
  TESSERA_GRID_STRIDE_LOOP(i, n) { var[i] -= alpha * grad[i]; }
}

template <typename T>
__global__ void MomentumKernel(T* var, T* accum, const T* lr, const T* grad, const T* momentum, bool nesterov,
                               int64_t n) {
  const T a = *lr, m = *momentum;
  TESSERA_GRID_STRIDE_LOOP(i, n) {
    accum[i] = accum[i] * m + grad[i];
    var[i] -= nesterov ? (grad[i] + accum[i] * m) * a : accum[i] * a;
  }
}

template <typename T>
__global__ void RMSPropKernel(T* var, T* ms, T* mom, const T* lr, const T* rho, const T* momentum, const T* epsilon,
                              const T* grad, int64_t n) {
  const T a = *lr, r = *rho, m = *momentum, eps = *epsilon;
  TESSERA_GRID_STRIDE_LOOP(i, n) {
    const T g = grad[i];
    ms[i] = r * ms[i] + (T(1) - r) * g * g;
    mom[i] = m * mom[i] + a * g / sqrt(ms[i] + eps);
    var[i] -= mom[i];
  }
}

template <typename T>
__global__ void AdamKernel(T* var, T* m, T* v, const T* beta1_power, const T* beta2_power, const T* lr, const T* beta1,
                           const T* beta2, const T* epsilon, const T* grad, bool nesterov, int64_t n) {
  const T b1 = *beta1, b2 = *beta2, eps = *epsilon;
  const T lr_t = *lr * sqrt(T(1) - *beta2_power) / (T(1) - *beta1_power);
  TESSERA_GRID_STRIDE_LOOP(i, n) {
    const T g = grad[i];
    m[i] += (g - m[i]) * (T(1) - b1);
    v[i] += (g * g - v[i]) * (T(1) - b2);
    const T step = nesterov ? m[i] * b1 + (T(1) - b1) * g : m[i];
    var[i] -= lr_t * step / (sqrt(v[i]) + eps);
  }
}

}  // namespace

template <typename T>
cudaError_t ApplyGradientDescent(T* var, const T* lr, const T* grad, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  GradientDescentKernel<T><<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(var, lr, grad, n);
  return LaunchError();
}

template <typename T>
cudaError_t ApplyMomentum(T* var, T* accum, const T* lr, const T* grad, const T* momentum, bool use_nesterov, int64_t n,
                          cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  MomentumKernel<T><<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(var, accum, lr, grad, momentum, use_nesterov, n);
  return LaunchError();
}

template <typename T>
cudaError_t ApplyRMSProp(T* var, T* ms, T* mom, const T* lr, const T* rho, const T* momentum, const T* epsilon,
                         const T* grad, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  RMSPropKernel<T><<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(var, ms, mom, lr, rho, momentum, epsilon, grad, n);
  return LaunchError();
}

template <typename T>
cudaError_t ApplyAdam(T* var, T* m, T* v, const T* beta1_power, const T* beta2_power, const T* lr, const T* beta1,
                      const T* beta2, const T* epsilon, const T* grad, bool use_nesterov, int64_t n,
                      cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  AdamKernel<T><<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(var, m, v, beta1_power, beta2_power, lr, beta1, beta2,
                                                               epsilon, grad, use_nesterov, n);
  return LaunchError();
}

#define TESSERA_INSTANTIATE(T)                                                                                        \
  template cudaError_t ApplyGradientDescent<T>(T*, const T*, const T*, int64_t, cudaStream_t);                        \
  template cudaError_t ApplyMomentum<T>(T*, T*, const T*, const T*, const T*, bool, int64_t, cudaStream_t);           \
  template cudaError_t ApplyRMSProp<T>(T*, T*, T*, const T*, const T*, const T*, const T*, const T*, int64_t,         \
                                       cudaStream_t);                                                                 \
  template cudaError_t ApplyAdam<T>(T*, T*, T*, const T*, const T*, const T*, const T*, const T*, const T*, const T*, \
                                    bool, int64_t, cudaStream_t);
TESSERA_INSTANTIATE(float)
TESSERA_INSTANTIATE(double)
#undef TESSERA_INSTANTIATE

}  // namespace tessera::gpu
