// Blocked 3x3 stride-1 convolutions of a constant filter run as Winograd's F(4x4, 3x3)
// (devices/cpu/winograd_conv.h): against a float64 direct sum, for SAME and VALID padding,
// images whose sides are not whole tiles, lane groups that do not pair, blocks of 8 and 16,
// every fused epilogue, one and two threads, a single image (its chunk's work cut across the
// threads) and a batch of many chunks (whole chunks a thread).
#include "devices/cpu/winograd_conv.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tests/devices/cpu/blocked_conv_session.h"
#include "tests/random_tensor.h"

namespace tessera {
namespace {

using testing::Uniform;

struct Case {
  int64_t batch, h, w, c, o, block;
  bool same;
  const char* fused;  // _BlockedConv2D's fused_ops
  int threads;
};

std::string Describe(const Case& k) {
  return StrCat(k.batch, "x", k.h, "x", k.w, "x", k.c, " -> ", k.o, " block ", k.block, k.same ? " SAME" : " VALID",
                " fused '", k.fused, "' ", k.threads, " threads");
}

// The direct sum in float64, and beside it the sum of the terms' magnitudes, which bounds
// the rounding error of any order of summation (Winograd's transforms included).
void DirectConv(const Case& k, const Tensor& in, const Tensor& f, int64_t oh, int64_t ow, int64_t pad_top,
                int64_t pad_left, std::vector<double>* sum, std::vector<double>* magnitude) {
  const float* x = in.data<float>();
  const float* w = f.data<float>();
  sum->assign(k.batch * oh * ow * k.o, 0.0);
  magnitude->assign(sum->size(), 0.0);
  for (int64_t n = 0; n < k.batch; ++n)
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t xo = 0; xo < ow; ++xo)
        for (int64_t o = 0; o < k.o; ++o) {
          double s = 0, m = 0;
          for (int64_t ky = 0; ky < 3; ++ky)
            for (int64_t kx = 0; kx < 3; ++kx) {
              const int64_t iy = y + ky - pad_top, ix = xo + kx - pad_left;
              if (iy < 0 || iy >= k.h || ix < 0 || ix >= k.w) continue;
              for (int64_t c = 0; c < k.c; ++c) {
                const double term =
                    double{x[((n * k.h + iy) * k.w + ix) * k.c + c]} * w[((ky * 3 + kx) * k.c + c) * k.o + o];
                s += term;
                m += std::abs(term);
              }
            }
          (*sum)[((n * oh + y) * ow + xo) * k.o + o] = s;
          (*magnitude)[((n * oh + y) * ow + xo) * k.o + o] = m;
        }
}

void ExpectAgreesWithDirectSum(const Case& k) {
  SCOPED_TRACE(Describe(k));
  const int64_t oh = k.same ? k.h : k.h - 2, ow = k.same ? k.w : k.w - 2;
  const int64_t pad = k.same ? 1 : 0;
  Geometry g;
  g.n = k.batch, g.h = k.h, g.w = k.w, g.c = k.c, g.kh = 3, g.kw = 3, g.oh = oh, g.ow = ow;
  ASSERT_TRUE(cpu::WinogradSuits(g)) << "the case must take F(4x4, 3x3)";
  testing::BlockedConv conv;
  conv.x = Uniform({k.batch, k.h, k.w, k.c}, 1, -3, 3);
  conv.filter = Uniform({3, 3, k.c, k.o}, 2, -2, 2);
  conv.bias = Uniform({k.o}, 3, -20, 20);
  conv.summand = Uniform({k.batch, oh, ow, k.o}, 4, -20, 20);
  conv.fused = k.fused, conv.same = k.same, conv.block = k.block, conv.threads = k.threads;
  auto session = testing::MakeBlockedConvSession(conv);
  ASSERT_NE(session, nullptr);
  std::vector<double> want, magnitude;
  DirectConv(k, conv.x, conv.filter, oh, ow, pad, pad, &want, &magnitude);
  // Twice: the second step reads the filter transformed by the first.
  for (int step = 0; step < 2; ++step) {
    std::vector<Tensor> got;
    const Status s = session->Run({}, {"got"}, {}, &got);
    ASSERT_TRUE(s.ok()) << s;
    ASSERT_EQ(got[0].shape(), TensorShape({k.batch, oh, ow, k.o}));
    const auto values = got[0].flat<float>();
    for (size_t i = 0; i < want.size(); ++i) {
      const double v = conv.Epilogue(want[i], i % k.o, i);
      // F(4x4, 3x3) in float32 rounds to ~1e-6 of the terms' magnitude here (measured; 1e-7
      // for the direct sum): the bound is 1e-5 of it, with float32's own rounding of the
      // added bias and summand.
      ASSERT_NEAR(values[i], v, 1e-5 * magnitude[i] + 1e-6 * std::abs(v)) << "element " << i << " step " << step;
    }
  }
}

TEST(WinogradConvTest, OneImageAgreesWithTheDirectSum) {
  for (int threads : {1, 2}) {
    for (bool same : {true, false}) {
      // 3 input and 5 output lane groups of 8: an odd group in each, a lone panel in the products.
      ExpectAgreesWithDirectSum({1, 19, 17, 24, 40, 8, same, "", threads});
      ExpectAgreesWithDirectSum({1, 19, 17, 16, 48, 16, same, "BiasAdd,Relu", threads});
      // Enough input channels that the input transform is cut across the threads too.
      ExpectAgreesWithDirectSum({1, 21, 20, 64, 24, 8, same, "BiasAdd", threads});
      ExpectAgreesWithDirectSum({1, 18, 18, 32, 32, 16, same, "BiasAdd,Add,Relu", threads});
    }
  }
}

TEST(WinogradConvTest, EveryEpilogueAppliesAfterTheTransform) {
  for (const char* fused : {"BiasAdd", "BiasAdd,Relu", "BiasAdd,Relu6", "BiasAdd,Add", "BiasAdd,Add,Relu"}) {
    ExpectAgreesWithDirectSum({2, 18, 18, 16, 16, 8, true, fused, 2});
  }
}

TEST(WinogradConvTest, ABatchOfManyChunksAgreesWithTheDirectSum) {
  // 12 images of 5x4 tiles: 4 chunks at these channels, two a thread.
  for (int threads : {1, 2}) {
    ExpectAgreesWithDirectSum({12, 17, 13, 16, 24, 8, true, "BiasAdd,Add,Relu", threads});
    ExpectAgreesWithDirectSum({12, 19, 15, 32, 16, 16, false, "BiasAdd", threads});
  }
}

TEST(WinogradConvTest, OnlyThreeByThreeStrideOneOverEnoughTilesSuits) {
  Geometry g;
  g.n = 1, g.h = 14, g.w = 14, g.c = 256, g.kh = 3, g.kw = 3, g.oh = 14, g.ow = 14;
  EXPECT_TRUE(cpu::WinogradSuits(g));  // 16 tiles
  Geometry small = g;
  small.h = small.w = small.oh = small.ow = 7;  // 4 tiles: the filter costs more to read than it saves
  EXPECT_FALSE(cpu::WinogradSuits(small));
  small.n = 4;
  EXPECT_TRUE(cpu::WinogradSuits(small));
  Geometry strided = g;
  strided.sh = strided.sw = 2;
  strided.oh = strided.ow = 7;
  EXPECT_FALSE(cpu::WinogradSuits(strided));
  Geometry wide = g;
  wide.kh = wide.kw = 5;
  EXPECT_FALSE(cpu::WinogradSuits(wide));
}

// The transformed filter is kept while the filter is the same buffer, and made again from
// another one; a transform handed out stays whole while its holder keeps it.
TEST(WinogradConvTest, TheTransformedFilterFollowsItsSource) {
  const Tensor a = Uniform({3, 3, 8, 8}, 5, -1, 1), b = Uniform({3, 3, 8, 8}, 6, -1, 1);
  cpu::TransformedFilter filter;
  StatusOr<Tensor> first = cpu::WinogradFilter(&filter, a.data<float>(), 8, 8);
  ASSERT_TRUE(first.ok()) << first.status();
  const std::vector<float> from_a(first->data<float>(), first->data<float>() + 36 * 64);
  EXPECT_EQ(cpu::WinogradFilter(&filter, a.data<float>(), 8, 8)->data<float>(), first->data<float>());
  StatusOr<Tensor> second = cpu::WinogradFilter(&filter, b.data<float>(), 8, 8);
  ASSERT_TRUE(second.ok()) << second.status();
  const std::vector<float> from_b(second->data<float>(), second->data<float>() + 36 * 64);
  EXPECT_NE(from_a, from_b);
  EXPECT_EQ(std::vector<float>(first->data<float>(), first->data<float>() + 36 * 64), from_a);
  // Position (5, 5) of G g G^T is the window's corner g[2][2], untouched: lane 0 of channel 0.
  EXPECT_EQ(from_a[(35 * 1 * 8 + 0) * 8], a.data<float>()[(8 * 8) * 8]);
}

}  // namespace
}  // namespace tessera
