// Multi-device costs: ring all-reduce bandwidth beside the machine's memcpy bandwidth, the
// overhead of one cross-device Send/Recv, and a data-parallel MLP step on 1, 2 and 4
// virtual CPU devices.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstring>
#include <random>
#include <thread>

#include "runtime/session.h"
#include "training/replicate.h"

namespace tessera::bench {
namespace {

std::unique_ptr<Session> MakeSession(const Scope& root, int devices) {
  GraphSpec def;
  if (!root.ToSpec(&def).ok()) return nullptr;
  SessionConfig config;
  config.device_count = {{"CPU", devices}};
  config.inter_op_parallelism_threads = 2;
  config.intra_op_parallelism_threads = 2;
  config.use_per_session_threads = true;
  auto s = Session::Create(config, def);
  return s.ok() ? std::move(*s) : nullptr;
}

// Runs the benchmark's steps; returns their wall time in seconds.
double TimedSteps(benchmark::State& state, Session& session,
                  const std::vector<std::pair<std::string, Tensor>>& feeds, const std::vector<std::string>& fetches) {
  std::vector<Tensor> out;
  auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    Status s = session.Run(feeds, fetches, {}, &out);
    if (!s.ok()) state.SkipWithError(s.ToString().c_str());
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Best of several 64 MiB copies, split over `threads` threads, in bytes copied per second.
double MemcpyBandwidth(int threads) {
  const size_t bytes = size_t{64} << 20;
  std::vector<char> a(bytes, 1), b(bytes, 2);
  double best = 0;
  for (int i = 0; i < 8; ++i) {
    auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> workers;
    const size_t part = bytes / threads;
    for (int t = 0; t < threads; ++t) {
      workers.emplace_back([&, t] { std::memcpy(b.data() + t * part, a.data() + t * part, part); });
    }
    for (auto& w : workers) w.join();
    benchmark::DoNotOptimize(b.data());
    std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    best = std::max(best, bytes / elapsed.count());
  }
  return best;
}

void BM_Memcpy(benchmark::State& state) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  std::vector<char> a(bytes, 1), b(bytes, 2);
  for (auto _ : state) {
    std::memcpy(b.data(), a.data(), bytes);
    benchmark::DoNotOptimize(b.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * bytes);
}
BENCHMARK(BM_Memcpy)->Arg(1 << 10)->Arg(1 << 20)->Arg(64 << 20)->UseRealTime();
BENCHMARK(BM_Memcpy)->Arg(64 << 20)->Threads(2)->UseRealTime();

// One AllReduce member per device, each fed its own float32 tensor of `bytes`.
void BM_RingAllReduce(benchmark::State& state) {
  const int devices = static_cast<int>(state.range(0));
  const int64_t bytes = state.range(1);
  const int64_t n = bytes / 4;
  Scope root = Scope::NewRootScope();
  std::vector<std::pair<std::string, Tensor>> feeds;
  std::vector<std::string> fetches;
  for (int d = 0; d < devices; ++d) {
    Scope s = root.WithDevice(StrCat("/cpu:", d));
    auto x = ops::Placeholder(s.WithOpName(StrCat("x", d)), DataType::kFloat, TensorShape({n}));
    auto r = ops::AllReduce(s.WithOpName(StrCat("r", d)), {x}, {.group_size = devices});
    Tensor t(DataType::kFloat, TensorShape({n}));
    for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = static_cast<float>((i + d) % 13);
    feeds.emplace_back(StrCat("x", d), t);
    fetches.push_back(StrCat("r", d));
  }
  auto session = MakeSession(root, devices);
  const double elapsed = TimedSteps(state, *session, feeds, fetches);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * bytes);  // algorithm bandwidth
  // Two bounds. Per link: each device moves 2(N-1)/N of the tensor over its own link at
  // one thread's memcpy speed, all devices at once (the NCCL convention). Shared: the
  // devices of this process share one memory system, so all 2(N-1) tensor-sized moves
  // together run at most at the machine's memcpy speed with every core copying.
  static const double one_thread = MemcpyBandwidth(1);
  static const double all_threads = MemcpyBandwidth(static_cast<int>(std::thread::hardware_concurrency()));
  const double per_link = one_thread * devices / (2.0 * (devices - 1));
  const double shared = all_threads / (2.0 * (devices - 1));
  const double algbw = static_cast<double>(bytes) * state.iterations() / elapsed;
  state.counters["link_bound_GBps"] = per_link / 1e9;
  state.counters["pct_of_link_bound"] = 100 * algbw / per_link;
  state.counters["pct_of_shared_bound"] = 100 * algbw / shared;
}
BENCHMARK(BM_RingAllReduce)
    ->ArgsProduct({{2, 4}, {1 << 10, 1 << 20, 64 << 20}})
    ->ArgNames({"devices", "bytes"})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

// A chain of 64 Identity ops over a 16-float tensor: on one device, or alternating
// between two, where each hop is a _Send/_Recv pair. The difference per hop is the cost
// of one transfer.
void BM_IdentityChain(benchmark::State& state) {
  const int devices = static_cast<int>(state.range(0));
  constexpr int kHops = 64;
  Scope root = Scope::NewRootScope();
  Output x = ops::Placeholder(root.WithOpName("x").WithDevice("/cpu:0"), DataType::kFloat, TensorShape({16}));
  for (int i = 0; i < kHops; ++i) x = ops::Identity(root.WithDevice(StrCat("/cpu:", (i + 1) % devices)), x);
  auto session = MakeSession(root, devices);
  std::vector<std::pair<std::string, Tensor>> feeds = {{"x", Tensor(DataType::kFloat, TensorShape({16}))}};
  std::vector<std::string> fetches = {x.name()};
  const double elapsed = TimedSteps(state, *session, feeds, fetches);
  state.counters["per_hop_us"] = elapsed * 1e6 / state.iterations() / kHops;
}
BENCHMARK(BM_IdentityChain)->Arg(1)->Arg(2)->ArgName("devices")->UseRealTime()->Unit(benchmark::kMicrosecond);

// A 784-256-10 MLP with a squared-error loss, its gradient written with ops, trained in
// mirrored mode on a global batch of 256 split over the towers.
void BM_DataParallelMlpStep(benchmark::State& state) {
  const int devices = static_cast<int>(state.range(0));
  constexpr int kBatch = 256, kIn = 784, kHidden = 256, kOut = 10;
  const int64_t batch = kBatch / devices;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-0.05f, 0.05f);
  auto random = [&](TensorShape shape) {
    Tensor t(DataType::kFloat, shape);
    for (float& v : t.flat<float>()) v = u(rng);
    return t;
  };
  Tensor w1 = random(TensorShape({kIn, kHidden})), w2 = random(TensorShape({kHidden, kOut}));
  Scope root = Scope::NewRootScope();
  ReplicateOptions options;
  for (int d = 0; d < devices; ++d) options.devices.push_back(StrCat("/cpu:", d));
  auto model = [&](Tower& tower, TowerOutputs* out) {
    const Scope& s = tower.scope();
    auto x = ops::Placeholder(s.WithOpName("x"), DataType::kFloat, TensorShape({batch, kIn}));
    auto t = ops::Placeholder(s.WithOpName("t"), DataType::kFloat, TensorShape({batch, kOut}));
    auto W1 = tower.Variable("w1", w1);
    auto b1 = tower.Variable("b1", Tensor(DataType::kFloat, TensorShape({kHidden})));
    auto W2 = tower.Variable("w2", w2);
    auto b2 = tower.Variable("b2", Tensor(DataType::kFloat, TensorShape({kOut})));
    auto h = ops::Relu(s, ops::BiasAdd(s, ops::MatMul(s, x, W1), b1));
    auto y = ops::BiasAdd(s, ops::MatMul(s, h, W2), b2);
    auto d = ops::Mul(s, ops::Sub(s, y, t), 2.0f / batch);
    auto dh = ops::Mul(s, ops::MatMul(s, d, W2, {.transpose_b = true}),
                       ops::Cast(s, ops::Greater(s, h, 0.0f), DataType::kFloat));
    out->grads = {{ops::MatMul(s, x, dh, {.transpose_a = true}), W1},
                  {ops::Sum(s, dh, {0}), b1},
                  {ops::MatMul(s, h, d, {.transpose_a = true}), W2},
                  {ops::Sum(s, d, {0}), b2}};
  };
  auto rep = Replicate(root, options, model, GradientDescent(0.01));
  if (!rep.ok()) {
    state.SkipWithError(rep.status().ToString().c_str());
    return;
  }
  auto session = MakeSession(root, devices);
  std::vector<Tensor> out;
  Status init = session->Run({}, {}, {rep->init.name()}, &out);
  if (!init.ok()) {
    state.SkipWithError(init.ToString().c_str());
    return;
  }
  Tensor x = random(TensorShape({kBatch, kIn})), t = random(TensorShape({kBatch, kOut}));
  std::vector<std::pair<std::string, Tensor>> feeds;
  for (int d = 0; d < devices; ++d) {
    feeds.emplace_back(StrCat("tower_", d, "/x"), x.Slice(d * batch, (d + 1) * batch));
    feeds.emplace_back(StrCat("tower_", d, "/t"), t.Slice(d * batch, (d + 1) * batch));
  }
  for (auto _ : state) {
    Status s = session->Run(feeds, {}, {rep->train.name()}, &out);
    if (!s.ok()) state.SkipWithError(s.ToString().c_str());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * kBatch);
}
BENCHMARK(BM_DataParallelMlpStep)->Arg(1)->Arg(2)->Arg(4)->ArgName("devices")->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tessera::bench

BENCHMARK_MAIN();
