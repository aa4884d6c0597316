// The blocked layout (runtime/blocked_layout.h): a CNN's chain of convolutions on a CPU runs
// as _BlockedConv2D and the ops between them on blocked tensors, with the values of the graph
// run in NHWC; a first layer of 3 channels reads NHWC and writes blocked; what cannot run
// blocked (a convolution fused with its pool, a lone convolution, a filter that is not a
// constant) stays as it was. The blocked kernels against NHWC ones for
// both block sizes, batch and single-image parts; and the inputs they refuse.
#include "runtime/blocked_layout.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "graph/builder/op_builder.h"
#include "graph/builder/ops.h"
#include "runtime/session.h"
#include "tests/random_tensor.h"
#include "tests/test_util.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;

using testing::Uniform;

struct Step {
  Status status;
  std::vector<Tensor> values;
  std::vector<std::string> nodes;  // "name=op" of every node in the partition graphs
  std::map<std::string, int64_t> reserves;  // by node: its _reserve_axis_size
};

Step RunStep(const Scope& root, const std::vector<std::string>& fetches, bool remapping,
             const std::vector<std::pair<std::string, Tensor>>& feeds, int threads = 2) {
  SessionConfig config;
  config.remapping = remapping;
  config.intra_op_parallelism_threads = threads;
  config.inter_op_parallelism_threads = 1;
  auto session = testing::MakeSession(root, config);
  Step step;
  if (session == nullptr) {
    step.status = errors::Internal("no session");
    return step;
  }
  RunOptions options;
  options.output_partition_graphs = true;
  RunMetadata metadata;
  step.status = session->Run(options, feeds, fetches, {}, &step.values, &metadata);
  for (const GraphSpec& part : metadata.partition_graphs) {
    for (const NodeSpec& n : part.nodes) {
      step.nodes.push_back(n.name + "=" + n.op);
      int64_t reserve = 0;
      if (GetAttr(n.attrs, n.name, "_reserve_axis_size", &reserve).ok()) step.reserves[n.name] = reserve;
    }
  }
  return step;
}

// The step's nodes but its constants, for a failure's message (gtest prints 32 at most).
std::string NonConstants(const Step& s) {
  std::string out;
  for (const std::string& n : s.nodes) {
    if (n.size() < 6 || n.compare(n.size() - 6, 6, "=Const") != 0) out += n + " ";
  }
  return out;
}

bool Has(const Step& s, const std::string& entry) {
  return std::find(s.nodes.begin(), s.nodes.end(), entry) != s.nodes.end();
}
int Count(const Step& s, const std::string& op) {
  return static_cast<int>(std::count_if(s.nodes.begin(), s.nodes.end(), [&](const std::string& n) {
    return n.size() > op.size() && n.compare(n.size() - op.size() - 1, std::string::npos, "=" + op) == 0;
  }));
}

// Within 1e-4 of each value's magnitude, or `absolute` where that is larger.
void ExpectSameValues(const Step& got, const Step& want, float absolute = 0) {
  ASSERT_TRUE(got.status.ok()) << got.status;
  ASSERT_TRUE(want.status.ok()) << want.status;
  ASSERT_EQ(got.values.size(), want.values.size());
  for (size_t i = 0; i < want.values.size(); ++i) {
    SCOPED_TRACE(i);
    ASSERT_EQ(got.values[i].shape(), want.values[i].shape());
    const auto a = got.values[i].flat<float>(), b = want.values[i].flat<float>();
    for (int64_t j = 0; j < static_cast<int64_t>(b.size()); ++j) {
      ASSERT_NEAR(a[j], b[j], std::max(absolute, 1e-4f * std::max(1.0f, std::abs(b[j])))) << j;
    }
  }
}

Output Conv(const Scope& root, const char* name, Input x, int64_t c, int64_t o, int64_t k, int64_t stride,
            const char* padding, uint32_t seed) {
  return ops::Conv2D(root.WithOpName(name), x, ops::Const(root, Uniform({k, k, c, o}, seed, -0.3f, 0.3f)),
                     {1, stride, stride, 1}, padding);
}

// Keras's BatchNormalization frozen: x * scale + offset, one value per channel.
Output Affine(const Scope& root, const std::string& name, Input x, int64_t c, uint32_t seed) {
  auto scaled = ops::Mul(root.WithOpName(name + "_scale"), x, ops::Const(root, Uniform({c}, seed, 0.5f, 1.5f)));
  return ops::Add(root.WithOpName(name + "_offset"), scaled, ops::Const(root, Uniform({1, 1, 1, c}, seed + 1)));
}

// The ops of MobileNet, ResNet, DenseNet and EfficientNet in small, channels in whole blocks
// of 16 (so of 8 too: the same plan for either block): a 3-channel stem, a MaxPool,
// convolutions with their batch normalisations, a depthwise convolution with Relu6, a
// concatenation of an NHWC and a blocked tensor, a pre-activation normalisation, swish, an
// AvgPool, a squeeze-and-excitation through fewer channels than a block, two residual sums
// (with and without a Relu after), a scalar scale, an intermediate fetch, and a global
// average at the end.
struct Cnn {
  Scope root = Scope::NewRootScope();
  std::vector<std::string> fetches = {"logits", "block_out"};
  Cnn() {
    auto x = ops::Placeholder(root.WithOpName("x"), DataType::kFloat, TensorShape({-1, 17, 15, 3}));
    auto stem = ops::Relu(root.WithOpName("stem"), Affine(root, "stem_bn", Conv(root, "stem_conv", x, 3, 16, 3, 2, "SAME", 1), 16, 2));
    auto pool = ops::MaxPool(root.WithOpName("pool"), stem, {1, 3, 3, 1}, {1, 2, 2, 1}, "SAME");
    auto a = ops::Relu(root.WithOpName("a"), Affine(root, "a_bn", Conv(root, "a_conv", pool, 16, 32, 1, 1, "VALID", 4), 32, 5));
    auto dw = ops::Build(root.WithOpName("dw"), "DepthwiseConv2dNative",
                         {a, ops::Const(root, Uniform({3, 3, 32, 1}, 7, -0.5f, 0.5f))},
                         {{"strides", std::vector<int64_t>{1, 1, 1, 1}}, {"padding", std::string("SAME")}});
    auto dw_act = ops::Build(root.WithOpName("dw_act"), "Relu6", {Affine(root, "dw_bn", dw, 32, 8)});
    auto joined = ops::Concat(root.WithOpName("joined"), {pool, dw_act}, ops::Const(root, Tensor::Scalar<int32_t>(-1)));
    auto pre = ops::Relu(root.WithOpName("pre"), Affine(root, "pre_bn", joined, 48, 10));
    auto b_conv = Conv(root, "b_conv", pre, 48, 32, 3, 1, "SAME", 12);
    auto b = ops::Mul(root.WithOpName("b_swish"), b_conv, ops::Build(root.WithOpName("b_sigmoid"), "Sigmoid", {b_conv}));
    auto avg = ops::AvgPool(root.WithOpName("avg"), b, {1, 2, 2, 1}, {1, 2, 2, 1}, "SAME");
    auto squeezed = ops::Mean(root.WithOpName("squeezed"), avg, ops::Const(root, Tensor::FromVector<int32_t>({1, 2})),
                              {.keep_dims = true});
    // EfficientNet's squeeze-and-excitation narrows to fewer channels than a block: padded
    // to one, blocked like the rest.
    auto narrow = ops::Relu(root.WithOpName("narrow"), Conv(root, "se_reduce", squeezed, 32, 4, 1, 1, "VALID", 13));
    auto excite = ops::Build(root.WithOpName("excite"), "Sigmoid", {Conv(root, "se_expand", narrow, 4, 32, 1, 1, "VALID", 18)});
    auto se = ops::Mul(root.WithOpName("se"), avg, excite);
    auto c = ops::BiasAdd(root.WithOpName("c_bias"), Conv(root, "c_conv", se, 32, 32, 3, 1, "SAME", 14),
                          ops::Const(root, Uniform({32}, 15)));
    auto residual = ops::Relu(root.WithOpName("residual"), ops::Build(root.WithOpName("sum"), "AddV2", {c, se}));
    auto d = ops::BiasAdd(root.WithOpName("d_bias"), Conv(root, "d_conv", residual, 32, 32, 1, 1, "SAME", 16),
                          ops::Const(root, Uniform({32}, 17)));
    auto half = ops::Mul(root.WithOpName("block_out"), ops::Add(root.WithOpName("d_sum"), residual, d),
                         ops::Const(root, Tensor::Scalar<float>(0.5f)));
    ops::Mean(root.WithOpName("logits"), ops::Relu(root.WithOpName("last"), half),
              ops::Const(root, Tensor::FromVector<int32_t>({1, 2})));
  }
};

TEST(BlockedLayoutTest, ACnnRunsBlockedWithTheValuesOfNhwc) {
  Cnn net;
  for (int64_t batch : {1, 3}) {
    SCOPED_TRACE(batch);
    const std::vector<std::pair<std::string, Tensor>> feeds = {{"x", Uniform({batch, 17, 15, 3}, 20)}};
    const Step blocked = RunStep(net.root, net.fetches, true, feeds);
    const Step nhwc = RunStep(net.root, net.fetches, false, feeds);
    ExpectSameValues(blocked, nhwc);
    const std::string nodes = NonConstants(blocked);
    // The stem reads 3 channels: NHWC, fused with its pool, whose result enters the layout
    // (once) for the concatenation and the first blocked convolution.
    EXPECT_TRUE(Has(blocked, "pool=_FusedConv2DMaxPool")) << nodes;
    for (const char* name : {"a", "dw_act", "b_conv"}) {
      EXPECT_TRUE(Has(blocked, std::string(name) + "=_BlockedConv2D")) << name << " in " << nodes;
    }
    // The residual sums: each convolution adds its summand as it writes, the first its Relu too.
    for (const char* entry : {"residual=_BlockedConv2D", "d_sum=_BlockedConv2D"}) {
      EXPECT_TRUE(Has(blocked, entry)) << entry << " in " << nodes;
    }
    for (const char* gone : {"c_bias=_BlockedConv2D", "sum=AddV2", "d_bias=_BlockedConv2D"}) {
      EXPECT_FALSE(Has(blocked, gone)) << gone << " in " << nodes;
    }
    for (const char* entry : {"joined=ConcatV2", "pre=_FusedScaleOffset", "avg=_BlockedPool", "squeezed=Mean", "se=Mul",
                              "block_out=Mul", "last=Relu", "logits/blocked=Mean", "logits=Reshape", "excite=Sigmoid", "b_swish=_Swish",
                              "se_reduce=_BlockedConv2D", "narrow=Relu", "se_expand=_BlockedConv2D"}) {
      EXPECT_TRUE(Has(blocked, entry)) << entry << " in " << nodes;
    }
    // In: the pool's result (read twice); out: block_out for its fetch. The final Mean,
    // which drops rows and columns, is taken blocked.
    EXPECT_EQ(Count(blocked, "_ToBlocked"), 1) << nodes;
    EXPECT_EQ(Count(blocked, "_FromBlocked"), 1) << nodes;
    EXPECT_EQ(blocked.values[1].shape(), TensorShape({batch, 3, 2, 32}));
    EXPECT_EQ(Count(nhwc, "_BlockedConv2D") + Count(nhwc, "_ToBlocked"), 0) << "the switch is off";
  }
}

// DenseNet's dense block: each layer concatenates its convolution's channels onto all that
// came before. The links reserve room for the block's last, and values are NHWC's for one
// image (each link taking over the last one's buffer) and for several (copying).
TEST(BlockedLayoutTest, ADenseBlockReservesRoomForItsLastConcatenation) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DataType::kFloat, TensorShape({-1, 9, 7, 16}));
  Output block = ops::Relu(root.WithOpName("stem"), Conv(root, "stem_conv", x, 16, 32, 3, 1, "SAME", 1));
  int64_t channels = 32;
  for (int layer = 0; layer < 3; ++layer) {
    const std::string name = StrCat("layer", layer);
    auto pre = ops::Relu(root.WithOpName(name + "_pre"), Affine(root, name + "_bn", block, channels, 10 + layer));
    auto grown = Conv(root, (name + "_conv").c_str(), pre, channels, 16, 3, 1, "SAME", 20 + layer);
    block = ops::Concat(root.WithOpName(name), {block, grown}, ops::Const(root, Tensor::Scalar<int32_t>(3)));
    channels += 16;
  }
  ops::Relu(root.WithOpName("out"), Conv(root, "head", block, channels, 16, 1, 1, "SAME", 30));
  for (int64_t batch : {1, 2}) {
    SCOPED_TRACE(batch);
    const std::vector<std::pair<std::string, Tensor>> feeds = {{"x", Uniform({batch, 9, 7, 16}, 4)}};
    const Step blocked = RunStep(root, {"out", "layer1"}, true, feeds);
    const Step nhwc = RunStep(root, {"out", "layer1"}, false, feeds);
    ExpectSameValues(blocked, nhwc);
    const std::string nodes = NonConstants(blocked);
    for (const char* link : {"layer0=ConcatV2", "layer1=ConcatV2", "layer2=ConcatV2"}) {
      EXPECT_TRUE(Has(blocked, link)) << link << " in " << nodes;
    }
    const int64_t block_size = 80 / blocked.reserves.at("layer0");
    EXPECT_TRUE(block_size == 8 || block_size == 16) << block_size;
    EXPECT_EQ(blocked.reserves.at("layer1"), 80 / block_size);
    EXPECT_EQ(blocked.reserves.count("layer2"), 0u) << "the last link has the room it needs";
  }
}

// A first layer's convolution of 3 channels reads its NHWC input as it is and writes
// blocked: MobileNet's stem (no pool to fuse with), and ResNet's, whose zero padding of rows
// and columns before its pool is taken blocked too. No _ToBlocked after either.
TEST(BlockedLayoutTest, AFirstLayerReadsNhwcAndWritesBlocked) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DataType::kFloat, TensorShape({-1, 20, 18, 3}));
  auto stem = ops::Build(root.WithOpName("stem"), "Relu6",
                         {ops::BiasAdd(root.WithOpName("stem_bias"), Conv(root, "stem_conv", x, 3, 16, 3, 2, "SAME", 1),
                                       ops::Const(root, Uniform({16}, 2)))});
  ops::Relu(root.WithOpName("out"), Conv(root, "next", stem, 16, 8, 1, 1, "SAME", 3));
  auto conv1_pad = ops::Build(
      root.WithOpName("conv1_pad"), "Pad",
      {x, ops::Const(root, Tensor::FromVector<int32_t>({0, 0, 3, 3, 3, 3, 0, 0}, TensorShape({4, 2})))});
  auto conv1 = ops::Relu(root.WithOpName("conv1"), Conv(root, "conv1_conv", conv1_pad, 3, 8, 7, 2, "VALID", 5));
  // Uneven, int64, and a constant of PadV2's: still rows and columns only.
  auto pool1_pad = ops::Build(
      root.WithOpName("pool1_pad"), "PadV2",
      {conv1, ops::Const(root, Tensor::FromVector<int64_t>({0, 0, 1, 0, 0, 2, 0, 0}, TensorShape({4, 2}))),
       ops::Const(root, Tensor::Scalar(-0.5f))});
  auto pool1 = ops::MaxPool(root.WithOpName("pool1"), pool1_pad, {1, 3, 3, 1}, {1, 2, 2, 1}, "VALID");
  ops::Relu(root.WithOpName("res_out"), Conv(root, "res_next", pool1, 8, 16, 1, 1, "SAME", 6));
  for (int64_t batch : {1, 2}) {
    SCOPED_TRACE(batch);
    const std::vector<std::pair<std::string, Tensor>> feeds = {{"x", Uniform({batch, 20, 18, 3}, 4, -2, 2)}};
    const Step blocked = RunStep(root, {"out", "res_out"}, true, feeds);
    const Step nhwc = RunStep(root, {"out", "res_out"}, false, feeds);
    ExpectSameValues(blocked, nhwc);
    const std::string nodes = NonConstants(blocked);
    // (20 rows padded by 3 on each side are not what SAME pads: the pad stays.)
    for (const char* entry : {"stem=_BlockedConv2D", "conv1_pad=Pad", "conv1_conv=_BlockedConv2D", "conv1=Relu",
                              "pool1_pad=PadV2", "pool1=_BlockedPool"}) {
      EXPECT_TRUE(Has(blocked, entry)) << entry << " in " << nodes;
    }
    EXPECT_EQ(Count(blocked, "_ToBlocked"), 0) << nodes;
  }
}

// A convolution alone between NHWC ops would pay two reorders for its gain; one whose
// filter is a variable's (training) stays too.
TEST(BlockedLayoutTest, WhatWouldNotGainStaysNhwc) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DataType::kFloat, TensorShape({-1, 6, 6, 8}));
  auto w = ops::Placeholder(root.WithOpName("w"), DataType::kFloat, TensorShape({3, 3, 8, 8}));
  auto lone = Conv(root, "lone", x, 8, 8, 3, 1, "SAME", 1);
  auto fed = ops::Conv2D(root.WithOpName("fed"), ops::Relu(root.WithOpName("r"), lone), w, {1, 1, 1, 1}, "SAME");
  ops::Relu(root.WithOpName("out"), Conv(root, "after", fed, 8, 8, 1, 1, "SAME", 3));
  const std::vector<std::pair<std::string, Tensor>> feeds = {{"x", Uniform({2, 6, 6, 8}, 4)},
                                                             {"w", Uniform({3, 3, 8, 8}, 5)}};
  const Step blocked = RunStep(root, {"out"}, true, feeds);
  const Step nhwc = RunStep(root, {"out"}, false, feeds);
  ExpectSameValues(blocked, nhwc);
  EXPECT_EQ(Count(blocked, "_BlockedConv2D"), 0) << NonConstants(blocked);
  EXPECT_TRUE(Has(blocked, "lone=Conv2D"));
  EXPECT_TRUE(Has(blocked, "fed=Conv2D"));
}

// Channels that are not whole blocks (12 and 20, for blocks of 8 and of 16) are padded: the
// filters and biases with zeros, so that convolutions write zeros there and ignore what the
// ops between them make of it (a Sigmoid's 0.5, a scalar added). What would mix the padding
// into real channels stays out: a concatenation along the channels, a RealDiv (0 / 0), and
// a Mean that drops rows and columns, which reads a _FromBlocked that leaves the padding
// behind.
TEST(BlockedLayoutTest, ChannelsThatAreNotWholeBlocksArePadded) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DataType::kFloat, TensorShape({-1, 9, 7, 20}));
  auto bias = [&](const char* name, Input v, int64_t c, uint32_t seed) {
    return ops::BiasAdd(root.WithOpName(name), v, ops::Const(root, Uniform({c}, seed)));
  };
  auto expand = ops::Build(root.WithOpName("expand"), "Relu6", {bias("expand_bias", Conv(root, "expand_conv", x, 20, 12, 1, 1, "SAME", 1), 12, 2)});
  auto dw = ops::Build(root.WithOpName("dw"), "DepthwiseConv2dNative",
                       {expand, ops::Const(root, Uniform({3, 3, 12, 1}, 3, -0.5f, 0.5f))},
                       {{"strides", std::vector<int64_t>{1, 1, 1, 1}}, {"padding", std::string("SAME")}});
  auto dw_act = ops::Build(root.WithOpName("dw_act"), "Relu6", {bias("dw_bias", dw, 12, 4)});
  auto mixed = ops::Build(root.WithOpName("mixed"), "AddV2",
                          {bias("mix_bias", Conv(root, "mix_conv", dw_act, 12, 12, 1, 1, "SAME", 5), 12, 6), expand});
  auto project = bias("project", Conv(root, "project_conv", mixed, 12, 20, 1, 1, "SAME", 7), 20, 8);
  auto res = ops::Build(root.WithOpName("res"), "AddV2", {project, x});
  auto swish = ops::Mul(root.WithOpName("swish"), res, ops::Build(root.WithOpName("swish_sigmoid"), "Sigmoid", {res}));
  auto shifted = ops::Add(root.WithOpName("shifted"), swish, ops::Const(root, Tensor::Scalar<float>(0.25f)));
  auto squeezed = ops::Mean(root.WithOpName("squeezed"), shifted, ops::Const(root, Tensor::FromVector<int32_t>({1, 2})),
                            {.keep_dims = true});
  auto excited = ops::Mul(root.WithOpName("excited"), shifted,
                          ops::Build(root.WithOpName("excite"), "Sigmoid", {squeezed}));
  auto head = Conv(root, "head", excited, 20, 12, 3, 1, "SAME", 9);
  ops::Build(root.WithOpName("ratio"), "RealDiv",
             {head, ops::Add(root.WithOpName("denominator"), ops::Build(root.WithOpName("magnitude"), "Square", {head}),
                             ops::Const(root, Tensor::Scalar<float>(1.0f)))});
  ops::Concat(root.WithOpName("joined"), {head, shifted}, ops::Const(root, Tensor::Scalar<int32_t>(3)));
  ops::Mean(root.WithOpName("pooled"), excited, ops::Const(root, Tensor::FromVector<int32_t>({1, 2})));
  const std::vector<std::string> fetches = {"ratio", "joined", "pooled"};
  for (int64_t batch : {1, 3}) {
    SCOPED_TRACE(batch);
    const std::vector<std::pair<std::string, Tensor>> feeds = {{"x", Uniform({batch, 9, 7, 20}, 10, -2, 2)}};
    const Step blocked = RunStep(root, fetches, true, feeds);
    const Step nhwc = RunStep(root, fetches, false, feeds);
    ExpectSameValues(blocked, nhwc);
    const std::string nodes = NonConstants(blocked);
    for (const char* entry : {"expand=_BlockedConv2D", "dw_act=_BlockedConv2D", "mixed=_BlockedConv2D",
                              "project=_BlockedConv2D", "res=AddV2", "swish=_Swish", "shifted=Add", "squeezed=Mean",
                              "excited=Mul", "head=_BlockedConv2D", "magnitude=Square", "denominator=Add",
                              "ratio=RealDiv", "joined=ConcatV2", "pooled=Mean"}) {
      EXPECT_TRUE(Has(blocked, entry)) << entry << " in " << nodes;
    }
    // In: x, once for the first convolution and the residual sum. Out: the head and the
    // denominator for the RealDiv, the head and `shifted` for the concatenation, `excited`
    // for the Mean.
    EXPECT_EQ(Count(blocked, "_ToBlocked"), 1) << nodes;
    EXPECT_EQ(Count(blocked, "_FromBlocked"), 4) << nodes;
    EXPECT_EQ(Count(blocked, "Reshape"), 0) << nodes;
  }
}

// _ToBlocked -> _BlockedConv2D (full and depthwise, with and without a bias and activation)
// -> _FromBlocked against Conv2D / DepthwiseConv2dNative and the same bias and activation,
// for blocks of 8 and 16; one image (cut into parts of its output channels) and a batch; and
// a full convolution of 3 channels that reads its NHWC input as it is.
TEST(BlockedLayoutTest, TheBlockedConvolutionMatchesNhwc) {
  for (int64_t block : {8, 16}) {
    for (const char* kind : {"full", "depthwise", "full from NHWC"}) {
      for (const char* fused : {"", "BiasAdd", "BiasAdd,Relu", "BiasAdd,Relu6"}) {
        for (int64_t batch : {1, 3}) {
          SCOPED_TRACE(StrCat("block ", block, " ", kind, " fused '", fused, "' batch ", batch));
          Scope root = Scope::NewRootScope();
          const int64_t depthwise = std::string(kind) == "depthwise";
          const bool nhwc_input = std::string(kind) == "full from NHWC";
          const int64_t c = nhwc_input ? 3 : (depthwise ? 4 : 2) * block, o = depthwise ? c : 3 * block;
          auto x = ops::Placeholder(root.WithOpName("x"), DataType::kFloat);
          Tensor filter = Uniform({3, 3, c, depthwise ? 1 : o}, 2, -2, 2);
          Tensor bias = Uniform({o}, 3);
          AttrMap attrs = {{"strides", std::vector<int64_t>{1, 1, 1, 1}}, {"padding", std::string("SAME")}};
          auto f = ops::Const(root, filter);
          Output want = ops::Build(root.WithOpName("nhwc"), depthwise ? "DepthwiseConv2dNative" : "Conv2D", {x, f}, attrs);
          const std::string ops_list = fused;
          const Input in = nhwc_input ? Input(x) : ops::Build(root.WithOpName("in"), "_ToBlocked", {x}, {{"block", block}});
          std::vector<Input> inputs = {in, f};
          if (!ops_list.empty()) {
            want = ops::BiasAdd(root.WithOpName("biased"), want, ops::Const(root, bias));
            inputs.push_back(ops::Const(root, bias));
          }
          if (ops_list == "BiasAdd,Relu") want = ops::Relu(root.WithOpName("want"), want);
          if (ops_list == "BiasAdd,Relu6") want = ops::Build(root.WithOpName("want"), "Relu6", {want});
          ops::Identity(root.WithOpName("want_out"), want);
          attrs["fused_ops"] = ops_list;
          attrs["num_args"] = int64_t{ops_list.empty() ? 0 : 1};
          attrs["depthwise"] = depthwise;
          attrs["block"] = block;
          if (nhwc_input) attrs["input_layout"] = std::string("NHWC");
          auto conv = ops::Build(root.WithOpName("blocked"), "_BlockedConv2D", inputs, attrs);
          ops::Build(root.WithOpName("got"), "_FromBlocked", {conv});
          // Blocks of 8: large enough that one image's convolution is cut into two parts of its
          // channels. Blocks of 16 (AVX-512's) are small: without AVX-512 oneDNN runs them
          // through its reference convolution.
          const int64_t size = block == 16 ? 13 : depthwise ? 121 : 61;
          const std::vector<std::pair<std::string, Tensor>> feeds = {{"x", Uniform({batch, size, size, c}, 4, -3, 3)}};
          Step step = RunStep(root, {"got", "want_out"}, false, feeds);
          ASSERT_TRUE(step.status.ok()) << step.status;
          Step got, want_step;
          got.values = {step.values[0]};
          want_step.values = {step.values[1]};
          // A full convolution of whole blocks runs as Winograd's F(4x4, 3x3), whose rounding
          // is relative to the terms summed (winograd_conv.h): here at most 9 * c of 3 * 2.
          const bool winograd = !depthwise && !nhwc_input;
          ExpectSameValues(got, want_step, winograd ? 1e-5f * 9 * c * 3 * 2 : 0);
          EXPECT_EQ(step.values[0].shape(), TensorShape({batch, size, size, o}));
        }
      }
    }
  }
}

// A blocked tensor is pooled as NHWC images of one block each: MaxPool and AvgPool (SAME,
// averaging over the cells inside the input) give the NHWC pool's values, blocks of 8 and 16.
TEST(BlockedLayoutTest, TheBlockedPoolMatchesNhwc) {
  for (const char* pooling : {"MAX", "AVG"}) {
    for (int64_t block : {8, 16}) {
      SCOPED_TRACE(StrCat(pooling, " block ", block));
      Scope root = Scope::NewRootScope();
      auto x = ops::Placeholder(root.WithOpName("x"), DataType::kFloat);
      const std::vector<int64_t> ksize = {1, 3, 2, 1}, strides = {1, 2, 2, 1};
      if (std::string(pooling) == "MAX") ops::MaxPool(root.WithOpName("want"), x, ksize, strides, "SAME");
      else ops::AvgPool(root.WithOpName("want"), x, ksize, strides, "SAME");
      auto in = ops::Build(root.WithOpName("in"), "_ToBlocked", {x}, {{"block", block}});
      auto pooled = ops::Build(root.WithOpName("pooled"), "_BlockedPool", {in},
                               {{"ksize", ksize}, {"strides", strides}, {"padding", std::string("SAME")},
                                {"pooling", std::string(pooling)}, {"block", block}});
      ops::Build(root.WithOpName("got"), "_FromBlocked", {pooled});
      Step step = RunStep(root, {"got", "want"}, false, {{"x", Uniform({2, 7, 5, 48}, 1)}});
      ASSERT_TRUE(step.status.ok()) << step.status;
      Step got, expected;
      got.values = {step.values[0]};
      expected.values = {step.values[1]};
      ExpectSameValues(got, expected);
    }
  }
}

// Tensors that are not what the blocked kernels read fail the step naming the node; the
// session goes on working.
TEST(BlockedLayoutTest, BadInputsAreErrorsNamingTheNode) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DataType::kFloat);
  ops::Build(root.WithOpName("to"), "_ToBlocked", {x}, {{"block", int64_t{8}}});
  ops::Build(root.WithOpName("from"), "_FromBlocked", {x});
  auto twelve = ops::Build(root.WithOpName("twelve"), "_ToBlocked", {x}, {{"block", int64_t{8}}});
  ops::Build(root.WithOpName("back"), "_FromBlocked", {twelve}, {{"channels", int64_t{12}}});
  ops::Build(root.WithOpName("too_many"), "_FromBlocked", {twelve}, {{"channels", int64_t{20}}});
  ops::Build(root.WithOpName("conv"), "_BlockedConv2D", {x, ops::Const(root, Uniform({1, 1, 8, 8}, 1))},
             {{"strides", std::vector<int64_t>{1, 1, 1, 1}}, {"padding", std::string("SAME")},
              {"num_args", int64_t{0}}, {"block", int64_t{8}}});
  auto blocked = ops::Build(root.WithOpName("blocked"), "_ToBlocked", {x}, {{"block", int64_t{8}}});
  ops::Build(root.WithOpName("residual"), "_BlockedConv2D",
             {blocked, ops::Const(root, Uniform({1, 1, 8, 8}, 1)), ops::Const(root, Uniform({8}, 2)),
              ops::Const(root, Uniform({1, 1, 3, 3, 8}, 3))},
             {{"strides", std::vector<int64_t>{1, 1, 1, 1}}, {"padding", std::string("SAME")},
              {"num_args", int64_t{2}}, {"fused_ops", std::string("BiasAdd,Add,Relu")}, {"block", int64_t{8}}});
  auto session = testing::MakeSession(root);
  ASSERT_NE(session, nullptr);
  std::vector<Tensor> out;
  Status summand = session->Run({{"x", Uniform({1, 2, 2, 8}, 3)}}, {"residual"}, {}, &out);
  EXPECT_EQ(summand.code(), Code::kInvalidArgument);
  EXPECT_THAT(summand.message(), HasSubstr("residual"));
  EXPECT_THAT(summand.message(), HasSubstr("summand"));
  Status s = session->Run({{"x", Uniform({2, 2, 8}, 2)}}, {"to"}, {}, &out);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("to"));
  EXPECT_THAT(s.message(), HasSubstr("4-D"));
  const std::vector<std::pair<std::string, Tensor>> odd = {{"x", Uniform({1, 2, 2, 12}, 2)}};
  s = session->Run(odd, {"from"}, {}, &out);
  EXPECT_THAT(s.message(), HasSubstr("5-D"));
  // Channels that are not whole blocks: zeros after them in the last block, and back.
  ASSERT_TRUE(session->Run(odd, {"to", "back"}, {}, &out).ok());
  ASSERT_EQ(out[0].shape(), TensorShape({1, 2, 2, 2, 8}));
  for (int64_t pixel = 0; pixel < 4; ++pixel) {
    for (int64_t lane = 4; lane < 8; ++lane) EXPECT_EQ(out[0].data<float>()[(4 + pixel) * 8 + lane], 0.f) << pixel;
  }
  ASSERT_EQ(out[1].shape(), odd[0].second.shape());
  for (int64_t i = 0; i < 48; ++i) EXPECT_EQ(out[1].data<float>()[i], odd[0].second.data<float>()[i]) << i;
  s = session->Run(odd, {"too_many"}, {}, &out);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("too_many"));
  EXPECT_THAT(s.message(), HasSubstr("20 channels are not 2 blocks of 8"));
  s = session->Run({{"x", Uniform({1, 2, 2, 8}, 3)}}, {"conv"}, {}, &out);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("conv"));
  EXPECT_THAT(s.message(), HasSubstr("blocked tensor"));
  ASSERT_TRUE(session->Run({{"x", Uniform({1, 2, 2, 16}, 4)}}, {"to"}, {}, &out).ok());
  EXPECT_EQ(out[0].shape(), TensorShape({1, 2, 2, 2, 8}));

  // A layout the convolution cannot read, and a block the pool has no kernel for.
  Scope layout = Scope::NewRootScope();
  ops::Build(layout.WithOpName("bad_layout"), "_BlockedConv2D",
             {ops::Const(layout, Uniform({1, 2, 2, 3}, 5)), ops::Const(layout, Uniform({1, 1, 3, 8}, 6))},
             {{"strides", std::vector<int64_t>{1, 1, 1, 1}}, {"padding", std::string("SAME")},
              {"num_args", int64_t{0}}, {"block", int64_t{8}}, {"input_layout", std::string("NCHW")}});
  EXPECT_THAT(layout.status().message(), HasSubstr("input_layout"));
  Scope pool = Scope::NewRootScope();
  ops::Build(pool.WithOpName("bad_pool"), "_BlockedPool", {ops::Const(pool, Uniform({1, 1, 2, 2, 4}, 7))},
             {{"ksize", std::vector<int64_t>{1, 2, 2, 1}}, {"strides", std::vector<int64_t>{1, 1, 1, 1}},
              {"padding", std::string("VALID")}, {"pooling", std::string("MAX")}, {"block", int64_t{4}}});
  EXPECT_EQ(pool.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(pool.status().message(), HasSubstr("bad_pool"));
  EXPECT_THAT(pool.status().message(), HasSubstr("block must be 8 or 16"));
  // Shape inference sees a block of 0, and channels that padding to a whole block would
  // overflow, as errors.
  for (const auto& [block, channels] : std::vector<std::pair<int64_t, int64_t>>{
           {0, 8}, {16, std::numeric_limits<int64_t>::max()}}) {
    Scope scope = Scope::NewRootScope();
    auto in = ops::Placeholder(scope.WithOpName("in"), DataType::kFloat, TensorShape({1, 1, 1, channels}));
    ops::Build(scope.WithOpName("hostile"), "_ToBlocked", {in}, {{"block", block}});
    EXPECT_EQ(scope.status().code(), Code::kInvalidArgument) << block;
    EXPECT_THAT(scope.status().message(), HasSubstr("hostile"));
  }
}

}  // namespace
}  // namespace tessera
