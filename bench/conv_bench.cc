// The convolution kernels of the training demo's CNN at its shapes (batch 128), each run
// alone through a session: GFLOP/s says how close the im2col + Eigen path comes to the
// machine's peak, and which of forward, input and filter gradients dominates a step.
#include <benchmark/benchmark.h>

#include <random>

#include "bench/bench_session.h"
#include "graph/builder/ops.h"
#include "runtime/session.h"

namespace tessera {
namespace {

struct Layer {
  int64_t h, c, o;  // square input h x h x c, 3x3 kernel, o filters, VALID
};
constexpr Layer kLayers[] = {{28, 1, 32}, {13, 32, 64}};
constexpr int64_t kBatch = 128;

Tensor Random(const TensorShape& shape) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  Tensor t(DataType::kFloat, shape);
  for (int64_t i = 0; i < t.NumElements(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

// kind 0: Conv2D, 1: Conv2DBackpropInput, 2: Conv2DBackpropFilter.
void BM_Conv(benchmark::State& state) {
  const Layer l = kLayers[state.range(0)];
  const int kind = static_cast<int>(state.range(1));
  const int threads = static_cast<int>(state.range(2));
  const int64_t oh = l.h - 2;
  const TensorShape in({kBatch, l.h, l.h, l.c}), filter({3, 3, l.c, l.o}), out({kBatch, oh, oh, l.o});
  Scope root = Scope::NewRootScope();
  const std::vector<int64_t> strides = {1, 1, 1, 1};
  Output y;
  if (kind == 0) {
    y = ops::Conv2D(root, ops::Const(root, Random(in)), ops::Const(root, Random(filter)), strides, "VALID");
  } else if (kind == 1) {
    y = ops::Conv2DBackpropInput(root, Tensor::FromVector<int32_t>({kBatch, int32_t(l.h), int32_t(l.h), int32_t(l.c)}),
                                 ops::Const(root, Random(filter)), ops::Const(root, Random(out)), strides, "VALID");
  } else {
    y = ops::Conv2DBackpropFilter(root, ops::Const(root, Random(in)),
                                  Tensor::FromVector<int32_t>({3, 3, int32_t(l.c), int32_t(l.o)}),
                                  ops::Const(root, Random(out)), strides, "VALID");
  }
  std::unique_ptr<Session> session = bench::SessionOrSkip(root, threads, state);
  if (session == nullptr) return;
  std::vector<Tensor> result;
  Status s;
  for (auto _ : state) {
    s = session->Run({}, {y.name()}, {}, &result);
    if (!s.ok()) state.SkipWithError(s.ToString().c_str());
  }
  const double flops = 2.0 * kBatch * oh * oh * 9 * l.c * l.o;
  state.counters["GFLOP/s"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GFLOP/s"].value /= 1e9;
}
BENCHMARK(BM_Conv)
    ->ArgNames({"layer", "kind", "threads"})
    ->ArgsProduct({{0, 1}, {0, 1, 2}, {1, 2}})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// MaxPool 2x2 over the first layer's activations, and the pool and its gradient together
// (grad:1; subtract grad:0 for the gradient alone).
void BM_MaxPool(benchmark::State& state) {
  const bool grad = state.range(0) == 1;
  const TensorShape in({kBatch, 26, 26, 32});
  Scope root = Scope::NewRootScope();
  auto x = ops::Const(root, Random(in));
  const std::vector<int64_t> window = {1, 2, 2, 1};
  auto y = ops::MaxPool(root, x, window, window, "VALID");
  Output target = y;
  if (grad) target = ops::MaxPoolGrad(root, x, y, ops::Const(root, Random({kBatch, 13, 13, 32})), window, window, "VALID");
  std::unique_ptr<Session> session = bench::SessionOrSkip(root, 1, state);
  if (session == nullptr) return;
  std::vector<Tensor> result;
  Status s;
  for (auto _ : state) {
    s = session->Run({}, {target.name()}, {}, &result);
    if (!s.ok()) state.SkipWithError(s.ToString().c_str());
  }
}
BENCHMARK(BM_MaxPool)->ArgName("grad")->Arg(0)->Arg(1)->UseRealTime()->Unit(benchmark::kMillisecond);

// One convolution layer of the CNN as training runs it: Conv2D, BiasAdd, Relu and a 2x2
// MaxPool forward, then MaxPoolGrad and ReluGrad back to the convolution's output; with the
// remapper (remap:1) a _FusedConv2DMaxPoolWithArgmax and a _FusedConv2DMaxPoolGrad.
void BM_ConvLayerForTraining(benchmark::State& state) {
  const Layer l = kLayers[state.range(0)];
  const bool remap = state.range(1) == 1;
  const int threads = static_cast<int>(state.range(2));
  const int64_t oh = l.h - 2, ph = oh / 2;
  Scope root = Scope::NewRootScope();
  const std::vector<int64_t> strides = {1, 1, 1, 1}, window = {1, 2, 2, 1};
  auto conv = ops::Conv2D(root, ops::Const(root, Random({kBatch, l.h, l.h, l.c})),
                          ops::Const(root, Random({3, 3, l.c, l.o})), strides, "VALID");
  auto relu = ops::Relu(root, ops::BiasAdd(root, conv, ops::Const(root, Random({l.o}))));
  auto pool = ops::MaxPool(root, relu, window, window, "VALID");
  auto pool_grad = ops::MaxPoolGrad(root, relu, pool, ops::Const(root, Random({kBatch, ph, ph, l.o})), window, window,
                                    "VALID");
  auto relu_grad = ops::ReluGrad(root, pool_grad, relu);
  std::unique_ptr<Session> session = bench::SessionOrSkip(root, threads, state, remap);
  if (session == nullptr) return;
  std::vector<Tensor> result;
  Status s;
  for (auto _ : state) {
    s = session->Run({}, {pool.name(), relu_grad.name()}, {}, &result);
    if (!s.ok()) state.SkipWithError(s.ToString().c_str());
  }
}
BENCHMARK(BM_ConvLayerForTraining)
    ->ArgNames({"layer", "remap", "threads"})
    ->ArgsProduct({{0, 1}, {0, 1}, {1, 2}})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tessera

BENCHMARK_MAIN();
