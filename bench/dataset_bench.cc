// Input pipelines over Fashion-MNIST, read one batch per Session::Run.
//
// BM_FashionMnistPipeline is the pipeline as tf.data users write it: zip(images, labels) ->
// map(normalise) -> shuffle(10,000) -> batch(128) -> prefetch; bench/tf_data_pipeline.py runs
// the same in tf.data. Threads = inter-op, intra-op and the map's parallel calls.
//
// BM_TrainingDemoPipeline is `tessera train`'s: the decoded split cached, shuffled, batched,
// then each batch normalised, with no prefetch, so that its time is the producer's cost per
// batch, which a training step at two threads on two cores pays in full.
#include <benchmark/benchmark.h>

#include <filesystem>

#include "bench/bench_session.h"
#include "graph/builder/dataset_ops.h"
#include "graph/builder/ops.h"
#include "runtime/session.h"
#include "training/fashion_cnn.h"

namespace tessera::bench {
namespace {

constexpr int kBatch = 128;

// Times one GetNext per iteration after `warmup` of them (the files read, the shuffle buffer
// filled, the cache complete).
void TimeBatches(benchmark::State& state, const Scope& root, const ops::Dataset& ds, int threads, int warmup) {
  ops::Iterator it = ops::OneShotIterator(root.WithOpName("it"), ds);
  std::vector<Output> next = ops::GetNext(root.WithOpName("next"), it);
  std::unique_ptr<Session> session = bench::SessionOrSkip(root, threads, state);
  if (session == nullptr) return;
  const std::vector<std::string> fetches = {next[0].name(), next[1].name()};
  std::vector<Tensor> out;
  Status s;
  for (int i = 0; i < warmup; ++i) s = session->Run({}, fetches, {}, &out);
  for (auto _ : state) {
    s = session->Run({}, fetches, {}, &out);
    if (!s.ok()) state.SkipWithError(s.ToString().c_str());
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
}

bool HaveFashionMnist(benchmark::State& state) {
  if (std::filesystem::exists(FashionMnistDir() + "/train-images-idx3-ubyte.gz")) return true;
  state.SkipWithError("dataset-fashion-mnist is not installed (scripts/setup.sh)");
  return false;
}

void BM_FashionMnistPipeline(benchmark::State& state) {
  if (!HaveFashionMnist(state)) return;
  const int threads = static_cast<int>(state.range(0));
  const std::string dir = FashionMnistDir() + "/";
  Scope root = Scope::NewRootScope();
  auto images = ops::IdxDataset(root, dir + "train-images-idx3-ubyte.gz", TensorShape({28, 28}));
  auto labels = ops::IdxDataset(root, dir + "train-labels-idx1-ubyte.gz", TensorShape({}));
  auto normalised = ops::Map(
      root, ops::Zip(root, {images, labels}),
      [](const Scope& s, const std::vector<Output>& x) {
        return std::vector<Output>{ops::Mul(s, ops::Cast(s, x[0], DataType::kFloat), 1.0f / 255),
                                   ops::Cast(s, x[1], DataType::kInt32)};
      },
      threads);
  auto shuffled = ops::Shuffle(root, ops::Repeat(root, normalised), 10000, {.seed = 1});
  auto ds = ops::Prefetch(root, ops::Batch(root, shuffled, kBatch, {.drop_remainder = true}), 2);
  TimeBatches(state, root, ds, threads, 100);
}
BENCHMARK(BM_FashionMnistPipeline)->ArgName("threads")->Arg(1)->Arg(2)->Iterations(469)->UseRealTime();

void BM_TrainingDemoPipeline(benchmark::State& state) {
  if (!HaveFashionMnist(state)) return;
  Scope root = Scope::NewRootScope();
  auto cached = ops::Repeat(root, FashionMnist(root, FashionMnistDir(), "train"));
  auto shuffled = ops::Shuffle(root, cached, 10000, {.seed = 1});
  // Past the first of the split's 469 batches, from the cache.
  TimeBatches(state, root, FashionMnistBatches(root, shuffled, kBatch, /*drop_remainder=*/true), 1, 600);
}
BENCHMARK(BM_TrainingDemoPipeline)->Iterations(2000)->UseRealTime();

}  // namespace
}  // namespace tessera::bench

BENCHMARK_MAIN();
