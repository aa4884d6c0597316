// The step graph's rewrites before partitioning: arithmetic simplification and common
// subexpressions, seen in the partition graphs RunMetadata returns, each giving the values
// of the graph without it, each turned off by its config switch.
#include "runtime/graph_rewrites.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "graph/builder/ops.h"
#include "graph/serialize/graph_json.h"
#include "runtime/session.h"
#include "tests/test_util.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;

struct Step {
  std::vector<Tensor> values;
  std::vector<std::string> nodes;  // "name=op" of every node in the partition graphs
};

Step RunStep(const GraphDef& def, const std::vector<std::string>& fetches, const SessionConfig& config = {},
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
  for (const GraphDef& part : metadata.partition_graphs) {
    for (const NodeDef& n : part.nodes) step.nodes.push_back(n.name + "=" + n.op);
  }
  return step;
}

Step RunStep(const Scope& root, const std::vector<std::string>& fetches, const SessionConfig& config = {},
             const std::vector<std::pair<std::string, Tensor>>& feeds = {}) {
  GraphDef def;
  EXPECT_TRUE(root.ToGraphDef(&def).ok());
  return RunStep(def, fetches, config, feeds);
}

SessionConfig NoRewrites() {
  SessionConfig config;
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
  ops::Square(root.WithOpName("out"), id);
  // What changes value or shape stays: 0 - x, and x * 1 broadcast to a larger shape.
  ops::Sub(root.WithOpName("zero_minus"), zeros, x);
  auto column = ops::Placeholder(root.WithOpName("column"), DataType::kFloat, TensorShape({2, 1}));
  ops::Mul(root.WithOpName("widened"), column, ones);
  const std::vector<std::pair<std::string, Tensor>> feeds = {
      {"x", Tensor::FromVector<float>({1, -2, 3, -4, 5, -6}, TensorShape({2, 3}))},
      {"column", Tensor::FromVector<float>({7, 8}, TensorShape({2, 1}))}};
  const std::vector<std::string> fetches = {"out", "zero_minus", "widened"};
  Step simplified = RunStep(root, fetches, {}, feeds);
  Step plain = RunStep(root, fetches, NoRewrites(), feeds);
  ASSERT_EQ(simplified.values.size(), 3u);
  ASSERT_EQ(plain.values.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(simplified.values[i].shape(), plain.values[i].shape());
    EXPECT_EQ(Floats(simplified.values[i]), Floats(plain.values[i]));
  }
  EXPECT_EQ(Floats(simplified.values[0]), (std::vector<float>{1, 4, 9, 16, 25, 36}));
  for (const char* gone : {"times_one", "one_times", "plus_zero", "minus_zero", "neg1", "neg2", "id1", "id2"}) {
    EXPECT_FALSE(std::any_of(simplified.nodes.begin(), simplified.nodes.end(),
                             [&](const std::string& n) { return n.starts_with(std::string(gone) + "="); }))
        << gone;
    EXPECT_TRUE(std::any_of(plain.nodes.begin(), plain.nodes.end(),
                            [&](const std::string& n) { return n.starts_with(std::string(gone) + "="); }))
        << gone;
  }
  EXPECT_TRUE(Has(simplified, "zero_minus=Sub"));
  EXPECT_TRUE(Has(simplified, "widened=Mul"));
}

// cond(p, x * 2, x): the pivot Identity carries the true branch's deadness to the
// constant that only has a control edge from it.
TEST(GraphRewritesTest, AnIdentityAfterASwitchStaysForItsDeadness) {
  auto def = GraphDefFromJson(R"({"nodes": [
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

TEST(GraphRewritesTest, TheConfigSwitches) {
  auto off = SessionConfig::FromJson(R"({"graph_options": {
      "rewrite_options": {"arithmetic_optimization": "OFF", "remapping": "ON"},
      "optimizer_options": {"do_common_subexpression_elimination": false}}})");
  ASSERT_TRUE(off.ok()) << off.status();
  EXPECT_FALSE(off->arithmetic_optimization);
  EXPECT_FALSE(off->common_subexpression_elimination);
  EXPECT_TRUE(off->remapping);
  const SessionConfig defaults;
  EXPECT_TRUE(defaults.arithmetic_optimization && defaults.common_subexpression_elimination && defaults.remapping);
  EXPECT_THAT(SessionConfig::FromJson(R"({"graph_options": {"optimizer_options": {"do_common_subexpression_elimination": "no"}}})")
                  .status()
                  .message(),
              HasSubstr("must be true or false"));
  EXPECT_THAT(SessionConfig::FromJson(R"({"graph_options": {"rewrite_options": {"arithmetic_optimization": 1}}})")
                  .status()
                  .message(),
              HasSubstr("'rewrite_options.arithmetic_optimization' must be DEFAULT, ON or OFF"));
}

}  // namespace
}  // namespace tessera
