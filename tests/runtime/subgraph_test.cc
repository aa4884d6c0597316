#include "runtime/subgraph.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "graph/builder/ops.h"

namespace tessera {
namespace {

std::unique_ptr<Graph> Build(const Scope& root) {
  GraphSpec def;
  EXPECT_TRUE(root.ToSpec(&def).ok());
  auto g = Graph::FromSpec(def);
  EXPECT_TRUE(g.ok());
  for (Node* n : (*g)->nodes()) n->set_assigned_device("/job:localhost/replica:0/task:0/device:CPU:0");
  return std::move(*g);
}

std::set<std::string> Names(const Graph& g) {
  std::set<std::string> s;
  for (const Node* n : g.nodes()) s.insert(n->name());
  return s;
}

TEST(SubgraphTest, PrunesToFetchesAndTargetsAndCutsFeeds) {
  Scope root = Scope::NewRootScope();
  auto a = ops::Const(root.WithOpName("a"), Tensor::Scalar(1.0f));
  auto b = ops::Neg(root.WithOpName("b"), a);
  auto c = ops::Neg(root.WithOpName("c"), b);
  auto side = ops::NoOp(root.WithOpName("side"));
  ops::Neg(root.WithOpName("unused"), c);
  ops::NoOp(root.WithOpName("t").WithControlDependencies({side}));
  auto g = Build(root);
  auto sub = BuildSubgraph(*g, {"b"}, {"c"}, {"t"});
  ASSERT_TRUE(sub.ok()) << sub.status();
  EXPECT_EQ(Names(*sub->graph), (std::set<std::string>{"_arg_b_0_0", "c", "side", "t", "_retval_c_0_0"}));
  EXPECT_EQ(sub->graph->FindNode("c")->input_edge(0)->src->op(), "_Arg");
  EXPECT_EQ(sub->feeds[0].dtype, DataType::kFloat);
}

TEST(SubgraphTest, BadNamesAreErrors) {
  Scope root = Scope::NewRootScope();
  ops::Const(root.WithOpName("a"), Tensor::Scalar(1.0f));
  auto g = Build(root);
  EXPECT_EQ(BuildSubgraph(*g, {}, {"zz"}, {}).status().code(), Code::kNotFound);
  EXPECT_EQ(BuildSubgraph(*g, {}, {"a:1"}, {}).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(BuildSubgraph(*g, {"a", "a:0"}, {"a"}, {}).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(BuildSubgraph(*g, {"^a"}, {"a"}, {}).status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace tessera
