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

#include "graph/builder/op_builder.h"
#include "graph/builder/ops.h"
#include "runtime/session.h"
#include "tests/random_tensor.h"
#include "tests/test_util.h"

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
  const Tensor x = Uniform({1, k.h, k.w, k.c}, 1, -3, 3), filter = Uniform({k.k, k.k, k.c, k.o}, 2, -2, 2);
  const Tensor bias = Uniform({k.o}, 3, -5, 5), summand = Uniform({1, g->oh, g->ow, k.o}, 4, -5, 5);
  const std::string fused = k.fused;
  const bool sum = fused.find(",Add") != std::string::npos;

  Scope root = Scope::NewRootScope();
  Output f = k.fed_filter ? ops::Placeholder(root.WithOpName("filter"), DataType::kFloat) : ops::Const(root, filter);
  std::vector<Input> inputs = {ops::Const(root, x), f};
  if (!fused.empty()) inputs.push_back(ops::Const(root, bias));
  if (sum) inputs.push_back(ops::Build(root, "_ToBlocked", {ops::Const(root, summand)}, {{"block", k.block}}));
  AttrMap attrs = {{"strides", std::vector<int64_t>{1, k.stride, k.stride, 1}},
                   {"padding", std::string(k.same ? "SAME" : "VALID")},
                   {"fused_ops", fused},
                   {"num_args", int64_t{fused.empty() ? 0 : sum ? 2 : 1}},
                   {"depthwise", int64_t{0}},
                   {"input_layout", std::string("NHWC")},
                   {"block", k.block}};
  auto conv = ops::Build(root.WithOpName("conv"), "_BlockedConv2D", inputs, attrs);
  ops::Build(root.WithOpName("got"), "_FromBlocked", {conv});
  SessionConfig config;
  config.intra_op_parallelism_threads = k.threads;
  config.constant_folding = false;  // the graph is all constants
  config.remapping = false;
  config.arithmetic_optimization = false;
  config.common_subexpression_elimination = false;
  auto session = testing::MakeSession(root, config);
  ASSERT_NE(session, nullptr);
  const float* xs = x.data<float>();
  const float* ws = filter.data<float>();
  // Twice: the second step reads the filter packed by the first (or packs the fed one again).
  for (int step = 0; step < 2; ++step) {
    std::vector<Tensor> got;
    const std::vector<std::pair<std::string, Tensor>> feeds =
        k.fed_filter ? std::vector<std::pair<std::string, Tensor>>{{"filter", filter}}
                     : std::vector<std::pair<std::string, Tensor>>{};
    const Status s = session->Run(feeds, {"got"}, {}, &got);
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
      if (!fused.empty()) v += bias.data<float>()[o];
      if (sum) v += summand.data<float>()[at];
      if (fused.find("Relu6") != std::string::npos) v = std::clamp(v, 0.0, 6.0);
      else if (fused.find("Relu") != std::string::npos) v = std::max(v, 0.0);
      ASSERT_NEAR(values[at], v, 1e-6 * magnitude)
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
