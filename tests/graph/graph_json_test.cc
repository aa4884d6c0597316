#include "graph/serialize/graph_json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "graph/builder/ops.h"
#include "graph/graph.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;

constexpr const char* kGraph = R"({"nodes": [
  {"name": "w", "op": "Const", "device": "/cpu:1", "inputs": ["^c"], "colocate_with": ["c"],
   "attrs": {"value": {"dtype": "float32", "shape": [2, 2], "data": [1, 2, 3, 4]}, "dtype": "float32"}},
  {"name": "c", "op": "NoOp"},
  {"name": "x", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [null, 2]}},
  {"name": "y", "op": "MatMul", "inputs": ["x", "w:0"], "attrs": {"transpose_b": true}},
  {"name": "s", "op": "Const", "attrs": {"value": {"dtype": "string", "shape": [2], "data": ["a", "b"]}, "dtype": "string"}}
]})";

TEST(GraphJsonTest, ParsesTheDocumentedShape) {
  auto def = GraphSpecFromJson(kGraph);
  ASSERT_TRUE(def.ok()) << def.status();
  auto g = Graph::FromSpec(*def);
  ASSERT_TRUE(g.ok()) << g.status();
  Node* y = (*g)->FindNode("y");
  EXPECT_EQ(y->output_shape(0), TensorShape({-1, 2}));
  Node* w = (*g)->FindNode("w");
  EXPECT_EQ(w->requested_device(), "/cpu:1");
  EXPECT_EQ(w->control_inputs().size(), 1u);
  Tensor s;
  ASSERT_TRUE((*g)->FindNode("s")->GetAttr("value", &s).ok());
  EXPECT_EQ(s.data<std::string>()[1], "b");
}

TEST(GraphJsonTest, GraphToJsonToGraphRoundTrips) {
  auto def = GraphSpecFromJson(kGraph);
  ASSERT_TRUE(def.ok());
  auto g = Graph::FromSpec(*def);
  ASSERT_TRUE(g.ok());
  std::string once = GraphSpecToJson((*g)->ToSpec());
  auto def2 = GraphSpecFromJson(once);
  ASSERT_TRUE(def2.ok()) << def2.status();
  auto g2 = Graph::FromSpec(*def2);
  ASSERT_TRUE(g2.ok()) << g2.status();
  EXPECT_EQ(GraphSpecToJson((*g2)->ToSpec()), once);
}

TEST(GraphJsonTest, ScopeGraphRoundTrips) {
  Scope root = Scope::NewRootScope();
  auto v = ops::Variable(root.WithOpName("v").WithDevice("/cpu:0"), TensorShape({2}), DataType::kFloat);
  auto a = ops::Assign(root.WithOpName("a"), v, Tensor::FromVector<float>({1, 2}));
  ops::Sum(root.WithOpName("s"), ops::Square(root, a), 0, {.keep_dims = true});
  ops::PaddingFIFOQueue(root.WithOpName("q"), {DataType::kFloat, DataType::kInt32},
                        {.shapes = {TensorShape({-1, 3}), TensorShape({})}});
  GraphSpec def;
  ASSERT_TRUE(root.ToSpec(&def).ok()) << root.status();
  auto back = GraphSpecFromJson(GraphSpecToJson(def));
  ASSERT_TRUE(back.ok()) << back.status();
  auto g = Graph::FromSpec(*back);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(GraphSpecToJson((*g)->ToSpec()), GraphSpecToJson(def));
}

TEST(GraphJsonTest, TensorsRoundTripEveryDtype) {
  for (const char* dtype : {"float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8", "bool"}) {
    std::string text = std::string(R"({"dtype": ")") + dtype + R"(", "shape": [3], "data": [0, 1, 1]})";
    auto t = TensorFromJsonText(text);
    ASSERT_TRUE(t.ok()) << dtype << ": " << t.status();
    auto again = TensorFromJson(TensorToJson(*t));
    ASSERT_TRUE(again.ok());
    EXPECT_TRUE(t->Equals(*again)) << dtype;
  }
  auto nan = TensorFromJsonText(R"({"dtype": "float32", "shape": [2], "data": ["nan", "-inf"]})");
  ASSERT_TRUE(nan.ok());
  EXPECT_EQ(TensorToJson(*nan)["data"][1], "-inf");
  EXPECT_EQ(TensorToJson(Tensor::Scalar(0.1f))["data"][0].get<double>(), 0.1);
}

TEST(GraphJsonTest, BadInputIsAClearError) {
  struct Case {
    const char* json;
    const char* expect;
  };
  const Case cases[] = {
      {R"({"nodes": [)", "Malformed JSON"},
      {"2777e777", "Malformed JSON"},  // found by the fuzzer: a number that overflows a double
      {R"([])", "object with a list 'nodes'"},
      {R"({"nodes": [{"op": "NoOp"}]})", "needs a string 'name'"},
      {R"({"nodes": [{"name": "a", "op": "Frobnicate"}]})", "Op type not registered 'Frobnicate'"},
      {R"({"nodes": [{"name": "a", "op": "NoOp", "input": []}]})", "Unknown key 'input'"},
      {R"({"nodes": [{"name": "a", "op": "Const", "attrs": {"value": {"dtype": "float32", "shape": [2], "data": [1]}, "dtype": "float32"}}]})",
       "needs 2 values, got 1"},
      {R"({"nodes": [{"name": "a", "op": "Const", "attrs": {"value": {"dtype": "int32", "shape": [1], "data": [1.5]}, "dtype": "int32"}}]})",
       "expected an integer"},
      {R"({"nodes": [{"name": "a", "op": "Const", "attrs": {"value": {"dtype": "quux", "data": []}, "dtype": "float32"}}]})",
       "Unknown dtype 'quux'"},
      {R"({"nodes": [{"name": "a", "op": "MatMul", "attrs": {"transpose_a": 3}}]})", "expected bool"},
      {R"({"nodes": [{"name": "a", "op": "NoOp", "attrs": {"nonsense": 1}}]})", "does not declare"},
      {R"({"nodes": [{"name": "a", "op": "NoOp", "inputs": [3]}]})", "must hold strings"},
      {R"({"nodes": [{"name": "a", "op": "Const", "attrs": {"value": {"dtype": "uint8", "shape": [1], "data": [300]}, "dtype": "uint8"}}]})",
       "out of range"},
  };
  for (const Case& c : cases) {
    auto def = GraphSpecFromJson(c.json);
    ASSERT_FALSE(def.ok()) << c.json;
    EXPECT_THAT(def.status().message(), HasSubstr(c.expect)) << c.json;
  }
}

}  // namespace
}  // namespace tessera
