// The remapper: Conv2D + BiasAdd (+ Relu) (+ MaxPool) on a CPU become one _FusedConv2D or
// _FusedConv2DMaxPool in the step's partition graphs, with the values of the unfused graph; a
// node something else reads stays. In training, the pool's gradient and the ReluGrad after it
// become one _FusedConv2DMaxPoolGrad, which also sums the bias's gradient, with the gradients
// of the unfused graph; in a first layer, one _FusedConv2DMaxPoolBackpropFilter with the
// filter's gradient too.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <utility>

#include "graph/builder/gradients.h"
#include "graph/builder/op_builder.h"
#include "graph/builder/ops.h"
#include "runtime/session.h"
#include "tests/test_util.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;

Tensor Random(const TensorShape& shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  Tensor t(DataType::kFloat, shape);
  for (float& v : t.flat<float>()) v = u(rng);
  return t;
}

struct Step {
  std::vector<Tensor> values;
  std::vector<std::string> ops;  // of every node in the partition graphs, "name=op"
};

Step RunStep(const Scope& root, const std::vector<std::string>& fetches, bool remapping) {
  SessionConfig config;
  config.remapping = remapping;
  config.constant_folding = false;  // the nets' inputs are constants
  auto session = testing::MakeSession(root, config);
  Step step;
  if (session == nullptr) return step;
  RunOptions options;
  options.output_partition_graphs = true;
  RunMetadata metadata;
  Status s = session->Run(options, {}, fetches, {}, &step.values, &metadata);
  EXPECT_TRUE(s.ok()) << s;
  for (const GraphSpec& part : metadata.partition_graphs) {
    for (const NodeSpec& n : part.nodes) {
      std::string fused;
      if (n.op == "_FusedConv2D" || n.op == "_FusedConv2DMaxPool" || n.op == "_FusedConv2DMaxPoolWithArgmax" ||
          n.op == "_FusedMatMul" || n.op == "_FusedDepthwiseConv2dNative") {
        EXPECT_TRUE(GetAttr(n.attrs, n.name, "fused_ops", &fused).ok());
      }
      step.ops.push_back(n.name + "=" + n.op + (fused.empty() ? "" : "(" + fused + ")"));
    }
  }
  return step;
}

// x [2, 7, 7, 3] -> conv 3x3x3x5 SAME stride 2 -> bias -> relu.
struct Net {
  Scope root = Scope::NewRootScope();
  Output conv, bias, relu;
  Net() {
    Output x = ops::Const(root.WithOpName("x"), Random(TensorShape({2, 7, 7, 3}), 1));
    Output f = ops::Const(root.WithOpName("f"), Random(TensorShape({3, 3, 3, 5}), 2));
    Output b = ops::Const(root.WithOpName("b"), Random(TensorShape({5}), 3));
    conv = ops::Conv2D(root.WithOpName("conv"), x, f, {1, 2, 2, 1}, "SAME");
    bias = ops::BiasAdd(root.WithOpName("bias"), conv, b);
    relu = ops::Relu(root.WithOpName("relu"), bias);
  }
};

void ExpectNear(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.shape(), b.shape());
  for (int64_t i = 0; i < a.NumElements(); ++i) {
    const float want = b.data<float>()[i];
    EXPECT_NEAR(a.data<float>()[i], want, 1e-5 * std::max(1.f, std::abs(want))) << i;
  }
}

bool Has(const Step& s, const std::string& entry) {
  return std::find(s.ops.begin(), s.ops.end(), entry) != s.ops.end();
}

TEST(RemapperTest, ConvBiasAddReluBecomeOneNode) {
  Net net;
  Step fused = RunStep(net.root, {"relu"}, true);
  Step plain = RunStep(net.root, {"relu"}, false);
  ASSERT_EQ(fused.values.size(), 1u);
  ASSERT_EQ(plain.values.size(), 1u);
  ExpectNear(fused.values[0], plain.values[0]);
  EXPECT_TRUE(Has(fused, "relu=_FusedConv2D(BiasAdd,Relu)"));
  EXPECT_FALSE(Has(fused, "conv=Conv2D"));
  EXPECT_FALSE(Has(fused, "bias=BiasAdd"));
  EXPECT_TRUE(Has(plain, "conv=Conv2D"));
  EXPECT_TRUE(Has(plain, "relu=Relu"));
  float negative = 0;
  for (float v : plain.values[0].flat<float>()) negative = std::min(negative, v);
  EXPECT_EQ(negative, 0);
}

// MobileNet's activation: on a CPU, Relu6 joins a convolution's chain as Relu does (clipping
// at 6 too); a depthwise convolution, its BiasAdd and Relu6 become one
// _FusedDepthwiseConv2dNative.
TEST(RemapperTest, Relu6JoinsAConvolutionsChainOnTheCpuDepthwiseToo) {
  for (const char* op : {"Conv2D", "DepthwiseConv2dNative"}) {
    SCOPED_TRACE(op);
    const bool depthwise = std::string(op) == "DepthwiseConv2dNative";
    Scope root = Scope::NewRootScope();
    Tensor f = Random(TensorShape({3, 3, 3, depthwise ? 2 : 5}), 2);
    for (float& v : f.flat<float>()) v *= 6;  // outputs well past 6 as well as below 0
    auto conv = ops::Build(root.WithOpName("conv"), op,
                           {ops::Const(root, Random(TensorShape({2, 7, 7, 3}), 1)), ops::Const(root, f)},
                           {{"strides", std::vector<int64_t>{1, 2, 2, 1}}, {"padding", std::string("SAME")}});
    auto bias = ops::BiasAdd(root.WithOpName("bias"), conv, ops::Const(root, Random(TensorShape({6 - !depthwise}), 3)));
    ops::Build(root.WithOpName("relu6"), "Relu6", {bias});
    Step fused = RunStep(root, {"relu6"}, true);
    Step plain = RunStep(root, {"relu6"}, false);
    ASSERT_EQ(fused.values.size(), 1u);
    ASSERT_EQ(plain.values.size(), 1u);
    ExpectNear(fused.values[0], plain.values[0]);
    EXPECT_TRUE(Has(fused, StrCat("relu6=", depthwise ? "_FusedDepthwiseConv2dNative" : "_FusedConv2D", "(BiasAdd,Relu6)")));
    EXPECT_FALSE(Has(fused, "bias=BiasAdd"));
    const auto values = plain.values[0].flat<float>();
    EXPECT_EQ(*std::max_element(values.begin(), values.end()), 6.f);
    EXPECT_EQ(*std::min_element(values.begin(), values.end()), 0.f);
  }
}

TEST(RemapperTest, ANodeSomethingElseReadsStays) {
  Net net;
  // The BiasAdd is fetched too: conv and bias fuse, the Relu reads the fused node.
  Step s = RunStep(net.root, {"relu", "bias"}, true);
  Step plain = RunStep(net.root, {"relu", "bias"}, false);
  ASSERT_EQ(s.values.size(), 2u);
  ExpectNear(s.values[0], plain.values[0]);
  ExpectNear(s.values[1], plain.values[1]);
  EXPECT_TRUE(Has(s, "bias=_FusedConv2D(BiasAdd)"));
  EXPECT_TRUE(Has(s, "relu=Relu"));
  // The convolution is fetched: nothing fuses.
  s = RunStep(net.root, {"relu", "conv"}, true);
  EXPECT_TRUE(Has(s, "conv=Conv2D"));
  EXPECT_TRUE(Has(s, "bias=BiasAdd"));
}

TEST(RemapperTest, GradientsThroughTheFusedNodeAreUnchanged) {
  Net net;
  Output loss = ops::Sum(net.root.WithOpName("loss"), ops::Square(net.root, net.relu),
                         ops::Const(net.root, Tensor::FromVector<int32_t>({0, 1, 2, 3})));
  std::vector<Output> grads;
  ASSERT_TRUE(AddSymbolicGradients(net.root, {loss}, {net.conv.node->input_edge(1)->src}, &grads).ok());
  Step fused = RunStep(net.root, {grads[0].name(), "loss"}, true);
  Step plain = RunStep(net.root, {grads[0].name(), "loss"}, false);
  ASSERT_EQ(fused.values.size(), 2u);
  ExpectNear(fused.values[0], plain.values[0]);
  ExpectNear(fused.values[1], plain.values[1]);
}

// 7 images of 28x28x3 -> conv to 48 channels (150 KB an image: made two at a time, so the
// parts of 4 and 3 images end in a full and a partial chunk) -> bias -> relu -> max pool.
// 3 channels into 48 filters run the small convolution (devices/cpu/small_conv.h); 16 into
// 32, oneDNN's (Winograd's where the machine has AVX-512, pooled from its blocked output).
TEST(RemapperTest, AMaxPoolReadingTheChainAloneJoinsIt) {
  for (const auto& [channels, filters] : {std::pair<int64_t, int64_t>{3, 48}, {16, 32}})
  for (const char* padding : {"VALID", "SAME"}) {
    SCOPED_TRACE(StrCat(channels, " channels, ", filters, " filters, ", padding));
    Scope root = Scope::NewRootScope();
    Output x = ops::Const(root.WithOpName("x"), Random(TensorShape({7, 28, 28, channels}), 4));
    Output f = ops::Const(root.WithOpName("f"), Random(TensorShape({3, 3, channels, filters}), 5));
    Output b = ops::Const(root.WithOpName("b"), Random(TensorShape({filters}), 6));
    Output conv = ops::Conv2D(root.WithOpName("conv"), x, f, {1, 1, 1, 1}, "SAME");
    Output relu = ops::Relu(root.WithOpName("relu"), ops::BiasAdd(root.WithOpName("bias"), conv, b));
    ops::MaxPool(root.WithOpName("pool"), relu, {1, 3, 3, 1}, {1, 2, 2, 1}, padding);
    Step fused = RunStep(root, {"pool"}, true);
    Step plain = RunStep(root, {"pool"}, false);
    ASSERT_EQ(fused.values.size(), 1u);
    ASSERT_EQ(plain.values.size(), 1u);
    ExpectNear(fused.values[0], plain.values[0]);
    EXPECT_TRUE(Has(fused, "pool=_FusedConv2DMaxPool(BiasAdd,Relu)"));
    EXPECT_FALSE(Has(fused, "relu=Relu"));
    // The Relu is fetched as well: the pool stays apart.
    Step both = RunStep(root, {"pool", "relu"}, true);
    ASSERT_EQ(both.values.size(), 2u);
    ExpectNear(both.values[0], plain.values[0]);
    EXPECT_TRUE(Has(both, "relu=_FusedConv2D(BiasAdd,Relu)"));
    EXPECT_TRUE(Has(both, "pool=MaxPool"));
  }
}

int Count(const Step& s, const std::string& op) {
  return static_cast<int>(std::count_if(s.ops.begin(), s.ops.end(), [&](const std::string& entry) {
    return entry.size() > op.size() && entry.compare(entry.size() - op.size(), op.size(), op) == 0 &&
           entry[entry.size() - op.size() - 1] == '=';
  }));
}

// A layer as training builds it: x -> conv 3x3 SAME -> bias (-> relu) -> max pool, the loss
// the pool weighted by random numbers and summed (so that a window whose maximum the ReLU made
// zero still gets a gradient, which ReluGrad must stop), and the gradients of the filter, the
// bias and (unless it is a first layer) x, in that order after the pool in `fetches`.
struct TrainingLayer {
  Scope root = Scope::NewRootScope();
  std::vector<std::string> fetches;
  TrainingLayer(const Tensor& x, const Tensor& filter, bool relu, int64_t window, int64_t stride,
                const std::string& padding, bool first_layer = false, int64_t conv_stride = 1) {
    Output xs = ops::Const(root.WithOpName("x"), x);
    Output f = ops::Const(root.WithOpName("f"), filter);
    Output b = ops::Const(root.WithOpName("b"), Random(TensorShape({filter.dim(3)}), 7));
    Output conv = ops::Conv2D(root.WithOpName("conv"), xs, f, {1, conv_stride, conv_stride, 1}, "SAME");
    Output out = ops::BiasAdd(root.WithOpName("bias"), conv, b);
    if (relu) out = ops::Relu(root.WithOpName("relu"), out);
    Output pool = ops::MaxPool(root.WithOpName("pool"), out, {1, window, window, 1}, {1, stride, stride, 1}, padding);
    const int64_t size = (x.dim(1) + conv_stride - 1) / conv_stride;
    const int64_t pooled = padding == "SAME" ? (size + stride - 1) / stride : (size - window) / stride + 1;
    Output weights = ops::Const(root, Random(TensorShape({x.dim(0), pooled, pooled, filter.dim(3)}), 16));
    Output loss = ops::Sum(root.WithOpName("loss"), ops::Mul(root, pool, weights),
                           ops::Const(root, Tensor::FromVector<int32_t>({0, 1, 2, 3})));
    std::vector<Output> grads;
    std::vector<Output> of = {f, b};
    if (!first_layer) of.push_back(xs);
    EXPECT_TRUE(AddSymbolicGradients(root, {loss}, of, &grads).ok());
    fetches = {"pool"};
    for (const Output& g : grads) fetches.push_back(g.name());
  }
};

// Pools whose windows tile the input, leave its last row and column out, and overlap.
struct PoolCase {
  int64_t size, window, stride;
  const char* padding;
};
constexpr PoolCase kPoolCases[] = {{12, 2, 2, "VALID"}, {11, 2, 2, "VALID"}, {11, 3, 2, "SAME"}};

// Runs `layer` with the remapper and without, expecting every fetch's values alike; returns
// both steps, {fused, plain}, for the callers to check which nodes ran.
std::pair<Step, Step> RunFusedAndPlain(const TrainingLayer& layer) {
  std::pair<Step, Step> steps = {RunStep(layer.root, layer.fetches, true), RunStep(layer.root, layer.fetches, false)};
  const auto& [fused, plain] = steps;
  EXPECT_EQ(fused.values.size(), layer.fetches.size());
  EXPECT_EQ(plain.values.size(), layer.fetches.size());
  for (size_t i = 0; i < layer.fetches.size() && i < fused.values.size() && i < plain.values.size(); ++i) {
    SCOPED_TRACE(layer.fetches[i]);
    ExpectNear(fused.values[i], plain.values[i]);
  }
  return steps;
}

// The fused pool's entry in a step's ops.
std::string FusedPool(bool relu) {
  return relu ? "pool=_FusedConv2DMaxPoolWithArgmax(BiasAdd,Relu)" : "pool=_FusedConv2DMaxPoolWithArgmax(BiasAdd)";
}

// With and without a ReLU between.
TEST(RemapperTest, InTrainingThePoolKeepsItsArgmaxAndOneNodeComputesTheGradient) {
  // 20 filters: a block of 16 pooled together, then 4 one at a time; 16 channels into 32
  // filters: Winograd's convolution where the machine has AVX-512, pooled from its blocked
  // output.
  for (const auto& [channels, filters] : {std::pair<int64_t, int64_t>{4, 20}, {16, 32}})
  for (const PoolCase& c : kPoolCases)
  for (bool relu : {true, false}) {
    SCOPED_TRACE(StrCat(channels, " channels, ", filters, " filters; ", c.size, "x", c.size, " window ", c.window,
                        " stride ", c.stride, " ", c.padding, relu ? " relu" : ""));
    TrainingLayer layer(Random(TensorShape({3, c.size, c.size, channels}), 8),
                        Random(TensorShape({3, 3, channels, filters}), 9), relu, c.window, c.stride, c.padding);
    ASSERT_EQ(layer.fetches.size(), 4u);
    const auto [fused, plain] = RunFusedAndPlain(layer);
    EXPECT_TRUE(Has(fused, FusedPool(relu)));
    EXPECT_EQ(Count(fused, "_FusedConv2DMaxPoolGrad"), 1);
    EXPECT_EQ(Count(fused, "MaxPoolGrad"), 0);
    EXPECT_EQ(Count(fused, "ReluGrad"), 0);
    EXPECT_EQ(Count(fused, "BiasAddGrad"), 0);
    EXPECT_EQ(Count(plain, "MaxPoolGrad"), 1);
    EXPECT_EQ(Count(plain, "BiasAddGrad"), 1);
  }
}

// A first layer (no gradient of x): one _FusedConv2DMaxPoolBackpropFilter makes the filter's
// and the bias's gradients from the pooled gradient, with the values of the unfused graph.
// Filters of few taps (1 or 3 channels) in whole blocks of 16 run the small convolution
// (devices/cpu/small_conv.h) forward and back, one or two blocks at a time, over the padding
// of SAME and with a strided convolution; 4 channels into 20 filters run oneDNN's.
TEST(RemapperTest, AFirstLayerSumsItsFilterGradientFromThePooledGradient) {
  struct Layer {
    int64_t channels, filters, conv_stride;
  };
  for (const Layer& l : {Layer{1, 32, 1}, Layer{1, 48, 2}, Layer{3, 16, 1}, Layer{4, 20, 1}})
  for (const PoolCase& c : kPoolCases)
  for (bool relu : {true, false}) {
    SCOPED_TRACE(StrCat(l.channels, " channels, ", l.filters, " filters, stride ", l.conv_stride, "; pool ", c.size,
                        "x", c.size, " window ", c.window, " stride ", c.stride, " ", c.padding, relu ? " relu" : ""));
    TrainingLayer layer(Random(TensorShape({3, c.size * l.conv_stride, c.size * l.conv_stride, l.channels}), 17),
                        Random(TensorShape({3, 3, l.channels, l.filters}), 18), relu, c.window, c.stride, c.padding,
                        /*first_layer=*/true, l.conv_stride);
    ASSERT_EQ(layer.fetches.size(), 3u);
    const auto [fused, plain] = RunFusedAndPlain(layer);
    EXPECT_TRUE(Has(fused, FusedPool(relu)));
    EXPECT_EQ(Count(fused, "_FusedConv2DMaxPoolBackpropFilter"), 1);
    EXPECT_EQ(Count(fused, "_FusedConv2DMaxPoolGrad"), 0);
    EXPECT_EQ(Count(fused, "Conv2DBackpropFilter"), 0);
    EXPECT_EQ(Count(plain, "Conv2DBackpropFilter"), 1);
    EXPECT_EQ(Count(plain, "Conv2DBackpropInput"), 0);
  }
}

// x all ones makes every window of the convolution's output hold equal values: the gradient
// goes to the first of them, as MaxPoolGrad sends it, which the gradient of x tells apart.
TEST(RemapperTest, TiesInAWindowSendTheGradientToTheFirstAsMaxPoolGradDoes) {
  Tensor positive = Random(TensorShape({3, 3, 1, 2}), 10);
  for (float& v : positive.flat<float>()) v = std::abs(v) + 0.1f;
  Tensor ones(DataType::kFloat, TensorShape({1, 8, 8, 1}));
  for (float& v : ones.flat<float>()) v = 1;
  TrainingLayer layer(ones, positive, true, 2, 2, "VALID");
  Step fused = RunStep(layer.root, layer.fetches, true);
  Step plain = RunStep(layer.root, layer.fetches, false);
  ASSERT_EQ(fused.values.size(), 4u);
  ASSERT_EQ(plain.values.size(), 4u);
  ASSERT_EQ(Count(fused, "_FusedConv2DMaxPoolGrad"), 1);
  ExpectNear(fused.values[3], plain.values[3]);
}

// Something else reads the Relu (here a fetch): the pool, its gradient and the ReluGrad stay.
TEST(RemapperTest, InTrainingAReluSomethingElseReadsKeepsThePoolApart) {
  TrainingLayer layer(Random(TensorShape({2, 8, 8, 4}), 11), Random(TensorShape({3, 3, 4, 6}), 12), true, 2, 2,
                      "VALID");
  layer.fetches.push_back("relu");
  Step fused = RunStep(layer.root, layer.fetches, true);
  EXPECT_TRUE(Has(fused, "relu=_FusedConv2D(BiasAdd,Relu)"));
  EXPECT_TRUE(Has(fused, "pool=MaxPool"));
  EXPECT_EQ(Count(fused, "MaxPoolGrad"), 1);
  EXPECT_EQ(Count(fused, "ReluGrad"), 1);
  EXPECT_EQ(Count(fused, "_FusedConv2DMaxPoolGrad"), 0);
}

// MatMul + BiasAdd (+ Relu): one _FusedMatMul, transposed operands included, and gradients
// through it unchanged. 37 rows go to oneDNN, 5 to Eigen: both apply the bias and ReLU.
TEST(RemapperTest, MatMulBiasAddReluBecomeOneNode) {
  for (int64_t rows : {37, 5})
  for (bool transpose_b : {false, true}) {
    SCOPED_TRACE(StrCat(rows, " rows, transpose_b ", transpose_b));
    Scope root = Scope::NewRootScope();
    Output x = ops::Const(root.WithOpName("x"), Random(TensorShape({rows, 300}), 10));
    Output w = ops::Const(root.WithOpName("w"), Random(transpose_b ? TensorShape({70, 300}) : TensorShape({300, 70}), 11));
    Output b = ops::Const(root.WithOpName("b"), Random(TensorShape({70}), 12));
    Output mm = ops::MatMul(root.WithOpName("mm"), x, w, {.transpose_b = transpose_b});
    Output relu = ops::Relu(root.WithOpName("relu"), ops::BiasAdd(root.WithOpName("bias"), mm, b));
    Output loss = ops::Sum(root.WithOpName("loss"), ops::Square(root, relu),
                           ops::Const(root, Tensor::FromVector<int32_t>({0, 1})));
    std::vector<Output> grads;
    ASSERT_TRUE(AddSymbolicGradients(root, {loss}, {w}, &grads).ok());
    Step fused = RunStep(root, {"relu", grads[0].name()}, true);
    Step plain = RunStep(root, {"relu", grads[0].name()}, false);
    ASSERT_EQ(fused.values.size(), 2u);
    ASSERT_EQ(plain.values.size(), 2u);
    ExpectNear(fused.values[0], plain.values[0]);
    ExpectNear(fused.values[1], plain.values[1]);
    EXPECT_FALSE(Has(fused, "mm=MatMul"));
    EXPECT_TRUE(Has(plain, "mm=MatMul"));
    // ReluGrad reads the Relu's output, which the fused node makes.
    EXPECT_TRUE(Has(fused, "relu=_FusedMatMul(BiasAdd,Relu)"));
  }
}

// A frozen batch normalisation no convolution absorbed (DenseNet's, before its
// convolutions): x * scale + offset and the Relu or Relu6 after it, one _FusedScaleOffset;
// scale and offset may differ in leading 1s. A Mul something else reads stays.
TEST(RemapperTest, AScaleAnOffsetAndTheirActivationBecomeOneNode) {
  Scope root = Scope::NewRootScope();
  Tensor x_value = Random(TensorShape({2, 5, 3, 6}), 1);
  for (float& v : x_value.flat<float>()) v *= 8;  // past 6 and below 0 after the scale
  auto x = ops::Const(root.WithOpName("x"), x_value);
  auto scale = [&](uint32_t seed) { return ops::Const(root, Random(TensorShape({6}), seed)); };
  auto offset = [&](uint32_t seed) { return ops::Const(root, Random(TensorShape({1, 1, 1, 6}), seed)); };
  ops::Relu(root.WithOpName("relu"), ops::Add(root.WithOpName("add"), ops::Mul(root.WithOpName("mul"), x, scale(2)), offset(3)));
  ops::Build(root.WithOpName("relu6"), "Relu6",
             {ops::Build(root.WithOpName("add6"), "AddV2", {offset(5), ops::Mul(root.WithOpName("mul6"), scale(4), x)})});
  ops::Add(root.WithOpName("affine"), ops::Mul(root.WithOpName("mul_only"), x, scale(6)), offset(7));
  auto shared = ops::Mul(root.WithOpName("shared"), x, scale(8));
  ops::Add(root.WithOpName("shared_add"), shared, offset(9));
  ops::Neg(root.WithOpName("other_reader"), shared);
  const std::vector<std::string> fetches = {"relu", "relu6", "affine", "shared_add", "other_reader"};
  Step fused = RunStep(root, fetches, true);
  Step plain = RunStep(root, fetches, false);
  ASSERT_EQ(fused.values.size(), fetches.size());
  ASSERT_EQ(plain.values.size(), fetches.size());
  for (size_t i = 0; i < fetches.size(); ++i) ExpectNear(fused.values[i], plain.values[i]);
  for (const char* entry : {"relu=_FusedScaleOffset", "relu6=_FusedScaleOffset", "affine=_FusedScaleOffset",
                            "shared=Mul", "shared_add=Add"}) {
    EXPECT_TRUE(Has(fused, entry)) << entry << " in " << ::testing::PrintToString(fused.ops);
  }
  for (const char* gone : {"mul=Mul", "add=Add", "mul6=Mul", "add6=AddV2", "mul_only=Mul"}) EXPECT_FALSE(Has(fused, gone)) << gone;
  const auto relu6 = plain.values[1].flat<float>();
  EXPECT_EQ(*std::max_element(relu6.begin(), relu6.end()), 6.f);
  EXPECT_EQ(*std::min_element(relu6.begin(), relu6.end()), 0.f);
}

// Swish as TensorFlow writes it, x * Sigmoid(x) in either order: one _Swish named as the
// Mul, with the unfused values. A Sigmoid something else reads, or a Mul by another tensor,
// stays.
TEST(RemapperTest, ASigmoidTimesItsInputBecomesOneSwish) {
  Scope root = Scope::NewRootScope();
  // Each case its own input, or common subexpressions would merge their Sigmoids.
  const auto input = [&](uint32_t seed) {
    Tensor value = Random(TensorShape({2, 5, 3, 6}), seed);
    for (float& v : value.flat<float>()) v *= 20;  // into both tails of the sigmoid
    return ops::Const(root, value);
  };
  auto x = input(1);
  ops::Mul(root.WithOpName("swish"), x, ops::Build(root.WithOpName("sigmoid"), "Sigmoid", {x}));
  auto x2 = input(2);
  ops::Mul(root.WithOpName("swish_swapped"), ops::Build(root.WithOpName("sigmoid_swapped"), "Sigmoid", {x2}), x2);
  auto x3 = input(3);
  auto shared = ops::Build(root.WithOpName("shared"), "Sigmoid", {x3});
  ops::Mul(root.WithOpName("shared_swish"), x3, shared);
  ops::Neg(root.WithOpName("other_reader"), shared);
  ops::Mul(root.WithOpName("gated"), input(4), ops::Build(root.WithOpName("gate"), "Sigmoid", {input(5)}));
  const std::vector<std::string> fetches = {"swish", "swish_swapped", "shared_swish", "other_reader", "gated"};
  Step fused = RunStep(root, fetches, true);
  Step plain = RunStep(root, fetches, false);
  ASSERT_EQ(fused.values.size(), fetches.size());
  ASSERT_EQ(plain.values.size(), fetches.size());
  for (size_t i = 0; i < fetches.size(); ++i) ExpectNear(fused.values[i], plain.values[i]);
  for (const char* entry : {"swish=_Swish", "swish_swapped=_Swish", "shared=Sigmoid", "shared_swish=Mul",
                            "gate=Sigmoid", "gated=Mul"}) {
    EXPECT_TRUE(Has(fused, entry)) << entry << " in " << ::testing::PrintToString(fused.ops);
  }
  for (const char* gone : {"sigmoid=Sigmoid", "sigmoid_swapped=Sigmoid"}) EXPECT_FALSE(Has(fused, gone)) << gone;
  const auto swish = fused.values[0].flat<float>();
  EXPECT_LT(*std::min_element(swish.begin(), swish.end()), 0.f);  // swish dips below zero
}

// Scale and offset the kernel cannot pair fail the step naming the node.
TEST(RemapperTest, AScaleAndOffsetOfOtherShapesAreAnError) {
  Scope root = Scope::NewRootScope();
  ops::Build(root.WithOpName("fused"), "_FusedScaleOffset",
             {ops::Const(root, Random(TensorShape({2, 3, 4}), 1)), ops::Const(root, Random(TensorShape({4}), 2)),
              ops::Const(root, Random(TensorShape({3, 1}), 3))},
             {{"activation", std::string("Relu")}});
  auto session = testing::MakeSession(root);
  ASSERT_NE(session, nullptr);
  std::vector<Tensor> out;
  Status s = session->Run({}, {"fused"}, {}, &out);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("fused"));
  EXPECT_THAT(s.message(), HasSubstr("one shape"));
}

TEST(RemapperTest, TheConfigSwitch) {
  auto off = SessionConfig::FromJson(R"({"graph_options": {"rewrite_options": {"remapping": "OFF"}}})");
  ASSERT_TRUE(off.ok()) << off.status();
  EXPECT_FALSE(off->remapping);
  auto on = SessionConfig::FromJson(R"({"graph_options": {"rewrite_options": {"remapping": "DEFAULT"}}})");
  ASSERT_TRUE(on.ok()) << on.status();
  EXPECT_TRUE(on->remapping);
  EXPECT_THAT(SessionConfig::FromJson(R"({"graph_options": {"rewrite_options": {"remapping": 2}}})").status().message(),
              HasSubstr("must be DEFAULT, ON or OFF"));
  EXPECT_THAT(SessionConfig::FromJson(R"({"graph_options": {"rewrite_options": {"arithmetic": "ON"}}})").status().message(),
              HasSubstr("no field 'arithmetic'"));
}

// A fused op written by hand (or by another tool) with a list the kernels do not apply is an
// error naming the op and the list, not a silent BiasAdd.
TEST(RemapperTest, AFusedOpsListTheKernelsDoNotApplyIsUnimplemented) {
  Scope root = Scope::NewRootScope();
  auto a = ops::Const(root, Tensor::FromVector<float>({1, 2}, TensorShape({1, 2})));
  auto b = ops::Const(root, Tensor::FromVector<float>({3, 4}, TensorShape({2, 1})));
  auto bias = ops::Const(root, Tensor::FromVector<float>({5}, TensorShape({1})));
  GraphSpec def;
  ASSERT_TRUE(root.ToSpec(&def).ok());
  NodeSpec fused;
  fused.name = "fused";
  fused.op = "_FusedMatMul";
  fused.inputs = {a.name(), b.name(), bias.name()};
  fused.attrs["T"] = DataType::kFloat;
  fused.attrs["num_args"] = int64_t{1};
  fused.attrs["fused_ops"] = std::string("BiasAdd,Tanh");
  def.nodes.push_back(fused);
  StatusOr<std::unique_ptr<Session>> session = Session::Create(SessionConfig(), def);
  ASSERT_TRUE(session.ok()) << session.status();
  std::vector<Tensor> out;
  Status s = (*session)->Run({}, {"fused"}, {}, &out);
  EXPECT_EQ(s.code(), Code::kUnimplemented) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("_FusedMatMul of BiasAdd,Tanh: only BiasAdd, and BiasAdd,Relu"));
}

// The pool gradient written by hand: a grad or argmax that is not the pooled shape, and a
// window too large for an argmax, are InvalidArgument, naming what was wrong.
TEST(RemapperTest, AHandWrittenPoolGradientIsChecked) {
  for (const char* op : {"_FusedConv2DMaxPoolGrad", "_FusedConv2DMaxPoolBackpropFilter"}) {
  SCOPED_TRACE(op);
  auto run = [op](const TensorShape& grad_shape, int64_t window) {
    Scope root = Scope::NewRootScope();
    auto x = ops::Const(root.WithOpName("x"), Random(TensorShape({1, 4, 4, 1}), 13));
    auto f = ops::Const(root.WithOpName("f"), Random(TensorShape({3, 3, 1, 2}), 14));
    auto argmax = ops::Const(root.WithOpName("argmax"), Tensor(DataType::kUInt8, TensorShape({1, 2, 2, 2})));
    auto grad = ops::Const(root.WithOpName("grad"), Random(grad_shape, 15));
    GraphSpec def;
    EXPECT_TRUE(root.ToSpec(&def).ok());
    NodeSpec node;
    node.name = "pool_grad";
    node.op = op;
    node.inputs = {x.name(), f.name(), argmax.name(), grad.name()};
    node.attrs["T"] = DataType::kFloat;
    node.attrs["strides"] = std::vector<int64_t>{1, 1, 1, 1};
    node.attrs["padding"] = std::string("SAME");
    node.attrs["ksize"] = std::vector<int64_t>{1, window, window, 1};
    node.attrs["pool_strides"] = std::vector<int64_t>{1, 2, 2, 1};
    node.attrs["pool_padding"] = std::string("SAME");
    def.nodes.push_back(node);
    SessionConfig config;
    config.constant_folding = false;
    StatusOr<std::unique_ptr<Session>> session = Session::Create(config, def);
    if (!session.ok()) return session.status();
    std::vector<Tensor> out;
    return (*session)->Run({}, {"pool_grad"}, {}, &out);
  };
  EXPECT_TRUE(run(TensorShape({1, 2, 2, 2}), 2).ok());
  Status s = run(TensorShape({1, 1, 1, 2}), 2);
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("must be the pooled shape [1,2,2,2], got [1,1,1,2]"));
  s = run(TensorShape({1, 1, 1, 2}), 16);
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("windows of 1 to 255 cells, not 16x16"));
  }
}

}  // namespace
}  // namespace tessera
