// The ops added for TensorFlow's own graphs, on the CPU: slicing and rearranging (Pack,
// Slice, StridedSlice, Transpose, Tile, Squeeze, ExpandDims) and the math tf.compat.v1 emits
// (AddV2, RealDiv, Sigmoid, Tanh and their gradients, Min, Prod, StopGradient). Expected values are numpy's.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include <nlohmann/json.hpp>

#include "graph/serialize/graph_json.h"
#include "runtime/session.h"

namespace tessera {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using json = nlohmann::json;

json ConstNode(const std::string& name, const std::string& dtype, std::vector<int64_t> shape, json data) {
  return {{"name", name}, {"op", "Const"},
          {"attrs", {{"dtype", dtype}, {"value", {{"dtype", dtype}, {"shape", shape}, {"data", data}}}}}};
}

json Iota(int n) {
  json j = json::array();
  for (int i = 0; i < n; ++i) j.push_back(i);
  return j;
}

json Ints(std::vector<int64_t> v) { return json(v); }

// x = arange(24, float32).reshape(2, 3, 4), the op node `op`, its extra constant inputs.
StatusOr<Tensor> RunOp(json op, std::vector<json> consts = {}) {
  json nodes = json::array({ConstNode("x", "float32", {2, 3, 4}, Iota(24))});
  for (json& c : consts) nodes.push_back(c);
  op["name"] = "y";
  nodes.push_back(op);
  ASSIGN_OR_RETURN(GraphDef def, GraphDefFromJson(json{{"nodes", nodes}}.dump()));
  ASSIGN_OR_RETURN(std::unique_ptr<Session> session, Session::Create(SessionConfig(), def));
  std::vector<Tensor> out;
  RETURN_IF_ERROR(session->Run({}, {"y"}, {}, &out));
  // The statically inferred shape must agree with what ran.
  const TensorShape& inferred = session->graph().FindNode("y")->output_shape(0);
  if (!inferred.unknown_rank()) {
    EXPECT_EQ(inferred.rank(), out[0].rank()) << inferred.DebugString() << " vs " << out[0].shape().DebugString();
    for (int i = 0; i < inferred.rank() && i < out[0].rank(); ++i) {
      if (inferred.dim(i) >= 0) {
        EXPECT_EQ(inferred.dim(i), out[0].dim(i));
      }
    }
  }
  return out[0];
}

std::vector<float> Floats(const Tensor& t) { return {t.data<float>(), t.data<float>() + t.NumElements()}; }

json StridedSlice(std::vector<int64_t> begin, std::vector<int64_t> end, std::vector<int64_t> strides,
                  json masks, std::vector<json>* consts) {
  const int n = static_cast<int>(begin.size());
  consts->push_back(ConstNode("b", "int32", {n}, Ints(begin)));
  consts->push_back(ConstNode("e", "int32", {n}, Ints(end)));
  consts->push_back(ConstNode("s", "int32", {n}, Ints(strides)));
  return {{"op", "StridedSlice"}, {"inputs", {"x", "b", "e", "s"}}, {"attrs", masks}};
}

TEST(TensorFlowOpsTest, StridedSliceShrinksAndStepsBackwards) {
  std::vector<json> c;  // x[1, :, ::-2]
  json op = StridedSlice({1, 0, 0}, {2, 0, 0}, {1, 1, -2}, {{"begin_mask", 6}, {"end_mask", 6}, {"shrink_axis_mask", 1}}, &c);
  auto y = RunOp(op, c);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), TensorShape({3, 2}));
  EXPECT_THAT(Floats(*y), ElementsAre(15, 13, 19, 17, 23, 21));
}

TEST(TensorFlowOpsTest, StridedSliceEllipsisAndNewAxis) {
  std::vector<json> c;  // x[..., 1]
  json op = StridedSlice({0, 1}, {0, 2}, {1, 1}, {{"ellipsis_mask", 1}, {"shrink_axis_mask", 2}}, &c);
  auto y = RunOp(op, c);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), TensorShape({2, 3}));
  EXPECT_THAT(Floats(*y), ElementsAre(1, 5, 9, 13, 17, 21));
  c.clear();  // x[:, newaxis, 1:3]
  op = StridedSlice({0, 0, 1}, {0, 0, 3}, {1, 1, 1}, {{"begin_mask", 1}, {"end_mask", 1}, {"new_axis_mask", 2}}, &c);
  y = RunOp(op, c);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), TensorShape({2, 1, 2, 4}));
  EXPECT_EQ(Floats(*y)[8], 16);
  c.clear();  // x[-1:-5:-1, 5:] clamps to [1, 0, 0] rows and an empty middle dimension
  op = StridedSlice({-1, 5}, {-5, 9}, {-1, 1}, json::object(), &c);
  y = RunOp(op, c);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), TensorShape({2, 0, 4}));
}

TEST(TensorFlowOpsTest, StridedSliceErrors) {
  std::vector<json> c;
  json op = StridedSlice({0}, {1}, {0}, json::object(), &c);
  auto y = RunOp(op, c);
  EXPECT_THAT(y.status().message(), HasSubstr("strides[0] must be non-zero"));
  c.clear();
  op = StridedSlice({7}, {8}, {1}, {{"shrink_axis_mask", 1}}, &c);
  y = RunOp(op, c);
  EXPECT_THAT(y.status().message(), HasSubstr("slice index 7 of dimension 0 out of bounds"));
  c.clear();
  op = StridedSlice({0, 0}, {1, 1}, {1, 1}, {{"ellipsis_mask", 3}}, &c);
  y = RunOp(op, c);
  EXPECT_THAT(y.status().message(), HasSubstr("Multiple ellipses"));
}

TEST(TensorFlowOpsTest, SliceTransposePack) {
  auto y = RunOp({{"op", "Slice"}, {"inputs", {"x", "b", "n"}}},
                 {ConstNode("b", "int64", {3}, Ints({0, 1, 1})), ConstNode("n", "int64", {3}, Ints({-1, 1, 2}))});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), TensorShape({2, 1, 2}));
  EXPECT_THAT(Floats(*y), ElementsAre(5, 6, 17, 18));
  y = RunOp({{"op", "Slice"}, {"inputs", {"x", "b", "n"}}},
            {ConstNode("b", "int32", {3}, Ints({0, 2, 0})), ConstNode("n", "int32", {3}, Ints({1, 2, 1}))});
  EXPECT_THAT(y.status().message(), HasSubstr("Expected begin[1] in [0, 3] and size[1] in [0, 1]"));

  y = RunOp({{"op", "Transpose"}, {"inputs", {"x", "p"}}}, {ConstNode("p", "int32", {3}, Ints({2, 0, 1}))});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), TensorShape({4, 2, 3}));
  EXPECT_EQ(Floats(*y)[1 * 6 + 1 * 3 + 2], 21);  // y[1, 1, 2] = x[1, 2, 1]
  y = RunOp({{"op", "Transpose"}, {"inputs", {"x", "p"}}}, {ConstNode("p", "int32", {3}, Ints({0, 0, 1}))});
  EXPECT_THAT(y.status().message(), HasSubstr("out of range or repeated"));

  y = RunOp({{"op", "Pack"}, {"inputs", {"a", "b"}}, {"attrs", {{"axis", -1}}}},
            {ConstNode("a", "string", {2}, {"a0", "a1"}), ConstNode("b", "string", {2}, {"b0", "b1"})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), TensorShape({2, 2}));
  EXPECT_EQ(y->data<std::string>()[1], "b0");
  EXPECT_EQ(y->data<std::string>()[2], "a1");
  y = RunOp({{"op", "Pack"}, {"inputs", {"x", "x"}}, {"attrs", {{"axis", 1}}}});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), TensorShape({2, 2, 3, 4}));
  EXPECT_EQ(Floats(*y)[12], 0);  // y[0, 1, 0, 0] = x[0, 0, 0]
  EXPECT_EQ(Floats(*y)[24], 12);
}

TEST(TensorFlowOpsTest, Tile) {
  auto y = RunOp({{"op", "Tile"}, {"inputs", {"x", "m"}}}, {ConstNode("m", "int32", {3}, Ints({1, 2, 1}))});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), TensorShape({2, 6, 4}));
  EXPECT_EQ(Floats(*y)[3 * 4 + 1], 1);   // y[0, 3, 1] = x[0, 0, 1]
  EXPECT_EQ(Floats(*y)[24 + 5 * 4], 20);  // y[1, 5, 0] = x[1, 2, 0]
  y = RunOp({{"op", "Tile"}, {"inputs", {"x", "m"}}}, {ConstNode("m", "int32", {3}, Ints({1, -1, 1}))});
  EXPECT_FALSE(y.ok());
  y = RunOp({{"op", "SigmoidGrad"}, {"inputs", {"h", "x"}}}, {ConstNode("h", "float32", {}, {0.25})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(Floats(*y)[4], 4 * 0.25f * 0.75f);
}

TEST(TensorFlowOpsTest, SqueezeAndExpandDims) {
  auto y = RunOp({{"op", "ExpandDims"}, {"inputs", {"x", "d"}}}, {ConstNode("d", "int32", {}, {-1})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), TensorShape({2, 3, 4, 1}));
  json one = {{"op", "Reshape"}, {"inputs", {"x", "s"}}, {"name", "r"}};
  json nodes_one = ConstNode("s", "int32", {5}, Ints({1, 2, 1, 12, 1}));
  y = RunOp({{"op", "Squeeze"}, {"inputs", {"r"}}, {"attrs", {{"squeeze_dims", {0, -1}}}}}, {nodes_one, one});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), TensorShape({2, 1, 12}));
  y = RunOp({{"op", "Squeeze"}, {"inputs", {"r"}}}, {nodes_one, one});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), TensorShape({2, 12}));
  y = RunOp({{"op", "Squeeze"}, {"inputs", {"x"}}, {"attrs", {{"squeeze_dims", {1}}}}});
  EXPECT_THAT(y.status().message(), HasSubstr("Can not squeeze dim[1], expected a dimension of 1, got 3"));
}

TEST(TensorFlowOpsTest, MathTensorFlowEmits) {
  auto y = RunOp({{"op", "Min"}, {"inputs", {"x", "a"}}}, {ConstNode("a", "int32", {2}, Ints({0, 2}))});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(Floats(*y), ElementsAre(0, 4, 8));
  y = RunOp({{"op", "Prod"}, {"inputs", {"x", "a"}}, {"attrs", {{"keep_dims", true}}}},
            {ConstNode("a", "int32", {1}, Ints({2}))});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), TensorShape({2, 3, 1}));
  EXPECT_EQ(Floats(*y)[1], 4 * 5 * 6 * 7);
  y = RunOp({{"op", "Prod"}, {"inputs", {"e", "a"}}},
            {ConstNode("e", "float32", {0}, json::array()), ConstNode("a", "int32", {1}, Ints({0}))});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(Floats(*y)[0], 1);  // the product of nothing

  y = RunOp({{"op", "RealDiv"}, {"inputs", {"x", "two"}}}, {ConstNode("two", "float32", {}, {2})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(Floats(*y)[3], 1.5f);
  y = RunOp({{"op", "AddV2"}, {"inputs", {"x", "x"}}});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(Floats(*y)[23], 46);
  y = RunOp({{"op", "Sigmoid"}, {"inputs", {"x"}}});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_NEAR(Floats(*y)[1], 1 / (1 + std::exp(-1.0)), 1e-6);
  y = RunOp({{"op", "Tanh"}, {"inputs", {"x"}}});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_NEAR(Floats(*y)[1], std::tanh(1.0), 1e-6);
  y = RunOp({{"op", "StopGradient"}, {"inputs", {"x"}}});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(Floats(*y)[5], 5);
}

}  // namespace
}  // namespace tessera
