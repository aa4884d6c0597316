// The training demo's CNN at batch 128: one training step (forward, gradients, RMSProp)
// and one inference pass, each on batches already in memory, at 1 and 2 threads. The
// side-by-side script (bench/cnn_side_by_side.py) sets these beside PyTorch and Keras.
#include <benchmark/benchmark.h>

#include <random>

#include "runtime/session.h"
#include "training/fashion_cnn.h"
#include "training/optimizers.h"

namespace tessera {
namespace {

constexpr int64_t kBatch = 128;

struct Model {
  GraphSpec def;
  std::string init, train, classes;
};

Model Build(bool training) {
  Scope root = Scope::NewRootScope();
  std::vector<Operation> inits;
  FashionCnn cnn = CreateFashionCnn(
      root,
      [&](const std::string& name, Input init) {
        Output value = root.AsOutput(init);
        Output var = ops::Variable(root.WithOpName(name), value.node->output_shape(value.index), DataType::kFloat);
        inits.push_back(ops::Assign(root, var, value).op());
        return var;
      },
      1);
  auto images = ops::Placeholder(root.WithOpName("images"), DataType::kFloat, TensorShape({kBatch, 28, 28, 1}));
  auto labels = ops::Placeholder(root.WithOpName("labels"), DataType::kInt32, TensorShape({kBatch}));
  Output logits = FashionCnnLogits(root, cnn, images);
  Model m;
  m.classes = ops::ArgMax(root.WithOpName("classes"), logits, 1, DataType::kInt32).name();
  if (training) {
    auto xent = ops::SparseSoftmaxCrossEntropyWithLogits(root, logits, labels);
    Output loss = ops::Mean(root, xent[0], {0});
    StatusOr<Training> t = RMSPropOptimizer({.learning_rate = 1e-3, .decay = 0.9, .momentum = 0,
                                             .epsilon = 1e-7, .initial_mean_square = 0})
                               .Minimize(root, loss, cnn.Variables());
    if (t.ok()) {
      inits.push_back(t->init);
      m.train = t->train.name();
    } else {
      root.UpdateStatus(t.status());
    }
  }
  m.init = ops::NoOp(root.WithOpName("init").WithControlDependencies(inits)).name();
  Status s = root.ToSpec(&m.def);
  if (!s.ok()) m.def = GraphSpec();
  return m;
}

void Run(benchmark::State& state, bool training) {
  const int threads = static_cast<int>(state.range(0));
  Model m = Build(training);
  SessionConfig config;
  // As `tessera train` runs a CPU device: one inter-op thread, `threads` intra-op.
  config.inter_op_parallelism_threads = 1;
  config.intra_op_parallelism_threads = threads;
  auto session = Session::Create(config, m.def);
  if (!session.ok()) {
    state.SkipWithError(session.status().ToString().c_str());
    return;
  }
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> pixel(0, 1);
  Tensor images(DataType::kFloat, TensorShape({kBatch, 28, 28, 1})), labels(DataType::kInt32, TensorShape({kBatch}));
  for (int64_t i = 0; i < images.NumElements(); ++i) images.data<float>()[i] = pixel(rng);
  for (int64_t i = 0; i < kBatch; ++i) labels.data<int32_t>()[i] = static_cast<int32_t>(rng() % 10);
  std::vector<Tensor> out;
  Status s = (*session)->Run({}, {}, {m.init}, &out);
  const std::vector<std::pair<std::string, Tensor>> feeds = {{"images", images}, {"labels", labels}};
  const std::vector<std::string> fetches = training ? std::vector<std::string>{} : std::vector<std::string>{m.classes};
  const std::vector<std::string> targets = training ? std::vector<std::string>{m.train} : std::vector<std::string>{};
  for (int i = 0; s.ok() && i < 5; ++i) s = (*session)->Run(feeds, fetches, targets, &out);  // primitives built
  for (auto _ : state) {
    s = (*session)->Run(feeds, fetches, targets, &out);
    if (!s.ok()) state.SkipWithError(s.ToString().c_str());
  }
  state.counters["images/s"] = benchmark::Counter(static_cast<double>(kBatch), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_CnnTrainStep(benchmark::State& state) { Run(state, true); }
void BM_CnnInference(benchmark::State& state) { Run(state, false); }
BENCHMARK(BM_CnnTrainStep)->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CnnInference)->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tessera

BENCHMARK_MAIN();
