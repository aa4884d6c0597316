// Blocked 1x1 convolutions of a single image run by our own tiled loop
// (devices/cpu/pointwise_conv.h): against a float64 sum, for blocks of 8 and 16, pixel
// counts that are not whole tiles, output blocks that do not pair, every fused epilogue,
// one and two threads (a small image's tiles cut by output blocks too), and a filter that
// is a constant (packed once) or fed (packed each step).
#include "devices/cpu/pointwise_conv.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "tests/devices/cpu/blocked_conv_session.h"
#include "tests/random_tensor.h"

namespace tessera {
namespace {

using testing::Uniform;

struct Case {
  int64_t h, w, c, o, block;
  const char* fused;  // _BlockedConv2D's fused_ops
  int threads;
  bool fed_filter = false;  // a Placeholder, not a Const
};

std::string Describe(const Case& k) {
  return StrCat(k.h, "x", k.w, "x", k.c, " -> ", k.o, " block ", k.block, " fused '", k.fused, "' ", k.threads,
                " threads", k.fed_filter ? " fed filter" : "");
}

void ExpectAgreesWithTheSum(const Case& k) {
  SCOPED_TRACE(Describe(k));
  Geometry g;
  g.n = 1, g.h = k.h, g.w = k.w, g.c = k.c, g.kh = 1, g.kw = 1, g.oh = k.h, g.ow = k.w;
  ASSERT_TRUE(cpu::PointwiseSuits(g, 0, cpu::ConvEpilogue{})) << "the case must take the pointwise loop";
  testing::BlockedConv conv;
  conv.x = Uniform({1, k.h, k.w, k.c}, 1, -3, 3);
  conv.filter = Uniform({1, 1, k.c, k.o}, 2, -2, 2);
  conv.fed_filter = k.fed_filter;
  conv.bias = Uniform({k.o}, 3, -5, 5);
  conv.summand = Uniform({1, k.h, k.w, k.o}, 4, -5, 5);
  conv.fused = k.fused, conv.same = false, conv.block = k.block, conv.threads = k.threads;
  auto session = testing::MakeBlockedConvSession(conv);
  ASSERT_NE(session, nullptr);

  std::vector<double> want(k.h * k.w * k.o), magnitude(want.size());
  const float* xs = conv.x.data<float>();
  const float* ws = conv.filter.data<float>();
  for (int64_t p = 0; p < k.h * k.w; ++p) {
    for (int64_t o = 0; o < k.o; ++o) {
      double s = 0, m = 0;
      for (int64_t c = 0; c < k.c; ++c) {
        const double term = double{xs[p * k.c + c]} * ws[c * k.o + o];
        s += term;
        m += std::abs(term);
      }
      want[p * k.o + o] = conv.Epilogue(s, o, p * k.o + o);
      magnitude[p * k.o + o] = m + 10;  // the bias and summand, each under 5 in magnitude
    }
  }
  // Twice: the second step reads the filter packed by the first (or packs the fed one again).
  for (int step = 0; step < 2; ++step) {
    std::vector<Tensor> got;
    const Status s = session->Run(conv.Feeds(), {"got"}, {}, &got);
    ASSERT_TRUE(s.ok()) << s;
    ASSERT_EQ(got[0].shape(), TensorShape({1, k.h, k.w, k.o}));
    const auto values = got[0].flat<float>();
    for (size_t i = 0; i < want.size(); ++i) {
      // float32 sums of k.c terms round to a few 1e-7 of the terms' magnitude.
      ASSERT_NEAR(values[i], want[i], 1e-6 * magnitude[i]) << "pixel " << i / k.o << " channel " << i % k.o
                                                           << " step " << step;
    }
  }
}

TEST(PointwiseConvTest, TilesThatAreNotWholeAgreeWithTheSum) {
  for (int threads : {1, 2}) {
    // 49 pixels: tiles of 10 and 9 (AVX-512) or 6 and 7 (AVX2); 3 blocks of 16 output
    // channels, a pair and a lone block.
    ExpectAgreesWithTheSum({7, 7, 32, 48, 16, "BiasAdd,Relu6", threads});
    // 2 pixels, one tile of 2; 5 blocks of 8.
    ExpectAgreesWithTheSum({1, 2, 24, 40, 8, "BiasAdd", threads});
    // 143 pixels, one input block, one output block.
    ExpectAgreesWithTheSum({13, 11, 16, 16, 16, "", threads});
    // Many tiles, the blocks of 8 in three pairs.
    ExpectAgreesWithTheSum({28, 28, 40, 48, 8, "BiasAdd,Add,Relu", threads});
  }
}

TEST(PointwiseConvTest, EveryEpilogueAppliesAsTheTileIsStored) {
  for (const char* fused : {"", "BiasAdd", "BiasAdd,Relu", "BiasAdd,Relu6", "BiasAdd,Add", "BiasAdd,Add,Relu"}) {
    for (int64_t block : {8, 16}) ExpectAgreesWithTheSum({5, 9, 32, 64, block, fused, 2});
  }
}

TEST(PointwiseConvTest, AFewTilesAreCutByOutputBlocksAcrossTheThreads) {
  // 7x7 at 320 -> 1280: five tiles, each cut into parts of output blocks.
  ExpectAgreesWithTheSum({7, 7, 320, 1280, 16, "BiasAdd,Relu6", 2});
  ExpectAgreesWithTheSum({3, 3, 256, 200, 8, "BiasAdd,Add", 2});
}

TEST(PointwiseConvTest, AFedFilterIsPackedOnEveryStep) {
  ExpectAgreesWithTheSum({6, 6, 32, 48, 16, "BiasAdd,Relu", 2, true});
  ExpectAgreesWithTheSum({6, 6, 16, 24, 8, "", 1, true});
}

TEST(PointwiseConvTest, OnlyOneImageOfAOneByOneWindowAtStrideOneSuits) {
  Geometry g;
  g.n = 1, g.h = 14, g.w = 14, g.c = 64, g.kh = 1, g.kw = 1, g.oh = 14, g.ow = 14;
  const cpu::ConvEpilogue plain;
  EXPECT_TRUE(cpu::PointwiseSuits(g, 0, plain));
  EXPECT_FALSE(cpu::PointwiseSuits(g, 1, plain));  // depthwise
  Geometry batch = g;
  batch.n = 2;
  EXPECT_FALSE(cpu::PointwiseSuits(batch, 0, plain));
  Geometry pixel = g;
  pixel.h = pixel.w = pixel.oh = pixel.ow = 1;  // RowTimesFilter's
  EXPECT_FALSE(cpu::PointwiseSuits(pixel, 0, plain));
  Geometry strided = g;
  strided.sh = strided.sw = 2;
  strided.oh = strided.ow = 7;
  EXPECT_FALSE(cpu::PointwiseSuits(strided, 0, plain));
  Geometry wide = g;
  wide.kh = wide.kw = 3;
  wide.oh = wide.ow = 12;
  EXPECT_FALSE(cpu::PointwiseSuits(wide, 0, plain));
  cpu::ConvEpilogue pooled;
  pooled.max_pool = &g;
  EXPECT_FALSE(cpu::PointwiseSuits(g, 0, pooled));
}

}  // namespace
}  // namespace tessera
