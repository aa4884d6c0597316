// The GPU kernels against the CPU kernels, which are the oracle: each case builds the same
// ops twice, once under /device:GPU:0 and once under /device:CPU:0, on the same random
// inputs (odd sizes, broadcasting, empty and large tensors), and compares the results with
// a per-op tolerance. Without a GPU every case skips, saying why.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <set>

#include "graph/builder/ops.h"
#include "tests/devices/gpu/gpu_test_util.h"
#include "tests/test_util.h"

namespace tessera {
namespace {

using Build = std::function<std::vector<Output>(const Scope&, const std::vector<Output>&)>;

Tensor Random(TensorShape shape, uint32_t seed, float lo = -2, float hi = 2) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(static_cast<size_t>(shape.num_elements()));
  for (float& x : v) x = u(rng);
  return Tensor::FromVector(v, shape);
}

Tensor Ints(std::vector<int32_t> v) { return Tensor::FromVector(v, TensorShape({static_cast<int64_t>(v.size())})); }

class GpuKernelsTest : public ::testing::Test {
 protected:
  void SetUp() override { TESSERA_SKIP_WITHOUT_GPU(); }

  // Builds `build` on each device over `inputs` (made once, on the host) and expects the
  // same dtype, shape and values within `tolerance` (absolute + relative).
  void ExpectSameOnGpu(const std::vector<Tensor>& inputs, const Build& build, double tolerance = 1e-5) {
    Scope root = Scope::NewRootScope();
    std::vector<Output> in;
    for (const Tensor& t : inputs) in.push_back(ops::Const(root, t));
    std::vector<Output> cpu = build(root.WithDevice("/device:CPU:0").NewSubScope("cpu"), in);
    std::vector<Output> gpu = build(root.WithDevice("/device:GPU:0").NewSubScope("gpu"), in);
    auto session = testing::MakeSession(root);
    ASSERT_NE(session, nullptr);
    std::vector<std::string> names;
    for (const Output& o : cpu) names.push_back(o.name());
    for (const Output& o : gpu) names.push_back(o.name());
    std::vector<Tensor> out;
    Status s = session->Run({}, names, {}, &out);
    ASSERT_TRUE(s.ok()) << s;
    for (size_t i = 0; i < cpu.size(); ++i) ExpectClose(out[i], out[i + cpu.size()], tolerance, gpu[i].name());
  }

  static void ExpectClose(const Tensor& want, const Tensor& got, double tolerance, const std::string& what) {
    ASSERT_EQ(want.dtype(), got.dtype()) << what;
    ASSERT_EQ(want.shape(), got.shape()) << what;
    for (int64_t i = 0; i < want.NumElements(); ++i) {
      const double w = ValueAt(want, i), g = ValueAt(got, i);
      if (std::isnan(w)) {
        ASSERT_TRUE(std::isnan(g)) << what << "[" << i << "]";
        continue;
      }
      if (std::isinf(w)) {
        ASSERT_EQ(g, w) << what << "[" << i << "]";
        continue;
      }
      ASSERT_NEAR(g, w, tolerance * (1 + std::abs(w))) << what << "[" << i << "]";
    }
  }

  static double ValueAt(const Tensor& t, int64_t i) {
    double v = 0;
    VisitDataType(t.dtype(), [&](auto zero) {
      using T = decltype(zero);
      if constexpr (std::is_arithmetic_v<T>) v = static_cast<double>(t.data<T>()[i]);
      if constexpr (std::is_same_v<T, Half>) v = HalfToFloat(t.data<T>()[i]);
      if constexpr (std::is_same_v<T, BFloat16>) v = BFloat16ToFloat(t.data<T>()[i]);
    });
    return v;
  }
};

TEST_F(GpuKernelsTest, MatMulInEveryTranspositionAndOddSizes) {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      const int64_t m = 37, k = 129, n = 65;
      Tensor a = Random(ta ? TensorShape({k, m}) : TensorShape({m, k}), 1);
      Tensor b = Random(tb ? TensorShape({n, k}) : TensorShape({k, n}), 2);
      ExpectSameOnGpu(
          {a, b},
          [&](const Scope& s, const std::vector<Output>& in) {
            ops::MatMulAttrs attrs;
            attrs.transpose_a = ta;
            attrs.transpose_b = tb;
            return std::vector<Output>{ops::MatMul(s, in[0], in[1], attrs)};
          },
          1e-4);
    }
  }
}

TEST_F(GpuKernelsTest, MatMulWithAnEmptyInnerDimensionIsZeros) {
  ExpectSameOnGpu(
      {Random(TensorShape({3, 0}), 1), Random(TensorShape({0, 4}), 2)},
      [](const Scope& s, const std::vector<Output>& in) { return std::vector<Output>{ops::MatMul(s, in[0], in[1])}; });
}

TEST_F(GpuKernelsTest, BinaryOpsBroadcastLikeTheCpu) {
  const std::vector<std::pair<TensorShape, TensorShape>> shapes = {
      {TensorShape({5, 7}), TensorShape({5, 7})},    {TensorShape({5, 7}), TensorShape({7})},
      {TensorShape({5, 1, 3}), TensorShape({4, 1})}, {TensorShape({}), TensorShape({2, 3})},
      {TensorShape({0, 3}), TensorShape({3})},       {TensorShape({2, 1, 4, 3}), TensorShape({3, 1, 3})}};
  for (const auto& [sa, sb] : shapes) {
    ExpectSameOnGpu({Random(sa, 3), Random(sb, 4, 0.5, 2)}, [](const Scope& s, const std::vector<Output>& in) {
      return std::vector<Output>{
          ops::Add(s, in[0], in[1]),     ops::Sub(s, in[0], in[1]),     ops::Mul(s, in[0], in[1]),
          ops::Div(s, in[0], in[1]),     ops::Maximum(s, in[0], in[1]), ops::Minimum(s, in[0], in[1]),
          ops::Greater(s, in[0], in[1]), ops::Less(s, in[0], in[1]),    ops::Equal(s, in[0], in[0])};
    });
  }
}

TEST_F(GpuKernelsTest, UnaryOpsAndGradients) {
  Tensor x = Random(TensorShape({3, 1001}), 5, 0.1f, 3);
  Tensor g = Random(TensorShape({3, 1001}), 6);
  Tensor signed_x = Random(TensorShape({3, 1001}), 7);
  ExpectSameOnGpu({x, g, signed_x}, [](const Scope& s, const std::vector<Output>& in) {
    return std::vector<Output>{ops::Neg(s, in[0]),
                               ops::Square(s, in[0]),
                               ops::Sqrt(s, in[0]),
                               ops::Exp(s, in[0]),
                               ops::Log(s, in[0]),
                               ops::Relu(s, in[2]),
                               ops::ReluGrad(s, in[1], in[2]),
                               ops::AddN(s, {in[0], in[1], in[2]})};
  });
}

TEST_F(GpuKernelsTest, LargeTensorsCoverEveryBlock) {
  Tensor a = Random(TensorShape({1 << 22}), 8), b = Random(TensorShape({1 << 22}), 9);
  ExpectSameOnGpu(
      {a, b},
      [](const Scope& s, const std::vector<Output>& in) {
        return std::vector<Output>{ops::Mul(s, in[0], in[1]), ops::Sum(s, in[0], ops::Const(s, Ints({0})))};
      },
      1e-4);
}

TEST_F(GpuKernelsTest, FillZerosOnesAndCast) {
  ExpectSameOnGpu({Random(TensorShape({4, 5}), 10)}, [](const Scope& s, const std::vector<Output>& in) {
    return std::vector<Output>{ops::Fill(s, ops::Const(s, Ints({2, 3})), 1.5f), ops::ZerosLike(s, in[0]),
                               ops::OnesLike(s, in[0]), ops::Cast(s, in[0], DataType::kDouble),
                               ops::Cast(s, ops::Cast(s, in[0], DataType::kInt64), DataType::kFloat)};
  });
}

// float16 and bfloat16 round as on the CPU (to nearest, ties to even): ties, the smallest
// subnormals, values past the largest finite half, infinities and NaN, both ways.
TEST_F(GpuKernelsTest, Float16AndBFloat16CastsLikeTheCpu) {
  std::vector<float> v = {0.f,     -0.f,    1.f,      1.0009765625f, 1.00048828125f, 1.000732421875f, 65504.f,
                          65520.f, 1e6f,    6e-8f,    3e-8f,         1e-40f,         -2.5f,           0.1f,
                          1.00390625f, 1.005859375f, std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()};
  Tensor random = Random(TensorShape({257}), 18, -70000, 70000);
  for (int64_t i = 0; i < random.NumElements(); ++i) v.push_back(random.data<float>()[i]);
  const Tensor x = Tensor::FromVector(v, TensorShape({static_cast<int64_t>(v.size())}));
  ExpectSameOnGpu(
      {x},
      [](const Scope& s, const std::vector<Output>& in) {
        Output half = ops::Cast(s, in[0], DataType::kHalf);
        Output bf16 = ops::Cast(s, in[0], DataType::kBFloat16);
        return std::vector<Output>{half,
                                   bf16,
                                   ops::Cast(s, half, DataType::kFloat),
                                   ops::Cast(s, bf16, DataType::kDouble),
                                   ops::Cast(s, half, DataType::kBFloat16)};
      },
      0);
}

TEST_F(GpuKernelsTest, ReductionsOverAnySetOfAxes) {
  Tensor x = Random(TensorShape({3, 5, 7, 2}), 11);
  const std::vector<std::vector<int32_t>> axes = {{0}, {3}, {1, 2}, {0, 2}, {0, 1, 2, 3}, {-1}, {}};
  for (const auto& a : axes) {
    ExpectSameOnGpu({x}, [&](const Scope& s, const std::vector<Output>& in) {
      Output axis = ops::Const(s, Ints(a));
      ops::ReductionAttrs keep;
      keep.keep_dims = true;
      return std::vector<Output>{ops::Sum(s, in[0], axis), ops::Mean(s, in[0], axis), ops::Max(s, in[0], axis),
                                 ops::Sum(s, in[0], axis, keep)};
    });
  }
}

// Few outputs over many elements take several passes through partial results: rows and
// columns, a full reduction, and counts that leave ragged last chunks.
TEST_F(GpuKernelsTest, LongReductionsTakeSeveralPasses) {
  const std::vector<std::pair<TensorShape, std::vector<int32_t>>> cases = {
      {TensorShape({3, 100003}), {1}}, {TensorShape({100003, 5}), {0}}, {TensorShape({1 << 22}), {0}},
      {TensorShape({7, 50001, 3}), {1}}, {TensorShape({129, 26, 26, 32}), {0, 1, 2}}};
  for (const auto& [shape, axes] : cases) {
    ExpectSameOnGpu({Random(shape, 17)}, [&](const Scope& s, const std::vector<Output>& in) {
      Output axis = ops::Const(s, Ints(axes));
      return std::vector<Output>{ops::Sum(s, in[0], axis), ops::Mean(s, in[0], axis), ops::Max(s, in[0], axis)};
    });
  }
}

TEST_F(GpuKernelsTest, ReductionsOfEmptyTensors) {
  ExpectSameOnGpu({Random(TensorShape({0, 4}), 12)}, [](const Scope& s, const std::vector<Output>& in) {
    Output axis = ops::Const(s, Ints({0}));
    return std::vector<Output>{ops::Sum(s, in[0], axis), ops::Mean(s, in[0], axis), ops::Max(s, in[0], axis)};
  });
}

TEST_F(GpuKernelsTest, ArgMaxSoftmaxAndCrossEntropy) {
  Tensor logits = Random(TensorShape({33, 10}), 13);
  std::vector<int64_t> labels(33);
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int64_t>(i * 7 % 10);
  ExpectSameOnGpu({logits, Tensor::FromVector(labels, TensorShape({33}))},
                  [](const Scope& s, const std::vector<Output>& in) {
                    auto xent = ops::SparseSoftmaxCrossEntropyWithLogits(s, in[0], in[1]);
                    return std::vector<Output>{ops::ArgMax(s, in[0], ops::Const(s, Tensor::Scalar<int32_t>(1))),
                                               ops::ArgMax(s, in[0], ops::Const(s, Tensor::Scalar<int32_t>(0))),
                                               ops::Softmax(s, in[0]),
                                               ops::LogSoftmax(s, in[0]),
                                               xent[0],
                                               xent[1]};
                  });
}

TEST_F(GpuKernelsTest, BiasAddAndItsGradientInBothLayouts) {
  Tensor x = Random(TensorShape({2, 3, 5, 4}), 14);
  ExpectSameOnGpu({x, Random(TensorShape({4}), 15), Random(TensorShape({3}), 16)},
                  [](const Scope& s, const std::vector<Output>& in) {
                    return std::vector<Output>{ops::BiasAdd(s, in[0], in[1]), ops::BiasAdd(s, in[0], in[2], "NCHW"),
                                               ops::BiasAddGrad(s, in[0]), ops::BiasAddGrad(s, in[0], "NCHW")};
                  });
}

TEST_F(GpuKernelsTest, ReshapeAndShapeKeepTheBytesWhereTheyAre) {
  ExpectSameOnGpu({Random(TensorShape({6, 4}), 17)}, [](const Scope& s, const std::vector<Output>& in) {
    Output r = ops::Reshape(s, ops::Relu(s, in[0]), ops::Const(s, Ints({3, -1})));
    return std::vector<Output>{r, ops::Shape(s, r), ops::Size(s, r)};
  });
}

// SAME padding with an uneven overhang (padded on the GPU before cuDNN, cropped after),
// VALID, strides, and a channel count cuDNN's fast paths do not like.
TEST_F(GpuKernelsTest, Conv2DAndBothBackpropsLikeTheCpu) {
  struct Case {
    TensorShape input, filter;
    std::vector<int64_t> strides;
    const char* padding;
  };
  const std::vector<Case> cases = {{TensorShape({2, 9, 8, 3}), TensorShape({3, 3, 3, 5}), {1, 1, 1, 1}, "SAME"},
                                   {TensorShape({3, 10, 7, 4}), TensorShape({2, 4, 4, 6}), {1, 2, 3, 1}, "SAME"},
                                   {TensorShape({2, 28, 28, 1}), TensorShape({3, 3, 1, 32}), {1, 1, 1, 1}, "VALID"},
                                   {TensorShape({1, 6, 6, 7}), TensorShape({5, 5, 7, 2}), {1, 2, 2, 1}, "VALID"},
                                   {TensorShape({2, 7, 7, 4}), TensorShape({3, 3, 4, 1}), {1, 1, 1, 1}, "SAME"}};
  for (const Case& c : cases) {
    Tensor in = Random(c.input, 20), f = Random(c.filter, 21);
    ExpectSameOnGpu(
        {in, f},
        [&](const Scope& s, const std::vector<Output>& x) {
          Output y = ops::Conv2D(s, x[0], x[1], c.strides, c.padding);
          Output dy = ops::Square(s, y);
          Output in_sizes = ops::Const(s, Ints({static_cast<int32_t>(c.input.dim(0)), static_cast<int32_t>(c.input.dim(1)),
                                                static_cast<int32_t>(c.input.dim(2)), static_cast<int32_t>(c.input.dim(3))}));
          Output f_sizes = ops::Const(s, Ints({static_cast<int32_t>(c.filter.dim(0)), static_cast<int32_t>(c.filter.dim(1)),
                                               static_cast<int32_t>(c.filter.dim(2)), static_cast<int32_t>(c.filter.dim(3))}));
          return std::vector<Output>{y, ops::Conv2DBackpropInput(s, in_sizes, x[1], dy, c.strides, c.padding),
                                     ops::Conv2DBackpropFilter(s, x[0], f_sizes, dy, c.strides, c.padding)};
        },
        1e-3);
  }
}

// The remapper fuses on the GPU too: Conv2D and MatMul with their BiasAdd (and Relu) become
// _FusedConv2D and _FusedMatMul, whose values are the ops' they replace.
TEST_F(GpuKernelsTest, FusedConvolutionAndMatMulLikeTheCpu) {
  const auto build = [](const Scope& s, const std::vector<Output>& x) {
    Output conv = ops::Relu(s, ops::BiasAdd(s, ops::Conv2D(s, x[0], x[1], {1, 1, 1, 1}, "SAME"), x[2]));
    Output conv_no_relu = ops::BiasAdd(s, ops::Conv2D(s, x[0], x[1], {1, 2, 2, 1}, "VALID"), x[2]);
    Output dense = ops::Relu(s, ops::BiasAdd(s, ops::MatMul(s, x[3], x[4]), x[2]));
    return std::vector<Output>{conv, conv_no_relu, dense};
  };
  const std::vector<Tensor> inputs = {Random(TensorShape({2, 9, 9, 3}), 30), Random(TensorShape({3, 3, 3, 8}), 31),
                                      Random(TensorShape({8}), 32), Random(TensorShape({5, 7}), 33),
                                      Random(TensorShape({7, 8}), 34)};
  ExpectSameOnGpu(inputs, build, 1e-4);

  Scope root = Scope::NewRootScope();
  std::vector<Output> in;
  for (const Tensor& t : inputs) in.push_back(ops::Const(root, t));
  std::vector<Output> out = build(root.WithDevice("/device:GPU:0"), in);
  auto session = testing::MakeSession(root);
  RunOptions options;
  options.output_partition_graphs = true;
  RunMetadata md;
  std::vector<Tensor> values;
  ASSERT_TRUE(session->Run(options, {}, {out[0].name(), out[1].name(), out[2].name()}, {}, &values, &md).ok());
  std::multiset<std::string> fused;
  for (const GraphSpec& part : md.partition_graphs) {
    for (const NodeSpec& n : part.nodes) {
      if (n.op.starts_with("_Fused") && n.device.find("GPU") != std::string::npos) fused.insert(n.op);
    }
  }
  EXPECT_EQ(fused, (std::multiset<std::string>{"_FusedConv2D", "_FusedConv2D", "_FusedMatMul"}));
}

TEST_F(GpuKernelsTest, PoolingAndItsGradientsLikeTheCpu) {
  struct Case {
    TensorShape input;
    std::vector<int64_t> ksize, strides;
    const char* padding;
  };
  const std::vector<Case> cases = {{TensorShape({2, 8, 8, 3}), {1, 2, 2, 1}, {1, 2, 2, 1}, "VALID"},
                                   {TensorShape({2, 9, 7, 5}), {1, 3, 3, 1}, {1, 2, 2, 1}, "SAME"},
                                   {TensorShape({1, 5, 6, 2}), {1, 2, 3, 1}, {1, 1, 1, 1}, "VALID"},
                                   // Disjoint windows leaving a row and a column out, padded, or apart.
                                   {TensorShape({2, 9, 7, 4}), {1, 2, 2, 1}, {1, 2, 2, 1}, "VALID"},
                                   {TensorShape({2, 7, 9, 3}), {1, 2, 2, 1}, {1, 2, 2, 1}, "SAME"},
                                   {TensorShape({1, 8, 8, 2}), {1, 2, 2, 1}, {1, 3, 3, 1}, "VALID"}};
  for (const Case& c : cases) {
    // Rounded inputs, so that windows hold ties and the first maximum must be the one chosen.
    Tensor in = Random(c.input, 22);
    for (int64_t i = 0; i < in.NumElements(); ++i) in.data<float>()[i] = std::round(in.data<float>()[i] * 2);
    ExpectSameOnGpu({in}, [&](const Scope& s, const std::vector<Output>& x) {
      Output max = ops::MaxPool(s, x[0], c.ksize, c.strides, c.padding);
      Output avg = ops::AvgPool(s, x[0], c.ksize, c.strides, c.padding);
      Output shape = ops::Const(s, Ints({static_cast<int32_t>(c.input.dim(0)), static_cast<int32_t>(c.input.dim(1)),
                                         static_cast<int32_t>(c.input.dim(2)), static_cast<int32_t>(c.input.dim(3))}));
      return std::vector<Output>{max, avg,
                                 ops::MaxPoolGrad(s, x[0], max, ops::Square(s, max), c.ksize, c.strides, c.padding),
                                 ops::AvgPoolGrad(s, shape, ops::Square(s, avg), c.ksize, c.strides, c.padding)};
    });
  }
}

TEST_F(GpuKernelsTest, ConcatAndSplitAlongEveryAxis) {
  Tensor a = Random(TensorShape({4, 6, 5}), 23), b = Random(TensorShape({4, 6, 5}), 24);
  for (int32_t axis : {0, 1, 2, -1}) {
    ExpectSameOnGpu({a, b}, [&](const Scope& s, const std::vector<Output>& x) {
      Output joined = ops::Concat(s, {x[0], x[1], x[0]}, ops::Const(s, Tensor::Scalar<int32_t>(axis)));
      std::vector<Output> out = ops::Split(s, ops::Const(s, Tensor::Scalar<int32_t>(axis)), joined, 3);
      std::vector<Output> uneven =
          ops::SplitV(s, joined, ops::Const(s, Ints({1, 0, -1})), ops::Const(s, Tensor::Scalar<int32_t>(0)), 3);
      out.insert(out.end(), uneven.begin(), uneven.end());
      out.push_back(joined);
      return out;
    });
  }
}

// The GPU draws its own numbers: what is compared is their distribution and the seeds'
// contract (the same sequence in every session, a new tensor every step).
TEST_F(GpuKernelsTest, RandomOpsHaveTheirDistributionAndHonourSeeds) {
  auto draw = [](int64_t seed) {
    Scope root = Scope::NewRootScope();
    Scope s = root.WithDevice("/device:GPU:0");
    Output shape = ops::Const(s, Ints({1 << 16}));
    std::vector<Output> outs = {ops::RandomUniform(s, shape, DataType::kFloat, {.seed = seed, .seed2 = 0}),
                                ops::RandomNormal(s, shape, DataType::kFloat, {.seed = seed, .seed2 = 0}),
                                ops::TruncatedNormal(s, shape, DataType::kDouble, {.seed = seed, .seed2 = 0})};
    auto session = testing::MakeSession(root);
    std::vector<std::vector<Tensor>> steps(2);
    for (auto& out : steps) {
      Status st = session->Run({}, {outs[0].name(), outs[1].name(), outs[2].name()}, {}, &out);
      EXPECT_TRUE(st.ok()) << st;
    }
    return steps;
  };
  auto first = draw(7), again = draw(7);
  ASSERT_EQ(first[0].size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(first[0][i].DebugString(), again[0][i].DebugString()) << "same seed, same first tensor";
    EXPECT_NE(first[0][i].DebugString(), first[1][i].DebugString()) << "a new tensor each step";
  }
  auto moments = [](const Tensor& t, double* mean, double* var, double* lo, double* hi) {
    const int64_t n = t.NumElements();
    double sum = 0, sq = 0;
    *lo = 1e9, *hi = -1e9;
    for (int64_t i = 0; i < n; ++i) {
      const double v = ValueAt(t, i);
      sum += v, sq += v * v, *lo = std::min(*lo, v), *hi = std::max(*hi, v);
    }
    *mean = sum / n, *var = sq / n - *mean * *mean;
  };
  double mean, var, lo, hi;
  moments(first[0][0], &mean, &var, &lo, &hi);
  EXPECT_NEAR(mean, 0.5, 0.01);
  EXPECT_NEAR(var, 1.0 / 12, 0.005);
  EXPECT_GE(lo, 0);
  EXPECT_LT(hi, 1);
  moments(first[0][1], &mean, &var, &lo, &hi);
  EXPECT_NEAR(mean, 0, 0.02);
  EXPECT_NEAR(var, 1, 0.03);
  moments(first[0][2], &mean, &var, &lo, &hi);
  EXPECT_NEAR(mean, 0, 0.02);
  EXPECT_NEAR(var, 0.774, 0.03);  // the variance of N(0, 1) truncated to [-2, 2]
  EXPECT_GE(lo, -2);
  EXPECT_LE(hi, 2);
}

// What a Mean's gradient is made of: int32 shape arithmetic (in host memory, on the CPU's
// kernels), a Cast of an int32 count, and BroadcastTo.
TEST_F(GpuKernelsTest, ShapeArithmeticCastOfInt32AndBroadcastTo) {
  ExpectSameOnGpu({Random(TensorShape({3, 1, 5}), 25)}, [](const Scope& s, const std::vector<Output>& in) {
    Output shape = ops::Shape(s, in[0]);
    Output grown = ops::Add(s, ops::Mul(s, shape, ops::Const(s, Ints({1, 4, 1}))), ops::Const(s, Ints({0, 0, 0})));
    Output count = ops::Div(s, ops::Size(s, in[0]), ops::Const(s, Tensor::Scalar<int32_t>(5)));
    return std::vector<Output>{ops::BroadcastTo(s, in[0], grown), ops::Cast(s, count, DataType::kFloat),
                               ops::Neg(s, ops::Square(s, grown))};
  });
}

// Variables in GPU memory, written by Assign and the optimizers' apply ops, read back.
TEST_F(GpuKernelsTest, VariablesAndOptimizerUpdates) {
  Tensor init = Random(TensorShape({7, 3}), 18), grad = Random(TensorShape({7, 3}), 19);
  Scope root = Scope::NewRootScope();
  std::vector<Output> results[2];
  std::vector<Operation> inits[2];
  std::vector<Output> updates[2];
  for (int d = 0; d < 2; ++d) {
    Scope s = root.WithDevice(d == 0 ? "/device:CPU:0" : "/device:GPU:0").NewSubScope(d == 0 ? "cpu" : "gpu");
    auto var = [&](const char* name) {
      Output v = ops::Variable(s.WithOpName(name), init.shape(), DataType::kFloat);
      inits[d].push_back(ops::Assign(s, v, ops::Const(s, init)).op());
      return v;
    };
    Output sgd = var("sgd"), mom = var("mom"), acc = var("acc"), rms = var("rms"), ms = var("ms"), rmom = var("rmom"),
           adam = var("adam"), m = var("m"), v = var("v"), add = var("add");
    Output g = ops::Const(s, grad);
    updates[d] = {ops::ApplyGradientDescent(s, sgd, 0.1f, g),
                  ops::ApplyMomentum(s, mom, acc, 0.1f, g, 0.9f),
                  ops::ApplyRMSProp(s, rms, ms, rmom, 0.01f, 0.9f, 0.5f, 1e-7f, g),
                  ops::ApplyAdam(s, adam, m, v, 0.9f, 0.99f, 0.001f, 0.9f, 0.999f, 1e-8f, g),
                  ops::AssignAdd(s, add, g),
                  ops::AssignSub(s, add, ops::Square(s, g))};
    results[d] = {sgd, mom, acc, rms, ms, rmom, adam, m, v, add};
  }
  auto session = testing::MakeSession(root);
  ASSERT_NE(session, nullptr);
  std::vector<std::string> targets, update_targets, fetches;
  for (int d = 0; d < 2; ++d) {
    for (const Operation& op : inits[d]) targets.push_back(op.name());
    for (const Output& u : updates[d]) update_targets.push_back(u.op().name());
    for (const Output& r : results[d]) fetches.push_back(r.name());
  }
  ASSERT_TRUE(session->Run({}, {}, targets, nullptr).ok());
  for (int step = 0; step < 3; ++step) ASSERT_TRUE(session->Run({}, {}, update_targets, nullptr).ok());
  std::vector<Tensor> out;
  Status s = session->Run({}, fetches, {}, &out);
  ASSERT_TRUE(s.ok()) << s;
  const size_t n = results[0].size();
  for (size_t i = 0; i < n; ++i) ExpectClose(out[i], out[i + n], 1e-5, fetches[i + n]);
}

}  // namespace
}  // namespace tessera
