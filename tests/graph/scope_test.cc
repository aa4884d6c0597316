#include "graph/builder/scope.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "graph/builder/ops.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;

TEST(ScopeTest, NamesAreUniqueAndPrefixed) {
  Scope root = Scope::NewRootScope();
  auto a = ops::Add(root, 1.0f, 2.0f);
  auto b = ops::Add(root, 1.0f, 2.0f);
  auto tower = root.NewSubScope("tower");
  auto c = ops::Add(tower.WithOpName("c"), a, b);
  auto tower2 = root.NewSubScope("tower");
  auto d = ops::Neg(tower2, c);
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(a.node->name(), "Add");
  EXPECT_EQ(b.node->name(), "Add_1");
  EXPECT_EQ(c.node->name(), "tower/c");
  EXPECT_EQ(d.node->name(), "tower_1/Neg");
  // An explicit name that is taken is an error, not a silent rename.
  ops::Neg(tower.WithOpName("c"), c);
  EXPECT_THAT(root.status().message(), HasSubstr("Duplicate node name 'tower/c'"));
}

// A scope over a graph built elsewhere adds to it, around the names already taken.
TEST(ScopeTest, ForGraphAddsToABorrowedGraph) {
  Graph graph;
  NodeSpec c;
  c.name = "Const";
  c.op = "Const";
  c.attrs = {{"value", Tensor::Scalar(2.0f)}, {"dtype", DataType::kFloat}};
  ASSERT_TRUE(graph.AddNode(c).ok());
  {
    Scope root = Scope::ForGraph(&graph);
    auto k = ops::Const(root, Tensor::Scalar(3.0f));
    auto sum = ops::Add(root.NewSubScope("grads"), Output(graph.FindNode("Const")), k);
    ASSERT_TRUE(root.ok()) << root.status();
    EXPECT_EQ(k.node->name(), "Const_1");
    EXPECT_EQ(sum.node->name(), "grads/Add");
  }
  EXPECT_EQ(graph.num_nodes(), 3);  // the scope is gone, the graph and its nodes stay
  // A later scope over it finds "grads" taken, as a scope of the nodes in it.
  auto again = ops::Neg(Scope::ForGraph(&graph).NewSubScope("grads"), Output(graph.FindNode("Const")));
  EXPECT_EQ(again.node->name(), "grads_1/Neg");
  // One in the caller's name scope adds under it as it is, though it is taken.
  auto inner = ops::Neg(Scope::ForGraph(&graph, "grads").NewSubScope("more"), Output(graph.FindNode("Const")));
  EXPECT_EQ(inner.node->name(), "grads/more/Neg");
}

TEST(ScopeTest, DeviceScopesComposeLikeTfDevice) {
  Scope root = Scope::NewRootScope();
  Scope ps = root.WithDevice("/job:ps/task:1");
  auto x = ops::Const(ps.WithOpName("x"), Tensor::Scalar(1.0f));
  auto y = ops::Neg(ps.WithDevice("/cpu:1").WithOpName("y"), x);
  auto z = ops::Neg(ps.WithDevice("/device:GPU:0").WithDevice("/cpu:3").WithOpName("z"), x);
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(x.node->requested_device(), "/job:ps/task:1");
  EXPECT_EQ(y.node->requested_device(), "/job:ps/task:1/device:CPU:1");
  EXPECT_EQ(z.node->requested_device(), "/job:ps/task:1/device:CPU:3");
}

TEST(ScopeTest, DeviceFunctionSeesTheNodeAndItsRequest) {
  Scope root = Scope::NewRootScope();
  std::vector<std::string> seen;
  auto fn = [&](const Node& n) {
    seen.push_back(n.name() + "@" + n.requested_device());
    return n.op() == "VariableV2" ? std::string("/cpu:0") : std::string("/cpu:1");
  };
  Scope s = root.WithDeviceFunction(fn);
  auto v = ops::Variable(s.WithOpName("v"), TensorShape({2}), DataType::kFloat);
  auto n = ops::Neg(s.WithDevice("/job:w").WithOpName("n"), v);
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(v.node->requested_device(), "/device:CPU:0");
  EXPECT_EQ(n.node->requested_device(), "/device:CPU:1");
  EXPECT_TRUE(n.node->requested_by_function());
  EXPECT_EQ(seen, (std::vector<std::string>{"v@", "n@/job:w"}));
}

TEST(ScopeTest, BadDeviceStringIsAScopeError) {
  Scope root = Scope::NewRootScope();
  ops::Const(root.WithDevice("/gpu:abc"), Tensor::Scalar(1.0f));
  EXPECT_EQ(root.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(root.status().message(), HasSubstr("/gpu:abc"));
  Scope r2 = Scope::NewRootScope();
  ops::Const(r2.WithDeviceFunction([](const Node&) { return std::string("nonsense:dev:x"); }),
             Tensor::Scalar(1.0f));
  EXPECT_THAT(r2.status().message(), HasSubstr("device function"));
}

TEST(ScopeTest, ControlDependenciesColocationAndContainer) {
  Scope root = Scope::NewRootScope();
  auto a = ops::NoOp(root.WithOpName("a"));
  auto b = ops::NoOp(root.WithOpName("b"));
  auto v = ops::Variable(root.WithOpName("v"), TensorShape({}), DataType::kFloat);
  auto c = ops::Identity(root.WithControlDependencies({a, b}).ColocateWith(v).WithOpName("c"), v);
  auto w = ops::Variable(root.WithContainer("c1").WithOpName("w"), TensorShape({}), DataType::kFloat);
  ASSERT_TRUE(root.ok()) << root.status();
  ASSERT_EQ(c.node->control_inputs().size(), 2u);
  EXPECT_EQ(c.node->control_inputs()[1]->src->name(), "b");
  EXPECT_EQ(c.node->colocate_with(), std::vector<std::string>{"v"});
  std::string container;
  ASSERT_TRUE(w.node->GetAttr("container", &container).ok());
  EXPECT_EQ(container, "c1");
}

TEST(ScopeTest, ErrorsStickAndLaterOpsAreSkipped) {
  Scope root = Scope::NewRootScope();
  auto m = ops::Const(root, Tensor(DataType::kFloat, TensorShape({2, 3})));
  auto bad = ops::MatMul(root.WithOpName("mm"), m, m);
  EXPECT_EQ(bad.node, nullptr);
  auto after = ops::Neg(root, bad);
  EXPECT_EQ(after.node, nullptr);
  EXPECT_THAT(root.status().message(), HasSubstr("'mm' (op: 'MatMul')"));
  GraphSpec def;
  EXPECT_FALSE(root.ToSpec(&def).ok());
}

}  // namespace
}  // namespace tessera
