// SumAccumulator<T>: a running sum whose error does not grow with the number of terms, for
// every kernel that sums many values (Sum, Mean, BiasAddGrad). float accumulates in double,
// exact up to 2^53 terms of similar size; double uses Neumaier's compensated sum; integers
// wrap, as TensorFlow's do. (The float32 Sum of 2^25 ones was 2^24 before.)
//
//   SumAccumulator<float> acc;
//   for (float x : values) acc.Add(x);
//   float sum = acc.Get();
#pragma once

#include <cmath>
#include <type_traits>

namespace tessera::cpu {

template <typename T>
struct SumAccumulator {
  static_assert(std::is_integral_v<T>);
  T sum = T(0);
  void Add(T x) {
    using U = std::make_unsigned_t<T>;
    sum = static_cast<T>(static_cast<U>(sum) + static_cast<U>(x));
  }
  T Get() const { return sum; }
};

template <>
struct SumAccumulator<float> {
  double sum = 0;
  void Add(float x) { sum += x; }
  float Get() const { return static_cast<float>(sum); }
};

template <>
struct SumAccumulator<double> {
  double sum = 0, compensation = 0;
  void Add(double x) {
    const double t = sum + x;
    // Past infinity the lost low bits mean nothing, and inf - inf would make them NaN.
    if (std::isfinite(t)) compensation += std::abs(sum) >= std::abs(x) ? (sum - t) + x : (x - t) + sum;
    sum = t;
  }
  double Get() const { return sum + compensation; }
};

}  // namespace tessera::cpu
