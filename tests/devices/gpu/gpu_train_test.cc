// `tessera train --device gpu`: the seeds' CNN on a GPU. Whether every op of its training
// step has a GPU kernel is checked on any machine; the training itself needs a GPU.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>

#include "devices/device_factory.h"
#include "graph/builder/gradients.h"
#include "graph/graph.h"
#include "kernels/kernel_registry.h"
#include "runtime/partition.h"
#include "runtime/step_capture.h"
#include "runtime/subgraph.h"
#include "tests/devices/gpu/gpu_test_util.h"
#include "tests/test_util.h"
#include "training/fashion_cnn.h"
#include "training/optimizers.h"
#include "training/replicate.h"
#include "training/trainer.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;

// The step as one tower builds it: forward, gradients and RMSProp's updates.
TEST(GpuTrainTest, EveryOpOfTheTrainingStepHasAGpuKernel) {
  Scope root = Scope::NewRootScope();
  const Scope s = root.WithDevice("/device:GPU:0");
  FashionCnn cnn = CreateFashionCnn(
      s, [&](const std::string& name, Input init) { return ops::Variable(s.WithOpName(name), init.tensor().shape(),
                                                                         DataType::kFloat); },
      1, /*initializers=*/false);
  auto images = ops::Placeholder(s.WithOpName("images"), DataType::kFloat, TensorShape({-1, 28, 28, 1}));
  auto labels = ops::Placeholder(s.WithOpName("labels"), DataType::kInt32, TensorShape({-1}));
  auto xent = ops::SparseSoftmaxCrossEntropyWithLogits(s, FashionCnnLogits(s, cnn, images), labels);
  ASSERT_EQ(xent.size(), 2u);
  Output loss = ops::Mean(s, xent[0], {0});
  RMSPropOptimizer optimizer({.learning_rate = 1e-3, .decay = 0.9, .momentum = 0.0, .epsilon = 1e-7});
  ASSERT_TRUE(optimizer.Minimize(s, loss, cnn.Variables()).ok());
  GraphSpec def;
  ASSERT_TRUE(root.ToSpec(&def).ok());
  StatusOr<std::unique_ptr<Graph>> g = Graph::FromSpec(def);
  ASSERT_TRUE(g.ok()) << g.status();
  std::vector<std::string> missing;
  for (const Node* n : (*g)->nodes()) {
    if (n->op() == "Placeholder") continue;  // fed, never run
    if (KernelRegistry::Global()->Find(*n, kDeviceGpu) == nullptr) missing.push_back(n->name() + " (" + n->op() + ")");
  }
  EXPECT_THAT(missing, ::testing::IsEmpty());
}

// Mirrored over two GPUs, the towers add the all-reduces of their gradients: every op a
// tower puts on its GPU has a GPU kernel there, so none falls back to the CPU.
TEST(GpuTrainTest, EveryOpOfAMirroredStepOverTwoGpusHasAGpuKernel) {
  Scope root = Scope::NewRootScope();
  ReplicateOptions options{.mode = ReplicationMode::kMirrored, .devices = {"/device:GPU:0", "/device:GPU:1"}};
  auto model = [](Tower& tower, TowerOutputs* out) {
    const Scope& s = tower.scope();
    FashionCnn cnn = CreateFashionCnn(
        s, [&](const std::string& name, Input init) { return tower.Variable(name, init); }, 1, tower.index() == 0);
    auto images = ops::Placeholder(s.WithOpName("images"), DataType::kFloat, TensorShape({-1, 28, 28, 1}));
    auto labels = ops::Placeholder(s.WithOpName("labels"), DataType::kInt32, TensorShape({-1}));
    auto xent = ops::SparseSoftmaxCrossEntropyWithLogits(s, FashionCnnLogits(s, cnn, images), labels);
    std::vector<Output> grads;
    s.UpdateStatus(AddSymbolicGradients(s, {ops::Mean(s, xent[0], {0})}, cnn.Variables(), &grads));
    for (size_t i = 0; i < grads.size(); ++i) out->grads.push_back({grads[i], cnn.variables[i].second});
  };
  RMSPropOptimizer optimizer({.learning_rate = 1e-3, .decay = 0.9, .momentum = 0.0, .epsilon = 1e-7});
  StatusOr<Replicated> rep = Replicate(root, options, model, optimizer);
  ASSERT_TRUE(rep.ok()) << rep.status();
  GraphSpec def;
  ASSERT_TRUE(root.ToSpec(&def).ok());
  StatusOr<std::unique_ptr<Graph>> g = Graph::FromSpec(def);
  ASSERT_TRUE(g.ok()) << g.status();
  std::vector<std::string> missing;
  int all_reduces = 0;
  for (const Node* n : (*g)->nodes()) {
    if (n->op() == "Placeholder" || n->requested_device().find("GPU") == std::string::npos) continue;
    all_reduces += n->op() == "AllReduce";
    if (KernelRegistry::Global()->Find(*n, kDeviceGpu) == nullptr) missing.push_back(n->name() + " (" + n->op() + ")");
  }
  EXPECT_THAT(missing, ::testing::IsEmpty());
  EXPECT_GE(all_reduces, 2);  // at least one bucket per tower
}

// The training step gpu_bench records and replays (gpu_options.capture_steps), with its
// batch in GPU variables: on one GPU it has nothing a recording must refuse, not even a copy
// between the GPU's host and device memory.
TEST(GpuTrainTest, TheTrainingStepOnOneGpuCanBeRecorded) {
  Scope root = Scope::NewRootScope();
  const Scope s = root.WithDevice("/job:localhost/replica:0/task:0/device:GPU:0");
  auto variable = [&](const std::string& name, Input init) {
    Output value = s.AsOutput(init);
    return ops::Variable(s.WithOpName(name), value.node->output_shape(value.index), value.type());
  };
  FashionCnn cnn = CreateFashionCnn(s, variable, 1);
  Output images = variable("images", Tensor(DataType::kFloat, TensorShape({128, 28, 28, 1})));
  // int64, as PyTorch's: int32 stays in host memory on a GPU, and would be copied each step.
  Tensor labels(DataType::kInt64, TensorShape({128}));
  auto xent = ops::SparseSoftmaxCrossEntropyWithLogits(s, FashionCnnLogits(s, cnn, images), ops::Const(s, labels));
  Output loss = ops::Mean(s, xent[0], {0});
  RMSPropOptimizer optimizer({.learning_rate = 1e-3, .decay = 0.9, .momentum = 0.0, .epsilon = 1e-7});
  StatusOr<Training> training = optimizer.Minimize(s, loss, cnn.Variables());
  ASSERT_TRUE(training.ok()) << training.status();
  GraphSpec def;
  ASSERT_TRUE(root.ToSpec(&def).ok());
  StatusOr<std::unique_ptr<Graph>> g = Graph::FromSpec(def);
  ASSERT_TRUE(g.ok()) << g.status();
  StatusOr<Subgraph> step = BuildSubgraph(**g, {}, {}, {training->train.name()});
  ASSERT_TRUE(step.ok()) << step.status();
  // Where the placer puts them in gpu_bench: the GPU, which ranks first.
  for (Node* n : step->graph->nodes()) n->set_assigned_device("/job:localhost/replica:0/task:0/device:GPU:0");
  auto parts = Partition(*step->graph, {.incarnation = [](const std::string&) -> uint64_t { return 1; }});
  ASSERT_TRUE(parts.ok()) << parts.status();
  ASSERT_EQ(parts->size(), 1u);
  EXPECT_EQ(CaptureBlocker(*parts->begin()->second.graph), "");
}

// The GPU trains as the CPU does: two epochs of one seed reach the CPU's test accuracy (seed 1:
// 0.8676, over the 86.5% target; seed 2 reaches 0.853 on both) within a point. cuDNN's
// autotuned algorithms, some summing with atomics, move the GPU's by a few tenths from run to
// run (seed 1 gave 0.8629 to 0.8693 on H100s).
TEST(GpuTrainTest, TheCnnReachesTheCpusAccuracyInTwoEpochsOnOneGpu) {
  TESSERA_SKIP_WITHOUT_GPU();
  double accuracy[2];
  for (int gpu : {0, 1}) {
    TrainOptions o;
    o.device = gpu ? "gpu" : "cpu";
    o.epochs = 2;
    o.seed = 1;
    o.progress = false;
    std::ostringstream log;
    StatusOr<TrainResult> r = Train(o, log);
    ASSERT_TRUE(r.ok()) << r.status();
    std::cout << o.device << ":\n" << log.str();
    if (gpu) {
      EXPECT_THAT(log.str(), HasSubstr("device:GPU:0"));
    }
    accuracy[gpu] = r->epochs[1].test_accuracy;
  }
  EXPECT_NEAR(accuracy[1], accuracy[0], 0.01);
  EXPECT_GE(accuracy[1], 0.86);
}

// `tessera train --device gpu --virtual-gpus 2`: five steps mirrored over two logical GPUs of
// one GPU end where one of them alone ends with the same global batch.
TEST(GpuTrainTest, MirroredOverTwoLogicalGpusMatchesOneGpu) {
  TESSERA_SKIP_WITHOUT_GPU();
  TrainOptions o;
  o.device = "gpu";
  o.virtual_gpus = 2;  // in both runs: a process's first GPUs fix its split
  o.epochs = 1;
  o.train_limit = 640;
  o.test_limit = 1000;
  o.progress = false;
  std::ostringstream log;
  o.devices = 2;
  StatusOr<TrainResult> two = Train(o, log);
  ASSERT_TRUE(two.ok()) << two.status();
  o.devices = 1;
  StatusOr<TrainResult> one = Train(o, log);
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_THAT(log.str(), HasSubstr("device:GPU:1"));
  for (const auto& [name, a] : one->variables) EXPECT_LT(testing::MaxAbsDifference(a, two->variables.at(name)), 1e-4) << name;
}

}  // namespace
}  // namespace tessera
