// Session::Run round trip of a one-op graph (feed, Add, fetch), also as the Python package's
// benchmark (bench/python_peers.py) builds it, and a 1024x1024 float32 MatMul through a
// session beside Eigen's contraction called directly on a pool of the same size.
#define EIGEN_USE_THREADS
#include <benchmark/benchmark.h>

#include <unsupported/Eigen/CXX11/Tensor>

#include "graph/builder/ops.h"
#include "runtime/session.h"

namespace tessera::bench {
namespace {

std::unique_ptr<Session> MakeSession(const Scope& root, int intra_threads) {
  GraphSpec def;
  if (!root.ToSpec(&def).ok()) return nullptr;
  SessionConfig config;
  config.inter_op_parallelism_threads = 1;
  config.intra_op_parallelism_threads = intra_threads;
  config.use_per_session_threads = true;
  config.constant_folding = false;  // a MatMul of constants would otherwise run once, ahead
  auto s = Session::Create(config, def);
  return s.ok() ? std::move(*s) : nullptr;
}

void BM_SessionRunAdd(benchmark::State& state) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DataType::kFloat, TensorShape({}));
  ops::Add(root.WithOpName("y"), x, 1.0f);
  auto session = MakeSession(root, 1);
  std::vector<std::pair<std::string, Tensor>> feeds = {{"x", Tensor::Scalar(41.0f)}};
  std::vector<std::string> fetches = {"y"};
  std::vector<Tensor> out;
  for (auto _ : state) {
    Status s = session->Run(feeds, fetches, {}, &out);
    if (!s.ok()) state.SkipWithError(s.ToString().c_str());
    benchmark::DoNotOptimize(out);
  }
}
BENCHMARK(BM_SessionRunAdd)->Unit(benchmark::kMicrosecond);

// The graph and session bench/python_peers.py's round trip times from Python: a [1] float
// placeholder plus a [1] constant, a session of the default config.
void BM_SessionRunAsPythonDoes(benchmark::State& state) {
  Scope root = Scope::NewRootScope();
  auto a = ops::Placeholder(root.WithOpName("a"), DataType::kFloat, TensorShape({1}));
  ops::Add(root.WithOpName("add"), a, ops::Const(root.WithOpName("b"), Tensor::FromVector<float>({1.0f})));
  GraphSpec def;
  if (!root.ToSpec(&def).ok()) return state.SkipWithError("graph");
  auto session = Session::Create(SessionConfig(), def);
  if (!session.ok()) return state.SkipWithError(session.status().ToString().c_str());
  std::vector<std::pair<std::string, Tensor>> feeds = {{"a:0", Tensor::FromVector<float>({1.0f})}};
  std::vector<std::string> fetches = {"add:0"};
  std::vector<Tensor> out;
  for (auto _ : state) {
    Status s = (*session)->Run(feeds, fetches, {}, &out);
    if (!s.ok()) state.SkipWithError(s.ToString().c_str());
    benchmark::DoNotOptimize(out);
  }
}
BENCHMARK(BM_SessionRunAsPythonDoes)->Unit(benchmark::kMicrosecond);

constexpr int kN = 1024;

void BM_MatMulSession(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  Scope root = Scope::NewRootScope();
  auto a = ops::Placeholder(root.WithOpName("a"), DataType::kFloat, TensorShape({kN, kN}));
  auto b = ops::Placeholder(root.WithOpName("b"), DataType::kFloat, TensorShape({kN, kN}));
  ops::MatMul(root.WithOpName("c"), a, b);
  auto session = MakeSession(root, threads);
  Tensor ta(DataType::kFloat, TensorShape({kN, kN})), tb(DataType::kFloat, TensorShape({kN, kN}));
  for (int64_t i = 0; i < ta.NumElements(); ++i) {
    ta.data<float>()[i] = static_cast<float>(i % 7) * 0.25f;
    tb.data<float>()[i] = static_cast<float>(i % 5) * 0.5f;
  }
  std::vector<Tensor> out;
  for (auto _ : state) {
    Status s = session->Run({{"a", ta}, {"b", tb}}, {"c"}, {}, &out);
    if (!s.ok()) state.SkipWithError(s.ToString().c_str());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * kN * kN * kN * static_cast<double>(state.iterations()) / 1e9,
                                                 benchmark::Counter::kIsRate);
}

void BM_MatMulEigenDirect(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  Eigen::ThreadPool pool(threads);
  Eigen::ThreadPoolDevice device(&pool, threads);
  Eigen::Tensor<float, 2, Eigen::RowMajor> a(kN, kN), b(kN, kN), c(kN, kN);
  for (int i = 0; i < kN; ++i) {
    for (int j = 0; j < kN; ++j) {
      a(i, j) = static_cast<float>((i * kN + j) % 7) * 0.25f;
      b(i, j) = static_cast<float>((i * kN + j) % 5) * 0.5f;
    }
  }
  Eigen::array<Eigen::IndexPair<Eigen::Index>, 1> dims = {Eigen::IndexPair<Eigen::Index>(1, 0)};
  for (auto _ : state) {
    c.device(device) = a.contract(b, dims);
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * kN * kN * kN * static_cast<double>(state.iterations()) / 1e9,
                                                 benchmark::Counter::kIsRate);
}

BENCHMARK(BM_MatMulSession)->ArgName("threads")->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_MatMulEigenDirect)->ArgName("threads")->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace tessera::bench

BENCHMARK_MAIN();
