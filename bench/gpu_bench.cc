// The GPU device against what it is built on, each pair in one binary on one GPU:
//   MatMul 4096 fp32 through a Session   vs  cublasSgemm called directly;
//   a chain of 1,000 small ops           vs  1,000 bare launches of the same kernel;
//   64 MiB CPU -> GPU -> CPU by _Send/_Recv  vs  pinned cudaMemcpy both ways;
//   a chain of 100 convolutions (the CNN's second, at batch 64) vs  cuDNN called directly;
// and the seeds' CNN at batch 128 with its data on the GPU, its training step also recorded
// once and replayed (gpu_options.capture_steps; bench/torch_cnn_gpu.py is the PyTorch side,
// eager and replaying a CUDA graph). Every benchmark skips, saying why, without a GPU.
#include <benchmark/benchmark.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include "bench/gpu_bench_util.h"
#include "devices/device_factory.h"
#include "devices/gpu/launch.h"
#include "runtime/session.h"
#include "training/fashion_cnn.h"
#include "training/optimizers.h"

namespace tessera {
namespace {

using bench::Ok;
using bench::RandomTensor;
using bench::SkipWithoutGpu;

std::unique_ptr<Session> MakeSession(const Scope& root, benchmark::State& state, bool capture_steps = false) {
  GraphSpec def;
  Status s = root.ToSpec(&def);
  SessionConfig config;
  config.gpu_options.capture_steps = capture_steps;
  // The benchmarks time the ops as written: on constants, and chains a rewrite would cut short.
  config.constant_folding = false;
  config.arithmetic_optimization = false;
  StatusOr<std::unique_ptr<Session>> session = s.ok() ? Session::Create(config, def)
                                                      : StatusOr<std::unique_ptr<Session>>(s);
  if (!session.ok()) {
    state.SkipWithError(session.status().ToString().c_str());
    return nullptr;
  }
  return std::move(*session);
}

constexpr int64_t kN = 4096;
constexpr int kMatMulsPerIteration = 10;

// Ten products per iteration; the last Run fetches a scalar of the last product, so the
// iteration ends when the GPU has done all ten (the stream runs them in order).
void BM_MatMul4096_Session(benchmark::State& state) {
  if (SkipWithoutGpu(state)) return;
  Scope root = Scope::NewRootScope();
  Scope gpu = root.WithDevice("/device:GPU:0");
  Output a = ops::Const(gpu, RandomTensor(TensorShape({kN, kN}), 1));
  Output b = ops::Const(gpu, RandomTensor(TensorShape({kN, kN}), 2));
  Output product = ops::MatMul(gpu.WithOpName("product"), a, b);
  Output check = ops::Sum(gpu.WithOpName("check"), product, {0, 1});
  auto session = MakeSession(root, state);
  if (session == nullptr) return;
  std::vector<Tensor> out;
  if (!Ok(session->Run({}, {check.name()}, {}, &out), state)) return;
  for (auto _ : state) {
    for (int i = 0; i + 1 < kMatMulsPerIteration; ++i) {
      if (!Ok(session->Run({}, {}, {product.op().name()}, &out), state)) return;
    }
    if (!Ok(session->Run({}, {check.name()}, {}, &out), state)) return;
  }
  state.counters["TFLOP/s"] = benchmark::Counter(2.0 * kN * kN * kN * kMatMulsPerIteration / 1e12,
                                                 benchmark::Counter::kIsIterationInvariantRate);
}

void BM_MatMul4096_Cublas(benchmark::State& state) {
  if (SkipWithoutGpu(state)) return;
  const size_t bytes = kN * kN * sizeof(float);
  float *a = nullptr, *b = nullptr, *c = nullptr;
  cublasHandle_t handle = nullptr;
  if (cudaMalloc(&a, bytes) != cudaSuccess || cudaMalloc(&b, bytes) != cudaSuccess ||
      cudaMalloc(&c, bytes) != cudaSuccess || cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) {
    state.SkipWithError("cudaMalloc or cublasCreate failed");
    return;
  }
  // The Session's operands: the GPU draws more power, and clocks lower, on random data than on zeros.
  const Tensor host_a = RandomTensor(TensorShape({kN, kN}), 1), host_b = RandomTensor(TensorShape({kN, kN}), 2);
  cudaMemcpy(a, host_a.raw_data(), bytes, cudaMemcpyHostToDevice);
  cudaMemcpy(b, host_b.raw_data(), bytes, cudaMemcpyHostToDevice);
  const float one = 1, zero = 0;
  for (auto _ : state) {
    for (int i = 0; i < kMatMulsPerIteration; ++i) {
      cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, kN, kN, kN, &one, b, kN, a, kN, &zero, c, kN);
    }
    cudaDeviceSynchronize();
  }
  state.counters["TFLOP/s"] = benchmark::Counter(2.0 * kN * kN * kN * kMatMulsPerIteration / 1e12,
                                                 benchmark::Counter::kIsIterationInvariantRate);
  cublasDestroy(handle);
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
}

constexpr int kChain = 1000;

// 1,000 Negs of a 256-float vector, one Run, its last value fetched.
void BM_OpChain1000_Session(benchmark::State& state) {
  if (SkipWithoutGpu(state)) return;
  Scope root = Scope::NewRootScope();
  Scope gpu = root.WithDevice("/device:GPU:0");
  Output x = ops::Const(gpu, RandomTensor(TensorShape({256}), 3));
  for (int i = 0; i < kChain; ++i) x = ops::Neg(gpu, x);
  auto session = MakeSession(root, state);
  if (session == nullptr) return;
  std::vector<Tensor> out;
  for (auto _ : state) {
    if (!Ok(session->Run({}, {x.name()}, {}, &out), state)) return;
  }
  state.counters["us/op"] = benchmark::Counter(static_cast<double>(kChain) * 1e-6,
                                               benchmark::Counter::kIsIterationInvariantRate |
                                                   benchmark::Counter::kInvert);
}

// The same kernel launched 1,000 times back to back, then one copy of the result to the host.
void BM_OpChain1000_BareLaunch(benchmark::State& state) {
  if (SkipWithoutGpu(state)) return;
  float* x = nullptr;
  cudaStream_t stream = nullptr;
  if (cudaMalloc(&x, 256 * sizeof(float)) != cudaSuccess || cudaStreamCreate(&stream) != cudaSuccess) {
    state.SkipWithError("cudaMalloc or cudaStreamCreate failed");
    return;
  }
  cudaMemset(x, 0, 256 * sizeof(float));
  float host[256];
  for (auto _ : state) {
    for (int i = 0; i < kChain; ++i) gpu::Unary<float>(gpu::UnaryFn::kNeg, x, x, 256, stream);
    cudaMemcpyAsync(host, x, sizeof host, cudaMemcpyDeviceToHost, stream);
    cudaStreamSynchronize(stream);
  }
  state.counters["us/op"] = benchmark::Counter(static_cast<double>(kChain) * 1e-6,
                                               benchmark::Counter::kIsIterationInvariantRate |
                                                   benchmark::Counter::kInvert);
  cudaStreamDestroy(stream);
  cudaFree(x);
}

// A convolution's host cost beside cuDNN's own: 100 3x3 SAME convolutions of [64, 13, 13, 32]
// chained, the CNN's second at half its batch (one tower of two), as the mirrored step runs
// it; the last fetched.
constexpr int kConvChain = 100;
constexpr int kConvBatch = 64, kConvSide = 13, kConvChannels = 32;

void BM_ConvChain100_Session(benchmark::State& state) {
  if (SkipWithoutGpu(state)) return;
  Scope root = Scope::NewRootScope();
  Scope gpu = root.WithDevice("/device:GPU:0");
  Output x = ops::Const(gpu, RandomTensor(TensorShape({kConvBatch, kConvSide, kConvSide, kConvChannels}), 8));
  Output w = ops::Const(gpu, RandomTensor(TensorShape({3, 3, kConvChannels, kConvChannels}), 9));
  for (int i = 0; i < kConvChain; ++i) x = ops::Conv2D(gpu, x, w, {1, 1, 1, 1}, "SAME");
  Output check = ops::Sum(gpu.WithOpName("check"), x, {0, 1, 2, 3});
  auto session = MakeSession(root, state);
  if (session == nullptr) return;
  std::vector<Tensor> out;
  if (!Ok(session->Run({}, {check.name()}, {}, &out), state)) return;
  for (auto _ : state) {
    if (!Ok(session->Run({}, {check.name()}, {}, &out), state)) return;
  }
  state.counters["us/op"] = benchmark::Counter(static_cast<double>(kConvChain) * 1e-6,
                                               benchmark::Counter::kIsIterationInvariantRate |
                                                   benchmark::Counter::kInvert);
}

// The same 100 convolutions by cudnnConvolutionForward in NCHW, the fastest algorithm
// cuDNN times, between two buffers; then one small copy to the host.
void BM_ConvChain100_Cudnn(benchmark::State& state) {
  if (SkipWithoutGpu(state)) return;
  cudnnHandle_t h = nullptr;
  cudaStream_t stream = nullptr;
  cudnnTensorDescriptor_t xd = nullptr;
  cudnnFilterDescriptor_t wd = nullptr;
  cudnnConvolutionDescriptor_t cd = nullptr;
  float *a = nullptr, *b = nullptr, *w = nullptr, *ws = nullptr;
  const size_t elements = size_t{kConvBatch} * kConvSide * kConvSide * kConvChannels, ws_bytes = size_t{64} << 20;
  int found = 0;
  cudnnConvolutionFwdAlgoPerf_t best;
  const bool ready =
      cudaStreamCreate(&stream) == cudaSuccess && cudnnCreate(&h) == CUDNN_STATUS_SUCCESS &&
      cudnnSetStream(h, stream) == CUDNN_STATUS_SUCCESS && cudnnCreateTensorDescriptor(&xd) == CUDNN_STATUS_SUCCESS &&
      cudnnCreateFilterDescriptor(&wd) == CUDNN_STATUS_SUCCESS &&
      cudnnCreateConvolutionDescriptor(&cd) == CUDNN_STATUS_SUCCESS &&
      cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, kConvBatch, kConvChannels, kConvSide,
                                 kConvSide) == CUDNN_STATUS_SUCCESS &&
      cudnnSetFilter4dDescriptor(wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, kConvChannels, kConvChannels, 3, 3) ==
          CUDNN_STATUS_SUCCESS &&
      cudnnSetConvolution2dDescriptor(cd, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT) ==
          CUDNN_STATUS_SUCCESS &&
      cudnnSetConvolutionMathType(cd, CUDNN_FMA_MATH) == CUDNN_STATUS_SUCCESS &&
      cudaMalloc(&a, elements * sizeof(float)) == cudaSuccess && cudaMalloc(&b, elements * sizeof(float)) == cudaSuccess &&
      cudaMalloc(&w, 9 * kConvChannels * kConvChannels * sizeof(float)) == cudaSuccess &&
      cudaMalloc(&ws, ws_bytes) == cudaSuccess &&
      cudnnFindConvolutionForwardAlgorithmEx(h, xd, a, wd, w, cd, xd, b, 1, &found, &best, ws, ws_bytes) ==
          CUDNN_STATUS_SUCCESS &&
      found == 1;
  if (!ready) {
    state.SkipWithError("cuDNN setup failed");
  } else {
    cudaMemsetAsync(a, 0, elements * sizeof(float), stream);
    cudaMemsetAsync(w, 0, 9 * kConvChannels * kConvChannels * sizeof(float), stream);
    const float one = 1, zero = 0;
    float host[256];
    for (auto _ : state) {
      for (int i = 0; i < kConvChain; ++i) {
        cudnnConvolutionForward(h, &one, xd, i % 2 ? b : a, wd, w, cd, best.algo, ws, best.memory, &zero, xd,
                                i % 2 ? a : b);
      }
      cudaMemcpyAsync(host, a, sizeof host, cudaMemcpyDeviceToHost, stream);
      cudaStreamSynchronize(stream);
    }
    state.counters["us/op"] = benchmark::Counter(static_cast<double>(kConvChain) * 1e-6,
                                                 benchmark::Counter::kIsIterationInvariantRate |
                                                     benchmark::Counter::kInvert);
  }
  cudaFree(a);
  cudaFree(b);
  cudaFree(w);
  cudaFree(ws);
  if (cd != nullptr) cudnnDestroyConvolutionDescriptor(cd);
  if (wd != nullptr) cudnnDestroyFilterDescriptor(wd);
  if (xd != nullptr) cudnnDestroyTensorDescriptor(xd);
  if (h != nullptr) cudnnDestroy(h);
  if (stream != nullptr) cudaStreamDestroy(stream);
}

constexpr int64_t kTransferFloats = int64_t{16} << 20;  // 64 MiB

// A CPU tensor to the GPU and back: _Send/_Recv each way, the bytes counted once per way.
void BM_Transfer64MiB_SendRecv(benchmark::State& state) {
  if (SkipWithoutGpu(state)) return;
  Scope root = Scope::NewRootScope();
  Output x = ops::Const(root.WithDevice("/device:CPU:0"), RandomTensor(TensorShape({kTransferFloats}), 4));
  Output on_gpu = ops::Identity(root.WithDevice("/device:GPU:0"), x);
  Output back = ops::Identity(root.WithDevice("/device:CPU:0"), on_gpu);
  auto session = MakeSession(root, state);
  if (session == nullptr) return;
  std::vector<Tensor> out;
  for (auto _ : state) {
    if (!Ok(session->Run({}, {back.name()}, {}, &out), state)) return;
  }
  state.counters["GB/s"] = benchmark::Counter(2.0 * kTransferFloats * sizeof(float) / 1e9,
                                              benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Transfer64MiB_PinnedMemcpy(benchmark::State& state) {
  if (SkipWithoutGpu(state)) return;
  const size_t bytes = kTransferFloats * sizeof(float);
  void *host = nullptr, *device = nullptr;
  if (cudaMallocHost(&host, bytes) != cudaSuccess || cudaMalloc(&device, bytes) != cudaSuccess) {
    state.SkipWithError("cudaMallocHost or cudaMalloc failed");
    return;
  }
  for (auto _ : state) {
    cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice);
    cudaMemcpy(host, device, bytes, cudaMemcpyDeviceToHost);
  }
  state.counters["GB/s"] = benchmark::Counter(2.0 * bytes / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  cudaFreeHost(host);
  cudaFree(device);
}

constexpr int64_t kBatch = 128;
constexpr int kStepsPerIteration = 10;

// The CNN on GPU:0 with one batch held in GPU variables, as PyTorch's side holds its data
// on the GPU. As there, the results stay on the GPU and the GPU runs ahead: every tenth
// step fetches the loss (training) or the classes (inference), the others run them as
// targets.
void RunCnn(benchmark::State& state, bool training, bool capture = false) {
  if (SkipWithoutGpu(state)) return;
  Scope root = Scope::NewRootScope();
  const Scope gpu = root.WithDevice("/device:GPU:0");
  std::vector<Operation> inits;
  auto variable = [&](const std::string& name, Input init) {
    Output value = gpu.AsOutput(init);
    Output var = ops::Variable(gpu.WithOpName(name), value.node->output_shape(value.index), value.type());
    inits.push_back(ops::Assign(gpu, var, value).op());
    return var;
  };
  FashionCnn cnn = CreateFashionCnn(gpu, variable, 1);
  // int64, as PyTorch's: int32 would stay in host memory and be copied in each step.
  Tensor labels(DataType::kInt64, TensorShape({kBatch}));
  for (int64_t i = 0; i < kBatch; ++i) labels.data<int64_t>()[i] = i % 10;
  Output images = variable("images", RandomTensor(TensorShape({kBatch, 28, 28, 1}), 5));
  Output logits = FashionCnnLogits(gpu, cnn, images);
  Output classes = ops::ArgMax(gpu.WithOpName("classes"), logits, 1, DataType::kInt64);
  std::string train, loss_name;
  if (training) {
    auto xent = ops::SparseSoftmaxCrossEntropyWithLogits(gpu, logits, ops::Const(gpu, labels));
    Output loss = ops::Mean(gpu.WithOpName("loss"), xent[0], {0});
    loss_name = loss.name();
    StatusOr<Training> t = RMSPropOptimizer({.learning_rate = 1e-3, .decay = 0.9, .momentum = 0, .epsilon = 1e-7,
                                             .initial_mean_square = 0})
                               .Minimize(gpu, loss, cnn.Variables());
    if (!Ok(t.status(), state)) return;
    inits.push_back(t->init);
    train = t->train.name();
  }
  const std::string init = ops::NoOp(root.WithOpName("init").WithControlDependencies(inits)).name();
  auto session = MakeSession(root, state, capture);
  if (session == nullptr) return;
  std::vector<Tensor> out;
  if (!Ok(session->Run({}, {}, {init}, &out), state)) return;
  const std::string fetch = training ? loss_name : classes.name();
  const std::string target = training ? train : classes.op().name();
  bench::TimeSteps(state, *session, kStepsPerIteration, kBatch, fetch, {target});
}

void BM_CnnTrainStep_Gpu(benchmark::State& state) { RunCnn(state, true); }
void BM_CnnInference_Gpu(benchmark::State& state) { RunCnn(state, false); }
void BM_CnnTrainStep_GpuCaptured(benchmark::State& state) { RunCnn(state, true, /*capture=*/true); }

BENCHMARK(BM_MatMul4096_Session)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_MatMul4096_Cublas)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_OpChain1000_Session)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_OpChain1000_BareLaunch)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ConvChain100_Session)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ConvChain100_Cudnn)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Transfer64MiB_SendRecv)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Transfer64MiB_PinnedMemcpy)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CnnTrainStep_Gpu)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CnnTrainStep_GpuCaptured)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CnnInference_Gpu)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) { return tessera::bench::GpuBenchmarkMain(argc, argv); }
