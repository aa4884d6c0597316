// The ops added for TensorFlow's own graphs, on the CPU: slicing and rearranging (Pack, Unpack,
// Slice, StridedSlice and its gradient, Transpose, Tile, Pad, Squeeze, ExpandDims, Range),
// picking (Select, SelectV2, Gather, GatherV2, UnsortedSegmentSum) and the math and logic
// tf.compat.v1 emits (AddV2, RealDiv, Pow, Sigmoid, Tanh and their gradients, Min, Prod,
// StopGradient, comparisons). Expected values are numpy's.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
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

// x = arange(24, float32).reshape(2, 3, 4), the op node `op`, its extra constant inputs; the
// value of the op's output `output`.
StatusOr<Tensor> RunOp(json op, std::vector<json> consts = {}, int output = 0) {
  json nodes = json::array({ConstNode("x", "float32", {2, 3, 4}, Iota(24))});
  for (json& c : consts) nodes.push_back(c);
  op["name"] = "y";
  nodes.push_back(op);
  ASSIGN_OR_RETURN(GraphSpec def, GraphSpecFromJson(json{{"nodes", nodes}}.dump()));
  ASSIGN_OR_RETURN(std::unique_ptr<Session> session, Session::Create(SessionConfig(), def));
  std::vector<Tensor> out;
  RETURN_IF_ERROR(session->Run({}, {"y:" + std::to_string(output)}, {}, &out));
  // The statically inferred shape must agree with what ran.
  const TensorShape& inferred = session->graph().FindNode("y")->output_shape(output);
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
// Elements [begin, end) of a float tensor.
std::vector<float> Range(const Tensor& t, int64_t begin, int64_t end) { return {t.data<float>() + begin, t.data<float>() + end}; }

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

TEST(TensorFlowOpsTest, UnpackAndPad) {
  auto y = RunOp({{"op", "Unpack"}, {"inputs", {"x"}}, {"attrs", {{"num", 3}, {"axis", 1}}}}, {}, 2);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), TensorShape({2, 4}));
  EXPECT_THAT(Floats(*y), ElementsAre(8, 9, 10, 11, 20, 21, 22, 23));  // x[:, 2]
  y = RunOp({{"op", "Unpack"}, {"inputs", {"x"}}, {"attrs", {{"num", 4}, {"axis", -1}}}}, {}, 1);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(Floats(*y), ElementsAre(1, 5, 9, 13, 17, 21));  // x[..., 1]
  y = RunOp({{"op", "Unpack"}, {"inputs", {"x"}}, {"attrs", {{"num", 2}, {"axis", 1}}}});
  EXPECT_THAT(y.status().message(), HasSubstr("not num = 2"));

  y = RunOp({{"op", "Pad"}, {"inputs", {"x", "p"}}}, {ConstNode("p", "int32", {3, 2}, Ints({0, 1, 1, 0, 2, 1}))});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), TensorShape({3, 4, 7}));
  std::vector<float> v = Floats(*y);
  EXPECT_EQ(v[0 * 28 + 1 * 7 + 2], 0);   // y[0, 1, 2] = x[0, 0, 0]
  EXPECT_EQ(v[1 * 28 + 3 * 7 + 5], 23);  // y[1, 3, 5] = x[1, 2, 3]
  EXPECT_EQ(v[1 * 28 + 3 * 7 + 6], 0);   // padding after
  EXPECT_EQ(v[2 * 28 + 2 * 7 + 3], 0);   // the padded last row
  float sum = 0;
  for (float f : v) sum += f;
  EXPECT_EQ(sum, 276);  // every element of x exactly once
  // Rows padded, the inner dimension not (an NHWC image's columns and channels): runs copied whole.
  y = RunOp({{"op", "Pad"}, {"inputs", {"x", "p"}}}, {ConstNode("p", "int32", {3, 2}, Ints({0, 0, 1, 1, 0, 0}))});
  ASSERT_TRUE(y.ok()) << y.status();
  ASSERT_EQ(y->shape(), TensorShape({2, 5, 4}));
  std::vector<float> rows;
  for (int b = 0; b < 2; ++b) {
    for (int r = 0; r < 5; ++r) {
      for (int c = 0; c < 4; ++c) rows.push_back(r == 0 || r == 4 ? 0.f : static_cast<float>(b * 12 + (r - 1) * 4 + c));
    }
  }
  EXPECT_EQ(Floats(*y), rows);
  y = RunOp({{"op", "PadV2"}, {"inputs", {"x", "p", "c"}}},
            {ConstNode("p", "int64", {3, 2}, Ints({0, 0, 0, 0, 1, 0})), ConstNode("c", "float32", {}, {-1})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(Range(*y, 0, 6), ElementsAre(-1, 0, 1, 2, 3, -1));
  y = RunOp({{"op", "Pad"}, {"inputs", {"x", "p"}}}, {ConstNode("p", "int32", {3, 2}, Ints({0, -1, 0, 0, 0, 0}))});
  EXPECT_THAT(y.status().message(), HasSubstr("Paddings must be non-negative"));
  y = RunOp({{"op", "Pad"}, {"inputs", {"x", "p"}}}, {ConstNode("p", "int32", {2, 2}, Ints({0, 0, 0, 0}))});
  EXPECT_THAT(y.status().message(), HasSubstr("paddings must be a matrix"));
  y = RunOp({{"op", "Pad"}, {"inputs", {"x", "p"}}},
            {ConstNode("p", "int64", {3, 2}, Ints({0, 0, 0, 0, 0, INT64_MAX}))});
  EXPECT_FALSE(y.ok());  // a padded size that overflows
}

// A Pad large enough to run across the intra-op threads, a slab of its unpadded batch each:
// int64 paddings, uneven on each side, and PadV2's constant.
TEST(TensorFlowOpsTest, APadOfABatchRunsInSlabs) {
  const int64_t n = 4, h = 32, w = 32, c = 16;
  auto y = RunOp({{"op", "PadV2"}, {"inputs", {"big", "p", "c"}}},
                 {ConstNode("big", "float32", {n, h, w, c}, Iota(static_cast<int>(n * h * w * c))),
                  ConstNode("p", "int64", {4, 2}, Ints({0, 0, 2, 1, 1, 3, 0, 0})), ConstNode("c", "float32", {}, {7})});
  ASSERT_TRUE(y.ok()) << y.status();
  ASSERT_EQ(y->shape(), TensorShape({n, h + 3, w + 4, c}));
  std::vector<float> want;
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t r = 0; r < h + 3; ++r) {
      for (int64_t col = 0; col < w + 4; ++col) {
        const bool inside = r >= 2 && r < 2 + h && col >= 1 && col < 1 + w;
        for (int64_t ch = 0; ch < c; ++ch) {
          want.push_back(inside ? static_cast<float>(((b * h + r - 2) * w + col - 1) * c + ch) : 7.f);
        }
      }
    }
  }
  EXPECT_EQ(Floats(*y), want);
}

TEST(TensorFlowOpsTest, SelectAndSelectV2) {
  json cond = ConstNode("c", "bool", {2}, {true, false});
  auto y = RunOp({{"op", "Select"}, {"inputs", {"c", "x", "z"}}},
                 {cond, {{"name", "z"}, {"op", "Neg"}, {"inputs", {"x"}}}});
  ASSERT_TRUE(y.ok()) << y.status();
  std::vector<float> v = Floats(*y);
  EXPECT_EQ(v[5], 5);     // row 0 from x
  EXPECT_EQ(v[17], -17);  // row 1 from -x
  json mask = ConstNode("m", "bool", {4}, {true, false, false, true});
  y = RunOp({{"op", "SelectV2"}, {"inputs", {"m", "x", "k"}}}, {mask, ConstNode("k", "float32", {}, {-1})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), TensorShape({2, 3, 4}));
  EXPECT_THAT(Range(*y, 4, 8), ElementsAre(4, -1, -1, 7));
  y = RunOp({{"op", "Select"}, {"inputs", {"m", "x", "x"}}}, {mask});
  EXPECT_FALSE(y.ok());  // v1 Select does not broadcast along the last dimension
  y = RunOp({{"op", "SelectV2"}, {"inputs", {"c", "x", "x"}}}, {ConstNode("c", "bool", {3, 1, 1}, {true, true, false})});
  EXPECT_FALSE(y.ok());  // [3, 1, 1] does not broadcast with [2, 3, 4]
}

TEST(TensorFlowOpsTest, GatherAndItsGradient) {
  auto y = RunOp({{"op", "GatherV2"}, {"inputs", {"x", "i", "a"}}},
                 {ConstNode("i", "int32", {2, 2}, Ints({3, 0, 0, 1})), ConstNode("a", "int32", {}, {-1})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), TensorShape({2, 3, 2, 2}));
  EXPECT_THAT(Range(*y, 0, 4), ElementsAre(3, 0, 0, 1));
  EXPECT_EQ(Floats(*y)[22], 20);  // y[1, 2, 1, 0] = x[1, 2, i[1, 0]]
  y = RunOp({{"op", "Gather"}, {"inputs", {"x", "i"}}}, {ConstNode("i", "int64", {3}, Ints({1, 1, 0}))});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), TensorShape({3, 3, 4}));
  EXPECT_EQ(Floats(*y)[12], 12);
  EXPECT_EQ(Floats(*y)[24], 0);
  y = RunOp({{"op", "GatherV2"}, {"inputs", {"x", "i", "a"}}},
            {ConstNode("i", "int32", {1}, Ints({3})), ConstNode("a", "int32", {}, {1})});
  EXPECT_THAT(y.status().message(), HasSubstr("indices[0] = 3 is not in [0, 3)"));

  y = RunOp({{"op", "UnsortedSegmentSum"}, {"inputs", {"x", "s", "n"}}},
            {ConstNode("s", "int32", {2, 3}, Ints({1, 0, 1, -1, 2, 1})), ConstNode("n", "int32", {}, {4})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), TensorShape({4, 4}));
  // Segment 1 holds x[0, 0] + x[0, 2] + x[1, 2]; the row with id -1 is dropped.
  EXPECT_THAT(Range(*y, 4, 8), ElementsAre(28, 31, 34, 37));
  EXPECT_THAT(Range(*y, 12, 16), ElementsAre(0, 0, 0, 0));
  y = RunOp({{"op", "UnsortedSegmentSum"}, {"inputs", {"x", "s", "n"}}},
            {ConstNode("s", "int32", {2}, Ints({0, 4})), ConstNode("n", "int32", {}, {4})});
  EXPECT_THAT(y.status().message(), HasSubstr("segment_ids[1] = 4 is out of range [0, 4)"));
}

TEST(TensorFlowOpsTest, ComparisonsAndLogic) {
  json three = ConstNode("t", "float32", {}, {3});
  auto ge = RunOp({{"op", "GreaterEqual"}, {"inputs", {"x", "t"}}}, {three});
  ASSERT_TRUE(ge.ok()) << ge.status();
  EXPECT_EQ(ge->dtype(), DataType::kBool);
  EXPECT_FALSE(ge->data<bool>()[2]);
  EXPECT_TRUE(ge->data<bool>()[3]);
  auto y = RunOp({{"op", "LogicalAnd"}, {"inputs", {"a", "b"}}},
                 {{{"name", "a"}, {"op", "LessEqual"}, {"inputs", {"x", "t"}}},
                  {{"name", "b"}, {"op", "NotEqual"}, {"inputs", {"x", "t"}}}, three});
  ASSERT_TRUE(y.ok()) << y.status();
  std::vector<bool> v(y->data<bool>(), y->data<bool>() + y->NumElements());
  EXPECT_EQ(std::count(v.begin(), v.end(), true), 3);  // 0, 1, 2
  EXPECT_FALSE(v[3]);
  y = RunOp({{"op", "LogicalNot"}, {"inputs", {"a"}}}, {{{"name", "a"}, {"op", "Less"}, {"inputs", {"x", "t"}}}, three});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_FALSE(y->data<bool>()[0]);
  EXPECT_TRUE(y->data<bool>()[3]);
  y = RunOp({{"op", "LogicalOr"}, {"inputs", {"a", "b"}}},
            {{{"name", "a"}, {"op", "Less"}, {"inputs", {"x", "t"}}},
             {{"name", "b"}, {"op", "Greater"}, {"inputs", {"x", "t"}}}, three});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_FALSE(y->data<bool>()[3]);
  EXPECT_TRUE(y->data<bool>()[4]);
}

TEST(TensorFlowOpsTest, RangePowAndStridedSliceGrad) {
  auto r = [](json start, json limit, json delta, const char* dtype) {
    return RunOp({{"op", "Range"}, {"inputs", {"a", "b", "d"}}},
                 // json::array: a braced single json is a copy under clang, an array under gcc.
                 {ConstNode("a", dtype, {}, json::array({start})), ConstNode("b", dtype, {}, json::array({limit})),
                  ConstNode("d", dtype, {}, json::array({delta}))});
  };
  auto y = r(2, 11, 3, "int32");
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(std::vector<int32_t>(y->data<int32_t>(), y->data<int32_t>() + y->NumElements()), ElementsAre(2, 5, 8));
  y = r(1.0, 0.0, -0.25, "float32");
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(Floats(*y), ElementsAre(1, 0.75, 0.5, 0.25));
  EXPECT_THAT(r(0, 5, 0, "int64").status().message(), HasSubstr("Requires delta != 0"));
  EXPECT_THAT(r(5, 0, 1, "int32").status().message(), HasSubstr("Requires start <= limit when delta > 0: 5/0"));
  EXPECT_THAT(r(0, INT64_MAX, 1, "int64").status().message(), HasSubstr("too large"));

  y = RunOp({{"op", "Pow"}, {"inputs", {"x", "h"}}}, {ConstNode("h", "float32", {}, {0.5})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_FLOAT_EQ(Floats(*y)[9], 3);

  // dy of x[1, :, ::-2] (shape [3, 2]) back into a [2, 3, 4] tensor of zeros.
  y = RunOp({{"op", "StridedSliceGrad"}, {"inputs", {"shape", "b", "e", "s", "dy"}},
             {"attrs", {{"begin_mask", 6}, {"end_mask", 6}, {"shrink_axis_mask", 1}}}},
            {ConstNode("shape", "int32", {3}, Ints({2, 3, 4})), ConstNode("b", "int32", {3}, Ints({1, 0, 0})),
             ConstNode("e", "int32", {3}, Ints({2, 0, 0})), ConstNode("s", "int32", {3}, Ints({1, 1, -2})),
             ConstNode("dy", "float32", {3, 2}, {1, 2, 3, 4, 5, 6})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), TensorShape({2, 3, 4}));
  EXPECT_THAT(Range(*y, 12, 24), ElementsAre(0, 2, 0, 1, 0, 4, 0, 3, 0, 6, 0, 5));
  EXPECT_THAT(Range(*y, 0, 12), ::testing::Each(0.0f));
}

}  // namespace
}  // namespace tessera
