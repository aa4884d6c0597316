// Wrong answers with no error: sums that lose count, and the maximum of nothing.
#include <gmock/gmock.h>

#include <cmath>
#include <limits>

#include "graph/builder/ops.h"
#include "tests/test_util.h"

namespace tessera::testing {
namespace {

constexpr int64_t kMany = int64_t{1} << 25;  // past float32's 2^24 consecutive integers

// Ones of `shape`, made inside the graph, reduced by `reduce`.
template <typename Reduce>
Tensor ReduceOnes(DataType dtype, const std::vector<int64_t>& shape, Reduce reduce) {
  Scope root = Scope::NewRootScope();
  Tensor one = dtype == DataType::kFloat ? Tensor::Scalar(1.0f) : Tensor::Scalar(1.0);
  Output ones = ops::Fill(root, Tensor::FromVector<int64_t>(shape), ops::Const(root, one));
  return Eval(root, reduce(root.WithOpName("r"), ones));
}

TEST(NumericsTest, SumAndMeanOfManyFloatOnesAreExactAlongEveryAxisLayout) {
  auto sum_all = [](const Scope& s, Output x) { return ops::Sum(s, x, {0}); };
  Tensor t = ReduceOnes(DataType::kFloat, {kMany}, sum_all);
  EXPECT_EQ(t.data<float>()[0], static_cast<float>(kMany));
  t = ReduceOnes(DataType::kFloat, {kMany}, [](const Scope& s, Output x) { return ops::Mean(s, x, {0}); });
  EXPECT_EQ(t.data<float>()[0], 1.0f);
  // The reduced axis outside a kept one: the strided path.
  t = ReduceOnes(DataType::kFloat, {kMany / 4, 4}, sum_all);
  EXPECT_THAT(Values<float>(t), ::testing::Each(static_cast<float>(kMany / 4)));
  t = ReduceOnes(DataType::kFloat, {kMany / 4, 4},
                 [](const Scope& s, Output x) { return ops::Mean(s, x, {0}, {.keep_dims = true}); });
  EXPECT_EQ(t.shape(), TensorShape({1, 4}));
  EXPECT_THAT(Values<float>(t), ::testing::Each(1.0f));
}

TEST(NumericsTest, BiasAddGradOfManyOnesIsExact) {
  Tensor t = ReduceOnes(DataType::kFloat, {kMany / 2, 2}, [](const Scope& s, Output x) { return ops::BiasAddGrad(s, x); });
  EXPECT_THAT(Values<float>(t), ::testing::Each(static_cast<float>(kMany / 2)));
  t = ReduceOnes(DataType::kFloat, {2, 2, kMany / 4},
                 [](const Scope& s, Output x) { return ops::BiasAddGrad(s, x, "NCHW"); });
  EXPECT_THAT(Values<float>(t), ::testing::Each(static_cast<float>(kMany / 2)));
}

TEST(NumericsTest, DoubleSumsKeepWhatASmallerTermAdds) {
  // Naively 1e16 + 1 == 1e16, so every one would be lost.
  std::vector<double> v = {1e16};
  v.insert(v.end(), 1000, 1.0);
  v.push_back(-1e16);
  Scope root = Scope::NewRootScope();
  Tensor t = Eval(root, ops::Sum(root, ops::Const(root, Tensor::FromVector(v)), {0}));
  EXPECT_EQ(t.data<double>()[0], 1000.0);
  // An infinite term makes an infinite sum, not NaN.
  Scope inf_root = Scope::NewRootScope();
  const double inf = std::numeric_limits<double>::infinity();
  t = Eval(inf_root, ops::Sum(inf_root, ops::Const(inf_root, Tensor::FromVector<double>({inf, 1, 2})), {0}));
  EXPECT_EQ(t.data<double>()[0], inf);
}

TEST(NumericsTest, TheMaximumOfNothingIsMinusInfinityAsInTensorFlow) {
  Scope root = Scope::NewRootScope();
  Output f = ops::Max(root, ops::Const(root, Tensor(DataType::kFloat, TensorShape({0, 3}))), {0});
  Output d = ops::Max(root, ops::Const(root, Tensor(DataType::kDouble, TensorShape({0}))), {0});
  Output i = ops::Max(root, ops::Const(root, Tensor(DataType::kInt32, TensorShape({0}))), {0});
  auto session = MakeSession(root);
  ASSERT_NE(session, nullptr);
  EXPECT_THAT(Values<float>(Fetch(*session, f.name())), ::testing::Each(-std::numeric_limits<float>::infinity()));
  EXPECT_EQ(Fetch(*session, d.name()).data<double>()[0], -std::numeric_limits<double>::infinity());
  EXPECT_EQ(Fetch(*session, i.name()).data<int32_t>()[0], std::numeric_limits<int32_t>::lowest());
}

}  // namespace
}  // namespace tessera::testing
