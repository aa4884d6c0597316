// Symbolic gradients against central finite differences in float64, for every op with a
// gradient function, with broadcasting, several paths, and the error cases.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <random>

#include "graph/builder/gradients.h"
#include "graph/builder/op_builder.h"
#include "graph/builder/ops.h"
#include "runtime/session.h"
#include "tests/test_util.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
constexpr DataType kD = DataType::kDouble;

using Builder = std::function<Output(const Scope&, const std::vector<Output>&)>;

Tensor Random(const TensorShape& shape, std::mt19937& rng, double lo, double hi) {
  Tensor t(kD, shape);
  std::uniform_real_distribution<double> u(lo, hi);
  for (double& v : t.flat<double>()) v = u(rng);
  return t;
}

// Checks d(sum(w * f(xs)))/d xs, with w random, against central differences at xs drawn
// from [lo, hi]. Returns the largest error relative to max(1, |numeric|).
double MaxGradientError(const std::vector<TensorShape>& shapes, const Builder& f, double lo = -2, double hi = 2) {
  std::mt19937 rng(42);
  Scope root = Scope::NewRootScope();
  std::vector<Output> xs;
  std::vector<Tensor> values;
  for (size_t i = 0; i < shapes.size(); ++i) {
    xs.push_back(ops::Placeholder(root.WithOpName(StrCat("x", i)), kD, shapes[i]));
    values.push_back(Random(shapes[i], rng, lo, hi));
  }
  Output y = f(root, xs);
  // The weights need y's shape, known only by running f once.
  std::vector<std::pair<std::string, Tensor>> feeds;
  for (size_t i = 0; i < xs.size(); ++i) feeds.emplace_back(xs[i].name(), values[i]);
  Tensor y0;
  {
    auto s = testing::MakeSession(root);
    y0 = testing::Fetch(*s, y.name(), feeds);
  }
  if (!y0.IsInitialized()) return 1e9;
  Output w = ops::Const(root.WithOpName("w"), Random(y0.shape(), rng, -1, 1));
  Output rank_axes = ops::Const(root.WithOpName("all_axes"), [&] {
    std::vector<int32_t> a(y0.rank());
    for (int i = 0; i < y0.rank(); ++i) a[i] = i;
    return Tensor::FromVector<int32_t>(a);
  }());
  Output loss = ops::Sum(root.WithOpName("loss"), ops::Mul(root, w, y), rank_axes);
  std::vector<Output> grads;
  Status st = AddSymbolicGradients(root, {loss}, xs, &grads);
  EXPECT_TRUE(st.ok()) << st;

  if (!st.ok()) return 1e9;
  auto session = testing::MakeSession(root);
  std::vector<std::string> fetches;
  for (const Output& g : grads) fetches.push_back(g.name());
  std::vector<Tensor> analytic;
  st = session->Run(feeds, fetches, {}, &analytic);
  EXPECT_TRUE(st.ok()) << st;
  if (!st.ok()) return 1e9;
  auto loss_at = [&](size_t i, int64_t k, double delta) {
    std::vector<std::pair<std::string, Tensor>> f2 = feeds;
    f2[i].second = values[i].DeepCopy();
    f2[i].second.data<double>()[k] += delta;
    return testing::Fetch(*session, "loss", f2).data<double>()[0];
  };
  double worst = 0;
  constexpr double kEps = 1e-6;
  for (size_t i = 0; i < xs.size(); ++i) {
    EXPECT_EQ(analytic[i].shape(), values[i].shape()) << "gradient " << i;
    if (analytic[i].shape() != values[i].shape()) return 1e9;
    for (int64_t k = 0; k < values[i].NumElements(); ++k) {
      const double numeric = (loss_at(i, k, kEps) - loss_at(i, k, -kEps)) / (2 * kEps);
      const double err = std::abs(numeric - analytic[i].data<double>()[k]) / std::max(1.0, std::abs(numeric));
      worst = std::max(worst, err);
    }
  }
  return worst;
}

constexpr double kTolerance = 1e-6;

TEST(GradientsTest, BinaryOpsWithBroadcasting) {
  const std::vector<std::pair<TensorShape, TensorShape>> shapes = {
      {{2, 3}, {2, 3}}, {{2, 3}, {3}}, {{2, 1}, {1, 3}}, {{}, {2, 3}}, {{4, 1, 3}, {2, 1}}};
  for (const auto& [a, b] : shapes) {
    SCOPED_TRACE(a.DebugString() + " and " + b.DebugString());
    EXPECT_LT(MaxGradientError({a, b}, [](const Scope& s, const auto& x) { return ops::Add(s, x[0], x[1]); }), kTolerance);
    EXPECT_LT(MaxGradientError({a, b}, [](const Scope& s, const auto& x) { return ops::Sub(s, x[0], x[1]); }), kTolerance);
    EXPECT_LT(MaxGradientError({a, b}, [](const Scope& s, const auto& x) { return ops::Mul(s, x[0], x[1]); }), kTolerance);
    EXPECT_LT(MaxGradientError({a, b}, [](const Scope& s, const auto& x) { return ops::Div(s, x[0], x[1]); }, 0.5, 2),
              kTolerance);
  }
}

TEST(GradientsTest, UnaryOps) {
  const TensorShape shape({3, 4});
  EXPECT_LT(MaxGradientError({shape}, [](const Scope& s, const auto& x) { return ops::Neg(s, x[0]); }), kTolerance);
  EXPECT_LT(MaxGradientError({shape}, [](const Scope& s, const auto& x) { return ops::Square(s, x[0]); }), kTolerance);
  EXPECT_LT(MaxGradientError({shape}, [](const Scope& s, const auto& x) { return ops::Sqrt(s, x[0]); }, 0.5, 3),
            kTolerance);
  EXPECT_LT(MaxGradientError({shape}, [](const Scope& s, const auto& x) { return ops::Exp(s, x[0]); }), kTolerance);
  EXPECT_LT(MaxGradientError({shape}, [](const Scope& s, const auto& x) { return ops::Log(s, x[0]); }, 0.5, 3),
            kTolerance);
  EXPECT_LT(MaxGradientError({shape}, [](const Scope& s, const auto& x) { return ops::Identity(s, x[0]); }), kTolerance);
  // Inputs kept away from the kink at 0, where the derivative jumps.
  EXPECT_LT(MaxGradientError({shape}, [](const Scope& s, const auto& x) { return ops::Relu(s, ops::Add(s, x[0], 0.0)); },
                             0.1, 2),
            kTolerance);
  EXPECT_LT(MaxGradientError({shape}, [](const Scope& s, const auto& x) { return ops::Relu(s, ops::Neg(s, x[0])); },
                             0.1, 2),
            kTolerance);
  EXPECT_LT(MaxGradientError({shape}, [](const Scope& s, const auto& x) { return ops::Softmax(s, x[0]); }), kTolerance);
}

TEST(GradientsTest, LogSoftmaxAndSparseCrossEntropy) {
  EXPECT_LT(MaxGradientError({{3, 4}}, [](const Scope& s, const auto& x) { return ops::LogSoftmax(s, x[0]); }),
            kTolerance);
  EXPECT_LT(MaxGradientError({{3, 4}},
                             [](const Scope& s, const auto& x) {
                               auto labels = ops::Const(s, Tensor::FromVector<int32_t>({2, 0, 3}));
                               return ops::SparseSoftmaxCrossEntropyWithLogits(s, x[0], labels)[0];
                             }),
            kTolerance);
}

TEST(GradientsTest, MatMulWithEveryTranspose) {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      SCOPED_TRACE(std::to_string(ta) + std::to_string(tb));
      TensorShape a = ta ? TensorShape({4, 3}) : TensorShape({3, 4});
      TensorShape b = tb ? TensorShape({2, 4}) : TensorShape({4, 2});
      EXPECT_LT(MaxGradientError({a, b},
                                 [=](const Scope& s, const auto& x) {
                                   return ops::MatMul(s, x[0], x[1], {.transpose_a = ta, .transpose_b = tb});
                                 }),
                kTolerance);
    }
  }
}

TEST(GradientsTest, Reductions) {
  const TensorShape shape({2, 3, 4});
  for (const std::vector<int32_t>& axes : std::vector<std::vector<int32_t>>{{0}, {1}, {-1}, {0, 2}, {0, 1, 2}}) {
    for (bool keep : {false, true}) {
      SCOPED_TRACE(::testing::PrintToString(axes) + (keep ? " keep_dims" : ""));
      EXPECT_LT(MaxGradientError({shape},
                                 [&](const Scope& s, const auto& x) {
                                   return ops::Sum(s, x[0], Tensor::FromVector(axes), {.keep_dims = keep});
                                 }),
                kTolerance);
      EXPECT_LT(MaxGradientError({shape},
                                 [&](const Scope& s, const auto& x) {
                                   return ops::Mean(s, x[0], Tensor::FromVector(axes), {.keep_dims = keep});
                                 }),
                kTolerance);
    }
  }
}

TEST(GradientsTest, ArrayAndNnOps) {
  EXPECT_LT(MaxGradientError({{2, 6}}, [](const Scope& s, const auto& x) { return ops::Reshape(s, x[0], {3, 4}); }),
            kTolerance);
  EXPECT_LT(MaxGradientError({{2, 3}, {2, 3}, {2, 3}},
                             [](const Scope& s, const auto& x) { return ops::AddN(s, {x[0], x[1], x[2]}); }),
            kTolerance);
  EXPECT_LT(MaxGradientError({{2, 5, 3}, {3}}, [](const Scope& s, const auto& x) { return ops::BiasAdd(s, x[0], x[1]); }),
            kTolerance);
  EXPECT_LT(MaxGradientError({{2, 3, 5}, {3}},
                             [](const Scope& s, const auto& x) { return ops::BiasAdd(s, x[0], x[1], "NCHW"); }),
            kTolerance);
  EXPECT_LT(MaxGradientError({{2, 3}},
                             [](const Scope& s, const auto& x) {
                               return ops::Cast(s, ops::Cast(s, x[0], DataType::kDouble), DataType::kDouble);
                             }),
            kTolerance);
}

TEST(GradientsTest, ConvolutionAndPooling) {
  struct Case {
    std::vector<int64_t> strides;
    std::string padding;
  };
  for (const Case& c : {Case{{1, 1, 1, 1}, "SAME"}, Case{{1, 1, 1, 1}, "VALID"}, Case{{1, 2, 2, 1}, "SAME"},
                        Case{{1, 2, 1, 1}, "VALID"}}) {
    SCOPED_TRACE(StrCat(c.padding, " stride ", c.strides[1], "x", c.strides[2]));
    EXPECT_LT(MaxGradientError({{2, 5, 4, 2}, {3, 2, 2, 3}},
                               [&](const Scope& s, const auto& x) {
                                 return ops::Conv2D(s, x[0], x[1], c.strides, c.padding);
                               }),
              kTolerance);
    const std::vector<int64_t> ksize = {1, 2, 3, 1};
    EXPECT_LT(MaxGradientError({{2, 5, 4, 2}},
                               [&](const Scope& s, const auto& x) {
                                 return ops::MaxPool(s, x[0], ksize, c.strides, c.padding);
                               }),
              kTolerance);
    EXPECT_LT(MaxGradientError({{2, 5, 4, 2}},
                               [&](const Scope& s, const auto& x) {
                                 return ops::AvgPool(s, x[0], ksize, c.strides, c.padding);
                               }),
              kTolerance);
  }  // Windows tiling the input exactly, as in the CNN: the gradient is written, not added.
  EXPECT_LT(MaxGradientError({{2, 4, 6, 3}},
                             [](const Scope& s, const auto& x) {
                               return ops::MaxPool(s, x[0], {1, 2, 2, 1}, {1, 2, 2, 1}, "VALID");
                             }),
            kTolerance);
}

// Depthwise convolutions (channel multipliers 1 and 2): the double kernels against central
// differences, and the float ones (oneDNN's) against the double ones.
TEST(GradientsTest, DepthwiseConvolution) {
  const std::vector<std::pair<std::vector<int64_t>, std::string>> cases = {
      {{1, 1, 1, 1}, "SAME"}, {{1, 1, 1, 1}, "VALID"}, {{1, 2, 2, 1}, "SAME"}, {{1, 2, 1, 1}, "VALID"}};
  for (const auto& window : cases) {
    // Named copies: lambdas capture no structured bindings before C++20's clang 16.
    const std::vector<int64_t> strides = window.first;
    const std::string padding = window.second;
    for (int64_t multiplier : {1, 2}) {
      SCOPED_TRACE(StrCat(padding, " stride ", strides[1], "x", strides[2], " multiplier ", multiplier));
      auto depthwise = [&](const Scope& s, const Output& x, const Output& f) {
        return ops::Build(s, "DepthwiseConv2dNative", {x, f}, {{"strides", strides}, {"padding", padding}});
      };
      EXPECT_LT(MaxGradientError({{2, 5, 4, 3}, {3, 2, 3, multiplier}},
                                 [&](const Scope& s, const auto& x) { return depthwise(s, x[0], x[1]); }),
                kTolerance);
      std::mt19937 rng(7);
      const Tensor x = Random({2, 6, 5, 3}, rng, -1, 1), f = Random({3, 2, 3, multiplier}, rng, -1, 1);
      std::vector<std::vector<Tensor>> grads;
      for (DataType type : {kD, DataType::kFloat}) {
        Scope root = Scope::NewRootScope();
        auto cast = [&](const Tensor& t) { return ops::Cast(root, ops::Const(root, t), type); };
        Output y = depthwise(root, cast(x), cast(f));
        std::vector<Output> g;
        ASSERT_TRUE(AddSymbolicGradients(root, {ops::Square(root, y)}, {y.node->input_edge(0)->src,
                                                                          y.node->input_edge(1)->src}, &g).ok());
        const std::vector<std::string> fetches = {ops::Cast(root, g[0], kD).name(), ops::Cast(root, g[1], kD).name()};
        auto session = testing::MakeSession(root);
        grads.emplace_back();
        ASSERT_TRUE(session->Run({}, fetches, {}, &grads.back()).ok());
      }
      for (int i = 0; i < 2; ++i) {
        for (int64_t k = 0; k < grads[0][i].NumElements(); ++k) {
          EXPECT_NEAR(grads[1][i].data<double>()[k], grads[0][i].data<double>()[k], 1e-4) << "gradient " << i;
        }
      }
    }
  }
}

TEST(GradientsTest, ConcatAndSplit) {
  for (int axis : {0, 1, -1}) {
    SCOPED_TRACE(axis);
    EXPECT_LT(MaxGradientError({{2, 3}, {2, 3}},
                               [&](const Scope& s, const auto& x) {
                                 return ops::Concat(s, {x[0], ops::Square(s, x[1])}, axis);
                               }),
              kTolerance);
  }
  EXPECT_LT(MaxGradientError({{2, 1}, {2, 4}}, [](const Scope& s, const auto& x) { return ops::Concat(s, {x[0], x[1]}, 1); }),
            kTolerance);
  // Only some parts used: the others' gradients are zeros.
  EXPECT_LT(MaxGradientError({{4, 3}},
                             [](const Scope& s, const auto& x) {
                               auto parts = ops::Split(s, 0, x[0], 2);
                               return ops::Mul(s, parts[1], parts[1]);
                             }),
            kTolerance);
  EXPECT_LT(MaxGradientError({{2, 5}},
                             [](const Scope& s, const auto& x) {
                               auto parts = ops::SplitV(s, x[0], Tensor::FromVector<int64_t>({2, 3}), 1, 2);
                               return ops::Mul(s, parts[0], ops::Sum(s, parts[1], {1}, {.keep_dims = true}));
                             }),
            kTolerance);
}

TEST(GradientsTest, MaximaMinimaAndBroadcastTo) {
  for (const auto& [a, b] : std::vector<std::pair<TensorShape, TensorShape>>{{{2, 3}, {2, 3}}, {{2, 3}, {3}}}) {
    SCOPED_TRACE(a.DebugString() + " and " + b.DebugString());
    EXPECT_LT(MaxGradientError({a, b}, [](const Scope& s, const auto& x) { return ops::Maximum(s, x[0], x[1]); }),
              kTolerance);
    EXPECT_LT(MaxGradientError({a, b}, [](const Scope& s, const auto& x) { return ops::Minimum(s, x[0], x[1]); }),
              kTolerance);
  }
  for (bool keep : {false, true}) {
    EXPECT_LT(MaxGradientError({{3, 4}},
                               [&](const Scope& s, const auto& x) {
                                 return ops::Max(s, x[0], Tensor::FromVector<int32_t>({1}), {.keep_dims = keep});
                               }),
              kTolerance);
  }
  EXPECT_LT(MaxGradientError({{3, 1}},
                             [](const Scope& s, const auto& x) {
                               return ops::BroadcastTo(s, x[0], Tensor::FromVector<int32_t>({2, 3, 4}));
                             }),
            kTolerance);
}

// The condition is a constant: each element's gradient goes to the operand it chose, and
// SelectV2's broadcast operands get theirs summed.
TEST(GradientsTest, SelectAndSelectV2) {
  const Tensor pick = Tensor::FromVector<bool>({true, false, false, true, true, false}, TensorShape({2, 3}));
  EXPECT_LT(MaxGradientError({{2, 3}, {2, 3}},
                             [&](const Scope& s, const auto& x) {
                               return ops::Build(s, "Select", {ops::Const(s, pick), x[0], x[1]});
                             }),
            kTolerance);
  for (const auto& [a, b] : std::vector<std::pair<TensorShape, TensorShape>>{{{2, 3}, {3}}, {{}, {2, 3}}}) {
    SCOPED_TRACE(a.DebugString() + " and " + b.DebugString());
    EXPECT_LT(MaxGradientError({a, b},
                               [&](const Scope& s, const auto& x) {
                                 return ops::Build(s, "SelectV2", {ops::Const(s, pick), x[0], x[1]});
                               }),
              kTolerance);
  }
  EXPECT_LT(MaxGradientError({{2, 3}, {2, 3}},
                             [&](const Scope& s, const auto& x) {
                               return ops::Build(s, "SelectV2", {ops::Const(s, Tensor::Scalar(false)), x[0], x[1]});
                             }),
            kTolerance);
}

TEST(GradientsTest, SqueezeAndExpandDims) {
  EXPECT_LT(MaxGradientError({{3, 1, 4}},
                             [](const Scope& s, const auto& x) {
                               return ops::Build(s, "Squeeze", {x[0]}, {{"squeeze_dims", std::vector<int64_t>{1}}});
                             }),
            kTolerance);
  EXPECT_LT(MaxGradientError({{3, 4}},
                             [](const Scope& s, const auto& x) {
                               return ops::Build(s, "ExpandDims", {x[0], Tensor::Scalar(int32_t{1})});
                             }),
            kTolerance);
}

// A mask made by comparing with the input, and the input's shape, carry no gradient back
// (dropout's path): x * (x > 0) differentiates as a relu does, and x * size(x) as a scale.
TEST(GradientsTest, ComparisonsAndShapesEndAPath) {
  EXPECT_LT(MaxGradientError({{3, 4}},
                             [](const Scope& s, const auto& x) {
                               return ops::Mul(s, x[0], ops::Cast(s, ops::Greater(s, x[0], 0.0), kD));
                             }),
            kTolerance);
  EXPECT_LT(MaxGradientError({{3, 4}},
                             [](const Scope& s, const auto& x) {
                               return ops::Mul(s, x[0], ops::Cast(s, ops::Size(s, x[0]), kD));
                             }),
            kTolerance);
}

TEST(GradientsTest, MaxSharesTheGradientAmongTies) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Const(root, Tensor::FromVector<double>({1, 5, 5, 2}, TensorShape({2, 2})));
  auto m = ops::Max(root, x, Tensor::FromVector<int32_t>({0, 1}));
  std::vector<Output> grads;
  ASSERT_TRUE(AddSymbolicGradients(root, {m}, {x}, &grads).ok());
  auto session = testing::MakeSession(root);
  EXPECT_EQ(testing::Values<double>(testing::Fetch(*session, grads[0].name())), (std::vector<double>{0, 0.5, 0.5, 0}));
}

TEST(GradientsTest, PathsThatMeetAreSummed) {
  // y = x*x + x*w + relu-free composition through two consumers of x.
  EXPECT_LT(MaxGradientError({{3}, {3}},
                             [](const Scope& s, const auto& x) {
                               auto sq = ops::Mul(s, x[0], x[0]);
                               return ops::Add(s, ops::Add(s, sq, ops::Mul(s, x[0], x[1])), ops::Exp(s, sq));
                             },
                             -1, 1),
            kTolerance);
}

TEST(GradientsTest, TwoLayerNetwork) {
  EXPECT_LT(MaxGradientError({{4, 5}, {5, 3}, {3}, {3, 2}},
                             [](const Scope& s, const auto& x) {
                               auto h = ops::Relu(s, ops::BiasAdd(s, ops::MatMul(s, x[0], x[1]), x[2]));
                               return ops::Softmax(s, ops::MatMul(s, h, x[3]));
                             }),
            1e-5);
}

TEST(GradientsTest, InputsTheOutputsDoNotDependOnGetZeros) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Const(root.WithOpName("x"), Tensor::FromVector<double>({1, 2}));
  auto unused = ops::Const(root.WithOpName("unused"), Tensor::FromVector<double>({5, 6, 7}));
  auto y = ops::Sum(root.WithOpName("y"), ops::Square(root, x), {0});
  std::vector<Output> grads;
  ASSERT_TRUE(AddSymbolicGradients(root, {y}, {x, unused}, &grads).ok());
  auto s = testing::MakeSession(root);
  EXPECT_EQ(testing::Values<double>(testing::Fetch(*s, grads[0].name())), (std::vector<double>{2, 4}));
  EXPECT_EQ(testing::Values<double>(testing::Fetch(*s, grads[1].name())), (std::vector<double>{0, 0, 0}));
}

TEST(GradientsTest, GradOutputsSeedTheBackwardPass) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Const(root.WithOpName("x"), Tensor::FromVector<double>({1, 2}));
  auto y = ops::Mul(root.WithOpName("y"), x, 3.0);
  std::vector<Output> grads;
  auto seed = ops::Const(root.WithOpName("seed"), Tensor::FromVector<double>({10, 100}));
  ASSERT_TRUE(AddSymbolicGradients(root, {y}, {x}, &grads, {.grad_outputs = {seed}}).ok());
  auto s = testing::MakeSession(root);
  EXPECT_EQ(testing::Values<double>(testing::Fetch(*s, grads[0].name())), (std::vector<double>{30, 300}));
}

// The math ops TF1 scripts reach for beyond the basics (tf.pow in the linear-regression
// tutorial, mean_squared_error's SquaredDifference, batch norm's Rsqrt, ...).
TEST(GradientsTest, PowSquaredDifferenceAndOtherMathOps) {
  auto binary = [](const char* op) {
    return [op](const Scope& s, const std::vector<Output>& x) { return ops::Build(s, op, {x[0], x[1]}); };
  };
  auto unary = [](const char* op) {
    return [op](const Scope& s, const std::vector<Output>& x) { return ops::Build(s, op, {x[0]}); };
  };
  for (const auto& [a, b] : std::vector<std::pair<TensorShape, TensorShape>>{{{2, 3}, {2, 3}}, {{2, 3}, {3}}}) {
    SCOPED_TRACE(a.DebugString() + " and " + b.DebugString());
    EXPECT_LT(MaxGradientError({a, b}, binary("Pow"), 0.5, 2), kTolerance);
    EXPECT_LT(MaxGradientError({a, b}, binary("SquaredDifference")), kTolerance);
    // Away from the jumps of x mod y, where x/y is a whole number.
    EXPECT_LT(MaxGradientError({a, b}, [](const Scope& s, const std::vector<Output>& x) {
                return ops::Build(s, "FloorMod", {ops::Add(s, x[0], 10.3), ops::Add(s, ops::Mul(s, x[1], 0.01), 3.0)});
              }),
              kTolerance);
  }
  // x^y at negative x with whole y: d/dy taken as 0 (log of a negative), d/dx still right.
  EXPECT_LT(MaxGradientError({{3}}, [](const Scope& s, const std::vector<Output>& x) {
              return ops::Build(s, "Pow", {x[0], Tensor::FromVector<double>({2, 3, 2})});
            }, -2, -0.5),
            kTolerance);
  const TensorShape shape({3, 4});
  EXPECT_LT(MaxGradientError({shape}, unary("Rsqrt"), 0.5, 3), kTolerance);
  EXPECT_LT(MaxGradientError({shape}, unary("Sin")), kTolerance);
  EXPECT_LT(MaxGradientError({shape}, unary("Cos")), kTolerance);
  EXPECT_LT(MaxGradientError({shape}, unary("Erf")), kTolerance);
  // Relu6's two kinks kept clear: inputs in (0.1, 5.9) scaled across both sides of each.
  EXPECT_LT(MaxGradientError({shape}, [](const Scope& s, const std::vector<Output>& x) {
              return ops::Build(s, "Relu6", {ops::Mul(s, x[0], Tensor::FromVector<double>({-1, 1, 2, 3}))});
            }, 0.1, 2.9),
            kTolerance);
  EXPECT_LT(MaxGradientError({{2, 3, 4}}, [](const Scope& s, const std::vector<Output>& x) {
              return ops::Build(s, "Min", {x[0], Tensor::FromVector<int32_t>({0, 2})});
            }),
            kTolerance);
  EXPECT_LT(MaxGradientError({{2, 3, 4}}, [](const Scope& s, const std::vector<Output>& x) {
              return ops::Build(s, "Prod", {x[0], Tensor::FromVector<int32_t>({1})}, {{"keep_dims", true}});
            }),
            kTolerance);
}

// Prod's gradient where the reduced group holds zeros: the product of the others, found
// without dividing by zero.
TEST(GradientsTest, ProdThroughZeros) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Const(root.WithOpName("x"), Tensor::FromVector<double>({0, 2, 3, 0, 0, 5, 4, 2, 1}, TensorShape({3, 3})));
  auto y = ops::Build(root.WithOpName("y"), "Prod", {x, Tensor::FromVector<int32_t>({1})});
  std::vector<Output> grads;
  ASSERT_TRUE(AddSymbolicGradients(root, {y}, {x}, &grads).ok());
  auto session = testing::MakeSession(root);
  Tensor g = testing::Fetch(*session, grads[0].name(), {});
  // Row 0 has one zero (its gradient is 2*3, the rest 0); row 1 two (all 0); row 2 none.
  EXPECT_EQ(std::vector<double>(g.flat<double>().begin(), g.flat<double>().end()),
            (std::vector<double>{6, 0, 0, 0, 0, 0, 2, 4, 8}));
}

// Transposes, stacks, tiles, gathers, slices and pads: each element's gradient back to the
// place it came from (summed where it was taken twice).
TEST(GradientsTest, OpsThatMoveElements) {
  using X = std::vector<Output>;
  EXPECT_LT(MaxGradientError({{2, 3, 4}}, [](const Scope& s, const X& x) {
              return ops::Build(s, "Transpose", {x[0], {2, 0, 1}});
            }),
            kTolerance);
  // A perm known only when the step runs.
  EXPECT_LT(MaxGradientError({{2, 3, 4}}, [](const Scope& s, const X& x) {
              Output perm = ops::Cast(s, ops::Cast(s, Tensor::FromVector<int32_t>({1, 2, 0}), kD), DataType::kInt64);
              return ops::Build(s, "Transpose", {x[0], perm});
            }),
            kTolerance);
  EXPECT_LT(MaxGradientError({{2, 3}, {2, 3}, {2, 3}}, [](const Scope& s, const X& x) {
              return ops::Build(s, "Pack", {x[0], x[1], x[2]}, {{"N", int64_t{3}}, {"axis", int64_t{1}}});
            }),
            kTolerance);
  EXPECT_LT(MaxGradientError({{2, 3, 4}}, [](const Scope& s, const X& x) {
              std::vector<Output> parts =
                  ops::AllOutputs(ops::Build(s, "Unpack", {x[0]}, {{"num", int64_t{3}}, {"axis", int64_t{1}}}));
              return ops::Add(s, parts[0], ops::Mul(s, parts[2], 3.0));  // part 1 reached by no path
            }),
            kTolerance);
  EXPECT_LT(MaxGradientError({{2, 3}}, [](const Scope& s, const X& x) { return ops::Build(s, "Tile", {x[0], {3, 2}}); }),
            kTolerance);
  for (const char* op : {"Gather", "GatherV2"}) {
    SCOPED_TRACE(op);
    EXPECT_LT(MaxGradientError({{4, 3}}, [op](const Scope& s, const X& x) {
                std::vector<Input> in = {x[0], Tensor::FromVector<int64_t>({3, 0, 3, 1, 3, 2}, TensorShape({2, 3}))};
                if (std::string(op) == "GatherV2") in.push_back(0);
                return ops::Build(s, op, in);
              }),
              kTolerance);
  }
  EXPECT_LT(MaxGradientError({{4, 5}}, [](const Scope& s, const X& x) {
              // x[1:, ::2]
              return ops::Build(s, "StridedSlice", {x[0], {1, 0}, {0, 0}, {1, 2}},
                                {{"begin_mask", int64_t{2}}, {"end_mask", int64_t{3}}});
            }),
            kTolerance);
  EXPECT_LT(MaxGradientError({{4, 5}}, [](const Scope& s, const X& x) {
              return ops::Build(s, "StridedSlice", {x[0], {2}, {3}, {1}}, {{"shrink_axis_mask", int64_t{1}}});  // x[2]
            }),
            kTolerance);
  EXPECT_LT(MaxGradientError({{4, 5}}, [](const Scope& s, const X& x) {
              return ops::Build(s, "Slice", {x[0], {1, 2}, {2, -1}});
            }),
            kTolerance);
  EXPECT_LT(MaxGradientError({{2, 3}}, [](const Scope& s, const X& x) {
              return ops::Build(s, "Pad", {x[0], Tensor::FromVector<int32_t>({1, 0, 2, 1}, TensorShape({2, 2}))});
            }),
            kTolerance);
}

TEST(GradientsTest, Einsum) {
  for (const auto& [eq, a, b] : std::vector<std::tuple<std::string, TensorShape, TensorShape>>{
           {"ij,jk->ik", TensorShape({2, 3}), TensorShape({3, 4})},
           {"bij,bkj->bki", TensorShape({2, 3, 4}), TensorShape({2, 2, 4})},
           {"ij,ij->i", TensorShape({2, 3}), TensorShape({2, 3})},
           {"i,j->ji", TensorShape({2}), TensorShape({3})},
           {"abc,cd->abd", TensorShape({2, 2, 3}), TensorShape({3, 2})}}) {
    const std::string equation = eq;  // a copy the lambda can capture (clang 14)
    SCOPED_TRACE(equation);
    EXPECT_LT(MaxGradientError({a, b},
                               [&](const Scope& s, const auto& x) {
                                 return ops::Build(s, "Einsum", {x[0], x[1]}, {{"equation", equation}});
                               }),
              kTolerance);
  }
}

TEST(GradientsTest, AnOpWithoutGradientIsNotFoundNamingIt) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Const(root.WithOpName("x"), Tensor::FromVector<double>({1, 2}));
  // ReluGrad has no gradient of its own (no second derivatives yet).
  auto m = ops::ReluGrad(root.WithOpName("second"), x, x);
  std::vector<Output> grads;
  Status s = AddSymbolicGradients(root, {m}, {x}, &grads);
  EXPECT_EQ(s.code(), Code::kNotFound);
  EXPECT_THAT(s.message(), HasSubstr("No gradient defined for op: ReluGrad"));
  EXPECT_THAT(s.message(), HasSubstr("'second'"));
}

TEST(GradientsTest, GradientOpsAreColocatedWithTheirForwardOps) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), kD, TensorShape({2, 3}));
  auto w = ops::Placeholder(root.WithOpName("w"), kD, TensorShape({3, 1}));
  auto y = ops::MatMul(root.WithOpName("y").WithDevice("/cpu:1"), x, w);
  std::vector<Output> grads;
  ASSERT_TRUE(AddSymbolicGradients(root, {y}, {w}, &grads).ok());
  EXPECT_THAT(grads[0].node->name(), HasSubstr("gradients/y_grad"));
  EXPECT_THAT(grads[0].node->colocate_with(), ::testing::Contains("y"));

  Scope free = Scope::NewRootScope();
  auto x2 = ops::Placeholder(free.WithOpName("x"), kD, TensorShape({2, 3}));
  auto w2 = ops::Placeholder(free.WithOpName("w"), kD, TensorShape({3, 1}));
  auto y2 = ops::MatMul(free.WithOpName("y").WithDevice("/cpu:1"), x2, w2);
  ASSERT_TRUE(AddSymbolicGradients(free, {y2}, {w2}, &grads, {.grad_outputs = {}, .colocate_gradients_with_ops = false}).ok());
  EXPECT_TRUE(grads[0].node->colocate_with().empty());
}

// The rank or the axes known only when the step runs (a cond's output, axes computed):
// the reduced shape is worked out then.
TEST(GradientsTest, ReductionsOfUnknownRankOrRuntimeAxes) {
  const TensorShape shape({2, 3, 4});
  for (const std::vector<int32_t>& axes : std::vector<std::vector<int32_t>>{{0}, {-1}, {0, 2}, {1, 1}}) {
    for (bool keep : {false, true}) {
      SCOPED_TRACE(::testing::PrintToString(axes) + (keep ? " keep_dims" : ""));
      auto unknown_rank = [](const Scope& s, const Output& x) {
        return ops::Build(s, "PlaceholderWithDefault", {x}, {{"dtype", kD}, {"shape", TensorShape::UnknownRank()}});
      };
      EXPECT_LT(MaxGradientError({shape},
                                 [&](const Scope& s, const auto& x) {
                                   return ops::Mean(s, unknown_rank(s, x[0]), Tensor::FromVector(axes),
                                                    {.keep_dims = keep});
                                 }),
                kTolerance);
      EXPECT_LT(MaxGradientError({shape},
                                 [&](const Scope& s, const auto& x) {
                                   return ops::Sum(s, x[0], ops::Identity(s, Tensor::FromVector(axes)),
                                                   {.keep_dims = keep});
                                 }),
                kTolerance);
    }
  }
}

// A TensorFlow 1.x while loop wired as tf.while_loop wires one: `vars` go round frame
// `frame`, `outside` enter it as constants; cond and body see the loop's values and build
// under a scope whose ops wait on the iteration's first value (so that constants run in
// every iteration). Returns the loop variables' final values.
using LoopFn = std::function<std::vector<Output>(const Scope&, const std::vector<Output>&, const std::vector<Output>&)>;
std::vector<Output> WhileLoop(const Scope& outer, const std::string& frame, const std::vector<Output>& vars,
                              const std::vector<Output>& outside, const LoopFn& cond, const LoopFn& body,
                              int64_t parallel_iterations = 10) {
  const Scope s = outer.WithNoControlDependencies();  // a loop in a loop waits on nothing outside its frame
  const AttrMap loop_var{{"frame_name", frame}, {"parallel_iterations", parallel_iterations}};
  AttrMap invariant = loop_var;
  invariant["is_constant"] = true;
  std::vector<Output> merges, inside, exits, body_vars;
  for (const Output& v : vars) {
    Output enter = ops::Build(s, "Enter", {v}, loop_var);
    merges.push_back(ops::Build(s, "Merge", {enter, enter}));
  }
  for (const Output& o : outside) inside.push_back(ops::Build(s, "Enter", {o}, invariant));
  Output loop_cond = ops::Build(s, "LoopCond", {cond(s.WithControlDependencies({merges[0].op()}), merges, inside)[0]});
  for (const Output& m : merges) {
    std::vector<Output> sw = ops::AllOutputs(ops::Build(s, "Switch", {m, loop_cond}));
    exits.push_back(ops::Build(s, "Exit", {sw[0]}));
    body_vars.push_back(ops::Identity(s, sw[1]));
  }
  std::vector<Output> next = body(s.WithControlDependencies({body_vars[0].op()}), body_vars, inside);
  for (size_t k = 0; k < merges.size(); ++k) {
    Output n = ops::Build(s, "NextIteration", {next[k]});
    EXPECT_TRUE(s.graph()->ConnectBackEdge(merges[k].node, 1, n.node, 0).ok());
  }
  return exits;
}

// tf.cond as TensorFlow 1.x builds it: each branch takes the tensors it uses through a
// Switch on `pred` and returns an Identity waiting on the branch's pivot.
using BranchFn = std::function<Output(const Scope&, const std::vector<Output>&)>;
Output Cond(const Scope& s, const Output& pred, const std::vector<Output>& xs, const BranchFn& then,
            const BranchFn& otherwise) {
  std::vector<Output> pivots = ops::AllOutputs(ops::Build(s, "Switch", {pred, pred}));
  Output outs[2];
  for (int b : {0, 1}) {
    std::vector<Output> taken;
    for (const Output& x : xs) taken.push_back(ops::AllOutputs(ops::Build(s, "Switch", {x, pred}))[b]);
    Scope branch = s.WithControlDependencies({ops::Identity(s, pivots[b]).op()});
    outs[b] = ops::Identity(branch, b == 1 ? then(branch, taken) : otherwise(branch, taken));
  }
  return ops::Build(s, "Merge", {outs[0], outs[1]});
}

Output Count(const Scope& s) { return ops::Const(s, Tensor::Scalar(0)); }

// v <- tanh(v m) * x, four times: loop variables and tensors from outside both get their
// gradients, through the stacks the forward loop fills.
TEST(GradientsTest, WhileLoop) {
  for (int64_t parallel : {1, 10}) {
    SCOPED_TRACE(parallel);
    EXPECT_LT(MaxGradientError({TensorShape({1, 2}), TensorShape({2, 2})},
                               [&](const Scope& s, const auto& in) {
                                 return WhileLoop(
                                     s, "while", {Count(s), in[0]}, {in[0], in[1]},
                                     [](const Scope& c, const auto& v, const auto&) {
                                       return std::vector<Output>{ops::Less(c, v[0], 4)};
                                     },
                                     [](const Scope& b, const auto& v, const auto& out) {
                                       return std::vector<Output>{
                                           ops::Add(b, v[0], 1),
                                           ops::Mul(b, ops::Build(b, "Tanh", {ops::MatMul(b, v[1], out[1])}), out[0])};
                                     },
                                     parallel)[1];
                               }),
              kTolerance);
  }
}

// The inner loop runs as many times as the outer loop's count says: each outer iteration's
// inner count and values are saved, and the gradient's inner loop runs as often, backwards.
TEST(GradientsTest, WhileLoopInAWhileLoop) {
  EXPECT_LT(MaxGradientError({TensorShape({3}), TensorShape({})},
                             [&](const Scope& s, const auto& in) {
                               return WhileLoop(
                                   s, "outer", {Count(s), in[0]}, {in[1]},
                                   [](const Scope& c, const auto& v, const auto&) {
                                     return std::vector<Output>{ops::Less(c, v[0], 3)};
                                   },
                                   [](const Scope& b, const auto& v, const auto& out) {
                                     Output inner = WhileLoop(
                                         b, "inner", {Count(b), v[1]}, {v[0], out[0]},
                                         [](const Scope& c, const auto& w, const auto& o) {
                                           return std::vector<Output>{ops::Less(c, w[0], ops::Add(c, o[0], 1))};
                                         },
                                         [](const Scope& b2, const auto& w, const auto& o) {
                                           return std::vector<Output>{
                                               ops::Add(b2, w[0], 1),
                                               ops::Add(b2, ops::Mul(b2, w[1], 0.5), ops::Mul(b2, ops::Build(b2, "Sin", {w[1]}), o[1]))};
                                         })[1];
                                     return std::vector<Output>{ops::Add(b, v[0], 1), inner};
                                   })[1];
                             }),
            kTolerance);
}

// A cond in the body takes a different branch in different iterations; what each branch's
// gradient reads is saved only where the branch ran.
TEST(GradientsTest, CondInAWhileLoop) {
  EXPECT_LT(MaxGradientError({TensorShape({2}), TensorShape({2})},
                             [&](const Scope& s, const auto& in) {
                               return WhileLoop(
                                   s, "while", {Count(s), in[0]}, {in[1]},
                                   [](const Scope& c, const auto& v, const auto&) {
                                     return std::vector<Output>{ops::Less(c, v[0], 5)};
                                   },
                                   [](const Scope& b, const auto& v, const auto& out) {
                                     Output odd = ops::Equal(b, ops::Build(b, "FloorMod", {v[0], 2}), 1);
                                     Output next = Cond(
                                         b, odd, {v[1], out[0]},
                                         [](const Scope& t, const auto& x) {
                                           return ops::Mul(t, ops::Build(t, "Sin", {x[0]}), x[1]);
                                         },
                                         [](const Scope& f, const auto& x) {
                                           return ops::Sub(f, ops::Mul(f, x[0], x[0]), x[1]);
                                         });
                                     return std::vector<Output>{ops::Add(b, v[0], 1), next};
                                   })[1];
                             }, -1, 1),
            kTolerance);
}

// A loop in a cond branch in a loop: the inner loop's runs and what they save are saved and
// popped only in the outer iterations that took the branch.
TEST(GradientsTest, WhileLoopInACondInAWhileLoop) {
  EXPECT_LT(MaxGradientError({TensorShape({2}), TensorShape({2})},
                             [&](const Scope& s, const auto& in) {
                               return WhileLoop(
                                   s, "outer", {Count(s), in[0]}, {in[1]},
                                   [](const Scope& c, const auto& v, const auto&) {
                                     return std::vector<Output>{ops::Less(c, v[0], 4)};
                                   },
                                   [](const Scope& b, const auto& v, const auto& out) {
                                     Output odd = ops::Equal(b, ops::Build(b, "FloorMod", {v[0], 2}), 1);
                                     Output next = Cond(
                                         b, odd, {v[1], out[0]},
                                         [](const Scope& t, const auto& x) {
                                           return WhileLoop(
                                               t, "inner", {Count(t), x[0]}, {x[1]},
                                               [](const Scope& c, const auto& w, const auto&) {
                                                 return std::vector<Output>{ops::Less(c, w[0], 2)};
                                               },
                                               [](const Scope& b2, const auto& w, const auto& o) {
                                                 return std::vector<Output>{
                                                     ops::Add(b2, w[0], 1),
                                                     ops::Mul(b2, ops::Build(b2, "Sin", {w[1]}), o[0])};
                                               })[1];
                                         },
                                         [](const Scope& f, const auto& x) { return ops::Mul(f, x[0], x[1]); });
                                     return std::vector<Output>{ops::Add(b, v[0], 1), next};
                                   })[1];
                             }, -1, 1),
            kTolerance);
}

TEST(GradientsTest, SecondOrderGradientsOfALoopAreUnimplemented) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), kD, TensorShape({}));
  Output y = WhileLoop(
      root, "while", {Count(root), x}, {}, [](const Scope& c, const auto& v, const auto&) {
        return std::vector<Output>{ops::Less(c, v[0], 2)};
      },
      [](const Scope& b, const auto& v, const auto&) {
        return std::vector<Output>{ops::Add(b, v[0], 1), ops::Mul(b, v[1], v[1])};
      })[1];
  std::vector<Output> g, gg;
  ASSERT_TRUE(AddSymbolicGradients(root, {y}, {x}, &g).ok());
  Status s = AddSymbolicGradients(root, {g[0]}, {x}, &gg);
  EXPECT_EQ(s.code(), Code::kUnimplemented) << s;
  EXPECT_THAT(s.message(), HasSubstr("Second-order gradients of a tf.while_loop"));
}

// A loop variable whose size grows: the Concat's gradient reads the sizes as the step runs.
// And Fill (a zero state of a batch size read from a tensor): its value's gradient is the sum.
TEST(GradientsTest, ConcatOfSizesKnownOnlyWhenTheStepRunsAndFill) {
  EXPECT_LT(MaxGradientError({TensorShape({2})},
                             [](const Scope& s, const auto& x) {
                               auto unknown = [&](const Output& t) {
                                 return ops::Build(s, "PlaceholderWithDefault", {t},
                                                   {{"dtype", kD}, {"shape", TensorShape({-1})}});
                               };
                               return ops::Concat(s, {unknown(x[0]), ops::Mul(s, unknown(x[0]), 2.0)}, 0);
                             }),
            kTolerance);
  EXPECT_LT(MaxGradientError({TensorShape({})},
                             [](const Scope& s, const auto& x) {
                               return ops::Build(s, "Fill", {Tensor::FromVector<int32_t>({2, 3}), x[0]});
                             }),
            kTolerance);
}

TEST(GradientsTest, GradientsFromInsideALoopAreUnimplemented) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), kD, TensorShape({}));
  Output inside;
  WhileLoop(
      root, "while", {x}, {}, [](const Scope& c, const auto& v, const auto&) {
        return std::vector<Output>{ops::Less(c, v[0], 4.0)};
      },
      [&](const Scope& b, const auto& v, const auto&) {
        inside = ops::Mul(b, v[0], 2.0);
        return std::vector<Output>{inside};
      });
  std::vector<Output> grads;
  Status s = AddSymbolicGradients(root, {inside}, {x}, &grads);
  EXPECT_EQ(s.code(), Code::kUnimplemented) << s;
  EXPECT_THAT(s.message(), HasSubstr("inside a tf.while_loop"));
}

}  // namespace
}  // namespace tessera
