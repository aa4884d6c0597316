// The ops Keras models export beyond the CNN's, against references written out here: Rsqrt,
// Relu6, Erf, Erfc, SquaredDifference, DepthwiseConv2dNative, BatchMatMulV2 (broadcast),
// Einsum and FusedBatchNorm's inference form; and what Einsum and FusedBatchNorm refuse.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <random>

#include "graph/builder/op_builder.h"
#include "tests/test_util.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;

Tensor Random(TensorShape shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  Tensor t(DataType::kFloat, shape);
  for (int64_t i = 0; i < t.NumElements(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

void ExpectNear(const Tensor& got, const Tensor& want, float tolerance = 1e-5f) {
  ASSERT_EQ(got.shape(), want.shape());
  for (int64_t i = 0; i < want.NumElements(); ++i) {
    EXPECT_NEAR(got.data<float>()[i], want.data<float>()[i], tolerance) << "element " << i;
  }
}

TEST(ModelOpsTest, ElementwiseOpsMatchTheStandardLibrary) {
  Scope root = Scope::NewRootScope();
  const std::vector<float> v = {-7.5f, -0.5f, 0.25f, 2.0f, 6.5f};
  Output x = ops::Const(root, Tensor::FromVector<float>(v));
  Output y = ops::Const(root, Tensor::FromVector<float>({1, 1, 1, 1, 1}));
  auto eval = [&](const char* op, std::vector<Input> in) { return testing::Eval(root, ops::Build(root, op, in)); };
  const Tensor relu6 = eval("Relu6", {x}), erf = eval("Erf", {x}), erfc = eval("Erfc", {x});
  const Tensor sqdiff = eval("SquaredDifference", {x, y});
  const Tensor rsqrt = eval("Rsqrt", {ops::Const(root, Tensor::FromVector<float>({0.25f, 4.0f}))});
  for (size_t i = 0; i < v.size(); ++i) {
    EXPECT_EQ(relu6.data<float>()[i], std::min(std::max(v[i], 0.0f), 6.0f));
    EXPECT_NEAR(erf.data<float>()[i], std::erf(v[i]), 1e-6);
    EXPECT_NEAR(erfc.data<float>()[i], std::erfc(v[i]), 1e-6);
    EXPECT_EQ(sqdiff.data<float>()[i], (v[i] - 1) * (v[i] - 1));
  }
  EXPECT_FLOAT_EQ(rsqrt.data<float>()[0], 2.0f);
  EXPECT_FLOAT_EQ(rsqrt.data<float>()[1], 0.5f);
}

// Float erfc is an approximation of our own (cwise_ops.cc): within 6e-7 of the true value's
// magnitude (a few float steps: 4.1e-7 measured where Eigen's exp has AVX2, 5.2e-7 where it
// has AVX-512) wherever that is a normal float, its tail included, and exact at the ends.
TEST(ModelOpsTest, FloatErfcKeepsItsRelativeAccuracyInTheTail) {
  std::vector<float> v;
  for (int i = -4000; i <= 4000; ++i) v.push_back(static_cast<float>(i) * 0.0025f);  // [-10, 10]
  const float inf = std::numeric_limits<float>::infinity();
  v.insert(v.end(), {inf, -inf, std::numeric_limits<float>::quiet_NaN(), 30.0f, -30.0f, 1e-30f});
  Scope root = Scope::NewRootScope();
  const Tensor got = testing::Eval(root, ops::Build(root, "Erfc", {ops::Const(root, Tensor::FromVector<float>(v))}));
  for (size_t i = 0; i < v.size(); ++i) {
    const double want = std::erfc(static_cast<double>(v[i]));
    const float g = got.data<float>()[i];
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(g)) << v[i];
    } else if (want >= std::numeric_limits<float>::min()) {
      EXPECT_LE(std::abs(g - want), 6e-7 * want) << "erfc(" << v[i] << ") = " << g << ", not " << want;
    } else {
      // Subnormal: as close as the float's last step allows.
      EXPECT_LE(std::abs(g - want), std::numeric_limits<float>::denorm_min() + 6e-7 * want) << v[i];
    }
  }
}

TEST(ModelOpsTest, DepthwiseConvolutionMatchesItsDefinition) {
  for (const char* padding : {"SAME", "VALID"}) {
    SCOPED_TRACE(padding);
    const int64_t n = 2, h = 7, w = 6, c = 3, m = 2, k = 3, stride = 2;
    const Tensor in = Random({n, h, w, c}, 1), f = Random({k, k, c, m}, 2);
    Scope root = Scope::NewRootScope();
    Output y = ops::Build(root, "DepthwiseConv2dNative", {ops::Const(root, in), ops::Const(root, f)},
                          {{"strides", std::vector<int64_t>{1, stride, stride, 1}}, {"padding", std::string(padding)}});
    const Tensor got = testing::Eval(root, y);
    const bool same = std::string(padding) == "SAME";
    const int64_t oh = same ? (h + stride - 1) / stride : (h - k) / stride + 1;
    const int64_t ow = same ? (w + stride - 1) / stride : (w - k) / stride + 1;
    const int64_t pad_t = same ? std::max<int64_t>((oh - 1) * stride + k - h, 0) / 2 : 0;
    const int64_t pad_l = same ? std::max<int64_t>((ow - 1) * stride + k - w, 0) / 2 : 0;
    Tensor want(DataType::kFloat, TensorShape({n, oh, ow, c * m}));
    for (int64_t b = 0; b < n; ++b)
      for (int64_t oy = 0; oy < oh; ++oy)
        for (int64_t ox = 0; ox < ow; ++ox)
          for (int64_t ch = 0; ch < c; ++ch)
            for (int64_t j = 0; j < m; ++j) {
              float sum = 0;
              for (int64_t ky = 0; ky < k; ++ky)
                for (int64_t kx = 0; kx < k; ++kx) {
                  const int64_t iy = oy * stride + ky - pad_t, ix = ox * stride + kx - pad_l;
                  if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
                  sum += in.data<float>()[((b * h + iy) * w + ix) * c + ch] *
                         f.data<float>()[((ky * k + kx) * c + ch) * m + j];
                }
              want.data<float>()[((b * oh + oy) * ow + ox) * c * m + ch * m + j] = sum;
            }
    ExpectNear(got, want);
  }
}

// A 1x1 convolution of 1x1 images (a squeeze-and-excitation's) is each image's channels
// times the filter, with its bias and ReLU or ReLU6, whatever the stride and padding (the
// blocked layout's, blocked_layout_test, must give the same).
TEST(ModelOpsTest, AConvolutionOfOnePixelMatchesItsDefinition) {
  const int64_t n = 3, c = 37, o = 21;
  const Tensor in = Random({n, 1, 1, c}, 3), f = Random({1, 1, c, o}, 4), bias = Random({o}, 5);
  for (const char* activation : {"", "Relu", "Relu6"}) {
    for (const char* padding : {"SAME", "VALID"}) {
      SCOPED_TRACE(std::string(activation) + " " + padding);
      // Fed, so that the remapper gives the convolution its bias and activation to apply.
      Scope root = Scope::NewRootScope();
      auto x = ops::Placeholder(root.WithOpName("x"), DataType::kFloat, TensorShape({n, 1, 1, c}));
      Output y = ops::BiasAdd(root, ops::Conv2D(root, x, ops::Const(root, f), {1, 2, 2, 1}, padding),
                              ops::Const(root, bias));
      if (*activation != 0) y = ops::Build(root, activation, {y});
      SessionConfig config;
      config.remapping = true;
      auto session = testing::MakeSession(root, config);
      ASSERT_NE(session, nullptr);
      std::vector<Tensor> out;
      ASSERT_TRUE(session->Run({{"x", in}}, {y.name()}, {}, &out).ok());
      const Tensor& got = out[0];
      Tensor want(DataType::kFloat, TensorShape({n, 1, 1, o}));
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < o; ++j) {
          float sum = bias.data<float>()[j];
          for (int64_t k = 0; k < c; ++k) sum += in.data<float>()[i * c + k] * f.data<float>()[k * o + j];
          if (*activation != 0) sum = std::max(sum, 0.f);
          if (std::string(activation) == "Relu6") sum = std::min(sum, 6.f);
          want.data<float>()[i * o + j] = sum;
        }
      ExpectNear(got, want);
    }
  }
}

TEST(ModelOpsTest, BatchMatMulV2BroadcastsTheBatchDimensions) {
  const Tensor x = Random({2, 1, 2, 3}, 3), y = Random({4, 3, 5}, 4);
  Scope root = Scope::NewRootScope();
  const Tensor got = testing::Eval(root, ops::Build(root, "BatchMatMulV2", {ops::Const(root, x), ops::Const(root, y)}));
  Tensor want(DataType::kFloat, TensorShape({2, 4, 2, 5}));
  for (int64_t a = 0; a < 2; ++a)
    for (int64_t b = 0; b < 4; ++b)
      for (int64_t i = 0; i < 2; ++i)
        for (int64_t j = 0; j < 5; ++j) {
          float sum = 0;
          for (int64_t k = 0; k < 3; ++k) {
            sum += x.data<float>()[(a * 2 + i) * 3 + k] * y.data<float>()[(b * 3 + k) * 5 + j];
          }
          want.data<float>()[((a * 4 + b) * 2 + i) * 5 + j] = sum;
        }
  ExpectNear(got, want);
}

TEST(ModelOpsTest, EinsumAsAttentionWritesIt) {
  // Attention's scores: "aecd,abcd->acbe" (a batch, b/e positions, c heads, d depth).
  const Tensor q = Random({2, 3, 4, 5}, 5), kt = Random({2, 6, 4, 5}, 6);
  Scope root = Scope::NewRootScope();
  const Tensor got = testing::Eval(root, ops::Build(root, "Einsum", {ops::Const(root, kt), ops::Const(root, q)},
                                                    {{"equation", std::string("aecd,abcd->acbe")}}));
  Tensor want(DataType::kFloat, TensorShape({2, 4, 3, 6}));
  for (int64_t a = 0; a < 2; ++a)
    for (int64_t c = 0; c < 4; ++c)
      for (int64_t b = 0; b < 3; ++b)
        for (int64_t e = 0; e < 6; ++e) {
          float sum = 0;
          for (int64_t d = 0; d < 5; ++d) {
            sum += kt.data<float>()[((a * 6 + e) * 4 + c) * 5 + d] * q.data<float>()[((a * 3 + b) * 4 + c) * 5 + d];
          }
          want.data<float>()[((a * 4 + c) * 3 + b) * 6 + e] = sum;
        }
  ExpectNear(got, want);
}

// Every way the kernel may lay out an operand (as it is, transposed) and order the product:
// each equation against the sum its labels spell out.
TEST(ModelOpsTest, EinsumMatchesItsDefinitionWhateverItsLabelsOrder) {
  const std::map<char, int64_t> size = {{'a', 2}, {'b', 3}, {'c', 4}, {'d', 5}, {'e', 6}};
  for (const char* equation : {"aecd,abcd->acbe", "acbe,aecd->abcd", "ab,bc->ac", "ab,cb->ac", "ba,bc->ac",
                               "ba,cb->ca", "ab,bc->ca", "abc,acd->adb", "abcd,cde->abe", "ab,ab->a"}) {
    SCOPED_TRACE(equation);
    const std::string eq = equation;
    const std::string a = eq.substr(0, eq.find(',')), b = eq.substr(eq.find(',') + 1, eq.find('-') - eq.find(',') - 1),
                      out = eq.substr(eq.find('>') + 1);
    auto shape = [&](const std::string& labels) {
      std::vector<int64_t> dims;
      for (char c : labels) dims.push_back(size.at(c));
      return TensorShape(dims);
    };
    const Tensor x = Random(shape(a), 11), y = Random(shape(b), 12);
    Scope root = Scope::NewRootScope();
    const Tensor got = testing::Eval(root, ops::Build(root, "Einsum", {ops::Const(root, x), ops::Const(root, y)},
                                                      {{"equation", eq}}));
    // Every assignment of the labels: each adds x's element times y's to the output's.
    std::string labels;
    for (char c : a + b) {
      if (labels.find(c) == std::string::npos) labels += c;
    }
    Tensor want(DataType::kFloat, shape(out));
    for (float& v : want.flat<float>()) v = 0;
    std::map<char, int64_t> at;
    for (char c : labels) at[c] = 0;
    auto offset = [&](const std::string& l) {
      int64_t o = 0;
      for (char c : l) o = o * size.at(c) + at[c];
      return o;
    };
    for (bool more = true; more;) {
      want.data<float>()[offset(out)] += x.data<float>()[offset(a)] * y.data<float>()[offset(b)];
      more = false;
      for (auto c = labels.rbegin(); c != labels.rend() && !more; ++c) {
        more = ++at[*c] < size.at(*c);
        if (!more) at[*c] = 0;
      }
    }
    ExpectNear(got, want);
  }
}

TEST(ModelOpsTest, EinsumRefusesWhatItDoesNotRunNamingTheEquation) {
  for (const char* eq : {"...ab,bc->...ac", "aab,bc->ac", "ab->ba"}) {
    Scope root = Scope::NewRootScope();
    Output a = ops::Const(root, Random({2, 2}, 7));
    std::vector<Input> in = {a};
    if (std::string(eq).find(',') != std::string::npos) in.push_back(a);
    Output y = ops::Build(root.WithOpName("einsum"), "Einsum", in, {{"equation", std::string(eq)}});
    auto session = Session::Create(SessionConfig(), [&] {
      GraphSpec def;
      EXPECT_TRUE(root.ToSpec(&def).ok());
      return def;
    }());
    std::vector<Tensor> out;
    Status s = session.ok() ? (*session)->Run({}, {y.name()}, {}, &out) : session.status();
    EXPECT_EQ(s.code(), Code::kUnimplemented) << eq << ": " << s;
  }
}

// FusedBatchNorm with given statistics, every version: y by its definition, the statistics
// handed on; the training form is refused naming the node.
TEST(ModelOpsTest, FusedBatchNormWithGivenStatisticsMatchesItsDefinition) {
  const Tensor x = Random({2, 3, 2, 4}, 8), scale = Random({4}, 9), offset = Random({4}, 10), mean = Random({4}, 11);
  Tensor variance = Random({4}, 12);
  for (float& v : variance.flat<float>()) v += 1.5f;
  for (const char* op : {"FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3"}) {
    SCOPED_TRACE(op);
    Scope root = Scope::NewRootScope();
    AttrMap attrs = {{"is_training", false}, {"epsilon", 0.01f}};
    if (std::string(op) != "FusedBatchNorm") attrs["U"] = DataType::kFloat;
    Operation bn = ops::Build(root.WithOpName("bn"), op,
                              {ops::Const(root, x), ops::Const(root, scale), ops::Const(root, offset),
                               ops::Const(root, mean), ops::Const(root, variance)},
                              attrs)
                       .op();
    const Tensor y = testing::Eval(root, Output(bn.node(), 0));
    Tensor want(DataType::kFloat, x.shape());
    for (int64_t i = 0; i < x.NumElements(); ++i) {
      const int64_t c = i % 4;
      want.data<float>()[i] = (x.data<float>()[i] - mean.data<float>()[c]) * scale.data<float>()[c] /
                                  std::sqrt(variance.data<float>()[c] + 0.01f) +
                              offset.data<float>()[c];
    }
    ExpectNear(y, want);
    EXPECT_TRUE(testing::Eval(root, Output(bn.node(), 2)).Equals(variance));
  }
  Scope root = Scope::NewRootScope();
  Output c = ops::Const(root, scale);
  Output y = ops::Build(root.WithOpName("training_bn"), "FusedBatchNormV3", {ops::Const(root, x), c, c, c, c},
                        {{"U", DataType::kFloat}});
  GraphSpec def;
  ASSERT_TRUE(root.ToSpec(&def).ok());
  auto session = Session::Create(SessionConfig(), def);
  std::vector<Tensor> out;
  Status s = session.ok() ? (*session)->Run({}, {y.name()}, {}, &out) : session.status();
  EXPECT_EQ(s.code(), Code::kUnimplemented) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("training_bn"));
}

}  // namespace
}  // namespace tessera
