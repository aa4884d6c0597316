// Replication on one GPU split into two logical GPUs (issue 15's targets), each pair in one
// binary on one GPU:
//   AllReduce of 64 MiB between the two logical GPUs  vs  cudaMemcpy of 64 MiB within the GPU;
//   the seeds' CNN mirrored over both at batch 64 each  vs  one of them at batch 128.
// Bandwidths count the bytes read and written in device memory, as a copy's "read + write"
// figure does: the ring of two members reads 2.5 and writes 1.5 times the tensor's bytes in
// all (each reduces half the tensor from both inputs, then copies the other half). Every
// benchmark skips, saying why, without a GPU.
#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include "bench/gpu_bench_util.h"
#include "devices/device_factory.h"
#include "graph/builder/gradients.h"
#include "runtime/session.h"
#include "training/fashion_cnn.h"
#include "training/optimizers.h"
#include "training/replicate.h"

namespace tessera {
namespace {

using bench::Ok;
using bench::RandomTensor;
using bench::SkipWithoutGpu;

// Every session here sees the same two logical GPUs: the first GPUs a process makes fix them.
std::unique_ptr<Session> MakeSession(const Scope& root, benchmark::State& state) {
  GraphSpec def;
  Status s = root.ToSpec(&def);
  SessionConfig config;
  config.device_count = {{"CPU", 1}, {"GPU", 2}};
  config.gpu_options.virtual_devices_per_gpu = 2;
  StatusOr<std::unique_ptr<Session>> session = s.ok() ? Session::Create(config, def)
                                                      : StatusOr<std::unique_ptr<Session>>(s);
  if (!session.ok()) {
    state.SkipWithError(session.status().ToString().c_str());
    return nullptr;
  }
  return std::move(*session);
}

constexpr int64_t kFloats = int64_t{16} << 20;  // 64 MiB
constexpr int kRepeats = 10;

// Ten all-reduces an iteration, the last fetching the result's sum (a read of 64 MiB, a
// tenth of one all-reduce's traffic): the stream has then run all ten.
void BM_AllReduce64MiB_TwoLogicalGpus(benchmark::State& state) {
  if (SkipWithoutGpu(state)) return;
  Scope root = Scope::NewRootScope();
  std::vector<Operation> inits;
  std::string reduced, first;
  for (int m = 0; m < 2; ++m) {
    const Scope gpu = root.WithDevice(StrCat("/device:GPU:", m));
    Output value = ops::Const(gpu, RandomTensor(TensorShape({kFloats}), 7 + m));
    Output var = ops::Variable(gpu.WithOpName(StrCat("x", m)), TensorShape({kFloats}), DataType::kFloat);
    inits.push_back(ops::Assign(gpu, var, value).op());
    Output r = ops::AllReduce(gpu.WithOpName(StrCat("r", m)), {ops::Identity(gpu, var)},
                              {.reduction = "mean", .group_key = 1, .group_size = 2})[0];
    if (m == 1) first = ops::Sum(gpu.WithOpName("first"), r, {0}).name();
  }
  const std::string init = ops::NoOp(root.WithOpName("init").WithControlDependencies(inits)).name();
  auto session = MakeSession(root, state);
  if (session == nullptr) return;
  std::vector<Tensor> out;
  if (!Ok(session->Run({}, {}, {init}, &out), state)) return;
  const std::vector<std::string> targets = {"r0", "r1", "first"};
  if (!Ok(bench::RunSteps(*session, kRepeats, first, targets), state)) return;
  for (auto _ : state) {
    if (!Ok(bench::RunSteps(*session, kRepeats, first, targets), state)) return;
  }
  const double bytes = kFloats * sizeof(float);
  state.counters["GB/s"] = benchmark::Counter(kRepeats * 4.0 * bytes / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["algGB/s"] = benchmark::Counter(kRepeats * bytes / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_DeviceToDeviceCopy64MiB_Cuda(benchmark::State& state) {
  if (SkipWithoutGpu(state)) return;
  const size_t bytes = kFloats * sizeof(float);
  void *a = nullptr, *b = nullptr;
  if (cudaMalloc(&a, bytes) != cudaSuccess || cudaMalloc(&b, bytes) != cudaSuccess) {
    state.SkipWithError("cudaMalloc failed");
    return;
  }
  for (auto _ : state) {
    for (int i = 0; i < kRepeats; ++i) cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, nullptr);
    cudaStreamSynchronize(nullptr);
  }
  state.counters["GB/s"] = benchmark::Counter(kRepeats * 2.0 * bytes / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  cudaFree(a);
  cudaFree(b);
}

constexpr int64_t kBatch = 128;

// The CNN's training step replicated over `towers` logical GPUs, the global batch of 128
// split between them and held in GPU variables; mirrored, the gradients all-reduced.
void RunReplicatedCnn(benchmark::State& state, int towers) {
  if (SkipWithoutGpu(state)) return;
  Scope root = Scope::NewRootScope();
  ReplicateOptions options;
  options.mode = ReplicationMode::kMirrored;
  for (int t = 0; t < towers; ++t) options.devices.push_back(StrCat("/gpu:", t));
  Tensor labels(DataType::kInt32, TensorShape({kBatch / towers}));
  for (int64_t i = 0; i < labels.NumElements(); ++i) labels.data<int32_t>()[i] = static_cast<int32_t>(i % 10);
  std::string loss_name;
  auto model = [&](Tower& tower, TowerOutputs* out) {
    const Scope& s = tower.scope();
    FashionCnn cnn = CreateFashionCnn(
        s, [&](const std::string& name, Input init) { return tower.Variable(name, init); }, 1, tower.index() == 0);
    Output images = tower.Variable(
        "images", RandomTensor(TensorShape({kBatch / towers, 28, 28, 1}), 5 + static_cast<uint32_t>(tower.index())));
    auto xent = ops::SparseSoftmaxCrossEntropyWithLogits(s, FashionCnnLogits(s, cnn, images), ops::Const(s, labels));
    Output loss = ops::Mean(s.WithOpName("loss"), xent[0], {0});
    std::vector<Output> grads;
    s.UpdateStatus(AddSymbolicGradients(s, {loss}, cnn.Variables(), &grads));
    for (size_t i = 0; i < grads.size(); ++i) out->grads.push_back({grads[i], cnn.variables[i].second});
    out->outputs.push_back(loss);
    if (tower.index() == 0) loss_name = loss.name();
  };
  RMSPropOptimizer optimizer(
      {.learning_rate = 1e-3, .decay = 0.9, .momentum = 0, .epsilon = 1e-7, .initial_mean_square = 0});
  StatusOr<Replicated> rep = Replicate(root, options, model, optimizer);
  if (!Ok(rep.status(), state)) return;
  auto session = MakeSession(root, state);
  if (session == nullptr) return;
  std::vector<Tensor> out;
  if (!Ok(session->Run({}, {}, {rep->init.name()}, &out), state)) return;
  bench::TimeSteps(state, *session, kRepeats, kBatch, loss_name, {rep->train.name()});
}

void BM_CnnTrain_OneLogicalGpu(benchmark::State& state) { RunReplicatedCnn(state, 1); }
void BM_CnnTrain_MirroredOverTwoLogicalGpus(benchmark::State& state) { RunReplicatedCnn(state, 2); }

BENCHMARK(BM_AllReduce64MiB_TwoLogicalGpus)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DeviceToDeviceCopy64MiB_Cuda)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CnnTrain_OneLogicalGpu)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CnnTrain_MirroredOverTwoLogicalGpus)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) { return tessera::bench::GpuBenchmarkMain(argc, argv); }
