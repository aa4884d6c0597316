// What the GPU benchmarks share: their main, skipping without a GPU, random inputs, and
// timing a run of steps whose results stay on the GPU, as PyTorch's side keeps them there.
#pragma once

#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "devices/device_factory.h"
#include "devices/gpu/gpu_provider.h"
#include "devices/linked/linked_providers.h"
#include "runtime/session.h"

namespace tessera::bench {

// A GPU benchmark's main: the program's composition point registers the GPU provider, as
// every program that runs on GPUs does, then runs the benchmarks.
inline int GpuBenchmarkMain(int argc, char** argv) {
  RegisterGpuProvider();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

// Marks the benchmark skipped, saying why, on a machine without a GPU.
inline bool SkipWithoutGpu(benchmark::State& state) {
  const std::string why = NoGpuReason();
  if (!why.empty()) state.SkipWithError(("needs a GPU: " + why).c_str());
  return !why.empty();
}

inline bool Ok(const Status& s, benchmark::State& state) {
  if (!s.ok()) state.SkipWithError(s.ToString().c_str());
  return s.ok();
}

inline Tensor RandomTensor(TensorShape shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  Tensor t(DataType::kFloat, shape);
  for (int64_t i = 0; i < t.NumElements(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

// Runs `targets` `steps` times, only the last also fetching `fetch`: the GPU runs ahead of
// the host, and the last step returns once the GPU has done them all.
inline Status RunSteps(Session& session, int steps, const std::string& fetch, const std::vector<std::string>& targets) {
  std::vector<Tensor> out;
  for (int i = 0; i < steps; ++i) {
    const bool last = i + 1 == steps;
    RETURN_IF_ERROR(session.Run({}, last ? std::vector<std::string>{fetch} : std::vector<std::string>{}, targets, &out));
  }
  return Status::OK();
}

// Times RunSteps once per benchmark iteration, after two untimed rounds (algorithms chosen,
// memory grown), and reports images/s.
inline void TimeSteps(benchmark::State& state, Session& session, int steps, int64_t images_per_step,
                      const std::string& fetch, const std::vector<std::string>& targets) {
  for (int i = 0; i < 2; ++i) {
    if (!Ok(RunSteps(session, steps, fetch, targets), state)) return;
  }
  for (auto _ : state) {
    if (!Ok(RunSteps(session, steps, fetch, targets), state)) return;
  }
  state.counters["images/s"] = benchmark::Counter(static_cast<double>(images_per_step * steps),
                                                  benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace tessera::bench
