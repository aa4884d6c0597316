// Whole-step capture on a GPU (gpu_options.capture_steps): replayed training steps give the
// bits normal steps give, with or without feeds and fetches; a variable given a new buffer
// is read from it; a feed of another shape runs normally and says why; and a step that
// cannot be recorded fails with a Status.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <mutex>

#include "devices/gpu/gpu_device_context.h"
#include "graph/builder/gradients.h"
#include "graph/op_registry.h"
#include "kernels/kernel_registry.h"
#include "tests/captured_log.h"
#include "tests/devices/gpu/gpu_test_util.h"
#include "tests/test_util.h"
#include "training/optimizers.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;

// A two-layer perceptron on GPU:0 trained with RMSProp on a batch held in a variable (the
// step a training loop repeats without feeding or fetching), or fed each step.
struct Model {
  Scope root = Scope::NewRootScope();
  std::string init, train, restore, loss;
  std::vector<std::string> variables;
};

Model MakeModel(bool fed) {
  Model m;
  const Scope s = m.root.WithDevice("/device:GPU:0");
  std::vector<Operation> inits;
  auto variable = [&](const std::string& name, Tensor value) {
    Output var = ops::Variable(s.WithOpName(name), value.shape(), DataType::kFloat);
    inits.push_back(ops::Assign(s, var, ops::Const(s, value)).op());
    m.variables.push_back(name);
    return var;
  };
  std::vector<float> w1(16 * 32), w2(32), x(64 * 16), t(64);
  for (size_t i = 0; i < w1.size(); ++i) w1[i] = 0.01f * static_cast<float>(static_cast<int>(i * 7 % 23) - 11);
  for (size_t i = 0; i < w2.size(); ++i) w2[i] = 0.02f * static_cast<float>(static_cast<int>(i % 5) - 2);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.1f * static_cast<float>(static_cast<int>(i * 13 % 17) - 8);
  for (size_t i = 0; i < t.size(); ++i) t[i] = static_cast<float>(i % 3);
  Output a = variable("w1", Tensor::FromVector<float>(w1, TensorShape({16, 32})));
  Output b = variable("w2", Tensor::FromVector<float>(w2, TensorShape({32, 1})));
  Output images = fed ? ops::Placeholder(s.WithOpName("x"), DataType::kFloat, TensorShape({64, 16}))
                      : variable("x", Tensor::FromVector<float>(x, TensorShape({64, 16})));
  Output targets = variable("t", Tensor::FromVector<float>(t, TensorShape({64, 1})));
  Output y = ops::MatMul(s, ops::Relu(s, ops::MatMul(s, images, a)), b);
  Output loss = ops::Mean(s.WithOpName("loss"), ops::Square(s, ops::Sub(s, y, targets)), {0, 1});
  StatusOr<Training> training = RMSPropOptimizer({.learning_rate = 1e-2, .decay = 0.9, .momentum = 0.0,
                                                  .epsilon = 1e-7, .initial_mean_square = 0})
                                    .Minimize(s, loss, {a, b});
  EXPECT_TRUE(training.ok()) << training.status();
  inits.push_back(training->init);
  m.init = ops::NoOp(m.root.WithOpName("init").WithControlDependencies(inits)).name();
  m.train = training->train.name();
  m.loss = loss.name();
  m.restore = ops::Assign(s.WithOpName("restore"), a, ops::Const(s, Tensor::FromVector<float>(w1, TensorShape({16, 32})))).name();
  return m;
}

struct Trained {
  std::vector<Tensor> variables;
  std::vector<Tensor> losses;  // fed: each step's
};

// A batch of its own for each step.
Tensor Batch(int step) {
  std::vector<float> x(64 * 16);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.1f * static_cast<float>(static_cast<int>((i + step * 5) * 13 % 17) - 8);
  return Tensor::FromVector<float>(x, TensorShape({64, 16}));
}

// Runs the init, then `steps` training steps (with a restore of w1 before step `restore_at`,
// when given), then fetches the variables. Fed: each step feeds its batch and fetches the loss.
Trained Train(bool capture, int steps, int restore_at = -1, bool fed = false) {
  Model m = MakeModel(fed);
  SessionConfig config;
  config.gpu_options.capture_steps = capture;
  // One thread: the nodes run in one order in normal and recorded steps alike (an update may
  // otherwise run before or after another node reads the variable).
  config.inter_op_parallelism_threads = 1;
  auto session = testing::MakeSession(m.root, config);
  std::vector<Tensor> out;
  EXPECT_TRUE(session->Run({}, {}, {m.init}, &out).ok());
  Trained result;
  for (int i = 0; i < steps; ++i) {
    if (i == restore_at) {
      EXPECT_TRUE(session->Run({}, {}, {m.restore}, &out).ok());
    }
    Status s = fed ? session->Run({{"x", Batch(i)}}, {m.loss}, {m.train}, &out) : session->Run({}, {}, {m.train}, &out);
    EXPECT_TRUE(s.ok()) << "step " << i << ": " << s;
    if (fed && s.ok()) result.losses.push_back(out[0]);
  }
  for (const std::string& v : m.variables) result.variables.push_back(testing::Fetch(*session, v));
  return result;
}

bool SameBits(const Tensor& a, const Tensor& b) {
  return a.TotalBytes() == b.TotalBytes() && std::memcmp(a.raw_data(), b.raw_data(), a.TotalBytes()) == 0;
}

TEST(GpuCaptureTest, ReplayedTrainingStepsGiveTheBitsOfNormalSteps) {
  TESSERA_SKIP_WITHOUT_GPU();
  testing::CapturedLog log;
  Trained normal = Train(false, 20);
  Trained replayed = Train(true, 20);
  ASSERT_EQ(replayed.variables.size(), normal.variables.size());
  for (size_t i = 0; i < normal.variables.size(); ++i) {
    EXPECT_TRUE(SameBits(replayed.variables[i], normal.variables[i])) << "variable " << i;
  }
  EXPECT_THAT(log.text(), HasSubstr("recorded; later steps replay it"));
}

TEST(GpuCaptureTest, AVariableGivenANewBufferIsReadFromIt) {
  TESSERA_SKIP_WITHOUT_GPU();
  testing::CapturedLog log;
  Trained normal = Train(false, 12, /*restore_at=*/6);
  Trained replayed = Train(true, 12, /*restore_at=*/6);
  for (size_t i = 0; i < normal.variables.size(); ++i) {
    EXPECT_TRUE(SameBits(replayed.variables[i], normal.variables[i])) << "variable " << i;
  }
  EXPECT_THAT(log.text(), HasSubstr("has another buffer than when the step was recorded"));
}

TEST(GpuCaptureTest, FedAndFetchedStepsReplayWithEachStepsOwnValues) {
  TESSERA_SKIP_WITHOUT_GPU();
  testing::CapturedLog log;
  Trained normal = Train(false, 12, -1, /*fed=*/true);
  Trained replayed = Train(true, 12, -1, /*fed=*/true);
  ASSERT_EQ(replayed.losses.size(), normal.losses.size());
  for (size_t i = 0; i < normal.losses.size(); ++i) {
    EXPECT_TRUE(SameBits(replayed.losses[i], normal.losses[i])) << "step " << i;
  }
  for (size_t i = 0; i < normal.variables.size(); ++i) {
    EXPECT_TRUE(SameBits(replayed.variables[i], normal.variables[i])) << "variable " << i;
  }
  // The losses differ from step to step: a replay that kept the recorded feed or fetch would repeat one.
  EXPECT_FALSE(SameBits(normal.losses[8], normal.losses[9]));
  EXPECT_THAT(log.text(), HasSubstr("recorded; later steps replay it"));
}

TEST(GpuCaptureTest, AFeedOfAnotherShapeRunsNormallyAndSaysWhyOnce) {
  TESSERA_SKIP_WITHOUT_GPU();
  testing::CapturedLog log;
  Scope root = Scope::NewRootScope();
  const Scope s = root.WithDevice("/device:GPU:0");
  auto x = ops::Placeholder(s.WithOpName("x"), DataType::kFloat);
  auto y = ops::Square(s.WithOpName("y"), x);
  SessionConfig config;
  config.gpu_options.capture_steps = true;
  auto session = testing::MakeSession(root, config);
  // Four elements, recorded at the third step; then five, twice; then four again.
  for (int n : {4, 4, 4, 4, 5, 5, 4, 4}) {
    std::vector<float> values(n);
    for (int i = 0; i < n; ++i) values[i] = static_cast<float>(n * 10 + i);
    Tensor r = testing::Fetch(*session, y.name(), {{"x", Tensor::FromVector<float>(values)}});
    ASSERT_EQ(r.NumElements(), n);
    for (int i = 0; i < n; ++i) EXPECT_EQ(r.data<float>()[i], values[i] * values[i]) << n << " elements, " << i;
  }
  const std::string text = log.text();
  EXPECT_THAT(text, HasSubstr("recorded; later steps replay it"));
  EXPECT_THAT(text, HasSubstr("a feed has another dtype or shape than when the step was recorded"));
  EXPECT_EQ(text.find("another dtype or shape"), text.rfind("another dtype or shape"));
}

// A kernel that waits for its GPU: allowed in a normal step, not while the step is recorded.
class WaitForGpuOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    auto* gpu = GpuContextOf(ctx->device_context());
    OP_REQUIRES_OK(ctx, gpu->Activate());
    OP_REQUIRES_OK(ctx, CudaStatus(cudaStreamSynchronize(gpu->compute_stream()), "TestWaitForGpu"));
    ctx->set_output(0, ctx->input(0));
  }
};

TEST(GpuCaptureTest, AStepThatCannotBeRecordedFailsWithAStatusThenRunsNormally) {
  TESSERA_SKIP_WITHOUT_GPU();
  static std::once_flag once;
  std::call_once(once, [] {
    (void)OpRegistry::Global()->Register(
        OpDefBuilder("TestWaitForGpu").Input("x: float").Output("y: float"));
    KernelRegistry::Global()->Register<WaitForGpuOp>(KernelDefBuilder("TestWaitForGpu").Device(kDeviceGpu));
  });
  testing::CapturedLog log;
  Scope root = Scope::NewRootScope();
  const Scope s = root.WithDevice("/device:GPU:0");
  auto v = ops::Variable(s.WithOpName("v"), TensorShape({4}), DataType::kFloat);
  ops::Assign(s.WithOpName("init"), v, ops::Const(s, Tensor::FromVector<float>({1, 2, 3, 4})));
  NodeSpec wait;
  wait.op = "TestWaitForGpu";
  wait.inputs = {v.name()};
  Operation waited(s.WithOpName("wait").AddNode(wait));
  ops::AssignAdd(s.WithOpName("step"), v, Output(waited.node(), 0));
  SessionConfig config;
  config.gpu_options.capture_steps = true;
  auto session = testing::MakeSession(root, config);
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({}, {}, {"init"}, &out).ok());
  std::vector<Status> statuses;
  for (int i = 0; i < 5; ++i) statuses.push_back(session->Run({}, {}, {"step"}, &out));
  int failed = 0;
  for (const Status& st : statuses) failed += st.ok() ? 0 : 1;
  EXPECT_EQ(failed, 1) << "the recording only";
  EXPECT_THAT(log.text(), HasSubstr("could not be recorded"));
  // Four steps ran: v doubled four times.
  Tensor r = testing::Fetch(*session, "v");
  EXPECT_EQ(testing::Values<float>(r), (std::vector<float>{16, 32, 48, 64}));
}

}  // namespace
}  // namespace tessera
