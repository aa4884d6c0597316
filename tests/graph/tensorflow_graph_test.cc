#include "graph/serialize/tensorflow_graph.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "graph/serialize/graph_json.h"
#include "tests/captured_log.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;

// tf_matmul_relu.pb was written by TensorFlow 2.21 (tf.compat.v1, as_graph_def(add_shapes=True)):
//   x = placeholder(float32, [None, 3]); w = const 3x2 [1..6]; b = const [0.5, -20]
//   y = relu(bias_add(matmul(x, w), b)); z = reduce_sum(y, axis=1) colocated with y
std::string TestData(const std::string& name) {
  std::ifstream in(std::string(TESSERA_TEST_DATA_DIR) + "/" + name, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(TensorFlowGraphTest, ReadsAGraphTensorFlowWrote) {
  std::string bytes = TestData("tf_matmul_relu.pb");
  ASSERT_FALSE(bytes.empty());
  EXPECT_EQ(SniffTensorFlowFormat(bytes), TensorFlowFormat::kBinary);
  auto graph = ImportGraphDef(bytes);
  ASSERT_TRUE(graph.ok()) << graph.status();
  Node* x = (*graph)->FindNode("x");
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->output_shape(0), TensorShape({-1, 3}));
  Tensor w;
  ASSERT_TRUE((*graph)->FindNode("w")->GetAttr("value", &w).ok());
  EXPECT_TRUE(w.Equals(Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape({3, 2}))));
  Node* z = (*graph)->FindNode("z");
  ASSERT_NE(z, nullptr);
  EXPECT_EQ(z->colocate_with(), std::vector<std::string>{"y"});
  EXPECT_EQ(z->output_shape(0), TensorShape({-1}));
  EXPECT_EQ((*graph)->FindNode("y")->op(), "Relu");
}

TEST(TensorFlowGraphTest, DroppedAttrsAreLoggedOnceEach) {
  testing::CapturedLog log;
  auto def = GraphSpecFromTensorFlow(TestData("tf_matmul_relu.pb"), TensorFlowFormat::kBinary);
  ASSERT_TRUE(def.ok()) << def.status();
  int output_shapes = 0;
  for (const std::string& line : log.lines()) output_shapes += line.find("'_output_shapes'") != std::string::npos;
  EXPECT_EQ(output_shapes, 1);
  EXPECT_THAT(log.lines(), ::testing::Contains(HasSubstr("ignoring attr '_output_shapes' on 8 nodes")));
  EXPECT_THAT(log.lines(), ::testing::Contains(HasSubstr("ignoring attr 'grad_a' on 1 node (MatMul")));
}

TEST(TensorFlowGraphTest, BinaryAndTextRoundTrip) {
  auto def = GraphSpecFromTensorFlow(TestData("tf_matmul_relu.pb"), TensorFlowFormat::kBinary);
  ASSERT_TRUE(def.ok()) << def.status();
  for (TensorFlowFormat f : {TensorFlowFormat::kBinary, TensorFlowFormat::kText}) {
    auto bytes = GraphSpecToTensorFlow(*def, f);
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    EXPECT_EQ(SniffTensorFlowFormat(*bytes), f);
    auto back = GraphSpecFromTensorFlow(*bytes, f);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(GraphSpecToJson(*back), GraphSpecToJson(*def));
  }
}

// Every attr type Tessera has, through both formats.
TEST(TensorFlowGraphTest, EveryAttrTypeRoundTrips) {
  auto def = GraphSpecFromJson(R"({"nodes": [
    {"name": "s", "op": "Const", "attrs": {"dtype": "string",
      "value": {"dtype": "string", "shape": [2], "data": ["a", "b\u0000c"]}}},
    {"name": "h", "op": "Const", "attrs": {"dtype": "float16",
      "value": {"dtype": "float16", "shape": [2], "data": [1.5, -2]}}},
    {"name": "p", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": null}},
    {"name": "q", "op": "FIFOQueue", "attrs": {"component_types": ["float32", "int64"], "shapes": [[2], [null, 3]],
      "capacity": 7, "shared_name": "shared"}},
    {"name": "r", "op": "RandomUniform", "inputs": ["i"], "attrs": {"dtype": "float64", "seed": 3}},
    {"name": "i", "op": "Const", "attrs": {"dtype": "int32", "value": {"dtype": "int32", "shape": [2], "data": [2, 3]}}},
    {"name": "m", "op": "MaxPool", "inputs": ["p"], "colocate_with": ["p"],
      "attrs": {"ksize": [1, 2, 2, 1], "strides": [1, 2, 2, 1], "padding": "SAME"}}
  ]})");
  ASSERT_TRUE(def.ok()) << def.status();
  for (TensorFlowFormat f : {TensorFlowFormat::kBinary, TensorFlowFormat::kText}) {
    auto bytes = GraphSpecToTensorFlow(*def, f);
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    auto back = GraphSpecFromTensorFlow(*bytes, f);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(GraphSpecToJson(*back), GraphSpecToJson(*def));
  }
}

StatusOr<GraphSpec> FromText(std::string_view text, const GraphDefImportOptions& options = {}) {
  return GraphSpecFromTensorFlow(text, TensorFlowFormat::kText, options);
}

constexpr const char* kConst = R"(
node { name: "c" op: "Const"
  attr { key: "dtype" value { type: DT_FLOAT } }
  attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 2 } dim { size: 3 } }
                                       %s } } } })";

std::string ConstWith(const std::string& values) {
  std::string s = kConst;
  s.replace(s.find("%s"), 2, values);
  return s;
}

TEST(TensorFlowGraphTest, TypedValuesRepeatTheLastAsTensorFlowDoes) {
  auto def = FromText(ConstWith("float_val: 1 float_val: 2"));
  ASSERT_TRUE(def.ok()) << def.status();
  Tensor t;
  ASSERT_TRUE(GetAttr(def->nodes[0].attrs, "c", "value", &t).ok());
  EXPECT_TRUE(t.Equals(Tensor::FromVector<float>({1, 2, 2, 2, 2, 2}, TensorShape({2, 3}))));
  def = FromText(ConstWith(""));
  ASSERT_TRUE(def.ok()) << def.status();
  ASSERT_TRUE(GetAttr(def->nodes[0].attrs, "c", "value", &t).ok());
  EXPECT_TRUE(t.Equals(Tensor::FromVector<float>({0, 0, 0, 0, 0, 0}, TensorShape({2, 3}))));
}

TEST(TensorFlowGraphTest, MalformedTensorsNameTheNodeAndAttr) {
  auto too_many = FromText(ConstWith("float_val: 1 float_val: 2 float_val: 3 float_val: 4 float_val: 5 "
                                     "float_val: 6 float_val: 7"));
  ASSERT_FALSE(too_many.ok());
  EXPECT_THAT(too_many.status().message(), HasSubstr("holds 6 values, the proto lists 7"));
  EXPECT_THAT(too_many.status().message(), HasSubstr("attr 'value' of node 'c' (Const)"));

  auto short_content = FromText(ConstWith(R"(tensor_content: "\000\000\200?")"));
  ASSERT_FALSE(short_content.ok());
  EXPECT_THAT(short_content.status().message(), HasSubstr("needs 24 bytes of tensor_content, got 4"));

  std::string huge = kConst;
  huge.replace(huge.find("size: 3"), 7, "size: 4000000000000");
  huge.replace(huge.find("%s"), 2, "float_val: 1");
  auto bomb = FromText(huge);
  ASSERT_FALSE(bomb.ok());
  EXPECT_THAT(bomb.status().message(), HasSubstr("would take more than"));

  std::string complex = ConstWith("");
  complex.replace(complex.find("tensor { dtype: DT_FLOAT"), 24, "tensor { dtype: DT_COMPLEX64");
  auto bad_type = FromText(complex);
  ASSERT_FALSE(bad_type.ok());
  EXPECT_THAT(bad_type.status().message(), HasSubstr("DT_COMPLEX64 is not a type Tessera has"));
}

TEST(TensorFlowGraphTest, UnknownOpIsNotFoundNamingTheNode) {
  auto def = FromText(R"(node { name: "q" op: "NoSuchOpV9" })");
  ASSERT_FALSE(def.ok());
  EXPECT_EQ(def.status().code(), Code::kNotFound);
  EXPECT_THAT(def.status().message(), HasSubstr("Op type not registered 'NoSuchOpV9' (node 'q')"));
}

TEST(TensorFlowGraphTest, AttrOfTheWrongTypeNamesNodeAndAttr) {
  auto def = FromText(R"(node { name: "p" op: "Placeholder" attr { key: "dtype" value { i: 3 } } })");
  ASSERT_FALSE(def.ok());
  EXPECT_EQ(def.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(def.status().message(), HasSubstr("gives a int, the op declares type (attr 'dtype' of node 'p' (Placeholder))"));
}

TEST(TensorFlowGraphTest, AttrsTesseraLacksAreRefusedAwayFromTheirNeutralValue) {
  constexpr const char* kConv = R"(
node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
node { name: "f" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
node { name: "c" op: "Conv2D" input: "x" input: "f"
  attr { key: "strides" value { list { i: 1 i: 1 i: 1 i: 1 } } }
  attr { key: "padding" value { s: "SAME" } }
  attr { key: "explicit_paddings" value { list { PADS } } } })";
  std::string none = kConv, some = kConv;
  none.replace(none.find("PADS"), 4, "");
  some.replace(some.find("PADS"), 4, "i: 0 i: 0 i: 1 i: 1 i: 1 i: 1 i: 0 i: 0");
  EXPECT_TRUE(FromText(none).ok()) << FromText(none).status();
  auto padded = FromText(some);
  ASSERT_FALSE(padded.ok());
  EXPECT_EQ(padded.status().code(), Code::kUnimplemented);
  EXPECT_THAT(padded.status().message(), HasSubstr("attr 'explicit_paddings' of node 'c' (Conv2D)"));
}

TEST(TensorFlowGraphTest, TextSyntaxErrorsNameLineAndColumn) {
  auto def = FromText("node {\n  name: \"a\"\n  op: Const\n");
  ASSERT_FALSE(def.ok());
  EXPECT_THAT(def.status().message(), HasSubstr("line 3 column"));
}

TEST(TensorFlowGraphTest, BinaryErrorsNameTheByteOffset) {
  std::string bytes = TestData("tf_matmul_relu.pb");
  auto truncated = GraphSpecFromTensorFlow(bytes.substr(0, bytes.size() - 7), TensorFlowFormat::kBinary);
  ASSERT_FALSE(truncated.ok());
  EXPECT_THAT(truncated.status().message(), HasSubstr("is truncated"));
  EXPECT_THAT(truncated.status().message(), HasSubstr("at byte offset"));

  // The first node's name length claims more bytes than its node holds.
  std::string corrupt = bytes;
  ASSERT_EQ(corrupt[2], '\x0a');
  corrupt[3] = '\x7f';
  auto bad = GraphSpecFromTensorFlow(corrupt, TensorFlowFormat::kBinary);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("node #0 at byte offset 0 does not parse"));

  auto garbage = GraphSpecFromTensorFlow(std::string("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11),
                                        TensorFlowFormat::kBinary);
  ASSERT_FALSE(garbage.ok());
  EXPECT_THAT(garbage.status().message(), HasSubstr("byte offset 0"));
}

TEST(TensorFlowGraphTest, DeepNestingIsRefusedNotACrash) {
  std::string text = "node { name: \"p\" op: \"Placeholder\" attr { key: \"shape\" value { ";
  const int depth = 100000;
  for (int i = 0; i < depth; ++i) text += "list { func { attr { key: \"k\" value { ";
  for (int i = 0; i < depth; ++i) text += "} } } } ";
  text += "} } }";
  EXPECT_FALSE(FromText(text).ok());
  std::string binary;
  // AttrValue.list (field 1) nested in itself through func (9) and attr (2): a chain of
  // length-delimited fields, each wrapping the next.
  std::string inner;
  for (int i = 0; i < 2000; ++i) {
    std::string wrapped = "\x0a";
    size_t n = inner.size();
    do {
      wrapped += static_cast<char>((n & 0x7f) | (n > 0x7f ? 0x80 : 0));
      n >>= 7;
    } while (n != 0);
    inner = wrapped + inner;
  }
  EXPECT_FALSE(GraphSpecFromTensorFlow(inner, TensorFlowFormat::kBinary).ok());
}

TEST(TensorFlowGraphTest, ACycleIsAnErrorWhenTheGraphIsBuilt) {
  auto graph = ImportGraphDef(R"(
node { name: "a" op: "Identity" input: "b" attr { key: "T" value { type: DT_FLOAT } } }
node { name: "b" op: "Identity" input: "a" attr { key: "T" value { type: DT_FLOAT } } })");
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(), HasSubstr("cycle"));
}

// Calls are inlined (tests/graph/tensorflow_functions_test.cc); one that does not fit its
// function is an error naming the node.
TEST(TensorFlowGraphTest, AFunctionCallOfTheWrongArityNamesTheNode) {
  auto def = FromText(R"(
library { function { signature { name: "my_fn" input_arg { name: "x" type: DT_FLOAT } } } }
node { name: "call" op: "my_fn" })");
  ASSERT_FALSE(def.ok());
  EXPECT_EQ(def.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(def.status().message(), HasSubstr("node 'call' (my_fn) calling function 'my_fn' passes 0 inputs"));
}

TEST(TensorFlowGraphTest, ColocationMustNameANode) {
  auto def = FromText(R"(node { name: "n" op: "NoOp" attr { key: "_class" value { list { s: "elsewhere" } } } })");
  ASSERT_FALSE(def.ok());
  EXPECT_THAT(def.status().message(), HasSubstr("_class entry 'elsewhere' is not 'loc:@NODE'"));
}

TEST(TensorFlowGraphTest, MissingFileNamesThePath) {
  auto graph = ImportGraphDefFile("/nonexistent/model.pb");
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(), HasSubstr("/nonexistent/model.pb"));
}

}  // namespace
}  // namespace tessera
