// Depthwise 3x3 and 5x5 convolutions in the blocked layout, run by our own loop
// (devices/cpu/blocked_depthwise_conv.h): against a float64 sum, at strides 1 and 2, SAME
// and VALID, images smaller than the window's reach (every pixel an edge), sides that leave
// a partial run of pixels, blocks of 8 and 16, every fused epilogue, one image and a batch,
// one and two threads.
#include "devices/cpu/blocked_depthwise_conv.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "tests/devices/cpu/blocked_conv_session.h"
#include "tests/random_tensor.h"

namespace tessera {
namespace {

using testing::Uniform;

struct Case {
  int64_t batch, h, w, c, k, stride, block;
  bool same;
  const char* fused;  // _BlockedConv2D's fused_ops
  int threads;
};

std::string Describe(const Case& k) {
  return StrCat(k.batch, "x", k.h, "x", k.w, "x", k.c, " window ", k.k, " stride ", k.stride, " block ", k.block,
                k.same ? " SAME" : " VALID", " fused '", k.fused, "' ", k.threads, " threads");
}

void ExpectAgreesWithTheSum(const Case& k) {
  SCOPED_TRACE(Describe(k));
  StatusOr<Geometry> g = MakeGeometry(TensorShape({k.batch, k.h, k.w, k.c}), k.k, k.k, {1, k.stride, k.stride, 1},
                                      k.same ? "SAME" : "VALID");
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_TRUE(cpu::BlockedDepthwiseSuits(*g, 1, cpu::ConvEpilogue{})) << "the case must take our loop";
  testing::BlockedConv conv;
  conv.x = Uniform({k.batch, k.h, k.w, k.c}, 1, -3, 3);
  conv.filter = Uniform({k.k, k.k, k.c, 1}, 2, -2, 2);
  conv.bias = Uniform({k.c}, 3, -5, 5);
  conv.summand = Uniform({k.batch, g->oh, g->ow, k.c}, 4, -5, 5);
  conv.fused = k.fused, conv.stride = k.stride, conv.same = k.same, conv.depthwise = true;
  conv.block = k.block, conv.threads = k.threads;
  auto session = testing::MakeBlockedConvSession(conv);
  ASSERT_NE(session, nullptr);
  std::vector<Tensor> got;
  const Status s = session->Run({}, {"got"}, {}, &got);
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_EQ(got[0].shape(), TensorShape({k.batch, g->oh, g->ow, k.c}));
  const auto values = got[0].flat<float>();
  const float* xs = conv.x.data<float>();
  const float* ws = conv.filter.data<float>();
  for (int64_t at = 0; at < got[0].NumElements(); ++at) {
    const int64_t c = at % k.c, ox = at / k.c % g->ow, oy = at / k.c / g->ow % g->oh, n = at / k.c / g->ow / g->oh;
    double v = 0, magnitude = 10;  // the bias and summand, each under 5 in magnitude
    for (int64_t ky = 0; ky < k.k; ++ky) {
      for (int64_t kx = 0; kx < k.k; ++kx) {
        const int64_t iy = oy * k.stride + ky - g->pad_top, ix = ox * k.stride + kx - g->pad_left;
        if (iy < 0 || iy >= k.h || ix < 0 || ix >= k.w) continue;
        const double term = double{xs[((n * k.h + iy) * k.w + ix) * k.c + c]} * ws[(ky * k.k + kx) * k.c + c];
        v += term;
        magnitude += std::abs(term);
      }
    }
    ASSERT_NEAR(values[at], conv.Epilogue(v, c, at), 1e-6 * magnitude)
        << "image " << n << " output (" << oy << ", " << ox << ") channel " << c;
  }
}

TEST(BlockedDepthwiseConvTest, EveryWindowStrideAndPaddingAgreesWithTheSum) {
  for (int threads : {1, 2}) {
    for (bool same : {true, false}) {
      for (int64_t stride : {1, 2}) {
        ExpectAgreesWithTheSum({1, 19, 17, 32, 3, stride, 16, same, "BiasAdd,Relu6", threads});
        ExpectAgreesWithTheSum({1, 14, 23, 24, 5, stride, 8, same, "BiasAdd", threads});
        ExpectAgreesWithTheSum({1, 9, 12, 16, 5, stride, 16, same, "", threads});
        ExpectAgreesWithTheSum({1, 8, 7, 40, 3, stride, 8, same, "BiasAdd,Relu", threads});
      }
    }
  }
}

TEST(BlockedDepthwiseConvTest, ImagesSmallerThanTheWindowAreAllEdge) {
  for (int64_t stride : {1, 2}) {
    ExpectAgreesWithTheSum({1, 2, 3, 16, 5, stride, 16, true, "BiasAdd,Relu6", 2});
    ExpectAgreesWithTheSum({1, 1, 1, 8, 3, stride, 8, true, "BiasAdd", 1});
    ExpectAgreesWithTheSum({1, 4, 2, 32, 5, stride, 8, true, "", 2});
  }
}

TEST(BlockedDepthwiseConvTest, EveryEpilogueAppliesAsTheRunIsStored) {
  for (const char* fused : {"", "BiasAdd", "BiasAdd,Relu", "BiasAdd,Relu6", "BiasAdd,Add", "BiasAdd,Add,Relu"}) {
    for (int64_t block : {8, 16}) ExpectAgreesWithTheSum({1, 11, 13, 32, 3, 1, block, true, fused, 2});
  }
}

TEST(BlockedDepthwiseConvTest, ABatchAgreesWithTheSum) {
  for (int threads : {1, 2}) {
    ExpectAgreesWithTheSum({3, 10, 9, 48, 3, 2, 16, true, "BiasAdd,Add,Relu", threads});
    ExpectAgreesWithTheSum({4, 7, 8, 16, 5, 1, 8, false, "BiasAdd,Relu6", threads});
  }
}

TEST(BlockedDepthwiseConvTest, OnlyAMultiplierOfOneInA3x3Or5x5WindowAtStride1Or2Suits) {
  Geometry g;
  g.n = 1, g.h = 14, g.w = 14, g.c = 64, g.kh = 3, g.kw = 3, g.oh = 14, g.ow = 14, g.pad_top = g.pad_left = 1;
  const cpu::ConvEpilogue plain;
  EXPECT_TRUE(cpu::BlockedDepthwiseSuits(g, 1, plain));
  EXPECT_FALSE(cpu::BlockedDepthwiseSuits(g, 0, plain));  // a full convolution
  EXPECT_FALSE(cpu::BlockedDepthwiseSuits(g, 2, plain));  // a multiplier of 2
  Geometry batch = g;
  batch.n = 2;
  EXPECT_TRUE(cpu::BlockedDepthwiseSuits(batch, 1, plain));
  Geometry seven = g;
  seven.kh = seven.kw = 7;
  EXPECT_FALSE(cpu::BlockedDepthwiseSuits(seven, 1, plain));
  Geometry oblong = g;
  oblong.kw = 5;
  EXPECT_FALSE(cpu::BlockedDepthwiseSuits(oblong, 1, plain));
  Geometry strided = g;
  strided.sh = strided.sw = 3;
  EXPECT_FALSE(cpu::BlockedDepthwiseSuits(strided, 1, plain));
  Geometry uneven = g;
  uneven.sw = 2;
  EXPECT_FALSE(cpu::BlockedDepthwiseSuits(uneven, 1, plain));
  cpu::ConvEpilogue pooled;
  pooled.max_pool = &g;
  EXPECT_FALSE(cpu::BlockedDepthwiseSuits(g, 1, pooled));
}

}  // namespace
}  // namespace tessera
