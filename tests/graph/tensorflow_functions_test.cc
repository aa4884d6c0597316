// GraphDefs whose nodes call their function library, as tf.function writes them: nested
// PartitionedCalls, StatelessIf, StatelessWhile and StatelessCase (tests/testdata/tf_functions, made by
// TensorFlow 2.21 with the outputs it computed), imported, inlined, lowered and run; and
// libraries that cannot be: a function that calls itself, a While whose body changes its
// loop variables' types, a call of a function the library lacks.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "graph/serialize/tensorflow_graph.h"
#include "runtime/session.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;

std::string Read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

Tensor FromJson(const nlohmann::json& j, DataType dtype) {
  std::vector<int64_t> dims;
  std::vector<double> flat;
  std::function<void(const nlohmann::json&, size_t)> walk = [&](const nlohmann::json& v, size_t depth) {
    if (!v.is_array()) {
      flat.push_back(v.get<double>());
      return;
    }
    if (dims.size() == depth) dims.push_back(static_cast<int64_t>(v.size()));
    for (const auto& e : v) walk(e, depth + 1);
  };
  walk(j, 0);
  Tensor t(dtype, TensorShape(std::span<const int64_t>(dims)));
  for (size_t i = 0; i < flat.size(); ++i) {
    if (dtype == DataType::kFloat) t.data<float>()[i] = static_cast<float>(flat[i]);
    if (dtype == DataType::kInt32) t.data<int32_t>()[i] = static_cast<int32_t>(flat[i]);
  }
  return t;
}

// Runs GRAPH.pbtxt (NAME.pbtxt by default) on NAME.json's feeds; checks TensorFlow's outputs.
void RunAndCompare(const std::string& name, const std::map<std::string, DataType>& feed_types,
                   const std::string& graph_name = "") {
  const std::string dir = std::string(TESSERA_TEST_DATA_DIR) + "/tf_functions/";
  StatusOr<GraphSpec> graph =
      GraphSpecFromTensorFlow(Read(dir + (graph_name.empty() ? name : graph_name) + ".pbtxt"), TensorFlowFormat::kText);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const nlohmann::json expected = nlohmann::json::parse(Read(dir + name + ".json"));
  StatusOr<std::unique_ptr<Session>> session = Session::Create(SessionConfig(), *graph);
  ASSERT_TRUE(session.ok()) << session.status();
  std::vector<std::pair<std::string, Tensor>> feeds;
  for (const auto& [key, value] : expected["feeds"].items()) feeds.emplace_back(key, FromJson(value, feed_types.at(key)));
  const std::vector<std::string> fetches = expected["fetches"].get<std::vector<std::string>>();
  std::vector<Tensor> out;
  Status s = (*session)->Run(feeds, fetches, {}, &out);
  ASSERT_TRUE(s.ok()) << s;
  for (size_t i = 0; i < fetches.size(); ++i) {
    const Tensor want = FromJson(expected["outputs"][i], out[i].dtype());
    ASSERT_EQ(out[i].shape(), want.shape()) << fetches[i];
    for (int64_t k = 0; k < want.NumElements(); ++k) {
      if (want.dtype() == DataType::kInt32) {
        EXPECT_EQ(out[i].data<int32_t>()[k], want.data<int32_t>()[k]) << fetches[i] << "[" << k << "]";
      } else {
        EXPECT_NEAR(out[i].data<float>()[k], want.data<float>()[k], 1e-5) << fetches[i] << "[" << k << "]";
      }
    }
  }
}

TEST(TensorFlowFunctionsTest, NestedCallsAreInlinedAndGiveTensorFlowsOutputs) {
  RunAndCompare("calls", {{"x", DataType::kFloat}});
}

TEST(TensorFlowFunctionsTest, StatelessIfAndWhileAreLoweredAndGiveTensorFlowsOutputs) {
  RunAndCompare("control_flow", {{"x", DataType::kFloat}, {"n", DataType::kInt32}});
}

TEST(TensorFlowFunctionsTest, TensorArraysInWhileLoopsRideOnTensorLists) {
  RunAndCompare("tensor_lists", {{"x", DataType::kFloat}});
}

TEST(TensorFlowFunctionsTest, ACaseRunsTheIndexedBranchAndTheLastForAnIndexOutOfRange) {
  for (const char* run : {"case_0", "case_1", "case_2", "case_7"}) {
    SCOPED_TRACE(run);
    RunAndCompare(run, {{"i", DataType::kInt32}, {"x", DataType::kFloat}}, "case");
  }
}

// A library of one function `f(x) = g(x)`, where g's body is `body`.
std::string Library(const std::string& main, const std::string& g_body, const std::string& g_ret = "y:output:0") {
  return R"(
node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
)" + main + R"(
library {
  function {
    signature { name: "f" input_arg { name: "x" type: DT_FLOAT } output_arg { name: "out" type: DT_FLOAT } }
    node_def { name: "call" op: "g" input: "x" }
    ret { key: "out" value: "call:out:0" }
  }
  function {
    signature { name: "g" input_arg { name: "x" type: DT_FLOAT } output_arg { name: "out" type: DT_FLOAT } }
    )" + g_body + R"(
    ret { key: "out" value: ")" + g_ret + R"(" }
  }
})";
}

const std::string kCallF = R"(node { name: "c" op: "PartitionedCall" input: "x"
  attr { key: "Tin" value { list { type: DT_FLOAT } } } attr { key: "Tout" value { list { type: DT_FLOAT } } }
  attr { key: "f" value { func { name: "f" } } } })";

TEST(TensorFlowFunctionsTest, AFunctionThatCallsItselfIsRefusedNamingTheCycle) {
  // g calls f, which calls g.
  StatusOr<GraphSpec> g = GraphSpecFromTensorFlow(Library(kCallF, R"(node_def { name: "y" op: "f" input: "x" })"),
                                                  TensorFlowFormat::kText);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(std::string(g.status().message()), HasSubstr("calls itself: f -> g -> f"));
}

TEST(TensorFlowFunctionsTest, ACallOfAMissingFunctionOrOfTheWrongArityIsAnError) {
  StatusOr<GraphSpec> g = GraphSpecFromTensorFlow(Library(kCallF, R"(node_def { name: "y" op: "h" input: "x" })"),
                                                  TensorFlowFormat::kText);
  ASSERT_FALSE(g.ok());
  EXPECT_THAT(std::string(g.status().message()), HasSubstr("Op type not registered 'h'"));
  const std::string two_inputs = R"(node { name: "c" op: "PartitionedCall" input: "x" input: "x"
    attr { key: "f" value { func { name: "f" } } } })";
  g = GraphSpecFromTensorFlow(Library(two_inputs, R"(node_def { name: "y" op: "Relu" input: "x"
      attr { key: "T" value { type: DT_FLOAT } } })"), TensorFlowFormat::kText);
  ASSERT_FALSE(g.ok());
  EXPECT_THAT(std::string(g.status().message()), HasSubstr("passes 2 inputs to a function of 1"));
  EXPECT_THAT(std::string(g.status().message()), HasSubstr("node 'c'"));
}

TEST(TensorFlowFunctionsTest, AWhileWhoseBodyChangesALoopVariablesTypeIsRefused) {
  const std::string text = R"(
node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
node { name: "w" op: "While" input: "x"
  attr { key: "T" value { list { type: DT_FLOAT } } }
  attr { key: "cond" value { func { name: "cond" } } } attr { key: "body" value { func { name: "body" } } } }
library {
  function {
    signature { name: "cond" input_arg { name: "x" type: DT_FLOAT } output_arg { name: "out" type: DT_BOOL } }
    node_def { name: "z" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
               attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape {} float_val: 0 } } } }
    node_def { name: "less" op: "Less" input: "x" input: "z:output:0" attr { key: "T" value { type: DT_FLOAT } } }
    ret { key: "out" value: "less:z:0" }
  }
  function {
    signature { name: "body" input_arg { name: "x" type: DT_FLOAT } output_arg { name: "out" type: DT_INT32 } }
    node_def { name: "cast" op: "Cast" input: "x" attr { key: "SrcT" value { type: DT_FLOAT } }
               attr { key: "DstT" value { type: DT_INT32 } } }
    ret { key: "out" value: "cast:y:0" }
  }
})";
  StatusOr<GraphSpec> g = GraphSpecFromTensorFlow(text, TensorFlowFormat::kText);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(std::string(g.status().message()), HasSubstr("node 'w' (While): body 'body' returns [DT_INT32]"));
}

}  // namespace
}  // namespace tessera
