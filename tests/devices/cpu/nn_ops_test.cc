// LogSoftmax, sparse softmax cross-entropy, ArgMax, the random ops and Glorot
// initialisation: values, TensorFlow's edge cases and errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "graph/builder/initializers.h"
#include "graph/builder/ops.h"
#include "runtime/session.h"
#include "tests/test_util.h"

namespace tessera {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::Values;

TEST(NnOpsTest, LogSoftmaxIsLogOfSoftmaxEvenForLargeLogits) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Const(root, Tensor::FromVector<double>({1, 2, 3, 1000, 1001, 1002}, TensorShape({2, 3})));
  auto y = ops::LogSoftmax(root.WithOpName("y"), x);
  std::vector<double> got = Values<double>(testing::Eval(root, y));
  const double lse = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
  const double want[3] = {1 - lse, 2 - lse, 3 - lse};
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(got[i], want[i % 3], 1e-12) << i;
}

TEST(NnOpsTest, SparseCrossEntropyLossAndBackprop) {
  Scope root = Scope::NewRootScope();
  auto logits = ops::Const(root, Tensor::FromVector<float>({0, 0, 0, 1, 2, 3}, TensorShape({2, 3})));
  auto labels = ops::Const(root, Tensor::FromVector<int64_t>({1, 2}));
  auto out = ops::SparseSoftmaxCrossEntropyWithLogits(root.WithOpName("xent"), logits, labels);
  auto s = testing::MakeSession(root);
  std::vector<Tensor> got;
  ASSERT_TRUE(s->Run({}, {"xent:0", "xent:1"}, {}, &got).ok());
  const double lse = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
  EXPECT_NEAR(got[0].data<float>()[0], std::log(3.0), 1e-6);
  EXPECT_NEAR(got[0].data<float>()[1], lse - 3, 1e-6);
  std::vector<float> bp = Values<float>(got[1]);
  EXPECT_NEAR(bp[0], 1.0 / 3, 1e-6);
  EXPECT_NEAR(bp[1], 1.0 / 3 - 1, 1e-6);
  EXPECT_NEAR(bp[5], std::exp(3 - lse) - 1, 1e-6);
}

TEST(NnOpsTest, LabelOutOfRangeIsInvalidArgumentNamingIt) {
  Scope root = Scope::NewRootScope();
  auto logits = ops::Const(root, Tensor::FromVector<float>({0, 0, 0, 1, 2, 3}, TensorShape({2, 3})));
  auto labels = ops::Const(root, Tensor::FromVector<int32_t>({1, 3}));
  ops::SparseSoftmaxCrossEntropyWithLogits(root.WithOpName("xent"), logits, labels);
  auto s = testing::MakeSession(root);
  std::vector<Tensor> got;
  Status st = s->Run({}, {"xent:0"}, {}, &got);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("Received a label value of 3 which is outside the valid range of [0, 3)"));
  EXPECT_THAT(st.message(), HasSubstr("xent"));
}

TEST(NnOpsTest, ArgMaxTakesTheFirstOfTies) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Const(root, Tensor::FromVector<float>({1, 5, 5, 7, 0, 7}, TensorShape({2, 3})));
  EXPECT_THAT(Values<int64_t>(testing::Eval(root, ops::ArgMax(root, x, 1))), ElementsAre(1, 0));
  EXPECT_THAT(Values<int64_t>(testing::Eval(root, ops::ArgMax(root, x, -2))), ElementsAre(1, 0, 1));
  EXPECT_THAT(Values<int32_t>(testing::Eval(root, ops::ArgMax(root, x, 0, DataType::kInt32))), ElementsAre(1, 0, 1));
  EXPECT_EQ(ops::ArgMax(root, x, 1).node->output_shape(0).DebugString(), "[2]");
}

TEST(NnOpsTest, ArgMaxOverABadAxisIsAnError) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DataType::kFloat);
  ops::ArgMax(root.WithOpName("am"), x, 2);
  auto s = testing::MakeSession(root);
  std::vector<Tensor> out;
  Status st = s->Run({{"x", Tensor::FromVector<float>({1, 2})}}, {"am"}, {}, &out);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("Expected dimension in the range [-1, 1), but got 2"));
}

// Draws from `op` twice in each of two sessions.
std::vector<std::vector<float>> Draws(const char* op, int64_t seed) {
  std::vector<std::vector<float>> draws;
  for (int session = 0; session < 2; ++session) {
    Scope root = Scope::NewRootScope();
    std::vector<int32_t> shape = {1000};
    Output r;
    const ops::RandomAttrs attrs{.seed = seed, .seed2 = 0};
    if (std::string(op) == "uniform") r = ops::RandomUniform(root.WithOpName("r"), Tensor::FromVector(shape), DataType::kFloat, attrs);
    if (std::string(op) == "normal") r = ops::RandomNormal(root.WithOpName("r"), Tensor::FromVector(shape), DataType::kFloat, attrs);
    if (std::string(op) == "truncated") r = ops::TruncatedNormal(root.WithOpName("r"), Tensor::FromVector(shape), DataType::kFloat, attrs);
    auto s = testing::MakeSession(root);
    for (int i = 0; i < 2; ++i) draws.push_back(Values<float>(testing::Fetch(*s, "r")));
  }
  return draws;
}

TEST(NnOpsTest, SeededRandomOpsRepeatAcrossSessionsAndVaryAcrossSteps) {
  for (const char* op : {"uniform", "normal", "truncated"}) {
    SCOPED_TRACE(op);
    auto d = Draws(op, 7);
    EXPECT_EQ(d[0], d[2]) << "the same seed gives the same first tensor in another session";
    EXPECT_EQ(d[1], d[3]);
    EXPECT_NE(d[0], d[1]) << "each step draws anew";
    auto unseeded = Draws(op, 0);
    EXPECT_NE(unseeded[0], unseeded[2]);
    double sum = 0, sq = 0, lo = 1e9, hi = -1e9;
    for (float v : d[0]) {
      sum += v;
      sq += v * v;
      lo = std::min<double>(lo, v);
      hi = std::max<double>(hi, v);
    }
    const double mean = sum / 1000, var = sq / 1000 - mean * mean;
    if (std::string(op) == "uniform") {
      EXPECT_GE(lo, 0);
      EXPECT_LT(hi, 1);
      EXPECT_NEAR(mean, 0.5, 0.05);
    } else {
      EXPECT_NEAR(mean, 0, 0.1);
      // A normal truncated at two standard deviations has variance 0.774.
      EXPECT_NEAR(var, std::string(op) == "normal" ? 1.0 : 0.774, 0.12);
      if (std::string(op) == "truncated") {
        EXPECT_GE(lo, -2);
        EXPECT_LE(hi, 2);
      }
    }
  }
}

TEST(NnOpsTest, GlorotUniformStaysWithinItsLimit) {
  Scope root = Scope::NewRootScope();
  auto w = GlorotUniform(root.WithOpName("w"), TensorShape({3, 3, 32, 64}), DataType::kFloat, 3);
  std::vector<float> v = Values<float>(testing::Eval(root, w));
  ASSERT_EQ(v.size(), 3u * 3 * 32 * 64);
  const double limit = std::sqrt(6.0 / (9 * 32 + 9 * 64));
  double lo = 1, hi = -1;
  for (float x : v) {
    lo = std::min<double>(lo, x);
    hi = std::max<double>(hi, x);
  }
  EXPECT_GE(lo, -limit);
  EXPECT_LE(hi, limit);
  EXPECT_LT(lo, -0.9 * limit);
  EXPECT_GT(hi, 0.9 * limit);

  Scope bad = Scope::NewRootScope();
  GlorotUniform(bad, TensorShape({-1, 3}), DataType::kFloat);
  EXPECT_THAT(bad.status().message(), HasSubstr("fully defined shape"));
}

}  // namespace
}  // namespace tessera
