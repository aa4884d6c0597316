// A single image's first convolution from NHWC into the blocked layout, run by our own
// loop (devices/cpu/first_layer_conv.h): against a float64 sum, for 3x3 and 5x5 windows over
// one and three channels (75 taps, the most it takes), strides 1 and 2, SAME padding on
// every side or only the bottom and right, VALID, rows of an odd number of pixels, output
// blocks of 8 and 16 that do not pair, every fused epilogue, one and two threads, and a
// filter that is a constant (packed once) or fed (packed each step).
#include "devices/cpu/first_layer_conv.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "tests/devices/cpu/blocked_conv_session.h"
#include "tests/random_tensor.h"

namespace tessera {
namespace {

using testing::Uniform;

struct Case {
  int64_t h, w, c, k, stride, o, block;
  bool same;
  const char* fused;  // _BlockedConv2D's fused_ops
  int threads;
  bool fed_filter = false;  // a Placeholder, not a Const
};

std::string Describe(const Case& k) {
  return StrCat(k.h, "x", k.w, "x", k.c, " window ", k.k, " stride ", k.stride, " -> ", k.o, " block ", k.block,
                k.same ? " SAME" : " VALID", " fused '", k.fused, "' ", k.threads, " threads",
                k.fed_filter ? " fed filter" : "");
}

void ExpectAgreesWithTheSum(const Case& k) {
  SCOPED_TRACE(Describe(k));
  StatusOr<Geometry> g = MakeGeometry(TensorShape({1, k.h, k.w, k.c}), k.k, k.k, {1, k.stride, k.stride, 1},
                                      k.same ? "SAME" : "VALID");
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_TRUE(cpu::FirstLayerSuits(*g, cpu::ConvEpilogue{})) << "the case must take our loop";
  testing::BlockedConv conv;
  conv.x = Uniform({1, k.h, k.w, k.c}, 1, -3, 3);
  conv.nhwc_input = true;
  conv.filter = Uniform({k.k, k.k, k.c, k.o}, 2, -2, 2);
  conv.fed_filter = k.fed_filter;
  conv.bias = Uniform({k.o}, 3, -5, 5);
  conv.summand = Uniform({1, g->oh, g->ow, k.o}, 4, -5, 5);
  conv.fused = k.fused, conv.stride = k.stride, conv.same = k.same, conv.block = k.block, conv.threads = k.threads;
  auto session = testing::MakeBlockedConvSession(conv);
  ASSERT_NE(session, nullptr);
  const float* xs = conv.x.data<float>();
  const float* ws = conv.filter.data<float>();
  // Twice: the second step reads the filter packed by the first (or packs the fed one again).
  for (int step = 0; step < 2; ++step) {
    std::vector<Tensor> got;
    const Status s = session->Run(conv.Feeds(), {"got"}, {}, &got);
    ASSERT_TRUE(s.ok()) << s;
    ASSERT_EQ(got[0].shape(), TensorShape({1, g->oh, g->ow, k.o}));
    const auto values = got[0].flat<float>();
    for (int64_t at = 0; at < got[0].NumElements(); ++at) {
      const int64_t o = at % k.o, ox = at / k.o % g->ow, oy = at / k.o / g->ow;
      double v = 0, magnitude = 10;  // the bias and summand, each under 5 in magnitude
      for (int64_t ky = 0; ky < k.k; ++ky) {
        for (int64_t kx = 0; kx < k.k; ++kx) {
          const int64_t iy = oy * k.stride + ky - g->pad_top, ix = ox * k.stride + kx - g->pad_left;
          if (iy < 0 || iy >= k.h || ix < 0 || ix >= k.w) continue;
          for (int64_t c = 0; c < k.c; ++c) {
            const double term = double{xs[(iy * k.w + ix) * k.c + c]} * ws[((ky * k.k + kx) * k.c + c) * k.o + o];
            v += term;
            magnitude += std::abs(term);
          }
        }
      }
      ASSERT_NEAR(values[at], conv.Epilogue(v, o, at), 1e-6 * magnitude)
          << "output (" << oy << ", " << ox << ") channel " << o << " step " << step;
    }
  }
}

TEST(FirstLayerConvTest, EveryWindowStrideAndPaddingAgreesWithTheSum) {
  for (int threads : {1, 2}) {
    for (bool same : {true, false}) {
      // Stride 2 over an even side: SAME pads only the bottom and right.
      ExpectAgreesWithTheSum({24, 22, 3, 3, 2, 32, 16, same, "BiasAdd,Relu6", threads});
      // 75 taps; 3 blocks of 16, a pair and a lone one; padding on every side.
      ExpectAgreesWithTheSum({17, 19, 3, 5, 1, 48, 16, same, "BiasAdd", threads});
      ExpectAgreesWithTheSum({15, 26, 1, 3, 1, 24, 8, same, "", threads});
      ExpectAgreesWithTheSum({13, 11, 3, 5, 2, 40, 8, same, "BiasAdd,Relu", threads});
    }
  }
}

TEST(FirstLayerConvTest, EveryEpilogueAppliesAsTheRunIsStored) {
  for (const char* fused : {"", "BiasAdd", "BiasAdd,Relu", "BiasAdd,Relu6", "BiasAdd,Add", "BiasAdd,Add,Relu"}) {
    for (int64_t block : {8, 16}) ExpectAgreesWithTheSum({14, 15, 3, 3, 2, 32, block, true, fused, 2});
  }
}

TEST(FirstLayerConvTest, AFedFilterIsPackedOnEveryStep) {
  ExpectAgreesWithTheSum({9, 10, 3, 3, 2, 32, 16, true, "BiasAdd,Relu6", 2, true});
  ExpectAgreesWithTheSum({8, 8, 1, 5, 1, 16, 8, true, "", 1, true});
}

TEST(FirstLayerConvTest, OnlyOneImageOfAtMost75TapsSuits) {
  Geometry g;
  g.n = 1, g.h = 224, g.w = 224, g.c = 3, g.kh = 3, g.kw = 3, g.sh = g.sw = 2, g.oh = 112, g.ow = 112;
  const cpu::ConvEpilogue plain;
  EXPECT_TRUE(cpu::FirstLayerSuits(g, plain));
  Geometry batch = g;
  batch.n = 2;
  EXPECT_FALSE(cpu::FirstLayerSuits(batch, plain));
  Geometry resnet = g;  // ResNet50's 7x7 over three channels: 147 taps
  resnet.kh = resnet.kw = 7;
  EXPECT_FALSE(cpu::FirstLayerSuits(resnet, plain));
  Geometry wide = g;  // 5x5 over four channels: 100 taps
  wide.kh = wide.kw = 5;
  wide.c = 4;
  EXPECT_FALSE(cpu::FirstLayerSuits(wide, plain));
  cpu::ConvEpilogue pooled;
  pooled.max_pool = &g;
  EXPECT_FALSE(cpu::FirstLayerSuits(g, pooled));
}

}  // namespace
}  // namespace tessera
