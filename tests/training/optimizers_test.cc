// Optimizers: one step of each equals TensorFlow's update rule computed by hand, linear
// regression converges with each, the global step counts steps, and misuse is an error.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "graph/builder/ops.h"
#include "runtime/session.h"
#include "tests/test_util.h"
#include "training/optimizers.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
constexpr DataType kD = DataType::kDouble;

// var = [1, 2] with the constant gradient [0.5, -1]; returns var after `steps` steps.
std::vector<double> StepWith(const Optimizer& opt, int steps) {
  Scope root = Scope::NewRootScope();
  auto var = ops::Variable(root.WithOpName("var"), TensorShape({2}), kD);
  auto init = ops::Assign(root.WithOpName("init"), var, Tensor::FromVector<double>({1, 2}));
  auto grad = ops::Const(root.WithOpName("grad"), Tensor::FromVector<double>({0.5, -1}));
  StatusOr<Training> t = opt.ApplyGradients(root, {{grad, var}});
  EXPECT_TRUE(t.ok()) << t.status();
  if (!t.ok()) return {};
  auto s = testing::MakeSession(root);
  EXPECT_TRUE(s->Run({}, {}, {init.node->name(), t->init.name()}, nullptr).ok());
  for (int i = 0; i < steps; ++i) EXPECT_TRUE(s->Run({}, {}, {t->train.name()}, nullptr).ok());
  return testing::Values<double>(testing::Fetch(*s, "var"));
}

void ExpectNear(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12) << i;
}

TEST(OptimizersTest, GradientDescentStep) {
  ExpectNear(StepWith(GradientDescentOptimizer(0.1), 2), {1 - 2 * 0.05, 2 + 2 * 0.1});
}

TEST(OptimizersTest, MomentumSteps) {
  // accum_1 = g, accum_2 = 0.9 g + g; var -= lr * accum each step.
  const double lr = 0.1, m = 0.9;
  std::vector<double> want(2);
  const double v0[2] = {1, 2}, g[2] = {0.5, -1};
  for (int i = 0; i < 2; ++i) want[i] = v0[i] - lr * g[i] - lr * (m * g[i] + g[i]);
  ExpectNear(StepWith(MomentumOptimizer({.learning_rate = lr, .momentum = m}), 2), want);

  // Nesterov: var -= lr * (g + m * accum).
  for (int i = 0; i < 2; ++i) {
    const double a1 = g[i], a2 = m * a1 + g[i];
    want[i] = v0[i] - lr * (g[i] + m * a1) - lr * (g[i] + m * a2);
  }
  ExpectNear(StepWith(MomentumOptimizer({.learning_rate = lr, .momentum = m, .use_nesterov = true}), 2), want);
}

TEST(OptimizersTest, RMSPropStepsWithEitherStartingMeanSquare) {
  const double v0[2] = {1, 2}, g[2] = {0.5, -1};
  for (double ms0 : {1.0, 0.0}) {
    RMSPropOptions o{.learning_rate = 0.01, .decay = 0.9, .momentum = 0.5, .epsilon = 1e-7, .initial_mean_square = ms0};
    std::vector<double> want(2);
    for (int i = 0; i < 2; ++i) {
      double var = v0[i], ms = ms0, mom = 0;
      for (int step = 0; step < 3; ++step) {
        ms = o.decay * ms + (1 - o.decay) * g[i] * g[i];
        mom = o.momentum * mom + o.learning_rate * g[i] / std::sqrt(ms + o.epsilon);
        var -= mom;
      }
      want[i] = var;
    }
    ExpectNear(StepWith(RMSPropOptimizer(o), 3), want);
  }
}

TEST(OptimizersTest, AdamStepsCorrectTheBias) {
  AdamOptions o{.learning_rate = 0.01, .beta1 = 0.9, .beta2 = 0.999, .epsilon = 1e-8};
  const double v0[2] = {1, 2}, g[2] = {0.5, -1};
  std::vector<double> want(2);
  for (int i = 0; i < 2; ++i) {
    double var = v0[i], m = 0, v = 0;
    for (int t = 1; t <= 3; ++t) {
      m = o.beta1 * m + (1 - o.beta1) * g[i];
      v = o.beta2 * v + (1 - o.beta2) * g[i] * g[i];
      const double lr_t = o.learning_rate * std::sqrt(1 - std::pow(o.beta2, t)) / (1 - std::pow(o.beta1, t));
      var -= lr_t * m / (std::sqrt(v) + o.epsilon);
    }
    want[i] = var;
  }
  ExpectNear(StepWith(AdamOptimizer(o), 3), want);
}

// y = 3x - 2 on 32 points in [-1, 1]; w and b start at 0.
std::pair<float, float> FitLine(const Optimizer& opt, int steps, int64_t* global_step = nullptr) {
  Scope root = Scope::NewRootScope();
  std::vector<float> xs, ys;
  for (int i = 0; i < 32; ++i) {
    xs.push_back(-1 + 2.0f * i / 31);
    ys.push_back(3 * xs.back() - 2);
  }
  auto x = ops::Const(root.WithOpName("x"), Tensor::FromVector<float>(xs, TensorShape({32, 1})));
  auto y = ops::Const(root.WithOpName("y"), Tensor::FromVector<float>(ys, TensorShape({32, 1})));
  auto w = ops::Variable(root.WithOpName("w"), TensorShape({1, 1}), DataType::kFloat);
  auto b = ops::Variable(root.WithOpName("b"), TensorShape({1}), DataType::kFloat);
  auto init_w = ops::Assign(root.WithOpName("init_w"), w, Tensor::FromVector<float>({0}, TensorShape({1, 1})));
  auto init_b = ops::Assign(root.WithOpName("init_b"), b, Tensor::FromVector<float>({0}));
  auto pred = ops::BiasAdd(root, ops::MatMul(root, x, w), b);
  auto loss = ops::Mean(root.WithOpName("loss"), ops::Square(root, ops::Sub(root, pred, y)), {0, 1});
  GlobalStep step = CreateGlobalStep(root);
  StatusOr<Training> t = opt.Minimize(root, loss, {w, b}, step.var);
  EXPECT_TRUE(t.ok()) << t.status();
  if (!t.ok()) return {};
  auto s = testing::MakeSession(root);
  EXPECT_TRUE(s->Run({}, {}, {init_w.node->name(), init_b.node->name(), step.init.name(), t->init.name()}, nullptr).ok());
  for (int i = 0; i < steps; ++i) EXPECT_TRUE(s->Run({}, {}, {t->train.name()}, nullptr).ok());
  if (global_step != nullptr) *global_step = testing::Fetch(*s, "global_step").data<int64_t>()[0];
  return {testing::Fetch(*s, "w").data<float>()[0], testing::Fetch(*s, "b").data<float>()[0]};
}

TEST(OptimizersTest, LinearRegressionConvergesWithEach) {
  std::vector<std::pair<std::string, std::unique_ptr<Optimizer>>> opts;
  opts.emplace_back("sgd", std::make_unique<GradientDescentOptimizer>(0.5));
  opts.emplace_back("momentum", std::make_unique<MomentumOptimizer>(MomentumOptions{.learning_rate = 0.1}));
  opts.emplace_back("rmsprop", std::make_unique<RMSPropOptimizer>(RMSPropOptions{.learning_rate = 0.02}));
  opts.emplace_back("adam", std::make_unique<AdamOptimizer>(AdamOptions{.learning_rate = 0.05}));
  for (const auto& [name, opt] : opts) {
    int64_t steps = 0;
    auto [w, b] = FitLine(*opt, 400, &steps);
    EXPECT_NEAR(w, 3, 2e-2) << name;
    EXPECT_NEAR(b, -2, 2e-2) << name;
    EXPECT_EQ(steps, 400) << name;
  }
}

TEST(OptimizersTest, SlotsAreNamedAsTensorFlowNamesThem) {
  Scope root = Scope::NewRootScope();
  auto w = ops::Variable(root.WithOpName("w"), TensorShape({2}), DataType::kFloat);
  auto g = ops::Const(root, Tensor::FromVector<float>({1, 1}));
  ASSERT_TRUE(AdamOptimizer({}).ApplyGradients(root, {{g, w}}).ok());
  ASSERT_TRUE(RMSPropOptimizer({}).ApplyGradients(root, {{g, w}}).ok());
  for (const char* name : {"w/Adam", "w/Adam_1", "beta1_power", "beta2_power", "w/RMSProp", "w/RMSProp_1", "Adam",
                           "RMSProp", "Adam/update_w/ApplyAdam"}) {
    EXPECT_NE(root.graph()->FindNode(name), nullptr) << name;
  }
  EXPECT_THAT(root.graph()->FindNode("w/Adam")->colocate_with(), ::testing::Contains("w"));
}

TEST(OptimizersTest, OnlyFloatVariablesOfKnownShape) {
  Scope root = Scope::NewRootScope();
  auto c = ops::Const(root.WithOpName("c"), Tensor::FromVector<float>({1}));
  auto i = ops::Variable(root.WithOpName("i"), TensorShape({1}), DataType::kInt32);
  auto v = ops::Variable(root.WithOpName("v"), TensorShape({-1}), DataType::kFloat);
  GradientDescentOptimizer sgd(0.1);
  EXPECT_THAT(sgd.ApplyGradients(root, {{c, c}}).status().message(), HasSubstr("'c' is not a variable"));
  EXPECT_THAT(sgd.ApplyGradients(root, {{c, i}}).status().message(), HasSubstr("is int32"));
  EXPECT_THAT(sgd.ApplyGradients(root, {{c, v}}).status().message(), HasSubstr("fully defined shape"));
  EXPECT_EQ(sgd.ApplyGradients(root, {}).status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace tessera
