// float32 MatMul through a session against oneDNN's own sgemm called directly, in one
// binary, at 1 and 2 threads: square products, and the dense layers of the CNN at batch 128
// (forward, and the two products of its gradient). The target: MatMul >= 0.9x the
// library's own speed. Compare BM_MatMul and BM_OneDnnSgemm rows of one shape and thread
// count (GFLOP/s).
#include <benchmark/benchmark.h>
#include <oneapi/dnnl/dnnl.h>

#include <random>

#include "bench/bench_session.h"
#include "graph/builder/ops.h"

extern "C" void omp_set_num_threads(int);

namespace tessera {
namespace {

struct Shape {
  int64_t m, k, n;
  bool ta, tb;
};
// 1024^3, 256^3; the CNN's dense layer [128, 1600] x [1600, 64] forward, its filter gradient
// x^T dy and its input gradient dy W^T.
constexpr Shape kShapes[] = {{1024, 1024, 1024, false, false}, {256, 256, 256, false, false},
                             {128, 1600, 64, false, false},    {1600, 128, 64, true, false},
                             {128, 64, 1600, false, true}};

Tensor Random(int64_t rows, int64_t cols) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  Tensor t(DataType::kFloat, TensorShape({rows, cols}));
  for (int64_t i = 0; i < t.NumElements(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

void SetFlops(benchmark::State& state, const Shape& s) {
  state.counters["GFLOP/s"] =
      benchmark::Counter(2e-9 * s.m * s.k * s.n, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_MatMul(benchmark::State& state) {
  const Shape s = kShapes[state.range(0)];
  Scope root = Scope::NewRootScope();
  auto a = ops::Const(root, s.ta ? Random(s.k, s.m) : Random(s.m, s.k));
  auto b = ops::Const(root, s.tb ? Random(s.n, s.k) : Random(s.k, s.n));
  auto product = ops::MatMul(root, a, b, {.transpose_a = s.ta, .transpose_b = s.tb});
  std::unique_ptr<Session> session = bench::SessionOrSkip(root, static_cast<int>(state.range(1)), state);
  if (session == nullptr) return;
  std::vector<Tensor> out;
  for (auto _ : state) {
    Status st = session->Run({}, {product.name()}, {}, &out);
    if (!st.ok()) state.SkipWithError(st.ToString().c_str());
  }
  SetFlops(state, s);
}

void BM_OneDnnSgemm(benchmark::State& state) {
  const Shape s = kShapes[state.range(0)];
  const Tensor a = s.ta ? Random(s.k, s.m) : Random(s.m, s.k);
  const Tensor b = s.tb ? Random(s.n, s.k) : Random(s.k, s.n);
  Tensor c(DataType::kFloat, TensorShape({s.m, s.n}));
  omp_set_num_threads(static_cast<int>(state.range(1)));
  for (auto _ : state) {
    dnnl_sgemm(s.ta ? 'T' : 'N', s.tb ? 'T' : 'N', s.m, s.n, s.k, 1.f, a.data<float>(), s.ta ? s.m : s.k,
               b.data<float>(), s.tb ? s.k : s.n, 0.f, c.data<float>(), s.n);
  }
  omp_set_num_threads(1);
  SetFlops(state, s);
}

void Shapes(benchmark::internal::Benchmark* b) {
  for (int64_t shape = 0; shape < static_cast<int64_t>(std::size(kShapes)); ++shape) {
    for (int64_t threads : {1, 2}) b->Args({shape, threads});
  }
  b->ArgNames({"shape", "threads"})->UseRealTime();
}

BENCHMARK(BM_MatMul)->Apply(Shapes);
BENCHMARK(BM_OneDnnSgemm)->Apply(Shapes);

}  // namespace
}  // namespace tessera

BENCHMARK_MAIN();
