#pragma once
// One block of the blocked layout (runtime/blocked_layout.h) as a vector: 8 floats (an
// AVX2 register) or 16 (an AVX-512 one, or two AVX2 ones), with the few operations our
// blocked kernels (pointwise_conv.cc, blocked_depthwise_conv.cc, first_layer_conv.cc,
// winograd_conv.cc) build on. Pure functions.

#include <immintrin.h>

#include <cstring>

namespace tessera::cpu {

template <int kBlock>
struct BlockOf;
template <>
struct BlockOf<8> {
  using Floats = float __attribute__((vector_size(32)));
};
template <>
struct BlockOf<16> {
  using Floats = float __attribute__((vector_size(64)));
};

template <typename V>
V LoadBlock(const float* p) {
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <typename V>
void StoreBlock(const V& v, float* p) {
  std::memcpy(p, &v, sizeof v);
}

// A vector of x in every lane, spelled out: GCC 12 made a loop of lane stores into one
// through memory, and `x + V{}` is an addition.
template <typename V>
V Broadcast(float x) {
  if constexpr (sizeof(V) == 32) {
    return V{x, x, x, x, x, x, x, x};
  } else {
    return V{x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x};
  }
}

// max(v, w) and min(v, w) as x86's instructions (w where either is NaN): GCC 12 made
// `v > w ? v : w` a compare and a blend, two instructions where an activation is a fair
// part of a kernel's work.
template <typename V>
V Max(const V& v, const V& w) {
#ifdef __AVX512F__
  if constexpr (sizeof(V) == 64) return _mm512_max_ps(v, w);
#endif
#ifdef __AVX__
  if constexpr (sizeof(V) == 32) return _mm256_max_ps(v, w);
#endif
  return v > w ? v : w;
}

template <typename V>
V Min(const V& v, const V& w) {
#ifdef __AVX512F__
  if constexpr (sizeof(V) == 64) return _mm512_min_ps(v, w);
#endif
#ifdef __AVX__
  if constexpr (sizeof(V) == 32) return _mm256_min_ps(v, w);
#endif
  return v < w ? v : w;
}

// v through the activation a convolution fuses: clamped below at 0 (Relu, Relu6) and
// above at 6 (Relu6). The flags are the caller's locals, which the compiler can hoist out
// of its loops (a store may alias a member).
template <typename V>
V Activated(V v, bool clamp_low, bool clamp_high) {
  if (clamp_low) v = Max(v, V{});
  if (clamp_high) v = Min(v, V{} + 6);
  return v;
}

}  // namespace tessera::cpu
