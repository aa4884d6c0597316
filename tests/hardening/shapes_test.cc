// Shapes whose element counts overflow, from every place a shape comes from: a file, a
// feed, and a kernel's input values.
#include <gmock/gmock.h>

#include <limits>

#include "tests/hardening/hardening_util.h"

namespace tessera::testing {
namespace {

using ::testing::HasSubstr;

TEST(ShapesTest, MakeRefusesAProductPast64BitsAndNumElementsNeverWraps) {
  const std::vector<int64_t> wraps_to_zero = {int64_t{1} << 62, 4};
  StatusOr<TensorShape> s = TensorShape::Make(wraps_to_zero);
  ASSERT_EQ(s.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(s.status().message(), HasSubstr("[4611686018427387904,4] has more than 2^63-1 elements"));
  EXPECT_TRUE(TensorShape::Make(std::vector<int64_t>{int64_t{1} << 62, 0}).ok());  // zero elements
  EXPECT_TRUE(TensorShape::Make(std::vector<int64_t>{int64_t{1} << 62, -1}).ok());  // not yet known
  // A shape built without validation saturates instead of wrapping to a small count.
  EXPECT_EQ(TensorShape(wraps_to_zero).num_elements(), std::numeric_limits<int64_t>::max());
  StatusOr<Tensor> t = Tensor::Allocate(CpuAllocator(), DataType::kFloat, TensorShape(wraps_to_zero));
  EXPECT_EQ(t.status().code(), Code::kInvalidArgument);
  // Elements that fit but bytes that do not.
  t = Tensor::Allocate(CpuAllocator(), DataType::kDouble, TensorShape({int64_t{1} << 61}));
  EXPECT_EQ(t.status().code(), Code::kResourceExhausted);
}

TEST(ShapesTest, AConstWhoseShapeOverflowsIsRefusedWhenTheGraphIsRead) {
  // Its element count wraps to 0, which matched the empty data before.
  const std::string graph = R"({"nodes": [
    {"name": "c", "op": "Const", "attrs": {"dtype": "float32",
     "value": {"dtype": "float32", "shape": [4611686018427387904, 4], "data": []}}},
    {"name": "axes", "op": "Const", "attrs": {"dtype": "int32", "value": {"dtype": "int32", "shape": [1], "data": [0]}}},
    {"name": "s", "op": "Sum", "inputs": ["c", "axes"]}]})";
  StatusOr<std::vector<Tensor>> out = RunJson(graph, {"s"});
  ASSERT_EQ(out.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("has more than 2^63-1 elements"));
  EXPECT_THAT(out.status().message(), HasSubstr("node 'c' (Const)"));
}

TEST(ShapesTest, AFeedWhoseShapeOverflowsIsRefused) {
  const std::string graph = R"({"nodes": [
    {"name": "x", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [null, 4]}},
    {"name": "w", "op": "Const", "attrs": {"dtype": "float32", "value": {"dtype": "float32", "shape": [4, 1], "data": [1, 1, 1, 1]}}},
    {"name": "y", "op": "MatMul", "inputs": ["x", "w"]}]})";
  StatusOr<std::vector<Tensor>> out =
      RunJson(graph, {"y"}, {{"x", R"({"dtype": "float32", "shape": [4611686018427387904, 4], "data": []})"}});
  ASSERT_EQ(out.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("has more than 2^63-1 elements"));
}

// Fill, Reshape, BroadcastTo and the random ops take their output's shape from a tensor fed
// at run time; none may hand back a shape without the data behind it.
class ShapeFromValuesTest : public ::testing::TestWithParam<const char*> {};

constexpr const char* kShapeFromValues = R"({"nodes": [
  {"name": "dims", "op": "Placeholder", "attrs": {"dtype": "int64", "shape": [2]}},
  {"name": "v", "op": "Const", "attrs": {"dtype": "float32", "value": {"dtype": "float32", "shape": [], "data": [1]}}},
  {"name": "Fill", "op": "Fill", "inputs": ["dims", "v"]},
  {"name": "Reshape", "op": "Reshape", "inputs": ["v", "dims"]},
  {"name": "BroadcastTo", "op": "BroadcastTo", "inputs": ["v", "dims"]},
  {"name": "TruncatedNormal", "op": "TruncatedNormal", "inputs": ["dims"], "attrs": {"dtype": "float32"}},
  {"name": "RandomUniform", "op": "RandomUniform", "inputs": ["dims"], "attrs": {"dtype": "float32"}}]})";

TEST_P(ShapeFromValuesTest, OverflowingAndHugeShapesAreErrorsNamingTheNode) {
  const std::string op = GetParam();
  StatusOr<std::vector<Tensor>> out =
      RunJson(kShapeFromValues, {op}, {{"dims", R"({"dtype": "int64", "shape": [2], "data": [4294967296, 4294967296]})"}});
  ASSERT_EQ(out.status().code(), Code::kInvalidArgument) << out.status();
  EXPECT_THAT(out.status().message(), HasSubstr("[4294967296,4294967296] has more than 2^63-1 elements"));
  EXPECT_THAT(out.status().message(), HasSubstr("[[node " + op + " (" + op + ")"));
  // 2^40 floats fit in a shape but not in memory.
  out = RunJson(kShapeFromValues, {op}, {{"dims", R"({"dtype": "int64", "shape": [2], "data": [1048576, 1048576]})"}});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("[[node " + op + " (" + op + ")"));
  if (op != "Reshape") {
    EXPECT_EQ(out.status().code(), Code::kResourceExhausted) << out.status();
  }
  // A sensible request still works.
  out = RunJson(kShapeFromValues, {op}, {{"dims", R"({"dtype": "int64", "shape": [2], "data": [1, 1]})"}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), TensorShape({1, 1}));
}

// Shapes computed from other shapes: products and sums are checked, not wrapped (which is
// undefined behaviour for signed integers before it is a wrong answer).
TEST(ShapesTest, ReshapeAndConcatRefuseResultsPast64Bits) {
  const std::string reshape = R"({"nodes": [
    {"name": "v", "op": "Const", "attrs": {"dtype": "float32", "value": {"dtype": "float32", "shape": [0], "data": []}}},
    {"name": "dims", "op": "Placeholder", "attrs": {"dtype": "int64", "shape": [3]}},
    {"name": "r", "op": "Reshape", "inputs": ["v", "dims"]}]})";
  StatusOr<std::vector<Tensor>> out = RunJson(reshape, {"r"}, {{"dims", R"({"dtype": "int64", "shape": [3], "data": [4294967296, 4294967296, -1]})"}});
  ASSERT_EQ(out.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("has more than 2^63-1 elements"));
  const std::string constant = R"({"nodes": [
    {"name": "v", "op": "Const", "attrs": {"dtype": "float32", "value": {"dtype": "float32", "shape": [0], "data": []}}},
    {"name": "dims", "op": "Const", "attrs": {"dtype": "int64", "value": {"dtype": "int64", "shape": [3], "data": [4294967296, 4294967296, -1]}}},
    {"name": "r", "op": "Reshape", "inputs": ["v", "dims"]}]})";
  out = RunJson(constant, {"r"});
  ASSERT_EQ(out.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("for 'r' (op: 'Reshape')"));
  const std::string concat = R"({"nodes": [
    {"name": "a", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [4611686018427387904]}},
    {"name": "axis", "op": "Const", "attrs": {"dtype": "int32", "value": {"dtype": "int32", "shape": [], "data": [0]}}},
    {"name": "c", "op": "ConcatV2", "inputs": ["a", "a", "a", "axis"]}]})";
  out = RunJson(concat, {"c"});
  ASSERT_EQ(out.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("more than 2^63-1 elements along axis 0"));
}

INSTANTIATE_TEST_SUITE_P(Ops, ShapeFromValuesTest,
                         ::testing::Values("Fill", "Reshape", "BroadcastTo", "TruncatedNormal", "RandomUniform"));

}  // namespace
}  // namespace tessera::testing
