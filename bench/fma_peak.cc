// This machine's float32 peak: each thread runs chains of fused multiply-adds on the widest
// vectors the build targets (AVX-512, else AVX2 with FMA, else scalar), enough independent
// chains to hide the instruction's latency, nothing touching memory. A multiply-add counts
// as two FLOPs, as GEMM and convolution figures count them. The CNN side-by-side script
// reads GFLOP/s at 1 and 2 threads to give each training rate's share of the peak.
#include <benchmark/benchmark.h>

#include <immintrin.h>

#include <cmath>

namespace tessera::bench {
namespace {

#if defined(__AVX512F__)
using Vec = __m512;
constexpr int kLanes = 16;
Vec Splat(float x) { return _mm512_set1_ps(x); }
Vec Fma(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
float First(Vec v) { return _mm512_cvtss_f32(v); }
#elif defined(__AVX2__) && defined(__FMA__)
using Vec = __m256;
constexpr int kLanes = 8;
Vec Splat(float x) { return _mm256_set1_ps(x); }
Vec Fma(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
float First(Vec v) { return _mm256_cvtss_f32(v); }
#else
using Vec = float;
constexpr int kLanes = 1;
Vec Splat(float x) { return x; }
Vec Fma(Vec a, Vec b, Vec c) { return std::fma(a, b, c); }
float First(Vec v) { return v; }
#endif

// Two FMA units with a latency of four cycles keep eight chains busy; twelve leave margin.
constexpr int kChains = 12;
constexpr int64_t kStepsPerIteration = 1 << 20;

void BM_FmaPeak(benchmark::State& state) {
  // Values that stay finite: acc = acc * 0.999999 + 1e-7 converges instead of overflowing.
  const Vec scale = Splat(0.999999f);
  const Vec add = Splat(1e-7f);
  Vec acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = Splat(static_cast<float>(c));
  for (auto _ : state) {
    for (int64_t step = 0; step < kStepsPerIteration; ++step) {
      for (int c = 0; c < kChains; ++c) acc[c] = Fma(acc[c], scale, add);
    }
    for (int c = 0; c < kChains; ++c) benchmark::DoNotOptimize(acc[c]);
  }
  float sum = 0;
  for (int c = 0; c < kChains; ++c) sum += First(acc[c]);
  benchmark::DoNotOptimize(sum);
  // Each thread's count; Google Benchmark sums them over the threads and divides by the
  // wall time, so the rate is the machine's at this many threads.
  state.counters["GFLOP/s"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * kStepsPerIteration * kChains * kLanes * 2 / 1e9,
      benchmark::Counter::kIsRate);
  state.SetLabel(kLanes == 16 ? "AVX-512" : kLanes == 8 ? "AVX2+FMA" : "scalar");
}

BENCHMARK(BM_FmaPeak)->Threads(1)->Threads(2)->UseRealTime()->MinTime(0.5);

}  // namespace
}  // namespace tessera::bench

BENCHMARK_MAIN();
