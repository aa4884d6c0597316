// The Fashion-MNIST input pipeline of the training demo, as tf.data users write it:
// zip(images, labels) -> map(normalise) -> shuffle(10,000) -> batch(128) -> prefetch, read
// one batch per Session::Run. bench/tf_data_pipeline.py runs the same pipeline in tf.data.
// Threads = inter-op, intra-op and the map's parallel calls.
#include <benchmark/benchmark.h>

#include <filesystem>

#include "bench/bench_session.h"
#include "graph/builder/dataset_ops.h"
#include "graph/builder/ops.h"
#include "runtime/session.h"

namespace tessera::bench {
namespace {

const char* kDir = "/usr/share/datasets/fashion-mnist/";
constexpr int kBatch = 128;

void BM_FashionMnistPipeline(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  const std::string dir = kDir;
  if (!std::filesystem::exists(dir + "train-images-idx3-ubyte.gz")) {
    state.SkipWithError("dataset-fashion-mnist is not installed (scripts/setup.sh)");
    return;
  }
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
  ops::Iterator it = ops::OneShotIterator(root.WithOpName("it"), ds);
  std::vector<Output> next = ops::GetNext(root.WithOpName("next"), it);
  std::unique_ptr<Session> session = bench::SessionOrSkip(root, threads, state);
  if (session == nullptr) return;
  const std::vector<std::string> fetches = {next[0].name(), next[1].name()};
  std::vector<Tensor> out;
  Status s;
  // Warm up: the files are read and the shuffle buffer filled before timing.
  for (int i = 0; i < 100; ++i) s = session->Run({}, fetches, {}, &out);
  for (auto _ : state) {
    s = session->Run({}, fetches, {}, &out);
    if (!s.ok()) state.SkipWithError(s.ToString().c_str());
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
}
BENCHMARK(BM_FashionMnistPipeline)->ArgName("threads")->Arg(1)->Arg(2)->Iterations(469)->UseRealTime();

}  // namespace
}  // namespace tessera::bench

BENCHMARK_MAIN();
