#include "graph/graph.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tessera {
namespace {

using ::testing::HasSubstr;

NodeSpec ConstDef(std::string name, Tensor value) {
  NodeSpec d;
  d.name = std::move(name);
  d.op = "Const";
  d.attrs["dtype"] = value.dtype();
  d.attrs["value"] = std::move(value);
  return d;
}

NodeSpec OpDef2(std::string name, std::string op, std::vector<std::string> inputs) {
  NodeSpec d;
  d.name = std::move(name);
  d.op = std::move(op);
  d.inputs = std::move(inputs);
  return d;
}

TEST(GraphTest, InfersTypeAttrsAndShapes) {
  Graph g;
  ASSERT_TRUE(g.AddNode(ConstDef("a", Tensor::FromVector<float>({1, 2, 3, 4}, TensorShape({2, 2})))).ok());
  ASSERT_TRUE(g.AddNode(ConstDef("b", Tensor::FromVector<float>({1, 2}))).ok());
  StatusOr<Node*> add = g.AddNode(OpDef2("c", "Add", {"a", "b"}));
  ASSERT_TRUE(add.ok()) << add.status();
  DataType t;
  ASSERT_TRUE((*add)->GetAttr("T", &t).ok());
  EXPECT_EQ(t, DataType::kFloat);
  EXPECT_EQ((*add)->output_shape(0), TensorShape({2, 2}));
  EXPECT_EQ((*add)->input_edge(1)->src->name(), "b");
}

TEST(GraphTest, ListTypeArgsInferCheckAndCountTheirTypes) {
  Graph g;
  ASSERT_TRUE(g.AddNode(ConstDef("q", Tensor::FromVector<std::string>({"", "q"}))).ok());
  ASSERT_TRUE(g.AddNode(ConstDef("f", Tensor::Scalar(1.0f))).ok());
  ASSERT_TRUE(g.AddNode(ConstDef("i", Tensor::Scalar<int32_t>(2))).ok());
  // Tcomponents is inferred from the inputs after the handle.
  StatusOr<Node*> enq = g.AddNode(OpDef2("enq", "QueueEnqueue", {"q", "f", "i"}));
  ASSERT_TRUE(enq.ok()) << enq.status();
  std::vector<DataType> types;
  ASSERT_TRUE((*enq)->GetAttr("Tcomponents", &types).ok());
  EXPECT_EQ(types, (std::vector<DataType>{DataType::kFloat, DataType::kInt32}));
  // Outputs expand the list; a given list must match the inputs; a minimum bounds its length.
  NodeSpec deq = OpDef2("deq", "QueueDequeue", {"q"});
  deq.attrs["component_types"] = std::vector<DataType>{DataType::kInt32, DataType::kFloat};
  StatusOr<Node*> d = g.AddNode(deq);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ((*d)->num_outputs(), 2);
  EXPECT_EQ((*d)->output_type(1), DataType::kFloat);
  NodeSpec wrong = OpDef2("wrong", "QueueEnqueue", {"q", "f", "i"});
  wrong.attrs["Tcomponents"] = std::vector<DataType>{DataType::kFloat, DataType::kFloat};
  EXPECT_THAT(g.AddNode(wrong).status().message(), HasSubstr("expects float32 but 'i' is int32"));
  NodeSpec empty = OpDef2("empty", "FIFOQueue", {});
  empty.attrs["component_types"] = std::vector<DataType>{};
  EXPECT_THAT(g.AddNode(empty).status().message(), HasSubstr("must be at least 1 long"));
}

TEST(GraphTest, RejectsBadNodes) {
  Graph g;
  ASSERT_TRUE(g.AddNode(ConstDef("f", Tensor::Scalar(1.0f))).ok());
  ASSERT_TRUE(g.AddNode(ConstDef("i", Tensor::Scalar(int32_t{1}))).ok());
  ASSERT_TRUE(g.AddNode(ConstDef("m", Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape({2, 3})))).ok());

  auto err = [&](NodeSpec d) { return g.AddNode(d).status(); };
  EXPECT_EQ(err(OpDef2("x", "NoSuchOp", {})).code(), Code::kNotFound);
  EXPECT_THAT(err(OpDef2("x", "NoSuchOp", {})).message(), HasSubstr("NoSuchOp"));
  Status mismatch = err(OpDef2("x", "Add", {"f", "i"}));
  EXPECT_EQ(mismatch.code(), Code::kInvalidArgument);
  EXPECT_THAT(mismatch.message(), HasSubstr("'x' (Add)"));
  EXPECT_THAT(mismatch.message(), HasSubstr("int32"));
  EXPECT_THAT(err(OpDef2("x", "Add", {"f", "nope"})).message(), HasSubstr("unknown node 'nope'"));
  EXPECT_THAT(err(OpDef2("x", "Add", {"f"})).message(), HasSubstr("expects 2 data inputs, got 1"));
  EXPECT_THAT(err(OpDef2("x", "Add", {"f", "f:3"})).message(), HasSubstr("has only 1 outputs"));
  EXPECT_THAT(err(OpDef2("f", "NoOp", {})).message(), HasSubstr("Duplicate node name 'f'"));
  EXPECT_THAT(err(OpDef2("bad name", "NoOp", {})).message(), HasSubstr("not valid"));
  EXPECT_THAT(err(OpDef2("x", "Add", {"^f", "f", "f"})).message(), HasSubstr("after a control input"));
  Status dims = err(OpDef2("mm", "MatMul", {"m", "m"}));
  EXPECT_THAT(dims.message(), HasSubstr("Dimensions must be equal, but are 3 and 2"));
  EXPECT_THAT(dims.message(), HasSubstr("'mm' (op: 'MatMul') with input shapes: [2,3], [2,3]"));
  NodeSpec missing;
  missing.name = "c";
  missing.op = "Const";
  EXPECT_THAT(err(missing).message(), HasSubstr("missing attr"));
  NodeSpec extra = OpDef2("x", "NoOp", {});
  extra.attrs["bogus"] = 1;
  EXPECT_THAT(err(extra).message(), HasSubstr("'bogus'"));
  NodeSpec string_add = ConstDef("s", Tensor::Scalar(std::string("a")));
  ASSERT_TRUE(g.AddNode(string_add).ok());
  EXPECT_THAT(err(OpDef2("x", "Add", {"s", "s"})).message(), HasSubstr("not in the list of allowed values"));
  // Nothing was added by the failures.
  EXPECT_EQ(g.num_nodes(), 4);
}

TEST(GraphTest, RefInputsNeedAVariable) {
  Graph g;
  ASSERT_TRUE(g.AddNode(ConstDef("c", Tensor::Scalar(1.0f))).ok());
  Status s = g.AddNode(OpDef2("a", "Assign", {"c", "c"})).status();
  EXPECT_THAT(s.message(), HasSubstr("must be a reference"));
}

TEST(GraphTest, ABackEdgeClosesALoopOnlyIntoAMergeOfItsType) {
  Graph g;
  ASSERT_TRUE(g.AddNode(ConstDef("x", Tensor::Scalar(1.0f))).ok());
  ASSERT_TRUE(g.AddNode(ConstDef("i", Tensor::Scalar(1))).ok());
  NodeSpec enter = OpDef2("enter", "Enter", {"x"});
  enter.attrs["frame_name"] = std::string("loop");
  ASSERT_TRUE(g.AddNode(enter).ok());
  Node* merge = *g.AddNode(OpDef2("merge", "Merge", {"enter", "enter"}));
  Node* next = *g.AddNode(OpDef2("next", "NextIteration", {"merge"}));
  ASSERT_TRUE(g.ConnectBackEdge(merge, 1, next, 0).ok());
  EXPECT_EQ(merge->input_edge(1)->src, next);
  ASSERT_EQ(next->out_edges().size(), 1u);
  EXPECT_EQ(g.FindNode("enter")->out_edges().size(), 1u);  // the placeholder edge is gone
  EXPECT_THAT(g.ConnectBackEdge(next, 0, merge, 0).message(), HasSubstr("is no Merge"));
  EXPECT_THAT(g.ConnectBackEdge(merge, 1, g.FindNode("i"), 0).message(), HasSubstr("expects float32"));
  EXPECT_THAT(g.ConnectBackEdge(merge, 2, next, 0).message(), HasSubstr("is no Merge with an input 2"));
  EXPECT_EQ(merge->input_edge(1)->src, next);  // the refusals changed nothing
}

// Tensor.set_shape: what a script knows narrows the static shape, and what is added after
// infers from the narrower one.
TEST(GraphTest, ARefinedOutputShapeIsWhatLaterNodesSee) {
  Graph g;
  NodeSpec p = OpDef2("p", "Placeholder", {});
  p.attrs["dtype"] = DataType::kFloat;
  p.attrs["shape"] = TensorShape({-1, -1});
  Node* placeholder = *g.AddNode(p);
  ASSERT_TRUE(g.RefineOutputShape(placeholder, 0, TensorShape({-1, 8})).ok());
  ASSERT_TRUE(g.RefineOutputShape(placeholder, 0, TensorShape::UnknownRank()).ok());  // says nothing new
  EXPECT_EQ(placeholder->output_shape(0), TensorShape({-1, 8}));
  Node* neg = *g.AddNode(OpDef2("neg", "Neg", {"p"}));
  EXPECT_EQ(neg->output_shape(0), TensorShape({-1, 8}));
  EXPECT_THAT(g.RefineOutputShape(placeholder, 0, TensorShape({4, 7})).message(),
              HasSubstr("Shapes [?,8] and [4,7] of 'p' (Placeholder) output 0 are incompatible"));
  EXPECT_THAT(g.RefineOutputShape(placeholder, 1, TensorShape({4, 8})).message(), HasSubstr("has no output 1"));
  EXPECT_EQ(placeholder->output_shape(0), TensorShape({-1, 8}));
}

TEST(GraphTest, FromSpecOrdersAndDetectsCycles) {
  GraphSpec def;
  def.nodes.push_back(OpDef2("c", "Add", {"a", "b"}));
  def.nodes.push_back(ConstDef("a", Tensor::Scalar(1.0f)));
  def.nodes.push_back(ConstDef("b", Tensor::Scalar(2.0f)));
  auto g = Graph::FromSpec(def);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ((*g)->nodes().back()->name(), "c");

  GraphSpec cyclic;
  cyclic.nodes.push_back(OpDef2("x", "Identity", {"y"}));
  cyclic.nodes.push_back(OpDef2("y", "Identity", {"x"}));
  cyclic.nodes.push_back(ConstDef("k", Tensor::Scalar(1.0f)));
  Status s = Graph::FromSpec(cyclic).status();
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("cycle"));
  EXPECT_THAT(s.message(), HasSubstr("'x'"));

  GraphSpec self_loop;
  self_loop.nodes.push_back(OpDef2("n", "NoOp", {"^n"}));
  EXPECT_THAT(Graph::FromSpec(self_loop).status().message(), HasSubstr("cycle"));
}

TEST(GraphTest, AddNCountsItsInputs) {
  Graph g;
  ASSERT_TRUE(g.AddNode(ConstDef("a", Tensor::Scalar(1.0f))).ok());
  auto n = g.AddNode(OpDef2("s", "AddN", {"a", "a", "a"}));
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ((*n)->num_inputs(), 3);
  int64_t count = 0;
  ASSERT_TRUE((*n)->GetAttr("N", &count).ok());
  EXPECT_EQ(count, 3);
}

TEST(GraphTest, ReshapeAndReductionShapesUseConstInputs) {
  Graph g;
  ASSERT_TRUE(g.AddNode(ConstDef("x", Tensor(DataType::kFloat, TensorShape({2, 3, 4})))).ok());
  ASSERT_TRUE(g.AddNode(ConstDef("shape", Tensor::FromVector<int32_t>({-1, 4}))).ok());
  ASSERT_TRUE(g.AddNode(ConstDef("axes", Tensor::FromVector<int32_t>({0, -1}))).ok());
  auto r = g.AddNode(OpDef2("r", "Reshape", {"x", "shape"}));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)->output_shape(0), TensorShape({6, 4}));
  auto s = g.AddNode(OpDef2("s", "Sum", {"x", "axes"}));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ((*s)->output_shape(0), TensorShape({3}));
  ASSERT_TRUE(g.AddNode(ConstDef("bad", Tensor::FromVector<int32_t>({5, 5}))).ok());
  EXPECT_THAT(g.AddNode(OpDef2("r2", "Reshape", {"x", "bad"})).status().message(),
              HasSubstr("Cannot reshape a tensor with 24 elements"));
}

// x[:, 1:3] of a batch of rows: the dims a slice fixes are known though the batch is not.
TEST(GraphTest, AStridedSliceOfAPartlyKnownShapeKnowsWhatItFixes) {
  Graph g;
  NodeSpec p = OpDef2("x", "Placeholder", {});
  p.attrs["dtype"] = DataType::kFloat;
  p.attrs["shape"] = TensorShape({-1, 4, 6});
  ASSERT_TRUE(g.AddNode(p).ok());
  for (auto [name, value] : {std::pair{"b", std::vector<int32_t>{0, 1, 2}}, {"e", {0, 3, 0}}, {"s", {1, 1, 1}}}) {
    ASSERT_TRUE(g.AddNode(ConstDef(name, Tensor::FromVector<int32_t>(value))).ok());
  }
  auto slice = [&](const char* name, int64_t begin_mask, int64_t end_mask, int64_t shrink) {
    NodeSpec d = OpDef2(name, "StridedSlice", {"x", "b", "e", "s"});
    d.attrs["begin_mask"] = begin_mask;
    d.attrs["end_mask"] = end_mask;
    d.attrs["shrink_axis_mask"] = shrink;
    return (*g.AddNode(d))->output_shape(0);
  };
  EXPECT_EQ(slice("rows", 1, 5, 0), TensorShape({-1, 2, 4}));   // x[:, 1:3, 2:]
  EXPECT_EQ(slice("first", 0, 5, 1), TensorShape({2, 4}));      // x[0, 1:3, 2:]
  // What it takes of the batch stays unknown, as in TensorFlow: x[:5] of 3 rows is 3.
  EXPECT_EQ(slice("none", 0, 4, 0), TensorShape({-1, 2, 4}));   // x[0:0, 1:3, 2:]
}

TEST(GraphTest, ToSpecRoundTrips) {
  GraphSpec def;
  def.nodes.push_back(ConstDef("a", Tensor::Scalar(1.0f)));
  NodeSpec c = OpDef2("c", "Identity", {"a", "^a"});
  c.device = "/cpu:1";
  c.colocate_with = {"a"};
  def.nodes.push_back(c);
  auto g = Graph::FromSpec(def);
  ASSERT_TRUE(g.ok());
  GraphSpec back = (*g)->ToSpec();
  ASSERT_EQ(back.nodes.size(), 2u);
  EXPECT_EQ(back.nodes[1].inputs, (std::vector<std::string>{"a", "^a"}));
  EXPECT_EQ(back.nodes[1].device, "/cpu:1");
  EXPECT_EQ(back.nodes[1].colocate_with, std::vector<std::string>{"a"});
}

}  // namespace
}  // namespace tessera
