#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

#include "graph/builder/op_builder.h"
#include "tests/test_util.h"

namespace tessera {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::FloatNear;
using ::testing::HasSubstr;
using ::testing::Pointwise;
using testing::Eval;
using testing::Values;

Tensor F(std::vector<float> v, TensorShape s) { return Tensor::FromVector(v, s); }

TEST(CwiseTest, BroadcastingMatchesNumpy) {
  Scope root = Scope::NewRootScope();
  auto a = ops::Const(root, F({1, 2, 3, 4, 5, 6}, TensorShape({2, 3})));
  auto row = ops::Const(root, F({10, 20, 30}, TensorShape({3})));
  auto col = ops::Const(root, F({100, 200}, TensorShape({2, 1})));
  auto add_row = ops::Add(root, a, row);
  auto add_col = ops::Add(root, a, col);
  auto outer = ops::Mul(root, col, ops::Const(root, F({1, 2, 3}, TensorShape({1, 3}))));
  auto scalar = ops::Sub(root, 10.0f, a);
  EXPECT_THAT(Values<float>(Eval(root, add_row)), ElementsAre(11, 22, 33, 14, 25, 36));
  EXPECT_THAT(Values<float>(Eval(root, add_col)), ElementsAre(101, 102, 103, 204, 205, 206));
  Tensor o = Eval(root, outer);
  EXPECT_EQ(o.shape(), TensorShape({2, 3}));
  EXPECT_THAT(Values<float>(o), ElementsAre(100, 200, 300, 200, 400, 600));
  EXPECT_THAT(Values<float>(Eval(root, scalar)), ElementsAre(9, 8, 7, 6, 5, 4));
}

TEST(CwiseTest, BroadcastingRank4AgainstNaiveLoop) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> av(2 * 1 * 4 * 3), bv(3 * 1 * 3);
  for (auto& x : av) x = u(rng);
  for (auto& x : bv) x = u(rng);
  Scope root = Scope::NewRootScope();
  auto out = ops::Maximum(root, ops::Const(root, F(av, TensorShape({2, 1, 4, 3}))),
                          ops::Const(root, F(bv, TensorShape({3, 1, 3}))));
  Tensor t = Eval(root, out);
  ASSERT_EQ(t.shape(), TensorShape({2, 3, 4, 3}));
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k)
        for (int l = 0; l < 3; ++l) {
          float want = std::max(av[(i * 4 + k) * 3 + l], bv[j * 3 + l]);
          ASSERT_EQ(t.data<float>()[((i * 3 + j) * 4 + k) * 3 + l], want);
        }
}

// Rows of 8 or 16 (a blocked layout's channels, runtime/blocked_layout.h) walk the next
// dimension inside, from wherever a thread's share starts, and rows of fewer than 8 against
// one row repeated (an image's channels against their mean) run in tiles of that row, with
// rows left over after the last whole tile: per-channel, per-image and per-row operands on
// either side, against a naive loop.
TEST(CwiseTest, ShortRowsBroadcastAgainstNaiveLoop) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1, 1);
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> cases = {
      {{2, 3, 999, 8}, {1, 3, 1, 8}}, {{1, 3, 1, 8}, {2, 3, 999, 8}}, {{2, 5, 401, 16}, {2, 5, 1, 16}},
      {{4, 1, 999, 8}, {1, 3, 999, 1}}, {{2, 37, 29, 3}, {1, 1, 1, 3}}, {{1, 1, 1, 3}, {2, 37, 29, 3}},
      {{1, 7, 13, 5}, {1, 1, 1, 5}}, {{3, 1, 1, 7}, {1, 1, 1, 7}}};
  for (const auto& [a_dims, b_dims] : cases) {
    std::vector<int64_t> out_dims(4);
    for (int d = 0; d < 4; ++d) out_dims[d] = std::max(a_dims[d], b_dims[d]);
    SCOPED_TRACE(TensorShape(out_dims).DebugString());
    std::vector<float> av(TensorShape(a_dims).num_elements()), bv(TensorShape(b_dims).num_elements());
    for (auto& x : av) x = u(rng);
    for (auto& x : bv) x = u(rng);
    Scope root = Scope::NewRootScope();
    Tensor t = Eval(root, ops::Sub(root, ops::Const(root, F(av, TensorShape(a_dims))),
                                   ops::Const(root, F(bv, TensorShape(b_dims)))));
    ASSERT_EQ(t.shape(), TensorShape(out_dims));
    const auto at = [](const std::vector<int64_t>& dims, const std::vector<float>& v, const int64_t* i) {
      int64_t offset = 0;
      for (int d = 0; d < 4; ++d) offset = offset * dims[d] + (dims[d] == 1 ? 0 : i[d]);
      return v[offset];
    };
    int64_t i[4], flat = 0;
    for (i[0] = 0; i[0] < out_dims[0]; ++i[0])
      for (i[1] = 0; i[1] < out_dims[1]; ++i[1])
        for (i[2] = 0; i[2] < out_dims[2]; ++i[2])
          for (i[3] = 0; i[3] < out_dims[3]; ++i[3], ++flat) {
            ASSERT_EQ(t.data<float>()[flat], at(a_dims, av, i) - at(b_dims, bv, i)) << flat;
          }
  }
}

TEST(CwiseTest, LargeTensorsUseTheIntraOpPoolCorrectly) {
  const int n = 1 << 20;
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = static_cast<float>(i % 1000);
  Scope root = Scope::NewRootScope();
  auto x = ops::Const(root, F(v, TensorShape({n})));
  auto y = ops::Sqrt(root, ops::Square(root, x));
  Tensor t = Eval(root, y);
  for (int i = 0; i < n; i += 4099) ASSERT_FLOAT_EQ(t.data<float>()[i], v[i]);
}

// Rows longer than a chunk are cut into chunks (same-shape operands make one row): same
// shapes, a broadcast row, and lengths that leave a ragged last chunk.
TEST(CwiseTest, LongRowsSplitIntoChunksWithTheSameResult) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1, 1);
  auto random = [&](int64_t n) {
    std::vector<float> v(n);
    for (float& x : v) x = u(rng);
    return v;
  };
  const int64_t n = 100003, cols = 40000;
  const std::vector<float> a = random(n), b = random(n), m = random(3 * cols), row = random(cols);
  Scope root = Scope::NewRootScope();
  auto pa = ops::Placeholder(root.WithOpName("a"), DataType::kFloat);
  auto pb = ops::Placeholder(root.WithOpName("b"), DataType::kFloat);
  auto pm = ops::Placeholder(root.WithOpName("m"), DataType::kFloat);
  auto prow = ops::Placeholder(root.WithOpName("row"), DataType::kFloat);
  auto diff = ops::Sub(root, pa, pb);
  auto relu_grad = ops::ReluGrad(root, pa, pb);
  auto scaled = ops::Mul(root, pm, prow);
  auto session = testing::MakeSession(root);
  std::vector<Tensor> out;
  ASSERT_TRUE(session
                  ->Run({{"a", F(a, TensorShape({n}))}, {"b", F(b, TensorShape({n}))},
                         {"m", F(m, TensorShape({3, cols}))}, {"row", F(row, TensorShape({cols}))}},
                        {diff.name(), relu_grad.name(), scaled.name()}, {}, &out)
                  .ok());
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(out[0].data<float>()[i], a[i] - b[i]) << i;
    ASSERT_EQ(out[1].data<float>()[i], b[i] > 0 ? a[i] : 0.f) << i;
  }
  for (int64_t i = 0; i < 3 * cols; ++i) ASSERT_EQ(out[2].data<float>()[i], m[i] * row[i % cols]) << i;
}

TEST(CwiseTest, ComparisonsAndIntegerArithmetic) {
  Scope root = Scope::NewRootScope();
  auto a = ops::Const(root, Tensor::FromVector<int32_t>({1, 5, -7}));
  auto b = ops::Const(root, Tensor::FromVector<int32_t>({2, 5, 2}));
  EXPECT_THAT(Values<bool>(Eval(root, ops::Less(root, a, b))), ElementsAre(true, false, true));
  EXPECT_THAT(Values<bool>(Eval(root, ops::Equal(root, a, b))), ElementsAre(false, true, false));
  EXPECT_THAT(Values<int32_t>(Eval(root, ops::Div(root, a, b))), ElementsAre(0, 1, -3));
  auto big = ops::Const(root, Tensor::Scalar(std::numeric_limits<int32_t>::max()));
  EXPECT_EQ(Eval(root, ops::Add(root, big, 1)).data<int32_t>()[0], std::numeric_limits<int32_t>::min());
  auto s = ops::Const(root, Tensor::FromVector<std::string>({"a", "b"}));
  EXPECT_THAT(Values<bool>(Eval(root, ops::Equal(root, s, "b"))), ElementsAre(false, true));
}

TEST(CwiseTest, IntegerDivisionByZeroIsAnErrorNamingTheNode) {
  Scope root = Scope::NewRootScope();
  ops::Div(root.WithOpName("div"), ops::Const(root, Tensor::FromVector<int32_t>({1})), 0);
  auto s = testing::MakeSession(root);
  std::vector<Tensor> out;
  Status st = s->Run({}, {"div"}, {}, &out);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("Integer division by zero"));
  EXPECT_THAT(st.message(), HasSubstr("[[node div (Div) on /job:localhost/replica:0/task:0/device:CPU:0]]"));
}

TEST(CwiseTest, UnaryMath) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Const(root, Tensor::FromVector<double>({0.5, 1, 4}));
  EXPECT_THAT(Values<double>(Eval(root, ops::Exp(root, x))),
              Pointwise(::testing::DoubleNear(1e-12), std::vector<double>{std::exp(0.5), std::exp(1.0), std::exp(4.0)}));
  EXPECT_THAT(Values<double>(Eval(root, ops::Log(root, x))),
              Pointwise(::testing::DoubleNear(1e-12), std::vector<double>{std::log(0.5), 0, std::log(4.0)}));
  EXPECT_THAT(Values<double>(Eval(root, ops::Neg(root, x))), ElementsAre(-0.5, -1, -4));
  auto i = ops::Const(root, Tensor::FromVector<int64_t>({-3, 0, 3}));
  EXPECT_THAT(Values<int64_t>(Eval(root, ops::Relu(root, i))), ElementsAre(0, 0, 3));
  EXPECT_THAT(Values<int64_t>(Eval(root, ops::Square(root, i))), ElementsAre(9, 0, 9));
  EXPECT_THAT(Values<float>(Eval(root, ops::AddN(root, {1.0f, 2.0f, 3.5f}))), ElementsAre(6.5f));
}

// A row-major [rows, cols] matrix as row-major [cols, rows].
std::vector<float> Transposed(const std::vector<float>& x, int rows, int cols) {
  std::vector<float> t(x.size());
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) t[c * rows + r] = x[r * cols + c];
  return t;
}

// a [m, k] times b [k, n] through MatMul four ways, each operand given as is or transposed;
// `check` sees each product and which operands were transposed.
void ForEachTransposition(const std::vector<float>& a, const std::vector<float>& b, int m, int k, int n,
                          const std::function<void(const Tensor&, bool, bool)>& check) {
  const std::vector<float> at = Transposed(a, m, k), bt = Transposed(b, k, n);
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      Scope root = Scope::NewRootScope();
      auto ca = ops::Const(root, ta ? F(at, TensorShape({k, m})) : F(a, TensorShape({m, k})));
      auto cb = ops::Const(root, tb ? F(bt, TensorShape({n, k})) : F(b, TensorShape({k, n})));
      Tensor t = Eval(root, ops::MatMul(root, ca, cb, {.transpose_a = ta, .transpose_b = tb}));
      ASSERT_EQ(t.shape(), TensorShape({m, n}));
      check(t, ta, tb);
    }
  }
}

TEST(MatMulTest, TransposesAgainstNaive) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  const int m = 37, k = 53, n = 29;
  std::vector<float> a(m * k), b(k * n);
  for (auto& x : a) x = u(rng);
  for (auto& x : b) x = u(rng);
  std::vector<float> want(m * n, 0);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j)
      for (int p = 0; p < k; ++p) want[i * n + j] += a[i * k + p] * b[p * n + j];
  ForEachTransposition(a, b, m, k, n, [&](const Tensor& t, bool ta, bool tb) {
    EXPECT_THAT(Values<float>(t), Pointwise(FloatNear(1e-4f), want)) << ta << tb;
  });
}

// A product past 2^31 flops runs as panels of rows (so that it can stop at a deadline):
// 1024-row panels here, the last one short. Small integers keep every sum exact.
TEST(MatMulTest, LargeProductsRunInPanelsWithTheSameResult) {
  std::mt19937 rng(2);
  std::uniform_int_distribution<int> u(-2, 2);
  const int m = 2100, k = 1024, n = 1024;
  std::vector<float> a(m * k), b(k * n);
  for (auto& x : a) x = static_cast<float>(u(rng));
  for (auto& x : b) x = static_cast<float>(u(rng));
  ForEachTransposition(a, b, m, k, n, [&](const Tensor& t, bool ta, bool tb) {
    for (int i : {0, 1023, 1024, 2047, 2048, m - 1}) {  // each side of each panel edge
      for (int j = 0; j < n; ++j) {
        float want = 0;
        for (int p = 0; p < k; ++p) want += a[i * k + p] * b[p * n + j];
        ASSERT_EQ(t.data<float>()[i * n + j], want) << "row " << i << " col " << j << " ta " << ta << " tb " << tb;
      }
    }
  });
}

// float32 products are cut between the intra-op threads, by rows of the product, by its
// columns where there are more of them, or, for a single row (one image's), by rows of b:
// every split gives the exact sums of small integers.
TEST(MatMulTest, SplitsBetweenThreadsByRowsOrColumns) {
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> u(-2, 2);
  struct Shape {
    int m, k, n;
  };
  for (Shape shape : {Shape{300, 200, 150}, Shape{20, 64, 300}, Shape{2, 1000, 4000}, Shape{1, 1000, 400},
                      Shape{1, 64, 3}}) {
    const int m = shape.m, k = shape.k, n = shape.n;
    std::vector<float> a(m * k), b(k * n), want(m * n, 0);
    for (auto& x : a) x = static_cast<float>(u(rng));
    for (auto& x : b) x = static_cast<float>(u(rng));
    for (int i = 0; i < m; ++i)
      for (int p = 0; p < k; ++p)
        for (int j = 0; j < n; ++j) want[i * n + j] += a[i * k + p] * b[p * n + j];
    const std::vector<float> at = Transposed(a, m, k), bt = Transposed(b, k, n);
    for (int threads : {1, 2, 3}) {
      for (bool ta : {false, true}) {
        for (bool tb : {false, true}) {
          SCOPED_TRACE(StrCat(m, "x", k, "x", n, " on ", threads, " threads, ta ", ta, " tb ", tb));
          Scope root = Scope::NewRootScope();
          auto ca = ops::Const(root, ta ? F(at, TensorShape({k, m})) : F(a, TensorShape({m, k})));
          auto cb = ops::Const(root, tb ? F(bt, TensorShape({n, k})) : F(b, TensorShape({k, n})));
          auto product = ops::MatMul(root, ca, cb, {.transpose_a = ta, .transpose_b = tb});
          SessionConfig config;
          config.intra_op_parallelism_threads = threads;
          auto session = testing::MakeSession(root, config);
          std::vector<Tensor> out;
          ASSERT_TRUE(session->Run({}, {product.name()}, {}, &out).ok());
          EXPECT_EQ(Values<float>(out[0]), want);
        }
      }
    }
  }
}

// A product of one row (one image through a dense layer) sums the rows of b in parts, one a
// thread, where b is large enough (here 700 x 301 floats, uneven parts on three threads);
// _FusedMatMul's bias and ReLU apply once, after the parts are added up. Five rows go
// through Eigen with the same epilogue.
TEST(MatMulTest, ARowSumsTheRowsOfBInPartsThenTheEpilogue) {
  std::mt19937 rng(4);
  std::uniform_int_distribution<int> u(-2, 2);
  const int k = 700, n = 301;
  for (int m : {1, 5}) {
    std::vector<float> a(m * k), b(k * n), bias(n), want(m * n);
    for (auto& x : a) x = static_cast<float>(u(rng));
    for (auto& x : b) x = static_cast<float>(u(rng));
    for (auto& x : bias) x = static_cast<float>(u(rng));
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) {
        float sum = bias[j];
        for (int p = 0; p < k; ++p) sum += a[i * k + p] * b[p * n + j];
        want[i * n + j] = std::max(sum, 0.f);
      }
    for (int threads : {1, 2, 3}) {
      SCOPED_TRACE(StrCat(m, " rows on ", threads, " threads"));
      Scope root = Scope::NewRootScope();
      auto pa = ops::Placeholder(root.WithOpName("a"), DataType::kFloat);
      auto pb = ops::Placeholder(root.WithOpName("b"), DataType::kFloat);
      ops::Build(root.WithOpName("product"), "_FusedMatMul",
                 {pa, pb, ops::Const(root, F(bias, TensorShape({n})))},
                 {{"transpose_a", false}, {"transpose_b", false}, {"num_args", int64_t{1}},
                  {"fused_ops", std::string("BiasAdd,Relu")}});
      SessionConfig config;
      config.intra_op_parallelism_threads = threads;
      auto session = testing::MakeSession(root, config);
      std::vector<Tensor> out;
      const Status s = session->Run({{"a", F(a, TensorShape({m, k}))}, {"b", F(b, TensorShape({k, n}))}},
                                    {"product"}, {}, &out);
      ASSERT_TRUE(s.ok()) << s;
      EXPECT_EQ(Values<float>(out[0]), want);
    }
  }
}

TEST(MatMulTest, RuntimeShapeMismatchIsAnError) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DataType::kFloat);
  ops::MatMul(root.WithOpName("mm"), x, x);
  auto s = testing::MakeSession(root);
  std::vector<Tensor> out;
  Status st = s->Run({{"x", Tensor(DataType::kFloat, TensorShape({2, 3}))}}, {"mm"}, {}, &out);
  EXPECT_THAT(st.message(), HasSubstr("Matrix size-incompatible: In[0]: [2,3], In[1]: [2,3]"));
}

// A reduced axis before a short innermost one (a blocked layout's 8 or 16 channels) sums,
// averages and takes the largest as a naive loop does.
TEST(ReductionTest, AShortInnermostDimensionAgainstNaiveLoop) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1, 1);
  for (int64_t inner : {8, 16}) {
    SCOPED_TRACE(inner);
    const int64_t outer = 5, r = 37;
    std::vector<float> v(outer * r * inner);
    for (float& x : v) x = u(rng);
    Scope root = Scope::NewRootScope();
    auto x = ops::Const(root, F(v, TensorShape({outer, r, inner})));
    auto axis = ops::Const(root, Tensor::Scalar<int32_t>(1));
    const Tensor mean = Eval(root, ops::Mean(root, x, axis)), largest = Eval(root, ops::Max(root, x, axis));
    ASSERT_EQ(mean.shape(), TensorShape({outer, inner}));
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        double sum = 0;
        float max = -2;
        for (int64_t j = 0; j < r; ++j) {
          sum += v[(o * r + j) * inner + i];
          max = std::max(max, v[(o * r + j) * inner + i]);
        }
        EXPECT_FLOAT_EQ(mean.data<float>()[o * inner + i], static_cast<float>(sum / r));
        EXPECT_EQ(largest.data<float>()[o * inner + i], max);
      }
    }
  }
}

TEST(ReductionTest, AxesKeepDimsAndKinds) {
  std::vector<float> v(2 * 3 * 4);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  Scope root = Scope::NewRootScope();
  auto x = ops::Const(root, F(v, TensorShape({2, 3, 4})));
  Tensor s02 = Eval(root, ops::Sum(root, x, {0, 2}));
  EXPECT_EQ(s02.shape(), TensorShape({3}));
  // sum over i,k of (i*12 + j*4 + k)
  EXPECT_THAT(Values<float>(s02), ElementsAre(60 + 0, 60 + 32, 60 + 64));
  Tensor m1 = Eval(root, ops::Mean(root, x, 1, {.keep_dims = true}));
  EXPECT_EQ(m1.shape(), TensorShape({2, 1, 4}));
  EXPECT_THAT(Values<float>(m1), ElementsAre(4, 5, 6, 7, 16, 17, 18, 19));
  Tensor mx = Eval(root, ops::Max(root, x, {-1}));
  EXPECT_THAT(Values<float>(mx), ElementsAre(3, 7, 11, 15, 19, 23));
  Tensor all = Eval(root, ops::Sum(root, x, {0, 1, 2}));
  EXPECT_EQ(all.shape(), TensorShape());
  EXPECT_EQ(all.data<float>()[0], 276);
  Tensor none = Eval(root, ops::Sum(root, x, ops::Const(root, Tensor(DataType::kInt32, TensorShape({0})))));
  EXPECT_EQ(none.shape(), TensorShape({2, 3, 4}));
  auto i = ops::Const(root, Tensor::FromVector<int32_t>({1, 2, 4}));
  EXPECT_EQ(Eval(root, ops::Mean(root, i, 0)).data<int32_t>()[0], 2);
}

TEST(NnTest, SoftmaxAndBiasAdd) {
  Scope root = Scope::NewRootScope();
  auto logits = ops::Const(root, F({1, 2, 3, 1000, 1000, 1000}, TensorShape({2, 3})));
  Tensor sm = Eval(root, ops::Softmax(root, logits));
  float e1 = std::exp(1.f), e2 = std::exp(2.f), e3 = std::exp(3.f), z = e1 + e2 + e3;
  EXPECT_THAT(Values<float>(sm), Pointwise(FloatNear(1e-6f), std::vector<float>{e1 / z, e2 / z, e3 / z, 1 / 3.f, 1 / 3.f, 1 / 3.f}));
  auto v = ops::Const(root, F({1, 2, 3, 4, 5, 6, 7, 8}, TensorShape({2, 2, 2})));
  auto bias = ops::Const(root, F({10, 20}, TensorShape({2})));
  EXPECT_THAT(Values<float>(Eval(root, ops::BiasAdd(root, v, bias))), ElementsAre(11, 22, 13, 24, 15, 26, 17, 28));
  EXPECT_THAT(Values<float>(Eval(root, ops::BiasAdd(root, v, bias, "NCHW"))), ElementsAre(11, 12, 23, 24, 15, 16, 27, 28));
}

TEST(ArrayTest, ReshapeFillShapeAndLikes) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DataType::kFloat);
  auto r = ops::Reshape(root.WithOpName("r"), x, {-1, 2});
  auto shp = ops::Shape(root.WithOpName("shp"), r);
  auto fill = ops::Fill(root.WithOpName("fill"), shp, 7.0f);
  ops::OnesLike(root.WithOpName("ones"), fill);
  ops::ZerosLike(root.WithOpName("zeros"), x);
  auto s = testing::MakeSession(root);
  std::vector<Tensor> out;
  ASSERT_TRUE(s->Run({{"x", F({1, 2, 3, 4, 5, 6}, TensorShape({6}))}}, {"r", "shp", "fill", "ones", "zeros"}, {}, &out).ok());
  EXPECT_EQ(out[0].shape(), TensorShape({3, 2}));
  EXPECT_THAT(Values<int32_t>(out[1]), ElementsAre(3, 2));
  EXPECT_THAT(Values<float>(out[2]), ElementsAre(7, 7, 7, 7, 7, 7));
  EXPECT_THAT(Values<float>(out[3]), ElementsAre(1, 1, 1, 1, 1, 1));
  EXPECT_THAT(Values<float>(out[4]), ElementsAre(0, 0, 0, 0, 0, 0));
  Status bad = s->Run({{"x", F({1, 2, 3}, TensorShape({3}))}}, {"r"}, {}, &out);
  EXPECT_THAT(bad.message(), HasSubstr("Input to reshape is a tensor with 3 values"));
}

TEST(CastTest, ConvertsTruncatesAndSaturates) {
  Scope root = Scope::NewRootScope();
  auto f = ops::Const(root, F({1.9f, -1.9f, 3e10f, NAN}, TensorShape({4})));
  EXPECT_THAT(Values<int32_t>(Eval(root, ops::Cast(root, f, DataType::kInt32))),
              ElementsAre(1, -1, std::numeric_limits<int32_t>::max(), 0));
  EXPECT_THAT(Values<bool>(Eval(root, ops::Cast(root, f, DataType::kBool))), ElementsAre(true, true, true, true));
  auto h = ops::Cast(root, ops::Const(root, F({0.5f, 65504.f}, TensorShape({2}))), DataType::kHalf);
  Tensor back = Eval(root, ops::Cast(root, h, DataType::kDouble));
  EXPECT_THAT(Values<double>(back), ElementsAre(0.5, 65504.0));
}

TEST(VariableTest, AssignAddSubKeepValueAcrossRuns) {
  Scope root = Scope::NewRootScope();
  auto v = ops::Variable(root.WithOpName("v"), TensorShape({2}), DataType::kFloat);
  ops::Assign(root.WithOpName("init"), v, F({1, 2}, TensorShape({2})));
  ops::AssignAdd(root.WithOpName("inc"), v, F({10, 10}, TensorShape({2})));
  ops::AssignSub(root.WithOpName("dec"), v, F({1, 1}, TensorShape({2})));
  ops::IsVariableInitialized(root.WithOpName("ready"), v);
  auto s = testing::MakeSession(root);
  std::vector<Tensor> out;
  EXPECT_FALSE(testing::Fetch(*s, "ready").data<bool>()[0]);
  Status uninit = s->Run({}, {"v"}, {}, &out);
  EXPECT_EQ(uninit.code(), Code::kFailedPrecondition);
  EXPECT_THAT(uninit.message(), HasSubstr("Attempting to use uninitialized value v"));
  ASSERT_TRUE(s->Run({}, {}, {"init"}, &out).ok());
  EXPECT_TRUE(testing::Fetch(*s, "ready").data<bool>()[0]);
  ASSERT_TRUE(s->Run({}, {}, {"inc"}, &out).ok());
  ASSERT_TRUE(s->Run({}, {}, {"inc"}, &out).ok());
  ASSERT_TRUE(s->Run({}, {"dec"}, {}, &out).ok());
  EXPECT_THAT(Values<float>(out[0]), ElementsAre(20, 21));
  // A fetched value is a snapshot: later updates do not change it.
  ASSERT_TRUE(s->Run({}, {}, {"inc"}, &out).ok());
  Tensor snapshot = testing::Fetch(*s, "v");
  ASSERT_TRUE(s->Run({}, {}, {"inc"}, &out).ok());
  EXPECT_THAT(Values<float>(snapshot), ElementsAre(30, 31));
  EXPECT_THAT(Values<float>(testing::Fetch(*s, "v")), ElementsAre(40, 41));
}

}  // namespace
}  // namespace tessera
