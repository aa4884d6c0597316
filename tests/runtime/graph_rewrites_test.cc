// The step graph's rewrites before partitioning: constant folding, arithmetic simplification,
// common subexpressions, pads and scales folded into convolutions, seen in the partition
// graphs RunMetadata returns, each giving the values of the graph without it, each turned
// off by its config switch.
#include "runtime/graph_rewrites.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "graph/builder/op_builder.h"
#include "graph/builder/ops.h"
#include "graph/serialize/graph_json.h"
#include "runtime/constant_folding.h"
#include "runtime/session.h"
#include "tests/random_tensor.h"
#include "tests/test_util.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;

struct Step {
  std::vector<Tensor> values;
  std::vector<std::string> nodes;  // "name=op" of every node in the partition graphs
};

Step RunStep(const GraphSpec& def, const std::vector<std::string>& fetches, const SessionConfig& config = {},
             const std::vector<std::pair<std::string, Tensor>>& feeds = {}) {
  Step step;
  auto created = Session::Create(config, def);
  EXPECT_TRUE(created.ok()) << created.status();
  if (!created.ok()) return step;
  std::unique_ptr<Session> session = std::move(*created);
  RunOptions options;
  options.output_partition_graphs = true;
  RunMetadata metadata;
  Status s = session->Run(options, feeds, fetches, {}, &step.values, &metadata);
  EXPECT_TRUE(s.ok()) << s;
  for (const GraphSpec& part : metadata.partition_graphs) {
    for (const NodeSpec& n : part.nodes) step.nodes.push_back(n.name + "=" + n.op);
  }
  return step;
}

Step RunStep(const Scope& root, const std::vector<std::string>& fetches, const SessionConfig& config = {},
             const std::vector<std::pair<std::string, Tensor>>& feeds = {}) {
  GraphSpec def;
  EXPECT_TRUE(root.ToSpec(&def).ok());
  return RunStep(def, fetches, config, feeds);
}

SessionConfig NoRewrites() {
  SessionConfig config;
  config.constant_folding = false;
  config.arithmetic_optimization = false;
  config.common_subexpression_elimination = false;
  config.remapping = false;
  return config;
}

bool Has(const Step& s, const std::string& entry) {
  return std::find(s.nodes.begin(), s.nodes.end(), entry) != s.nodes.end();
}

std::vector<float> Floats(const Tensor& t) { return testing::Values<float>(t); }

TEST(GraphRewritesTest, NodesThatHandOnTheirInputGo) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DataType::kFloat, TensorShape({2, 3}));
  auto ones = ops::Const(root.WithOpName("ones"), Tensor::FromVector<float>({1, 1, 1}));
  auto zeros = ops::Const(root.WithOpName("zeros"), Tensor::FromVector<float>({0, 0, 0}));
  auto times_one = ops::Mul(root.WithOpName("times_one"), x, ones);
  auto one_times = ops::Mul(root.WithOpName("one_times"), ones, times_one);
  auto plus_zero = ops::Add(root.WithOpName("plus_zero"), one_times, zeros);
  auto minus_zero = ops::Sub(root.WithOpName("minus_zero"), plus_zero, zeros);
  auto neg_neg = ops::Neg(root.WithOpName("neg2"), ops::Neg(root.WithOpName("neg1"), minus_zero));
  auto id = ops::Identity(root.WithOpName("id2"), ops::Identity(root.WithOpName("id1"), neg_neg));
  // An IdentityN one output of which alone is read (a custom gradient's forward pass).
  auto id_n = ops::Build(root.WithOpName("id_n"), "IdentityN", {x, id});
  ops::Square(root.WithOpName("out"), Output(id_n.node, 1));
  // What changes value or shape stays: 0 - x, and x * 1 broadcast to a larger shape.
  ops::Sub(root.WithOpName("zero_minus"), zeros, x);
  auto column = ops::Placeholder(root.WithOpName("column"), DataType::kFloat, TensorShape({2, 1}));
  ops::Mul(root.WithOpName("widened"), column, ones);
  // Where shape inference does not know the batch: x * a scalar 1 goes (Keras's swish
  // multiplies by its beta), [?, 1] * [3] ones still widens and stays.
  auto batch = ops::Placeholder(root.WithOpName("batch"), DataType::kFloat, TensorShape({-1, 3}));
  auto one = ops::Const(root.WithOpName("one"), Tensor::Scalar(1.0f));
  ops::Square(root.WithOpName("batch_out"), ops::Mul(root.WithOpName("times_scalar_one"), batch, one));
  auto any_column = ops::Placeholder(root.WithOpName("any_column"), DataType::kFloat, TensorShape({-1, 1}));
  ops::Mul(root.WithOpName("widened_batch"), any_column, ones);
  const std::vector<std::pair<std::string, Tensor>> feeds = {
      {"x", Tensor::FromVector<float>({1, -2, 3, -4, 5, -6}, TensorShape({2, 3}))},
      {"column", Tensor::FromVector<float>({7, 8}, TensorShape({2, 1}))},
      {"batch", Tensor::FromVector<float>({1, 2, 3}, TensorShape({1, 3}))},
      {"any_column", Tensor::FromVector<float>({7, 8}, TensorShape({2, 1}))}};
  const std::vector<std::string> fetches = {"out", "zero_minus", "widened", "batch_out", "widened_batch"};
  Step simplified = RunStep(root, fetches, {}, feeds);
  Step plain = RunStep(root, fetches, NoRewrites(), feeds);
  ASSERT_EQ(simplified.values.size(), 5u);
  ASSERT_EQ(plain.values.size(), 5u);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(simplified.values[i].shape(), plain.values[i].shape());
    EXPECT_EQ(Floats(simplified.values[i]), Floats(plain.values[i]));
  }
  EXPECT_EQ(Floats(simplified.values[0]), (std::vector<float>{1, 4, 9, 16, 25, 36}));
  for (const char* gone :
       {"times_one", "one_times", "plus_zero", "minus_zero", "neg1", "neg2", "id1", "id2", "id_n", "times_scalar_one"}) {
    EXPECT_FALSE(std::any_of(simplified.nodes.begin(), simplified.nodes.end(),
                             [&](const std::string& n) { return n.starts_with(std::string(gone) + "="); }))
        << gone;
    EXPECT_TRUE(std::any_of(plain.nodes.begin(), plain.nodes.end(),
                            [&](const std::string& n) { return n.starts_with(std::string(gone) + "="); }))
        << gone;
  }
  EXPECT_TRUE(Has(simplified, "zero_minus=Sub"));
  EXPECT_TRUE(Has(simplified, "widened=Mul"));
  EXPECT_TRUE(Has(simplified, "widened_batch=Mul"));
  EXPECT_EQ(simplified.values[4].shape(), TensorShape({2, 3}));
}

// cond(p, x * 2, x): the pivot Identity carries the true branch's deadness to the
// constant that only has a control edge from it.
TEST(GraphRewritesTest, AnIdentityAfterASwitchStaysForItsDeadness) {
  auto def = GraphSpecFromJson(R"({"nodes": [
    {"name": "p", "op": "Placeholder", "attrs": {"dtype": "bool", "shape": []}},
    {"name": "x", "op": "Const", "attrs": {"dtype": "float", "value": {"dtype": "float", "shape": [], "data": [5]}}},
    {"name": "sw", "op": "Switch", "inputs": ["x", "p"]},
    {"name": "pivot", "op": "Identity", "inputs": ["sw:1"]},
    {"name": "two", "op": "Const", "inputs": ["^pivot"],
     "attrs": {"dtype": "float", "value": {"dtype": "float", "shape": [], "data": [2]}}},
    {"name": "twice", "op": "Mul", "inputs": ["pivot", "two"]},
    {"name": "merged", "op": "Merge", "inputs": ["twice", "sw:0"]}
  ]})");
  ASSERT_TRUE(def.ok()) << def.status();
  for (bool taken : {true, false}) {
    Step step = RunStep(*def, {"merged"}, {}, {{"p", Tensor::Scalar(taken)}});
    ASSERT_EQ(step.values.size(), 1u);
    EXPECT_EQ(Floats(step.values[0]), std::vector<float>{taken ? 10.0f : 5.0f});
    EXPECT_TRUE(Has(step, "pivot=Identity"));
  }
}

// snapshot = Identity(v) read before the update and used after it: the read keeps the old
// value, as TF1's `v/read` does, so the simplifier leaves it.
TEST(GraphRewritesTest, AnIdentityReadingAVariableStays) {
  Scope root = Scope::NewRootScope();
  auto v = ops::Variable(root.WithOpName("v"), TensorShape({}), DataType::kFloat);
  ops::Assign(root.WithOpName("init"), v, ops::Const(root, Tensor::Scalar(1.0f)));
  auto snapshot = ops::Identity(root.WithOpName("snapshot"), v);
  // v * 1 reads the variable when it runs too.
  auto times_one = ops::Mul(root.WithOpName("times_one"), v, ops::Const(root, Tensor::Scalar(1.0f)));
  auto update = ops::AssignAdd(root.WithOpName("update").WithControlDependencies({snapshot.op(), times_one.op()}),
                               v, ops::Const(root, Tensor::Scalar(10.0f)));
  ops::Add(root.WithOpName("after").WithControlDependencies({update.op()}), snapshot,
           ops::Const(root, Tensor::Scalar(0.5f)));
  ops::Add(root.WithOpName("after_times_one").WithControlDependencies({update.op()}), times_one,
           ops::Const(root, Tensor::Scalar(0.5f)));
  GraphSpec def;
  ASSERT_TRUE(root.ToSpec(&def).ok());
  auto session = Session::Create({}, def);
  ASSERT_TRUE(session.ok()) << session.status();
  std::vector<Tensor> out;
  ASSERT_TRUE((*session)->Run({}, {}, {"init"}, &out).ok());
  RunOptions options;
  options.output_partition_graphs = true;
  RunMetadata metadata;
  ASSERT_TRUE((*session)->Run(options, {}, {"after", "after_times_one"}, {}, &out, &metadata).ok());
  EXPECT_EQ(Floats(out[0]), std::vector<float>{1.5f});  // the value before the update
  EXPECT_EQ(Floats(out[1]), std::vector<float>{1.5f});
  bool kept = false, kept_times_one = false;
  for (const GraphSpec& part : metadata.partition_graphs) {
    for (const NodeSpec& n : part.nodes) {
      kept |= n.name == "snapshot";
      kept_times_one |= n.name == "times_one";
    }
  }
  EXPECT_TRUE(kept);
  EXPECT_TRUE(kept_times_one);
}

TEST(GraphRewritesTest, CommonSubexpressionsAreComputedOnce) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DataType::kFloat, TensorShape({3}));
  auto a = ops::Const(root.WithOpName("a"), Tensor::FromVector<float>({1, 2, 3}));
  auto b = ops::Const(root.WithOpName("b"), Tensor::FromVector<float>({1, 2, 3}));
  // One bit apart from a: never the same constant.
  auto c = ops::Const(root.WithOpName("c"), Tensor::FromVector<float>({1, 2, std::nextafter(3.0f, 4.0f)}));
  auto xa = ops::Mul(root.WithOpName("xa"), x, a);
  auto xb = ops::Mul(root.WithOpName("xb"), x, b);  // b merges into a, then xb into xa
  auto xc = ops::Mul(root.WithOpName("xc"), x, c);
  ops::AddN(root.WithOpName("sum"), {xa, xb, xc});
  // Stateful: two draws stay two.
  auto shape = Tensor::FromVector<int32_t>({4});
  ops::Sub(root.WithOpName("diff"), ops::RandomUniform(root.WithOpName("r1"), shape, DataType::kFloat),
           ops::RandomUniform(root.WithOpName("r2"), shape, DataType::kFloat));
  const std::vector<std::pair<std::string, Tensor>> feeds = {{"x", Tensor::FromVector<float>({1, 1, 1})}};
  Step merged = RunStep(root, {"sum", "diff"}, {}, feeds);
  SessionConfig off;
  off.common_subexpression_elimination = false;
  Step plain = RunStep(root, {"sum"}, off, feeds);
  ASSERT_EQ(merged.values.size(), 2u);
  ASSERT_EQ(plain.values.size(), 1u);
  EXPECT_EQ(Floats(merged.values[0]), Floats(plain.values[0]));
  EXPECT_TRUE(Has(merged, "xa=Mul"));
  EXPECT_FALSE(Has(merged, "xb=Mul"));
  EXPECT_FALSE(Has(merged, "b=Const"));
  EXPECT_TRUE(Has(merged, "xc=Mul"));
  EXPECT_TRUE(Has(merged, "c=Const"));
  EXPECT_TRUE(Has(merged, "r1=RandomUniform"));
  EXPECT_TRUE(Has(merged, "r2=RandomUniform"));
  EXPECT_NE(Floats(merged.values[1]), std::vector<float>(4, 0.0f));
  EXPECT_TRUE(Has(plain, "xb=Mul"));
}

// scale = 2 * [1..6] reshaped to [2, 3], both halves of a Split of it, a Cast: computed when
// the step is made. What reads a feed, draws random numbers, or waits for another node runs.
TEST(GraphRewritesTest, ConstantsAreFoldedAhead) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DataType::kFloat, TensorShape({2, 3}));
  auto values = ops::Const(root.WithOpName("values"), Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}));
  auto doubled = ops::Mul(root.WithOpName("doubled"), values, 2.0f);
  auto scale = ops::Reshape(root.WithOpName("scale"), doubled, Tensor::FromVector<int32_t>({2, 3}));
  auto halves = ops::Split(root.WithOpName("halves"), 0, scale, 2);
  auto scaled = ops::Mul(root.WithOpName("scaled"), x, scale);
  ops::Sub(root.WithOpName("diff"), halves[1], halves[0]);
  ops::Cast(root.WithOpName("as_int"), scale, DataType::kInt32);
  auto noise = ops::RandomUniform(root.WithOpName("noise"), Tensor::FromVector<int32_t>({3}), DataType::kFloat);
  ops::Add(root.WithOpName("noisy"), noise, 1.0f);
  ops::Neg(root.WithControlDependencies({scaled.op()}).WithOpName("after_x"), 1.0f);
  const std::vector<std::string> fetches = {"scaled", "diff", "as_int", "noisy", "after_x", "scale"};
  const std::vector<std::pair<std::string, Tensor>> feeds = {
      {"x", Tensor::FromVector<float>({1, 1, 1, -1, -1, -1}, TensorShape({2, 3}))}};
  Step folded = RunStep(root, fetches, {}, feeds);
  Step plain = RunStep(root, fetches, NoRewrites(), feeds);
  ASSERT_EQ(folded.values.size(), fetches.size());
  ASSERT_EQ(plain.values.size(), fetches.size());
  EXPECT_EQ(Floats(folded.values[0]), (std::vector<float>{2, 4, 6, -8, -10, -12}));
  EXPECT_EQ(Floats(folded.values[1]), (std::vector<float>{6, 6, 6}));
  EXPECT_EQ(testing::Values<int32_t>(folded.values[2]), (std::vector<int32_t>{2, 4, 6, 8, 10, 12}));
  for (size_t i : {0, 1, 2, 4, 5}) {
    EXPECT_EQ(folded.values[i].shape(), plain.values[i].shape()) << fetches[i];
    EXPECT_EQ(folded.values[i].dtype(), plain.values[i].dtype()) << fetches[i];
  }
  EXPECT_EQ(Floats(folded.values[5]), Floats(plain.values[5]));
  // A folded node keeps its name as a Const; one with two outputs gives a Const for each
  // output read, and what only folded nodes read goes.
  for (const char* name : {"scale", "diff", "as_int"}) EXPECT_TRUE(Has(folded, std::string(name) + "=Const")) << name;
  EXPECT_TRUE(Has(plain, "scale=Reshape"));
  EXPECT_FALSE(Has(folded, "doubled=Mul"));
  EXPECT_FALSE(Has(folded, "values=Const"));
  EXPECT_FALSE(std::any_of(folded.nodes.begin(), folded.nodes.end(),
                           [](const std::string& n) { return n.starts_with("halves"); }));
  EXPECT_TRUE(Has(folded, "scaled=Mul"));
  EXPECT_TRUE(Has(folded, "noise=RandomUniform"));
  EXPECT_TRUE(Has(folded, "noisy=Add"));
  EXPECT_TRUE(Has(folded, "after_x=Neg"));
  // The switch.
  SessionConfig off;
  off.constant_folding = false;
  Step unfolded = RunStep(root, {"scaled"}, off, feeds);
  EXPECT_TRUE(Has(unfolded, "scale=Reshape"));
}

// Read by a Split whose two outputs are both read elsewhere too: each output its own Const.
TEST(GraphRewritesTest, EachOutputOfAFoldedNodeReadElsewhereBecomesAConst) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DataType::kFloat, TensorShape({2}));
  auto halves = ops::Split(root.WithOpName("halves"), 0, Tensor::FromVector<float>({3, 4, 5, 6}), 2);
  ops::Add(root.WithOpName("sum"), ops::Mul(root.WithOpName("first"), x, halves[0]),
           ops::Mul(root.WithOpName("second"), x, halves[1]));
  Step step = RunStep(root, {"sum"}, {}, {{"x", Tensor::FromVector<float>({1, 10})}});
  ASSERT_EQ(step.values.size(), 1u);
  EXPECT_EQ(Floats(step.values[0]), (std::vector<float>{3 + 5, 40 + 60}));
  EXPECT_TRUE(Has(step, "halves/folded_output_0=Const"));
  EXPECT_TRUE(Has(step, "halves/folded_output_1=Const"));
  EXPECT_FALSE(Has(step, "halves=Split"));
}

// Folding stays within a device: a value made on one and read on another still crosses.
TEST(GraphRewritesTest, AConstantReadOnAnotherDeviceIsNotFoldedThere) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Mul(root.WithOpName("x").WithDevice("/cpu:0"), Tensor::FromVector<float>({1, 2}), 3.0f);
  ops::Add(root.WithOpName("y").WithDevice("/cpu:1"), x, 1.0f);
  SessionConfig config;
  config.device_count = {{"CPU", 2}};
  Step step = RunStep(root, {"y"}, config);
  ASSERT_EQ(step.values.size(), 1u);
  EXPECT_EQ(Floats(step.values[0]), (std::vector<float>{4, 7}));
  EXPECT_TRUE(Has(step, "x=Const"));
  EXPECT_TRUE(Has(step, "y=Add"));
}

// Bounded: past the limit a constant is made by the step, as it would have been.
TEST(GraphRewritesTest, ALargeConstantIsNotFolded) {
  Scope root = Scope::NewRootScope();
  auto big = ops::Fill(root.WithOpName("big"), Tensor::FromVector<int32_t>({1024, 1024, 3}), 1.0f);  // 12 MiB
  auto small = ops::Fill(root.WithOpName("small"), Tensor::FromVector<int32_t>({1024}), 1.0f);
  ops::Sum(root.WithOpName("total"), big, {0, 1, 2});
  ops::Sum(root.WithOpName("small_total"), small, {0});
  Step step = RunStep(root, {"total", "small_total"});
  ASSERT_EQ(step.values.size(), 2u);
  EXPECT_EQ(Floats(step.values[0]), std::vector<float>{3 << 20});
  EXPECT_EQ(Floats(step.values[1]), std::vector<float>{1024});
  EXPECT_TRUE(Has(step, "big=Fill"));
  EXPECT_TRUE(Has(step, "total=Sum"));
  EXPECT_TRUE(Has(step, "small_total=Const"));

  GraphSpec def;
  ASSERT_TRUE(root.ToSpec(&def).ok());
  auto graph = Graph::FromSpec(def);
  ASSERT_TRUE(graph.ok()) << graph.status();
  for (Node* n : (*graph)->nodes()) n->set_assigned_device("/job:localhost/replica:0/task:0/device:CPU:0");
  auto folded = FoldConstants(std::move(*graph), 1024);  // bytes: 'small' is 4 KiB
  ASSERT_TRUE(folded.ok()) << folded.status();
  EXPECT_EQ((*folded)->FindNode("small_total")->op(), "Sum");
}

// A fold that fails leaves the graph alone: the step reports the error naming the node.
TEST(GraphRewritesTest, AConstantThatCannotBeComputedFailsTheStepNamingTheNode) {
  auto def = GraphSpecFromJson(R"({"nodes": [
    {"name": "params", "op": "Const", "attrs": {"dtype": "float", "value": {"dtype": "float", "shape": [3], "data": [1, 2, 3]}}},
    {"name": "indices", "op": "Const", "attrs": {"dtype": "int32", "value": {"dtype": "int32", "shape": [1], "data": [5]}}},
    {"name": "picked", "op": "Gather", "inputs": ["params", "indices"]}
  ]})");
  ASSERT_TRUE(def.ok()) << def.status();
  auto session = Session::Create(SessionConfig(), *def);
  ASSERT_TRUE(session.ok()) << session.status();
  std::vector<Tensor> out;
  for (int attempt = 0; attempt < 2; ++attempt) {
    Status s = (*session)->Run({}, {"picked"}, {}, &out);
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr("indices[0] = 5 is not in [0, 3)"));
    EXPECT_THAT(std::string(s.message()), HasSubstr("picked (Gather)"));
  }
}

TEST(GraphRewritesTest, TheConfigSwitches) {
  auto off = SessionConfig::FromJson(R"({"graph_options": {
      "rewrite_options": {"arithmetic_optimization": "OFF", "remapping": "ON", "constant_folding": "OFF"},
      "optimizer_options": {"do_common_subexpression_elimination": false}}})");
  ASSERT_TRUE(off.ok()) << off.status();
  EXPECT_FALSE(off->constant_folding);
  EXPECT_FALSE(off->arithmetic_optimization);
  EXPECT_FALSE(off->common_subexpression_elimination);
  EXPECT_TRUE(off->remapping);
  auto v1_off = SessionConfig::FromJson(R"({"graph_options": {"optimizer_options": {"do_constant_folding": false}}})");
  ASSERT_TRUE(v1_off.ok()) << v1_off.status();
  EXPECT_FALSE(v1_off->constant_folding);
  EXPECT_TRUE(v1_off->arithmetic_optimization);
  const SessionConfig defaults;
  EXPECT_TRUE(defaults.constant_folding && defaults.arithmetic_optimization &&
              defaults.common_subexpression_elimination && defaults.remapping);
  EXPECT_THAT(SessionConfig::FromJson(R"({"graph_options": {"optimizer_options": {"do_common_subexpression_elimination": "no"}}})")
                  .status()
                  .message(),
              HasSubstr("must be true or false"));
  EXPECT_THAT(SessionConfig::FromJson(R"({"graph_options": {"rewrite_options": {"arithmetic_optimization": 1}}})")
                  .status()
                  .message(),
              HasSubstr("'rewrite_options.arithmetic_optimization' must be DEFAULT, ON or OFF"));
}

using testing::Uniform;

// The rewritten step's values are the plain step's, to float32's rounding.
void ExpectSameValues(const Step& rewritten, const Step& plain, const std::vector<std::string>& fetches) {
  ASSERT_EQ(rewritten.values.size(), fetches.size());
  ASSERT_EQ(plain.values.size(), fetches.size());
  for (size_t i = 0; i < fetches.size(); ++i) {
    SCOPED_TRACE(fetches[i]);
    ASSERT_EQ(rewritten.values[i].shape(), plain.values[i].shape());
    const std::vector<float> got = Floats(rewritten.values[i]), want = Floats(plain.values[i]);
    for (size_t j = 0; j < want.size(); ++j) EXPECT_NEAR(got[j], want[j], 1e-5f * std::max(1.0f, std::abs(want[j])));
  }
}

// A frozen Keras BatchNormalization after a convolution is x * scale + offset, one value per
// channel: the scale goes into the constant filter and the offset becomes a BiasAdd, which the
// remapper fuses (with the Relu) into the convolution; for depthwise convolutions (fused with
// their bias on a CPU) and matrix products too. A product read by anything besides the Mul
// stays as it is.
TEST(GraphRewritesTest, PerChannelScalesAndOffsetsFoldIntoTheFilterBefore) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DataType::kFloat);
  auto v = ops::Placeholder(root.WithOpName("v"), DataType::kFloat);
  auto conv = ops::Conv2D(root.WithOpName("conv"), x, ops::Const(root, Uniform({3, 3, 4, 6}, 1)), {1, 1, 1, 1}, "SAME");
  auto scaled = ops::Mul(root.WithOpName("scaled"), conv, ops::Const(root, Uniform({6}, 2)));
  auto shifted = ops::Add(root.WithOpName("shifted"), ops::Const(root, Uniform({1, 1, 1, 6}, 3)), scaled);
  ops::Relu(root.WithOpName("conv_out"), shifted);
  auto depthwise = ops::Build(root.WithOpName("depthwise"), "DepthwiseConv2dNative",
                              {x, ops::Const(root, Uniform({3, 3, 4, 2}, 4))},
                              {{"strides", std::vector<int64_t>{1, 2, 2, 1}}, {"padding", std::string("VALID")}});
  ops::Add(root.WithOpName("depthwise_out"),
           ops::Mul(root.WithOpName("depthwise_scaled"), ops::Const(root, Uniform({1, 1, 1, 8}, 5)), depthwise),
           ops::Const(root, Uniform({8}, 6)));
  auto product = ops::MatMul(root.WithOpName("product"), v, ops::Const(root, Uniform({5, 7}, 7)));
  ops::Mul(root.WithOpName("product_out"), product, ops::Const(root, Uniform({7}, 8)));
  auto shared = ops::Conv2D(root.WithOpName("shared"), x, ops::Const(root, Uniform({1, 1, 4, 3}, 9)), {1, 1, 1, 1},
                            "SAME");
  ops::Mul(root.WithOpName("shared_scaled"), shared, ops::Const(root, Uniform({3}, 10)));
  const std::vector<std::string> fetches = {"conv_out", "depthwise_out", "product_out", "shared_scaled", "shared"};
  const std::vector<std::pair<std::string, Tensor>> feeds = {{"x", Uniform({2, 9, 8, 4}, 11)},
                                                             {"v", Uniform({3, 5}, 12)}};
  const Step folded = RunStep(root, fetches, {}, feeds);
  const Step plain = RunStep(root, fetches, NoRewrites(), feeds);
  ExpectSameValues(folded, plain, fetches);
  EXPECT_TRUE(Has(folded, "conv_out=_FusedConv2D")) << ::testing::PrintToString(folded.nodes);
  EXPECT_TRUE(Has(folded, "depthwise_out=_FusedDepthwiseConv2dNative"));
  EXPECT_TRUE(Has(folded, "product_out=MatMul"));
  EXPECT_TRUE(Has(folded, "shared_scaled=Mul"));
  for (const char* gone : {"scaled=Mul", "shifted=Add", "depthwise_scaled=Mul"}) EXPECT_FALSE(Has(folded, gone)) << gone;
}

// Keras's ResNet50 gives its convolutions a bias before their BatchNormalization:
// (x * w + b) * scale + offset folds as x * (w * scale) + (b * scale + offset). A bias alone
// (no scale or offset after it) is the remapper's to fuse as it is.
TEST(GraphRewritesTest, ABiasBeforeTheScaleFoldsWithIt) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DataType::kFloat);
  auto conv = ops::Conv2D(root.WithOpName("conv"), x, ops::Const(root, Uniform({3, 3, 4, 6}, 1)), {1, 1, 1, 1}, "SAME");
  auto biased = ops::BiasAdd(root.WithOpName("biased"), conv, ops::Const(root, Uniform({6}, 2)));
  auto scaled = ops::Mul(root.WithOpName("scaled"), biased, ops::Const(root, Uniform({6}, 3)));
  ops::Relu(root.WithOpName("out"), ops::Add(root.WithOpName("shifted"), scaled, ops::Const(root, Uniform({6}, 4))));
  auto alone = ops::Conv2D(root.WithOpName("alone"), x, ops::Const(root, Uniform({1, 1, 4, 6}, 5)), {1, 1, 1, 1}, "SAME");
  ops::BiasAdd(root.WithOpName("alone_biased"), alone, ops::Const(root, Uniform({6}, 6)));
  const std::vector<std::string> fetches = {"out", "alone_biased"};
  const std::vector<std::pair<std::string, Tensor>> feeds = {{"x", Uniform({2, 9, 8, 4}, 7)}};
  const Step folded = RunStep(root, fetches, {}, feeds);
  const Step plain = RunStep(root, fetches, NoRewrites(), feeds);
  ExpectSameValues(folded, plain, fetches);
  EXPECT_TRUE(Has(folded, "out=_FusedConv2D")) << ::testing::PrintToString(folded.nodes);
  EXPECT_TRUE(Has(folded, "alone_biased=_FusedConv2D"));
  for (const char* gone : {"biased=BiasAdd", "scaled=Mul", "shifted=Add"}) EXPECT_FALSE(Has(folded, gone)) << gone;
}

// Keras's ZeroPadding2D before a strided VALID convolution pads as SAME would: the Pad goes
// and the convolution pads itself. Padding that SAME would not make stays.
TEST(GraphRewritesTest, AZeroPadThatSamePaddingMakesFoldsIntoTheConvolution) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DataType::kFloat, TensorShape({-1, 8, 7, 3}));
  auto pads = [&](std::vector<int32_t> p) { return ops::Const(root, Tensor::FromVector<int32_t>(p, TensorShape({4, 2}))); };
  auto valid = [&](const char* name, Output in, const char* op, int64_t o) {
    return ops::Build(root.WithOpName(name), op, {in, ops::Const(root, Uniform({3, 3, 3, o}, 13))},
                      {{"strides", std::vector<int64_t>{1, 2, 2, 1}}, {"padding", std::string("VALID")}});
  };
  // 8 rows at stride 2: SAME pads 0 above, 1 below; 7 columns: 1 left, 1 right.
  valid("conv", ops::Build(root.WithOpName("pad"), "Pad", {x, pads({0, 0, 0, 1, 1, 1, 0, 0})}), "Conv2D", 4);
  valid("depthwise",
        ops::Build(root.WithOpName("pad_v2"), "PadV2",
                   {x, pads({0, 0, 0, 1, 1, 1, 0, 0}), ops::Const(root, Tensor::Scalar<float>(0))}),
        "DepthwiseConv2dNative", 2);
  valid("kept", ops::Build(root.WithOpName("pad_other"), "Pad", {x, pads({0, 0, 1, 1, 1, 1, 0, 0})}), "Conv2D", 4);
  const std::vector<std::string> fetches = {"conv", "depthwise", "kept"};
  const std::vector<std::pair<std::string, Tensor>> feeds = {{"x", Uniform({2, 8, 7, 3}, 14)}};
  const Step folded = RunStep(root, fetches, {}, feeds);
  const Step plain = RunStep(root, fetches, NoRewrites(), feeds);
  ExpectSameValues(folded, plain, fetches);
  EXPECT_FALSE(Has(folded, "pad=Pad"));
  EXPECT_FALSE(Has(folded, "pad_v2=PadV2"));
  EXPECT_TRUE(Has(folded, "pad_other=Pad"));
}

// A TF1 graph's frozen FusedBatchNormV3 after a convolution is the same scale and offset.
TEST(GraphRewritesTest, AFusedBatchNormWithGivenStatisticsFoldsIntoTheConvolution) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DataType::kFloat);
  auto conv = ops::Conv2D(root.WithOpName("conv"), x, ops::Const(root, Uniform({3, 3, 4, 6}, 1)), {1, 1, 1, 1}, "SAME");
  Tensor variance = Uniform({6}, 5);
  for (float& v : variance.flat<float>()) v += 1.5f;
  auto bn = ops::Build(root.WithOpName("bn"), "FusedBatchNormV3",
                       {conv, ops::Const(root, Uniform({6}, 2)), ops::Const(root, Uniform({6}, 3)),
                        ops::Const(root, Uniform({6}, 4)), ops::Const(root, variance)},
                       {{"is_training", false}, {"epsilon", 0.001f}, {"U", DataType::kFloat}});
  ops::Relu(root.WithOpName("relu"), bn);
  const std::vector<std::pair<std::string, Tensor>> feeds = {{"x", Uniform({2, 9, 8, 4}, 11)}};
  const Step folded = RunStep(root, {"relu"}, {}, feeds);
  const Step plain = RunStep(root, {"relu"}, NoRewrites(), feeds);
  ExpectSameValues(folded, plain, {"relu"});
  EXPECT_TRUE(Has(folded, "relu=_FusedConv2D")) << ::testing::PrintToString(folded.nodes);
  EXPECT_TRUE(Has(plain, "bn=FusedBatchNormV3"));
}

}  // namespace
}  // namespace tessera
