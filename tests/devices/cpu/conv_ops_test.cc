// Conv2D, MaxPool and AvgPool against direct loops written from TensorFlow's definitions,
// their static shapes, and the errors for mismatched or malformed inputs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

#include "graph/builder/ops.h"
#include "runtime/session.h"
#include "tests/test_util.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
using testing::Values;

Tensor RandomTensor(const TensorShape& shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  Tensor t(DataType::kDouble, shape);
  for (double& v : t.flat<double>()) v = u(rng);
  return t;
}

struct Window {
  int64_t kh, kw, sh, sw;
  bool same;
};

// TensorFlow's rule: SAME gives ceil(n / s) outputs with the padding split low-first.
void OutputSize(int64_t n, int64_t k, int64_t s, bool same, int64_t* out, int64_t* pad_before) {
  *out = same ? (n + s - 1) / s : (n - k + s) / s;
  *pad_before = same ? std::max<int64_t>((*out - 1) * s + k - n, 0) / 2 : 0;
}

std::vector<double> DirectConv(const Tensor& in, const Tensor& f, const Window& w) {
  const int64_t n = in.dim(0), h = in.dim(1), wd = in.dim(2), c = in.dim(3), o = f.dim(3);
  int64_t oh, ow, pt, pl;
  OutputSize(h, w.kh, w.sh, w.same, &oh, &pt);
  OutputSize(wd, w.kw, w.sw, w.same, &ow, &pl);
  std::vector<double> out(n * oh * ow * o, 0.0);
  const double* x = in.data<double>();
  const double* k = f.data<double>();
  for (int64_t b = 0; b < n; ++b)
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t xo = 0; xo < ow; ++xo)
        for (int64_t oc = 0; oc < o; ++oc) {
          double sum = 0;
          for (int64_t ky = 0; ky < w.kh; ++ky)
            for (int64_t kx = 0; kx < w.kw; ++kx) {
              const int64_t iy = y * w.sh + ky - pt, ix = xo * w.sw + kx - pl;
              if (iy < 0 || iy >= h || ix < 0 || ix >= wd) continue;
              for (int64_t ic = 0; ic < c; ++ic) {
                sum += x[((b * h + iy) * wd + ix) * c + ic] * k[((ky * w.kw + kx) * c + ic) * o + oc];
              }
            }
          out[((b * oh + y) * ow + xo) * o + oc] = sum;
        }
  return out;
}

// Max, or the mean over the window's cells inside the input.
std::vector<double> DirectPool(const Tensor& in, const Window& w, bool max) {
  const int64_t n = in.dim(0), h = in.dim(1), wd = in.dim(2), c = in.dim(3);
  int64_t oh, ow, pt, pl;
  OutputSize(h, w.kh, w.sh, w.same, &oh, &pt);
  OutputSize(wd, w.kw, w.sw, w.same, &ow, &pl);
  std::vector<double> out;
  const double* x = in.data<double>();
  for (int64_t b = 0; b < n; ++b)
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t xo = 0; xo < ow; ++xo)
        for (int64_t ic = 0; ic < c; ++ic) {
          double acc = max ? -1e300 : 0;
          int count = 0;
          for (int64_t ky = 0; ky < w.kh; ++ky)
            for (int64_t kx = 0; kx < w.kw; ++kx) {
              const int64_t iy = y * w.sh + ky - pt, ix = xo * w.sw + kx - pl;
              if (iy < 0 || iy >= h || ix < 0 || ix >= wd) continue;
              const double v = x[((b * h + iy) * wd + ix) * c + ic];
              acc = max ? std::max(acc, v) : acc + v;
              ++count;
            }
          out.push_back(max ? acc : acc / count);
        }
  return out;
}

class ConvTest : public ::testing::TestWithParam<Window> {};

TEST_P(ConvTest, Conv2DMatchesTheDirectSumAndItsStaticShape) {
  const Window w = GetParam();
  Tensor in = RandomTensor({2, 7, 6, 3}, 1), f = RandomTensor({w.kh, w.kw, 3, 4}, 2);
  Scope root = Scope::NewRootScope();
  auto y = ops::Conv2D(root.WithOpName("y"), ops::Const(root, in), ops::Const(root, f), {1, w.sh, w.sw, 1},
                       w.same ? "SAME" : "VALID");
  ASSERT_TRUE(root.ok()) << root.status();
  Tensor got = testing::Eval(root, y);
  ASSERT_TRUE(got.IsInitialized());
  EXPECT_EQ(y.node->output_shape(0), got.shape());
  std::vector<double> want = DirectConv(in, f, w);
  std::vector<double> values = Values<double>(got);
  ASSERT_EQ(values.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(values[i], want[i], 1e-12) << i;
}

TEST_P(ConvTest, PoolsMatchTheDirectLoops) {
  const Window w = GetParam();
  Tensor in = RandomTensor({2, 7, 6, 3}, 3);
  for (bool max : {true, false}) {
    SCOPED_TRACE(max ? "MaxPool" : "AvgPool");
    Scope root = Scope::NewRootScope();
    auto pool = max ? ops::MaxPool : ops::AvgPool;
    auto y = pool(root.WithOpName("y"), ops::Const(root, in), {1, w.kh, w.kw, 1}, {1, w.sh, w.sw, 1},
                  w.same ? "SAME" : "VALID");
    Tensor got = testing::Eval(root, y);
    ASSERT_TRUE(got.IsInitialized());
    EXPECT_EQ(y.node->output_shape(0), got.shape());
    std::vector<double> want = DirectPool(in, w, max);
    std::vector<double> values = Values<double>(got);
    ASSERT_EQ(values.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(values[i], want[i], 1e-12) << i;
  }
}

// float32 runs on oneDNN, float64 on im2col: the two must agree, forward and both
// gradients, whether the batch is cut between two threads (unevenly: 3 images) or not.
TEST_P(ConvTest, Float32AgreesWithFloat64InEveryDirection) {
  const Window w = GetParam();
  const std::string padding = w.same ? "SAME" : "VALID";
  const std::vector<int64_t> strides = {1, w.sh, w.sw, 1};
  Tensor in = RandomTensor({3, 7, 6, 3}, 1), f = RandomTensor({w.kh, w.kw, 3, 4}, 2);
  int64_t oh, ow, pad;
  OutputSize(7, w.kh, w.sh, w.same, &oh, &pad);
  OutputSize(6, w.kw, w.sw, w.same, &ow, &pad);
  Tensor dy = RandomTensor({3, oh, ow, 4}, 3);
  for (int threads : {1, 2}) {
    SCOPED_TRACE(StrCat(threads, " threads"));
    std::vector<std::vector<double>> results[2];
    for (DataType dtype : {DataType::kDouble, DataType::kFloat}) {
      Scope root = Scope::NewRootScope();
      auto c = [&](const Tensor& t) { return ops::Cast(root, ops::Const(root, t), dtype); };
      auto y = ops::Conv2D(root, c(in), c(f), strides, padding);
      auto dx = ops::Conv2DBackpropInput(root, Tensor::FromVector<int32_t>({3, 7, 6, 3}), c(f), c(dy), strides, padding);
      auto df = ops::Conv2DBackpropFilter(root, c(in), Tensor::FromVector<int32_t>({int32_t(w.kh), int32_t(w.kw), 3, 4}),
                                          c(dy), strides, padding);
      std::vector<Output> outs;
      for (Output o : {y, dx, df}) outs.push_back(ops::Cast(root, o, DataType::kDouble));
      SessionConfig config;
      config.intra_op_parallelism_threads = threads;
      auto s = testing::MakeSession(root, config);
      std::vector<Tensor> got;
      ASSERT_TRUE(s->Run({}, {outs[0].name(), outs[1].name(), outs[2].name()}, {}, &got).ok());
      for (const Tensor& t : got) results[dtype == DataType::kFloat].push_back(Values<double>(t));
    }
    for (int k = 0; k < 3; ++k) {
      ASSERT_EQ(results[0][k].size(), results[1][k].size());
      for (size_t i = 0; i < results[0][k].size(); ++i) {
        EXPECT_NEAR(results[1][k][i], results[0][k][i], 1e-4 * std::max(1.0, std::abs(results[0][k][i])))
            << (k == 0 ? "Conv2D" : k == 1 ? "Conv2DBackpropInput" : "Conv2DBackpropFilter") << " element " << i;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Windows, ConvTest,
                         ::testing::Values(Window{3, 3, 1, 1, true}, Window{3, 3, 1, 1, false},
                                           Window{3, 2, 2, 2, true}, Window{2, 2, 2, 2, false},
                                           Window{1, 1, 1, 1, true}, Window{4, 3, 3, 2, true}));

// 3x3, stride 1, whole 16-channel blocks: float32 runs these as Winograd convolutions where
// oneDNN has them (with blocked layouts reordered in and out), alone and fused with a bias,
// ReLU and max pool made a few images at a time. Both must still agree with float64.
TEST(ConvOpsTest, AWinogradShapedConvolutionAgreesWithFloat64) {
  Tensor in = RandomTensor({5, 13, 13, 16}, 4), f = RandomTensor({3, 3, 16, 32}, 5), bias = RandomTensor({32}, 6);
  for (const char* padding : {"SAME", "VALID"})
  for (int threads : {1, 2}) {
    SCOPED_TRACE(StrCat(padding, ", ", threads, " threads"));
    std::vector<std::vector<double>> results[2];
    for (DataType dtype : {DataType::kDouble, DataType::kFloat}) {
      Scope root = Scope::NewRootScope();
      auto c = [&](const Tensor& t) { return ops::Cast(root, ops::Const(root, t), dtype); };
      auto y = ops::Conv2D(root, c(in), c(f), {1, 1, 1, 1}, padding);
      auto conv = ops::Conv2D(root, c(in), c(f), {1, 1, 1, 1}, padding);
      auto pooled = ops::MaxPool(root, ops::Relu(root, ops::BiasAdd(root, conv, c(bias))), {1, 2, 2, 1},
                                 {1, 2, 2, 1}, "VALID");
      std::vector<Output> outs = {ops::Cast(root, y, DataType::kDouble), ops::Cast(root, pooled, DataType::kDouble)};
      SessionConfig config;
      config.intra_op_parallelism_threads = threads;
      config.constant_folding = false;
      config.common_subexpression_elimination = false;  // two convolutions, one of them fused
      auto s = testing::MakeSession(root, config);
      std::vector<Tensor> got;
      ASSERT_TRUE(s->Run({}, {outs[0].name(), outs[1].name()}, {}, &got).ok());
      for (const Tensor& t : got) results[dtype == DataType::kFloat].push_back(Values<double>(t));
    }
    for (int k = 0; k < 2; ++k) {
      ASSERT_EQ(results[0][k].size(), results[1][k].size());
      for (size_t i = 0; i < results[0][k].size(); ++i) {
        EXPECT_NEAR(results[1][k][i], results[0][k][i], 1e-4 * std::max(1.0, std::abs(results[0][k][i])))
            << (k == 0 ? "Conv2D" : "pooled") << " element " << i;
      }
    }
  }
}

// One image on two threads is cut into slabs of output rows, each convolving the input rows
// its windows reach (with the slab's own padding at the image's edges); a constant filter is
// packed into oneDNN's layout once and reused by the second step.
TEST(ConvOpsTest, OneLargeImageCutIntoSlabsMatchesTheDirectSumStepAfterStep) {
  const Tensor in = RandomTensor({1, 41, 37, 32}, 7), f = RandomTensor({3, 3, 32, 48}, 8);
  for (const Window w : {Window{3, 3, 1, 1, true}, Window{3, 3, 2, 2, true}, Window{3, 3, 2, 1, false}}) {
    SCOPED_TRACE(StrCat("stride ", w.sh, "x", w.sw, w.same ? " SAME" : " VALID"));
    Scope root = Scope::NewRootScope();
    Tensor in32(DataType::kFloat, in.shape()), f32(DataType::kFloat, f.shape());
    std::copy(in.data<double>(), in.data<double>() + in.NumElements(), in32.data<float>());
    std::copy(f.data<double>(), f.data<double>() + f.NumElements(), f32.data<float>());
    auto x = ops::Placeholder(root, DataType::kFloat);
    auto y = ops::Conv2D(root, x, ops::Const(root, f32), {1, w.sh, w.sw, 1}, w.same ? "SAME" : "VALID");
    SessionConfig config;
    config.intra_op_parallelism_threads = 2;
    auto s = testing::MakeSession(root, config);
    const std::vector<double> want = DirectConv(in, f, w);
    for (int step = 0; step < 2; ++step) {
      std::vector<Tensor> got;
      ASSERT_TRUE(s->Run({{x.name(), in32}}, {y.name()}, {}, &got).ok());
      ASSERT_EQ(got[0].NumElements(), static_cast<int64_t>(want.size()));
      for (size_t i = 0; i < want.size(); ++i) {
        ASSERT_NEAR(got[0].data<float>()[i], want[i], 1e-4 * std::max(1.0, std::abs(want[i]))) << "element " << i;
      }
    }
  }
}

TEST(ConvOpsTest, StaticShapesFollowSameAndValid) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root, DataType::kFloat, TensorShape({-1, 28, 28, 1}));
  auto f = ops::Placeholder(root, DataType::kFloat, TensorShape({3, 3, 1, 32}));
  auto valid = ops::Conv2D(root, x, f, {1, 1, 1, 1}, "VALID");
  auto pooled = ops::MaxPool(root, valid, {1, 2, 2, 1}, {1, 2, 2, 1}, "VALID");
  auto same = ops::Conv2D(root, x, f, {1, 2, 2, 1}, "SAME");
  auto flat = ops::Flatten(root, pooled);
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(valid.node->output_shape(0), TensorShape({-1, 26, 26, 32}));
  EXPECT_EQ(pooled.node->output_shape(0), TensorShape({-1, 13, 13, 32}));
  EXPECT_EQ(same.node->output_shape(0), TensorShape({-1, 14, 14, 32}));
  EXPECT_EQ(flat.node->output_shape(0), TensorShape({-1, 13 * 13 * 32}));
}

TEST(ConvOpsTest, MismatchedDepthIsAnErrorAtConstructionAndAtRunTime) {
  Scope root = Scope::NewRootScope();
  ops::Conv2D(root.WithOpName("conv"), ops::Const(root, RandomTensor({1, 4, 4, 2}, 1)),
              ops::Const(root, RandomTensor({3, 3, 3, 1}, 2)), {1, 1, 1, 1}, "SAME");
  EXPECT_EQ(root.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(root.status().message(), HasSubstr("input depth must match filter depth: 2 vs 3"));

  // With shapes unknown until run time the kernel reports it, naming the node.
  Scope late = Scope::NewRootScope();
  auto x = ops::Placeholder(late.WithOpName("x"), DataType::kDouble);
  ops::Conv2D(late.WithOpName("conv"), x, ops::Const(late, RandomTensor({3, 3, 3, 1}, 2)), {1, 1, 1, 1}, "SAME");
  auto s = testing::MakeSession(late);
  std::vector<Tensor> out;
  Status st = s->Run({{"x", RandomTensor({1, 4, 4, 2}, 1)}}, {"conv"}, {}, &out);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("input depth must match filter depth"));
  EXPECT_THAT(st.message(), HasSubstr("conv"));
  // The session stays usable.
  ASSERT_TRUE(s->Run({{"x", RandomTensor({1, 4, 4, 3}, 1)}}, {"conv"}, {}, &out).ok());
  EXPECT_EQ(out[0].shape(), TensorShape({1, 4, 4, 1}));
}

TEST(ConvOpsTest, BadPaddingStridesAndWindowsAreErrors) {
  auto error_of = [](auto build) {
    Scope root = Scope::NewRootScope();
    build(root, ops::Const(root, RandomTensor({1, 4, 4, 2}, 1)));
    return root.status();
  };
  Status st = error_of([](const Scope& s, Output x) {
    ops::Conv2D(s, x, ops::Const(s, RandomTensor({3, 3, 2, 1}, 2)), {1, 1, 1, 1}, "FULL");
  });
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("FULL"));
  st = error_of([](const Scope& s, Output x) {
    ops::Conv2D(s, x, ops::Const(s, RandomTensor({3, 3, 2, 1}, 2)), {1, 0, 1, 1}, "SAME");
  });
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  st = error_of([](const Scope& s, Output x) { ops::MaxPool(s, x, {1, 5, 5, 1}, {1, 1, 1, 1}, "VALID"); });
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  st = error_of([](const Scope& s, Output x) { ops::AvgPool(s, x, {1, 2, 2}, {1, 1, 1, 1}, "VALID"); });
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
}

// SAME and VALID can share every input size and the top padding (0 here) yet differ in
// the bottom padding; each must get its own oneDNN primitive.
TEST(ConvOpsTest, SameAndValidOfOneShapeBothMatchTheDirectSum) {
  Tensor in = RandomTensor({1, 4, 4, 2}, 5), f = RandomTensor({2, 2, 2, 3}, 6);
  for (bool same : {false, true, false}) {
    Scope root = Scope::NewRootScope();
    auto c = [&](const Tensor& t) { return ops::Cast(root, ops::Const(root, t), DataType::kFloat); };
    auto y = ops::Conv2D(root, c(in), c(f), {1, 1, 1, 1}, same ? "SAME" : "VALID");
    Tensor got = testing::Eval(root, ops::Cast(root, y, DataType::kDouble));
    std::vector<double> want = DirectConv(in, f, Window{2, 2, 1, 1, same});
    ASSERT_EQ(got.NumElements(), static_cast<int64_t>(want.size())) << same;
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got.data<double>()[i], want[i], 1e-5) << same << " " << i;
  }
}

TEST(ConvOpsTest, MaxPoolGradGoesToTheFirstMaximumOfEachWindow) {
  Scope root = Scope::NewRootScope();
  // One 2x2 window holding 5, 5, 1, 5: the first 5 takes the whole gradient.
  auto x = ops::Const(root, Tensor::FromVector<float>({5, 5, 1, 5}, TensorShape({1, 2, 2, 1})));
  auto y = ops::MaxPool(root, x, {1, 2, 2, 1}, {1, 2, 2, 1}, "VALID");
  auto dx = ops::MaxPoolGrad(root.WithOpName("dx"), x, y,
                             ops::Const(root, Tensor::FromVector<float>({3}, TensorShape({1, 1, 1, 1}))),
                             {1, 2, 2, 1}, {1, 2, 2, 1}, "VALID");
  EXPECT_EQ(Values<float>(testing::Eval(root, dx)), (std::vector<float>{3, 0, 0, 0}));
}

}  // namespace
}  // namespace tessera
