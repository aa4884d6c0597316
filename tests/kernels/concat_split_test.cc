// ConcatV2, Split and SplitV: values along every axis, static shapes, zero-copy batch
// splits, and the errors for mismatched inputs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "graph/builder/ops.h"
#include "runtime/session.h"
#include "tests/test_util.h"

namespace tessera {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::Values;

Tensor Iota(const TensorShape& shape) {
  Tensor t(DataType::kInt32, shape);
  for (int64_t i = 0; i < t.NumElements(); ++i) t.data<int32_t>()[i] = static_cast<int32_t>(i);
  return t;
}

TEST(ConcatSplitTest, ConcatAlongEachAxis) {
  Scope root = Scope::NewRootScope();
  auto a = ops::Const(root, Iota({2, 2}));
  auto b = ops::Const(root, Tensor::FromVector<int32_t>({10, 11, 12, 13, 14, 15}, TensorShape({2, 3})));
  auto rows = ops::Concat(root.WithOpName("rows"), {a, ops::Const(root, Iota({1, 2}))}, 0);
  auto cols = ops::Concat(root.WithOpName("cols"), {a, b}, -1);
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(rows.node->output_shape(0), TensorShape({3, 2}));
  EXPECT_EQ(cols.node->output_shape(0), TensorShape({2, 5}));
  Tensor r = testing::Eval(root, rows), c = testing::Eval(root, cols);
  EXPECT_THAT(Values<int32_t>(r), ElementsAre(0, 1, 2, 3, 0, 1));
  EXPECT_EQ(c.shape(), TensorShape({2, 5}));
  EXPECT_THAT(Values<int32_t>(c), ElementsAre(0, 1, 10, 11, 12, 2, 3, 13, 14, 15));
}

// Rows longer than a copy's piece (64 KiB) are copied in pieces across the intra-op threads,
// the last piece of each row short.
TEST(ConcatSplitTest, LongRowsAreCopiedInPieces) {
  Scope root = Scope::NewRootScope();
  auto a = ops::Const(root, Iota({3, 40000}));  // 160,000 bytes a row: three pieces
  auto b = ops::Const(root, Iota({3, 17}));
  auto cols = ops::Concat(root.WithOpName("cols"), {a, b}, 1);
  auto rows = ops::Concat(root.WithOpName("rows"), {a, a}, 0);  // one row of 480,000 bytes an input
  ASSERT_TRUE(root.ok()) << root.status();
  const std::vector<int32_t> c = Values<int32_t>(testing::Eval(root, cols));
  const std::vector<int32_t> r = Values<int32_t>(testing::Eval(root, rows));
  std::vector<int32_t> want_cols, want_rows;
  for (int32_t i = 0; i < 3; ++i) {
    for (int32_t j = 0; j < 40000; ++j) want_cols.push_back(i * 40000 + j);
    for (int32_t j = 0; j < 17; ++j) want_cols.push_back(i * 17 + j);
  }
  for (int copy = 0; copy < 2; ++copy) {
    for (int32_t i = 0; i < 3 * 40000; ++i) want_rows.push_back(i);
  }
  EXPECT_EQ(c, want_cols);
  EXPECT_EQ(r, want_rows);
}

TEST(ConcatSplitTest, SplitUndoesConcat) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Const(root, Iota({4, 3, 2}));
  for (int axis : {0, 1, 2}) {
    SCOPED_TRACE(axis);
    const int64_t n = axis == 0 ? 4 : axis == 1 ? 3 : 2;
    auto parts = ops::Split(root, axis, x, n);
    ASSERT_EQ(parts.size(), static_cast<size_t>(n));
    std::vector<Input> inputs(parts.begin(), parts.end());
    auto back = ops::Concat(root, inputs, axis);
    ASSERT_TRUE(root.ok()) << root.status();
    EXPECT_EQ(Values<int32_t>(testing::Eval(root, back)), Values<int32_t>(Iota({4, 3, 2})));
  }
}

TEST(ConcatSplitTest, SplitVCutsUnequalParts) {
  Scope root = Scope::NewRootScope();
  auto parts = ops::SplitV(root, ops::Const(root, Iota({2, 5})), Tensor::FromVector<int64_t>({1, 4, 0}), 1, 3);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[1].node->output_shape(parts[1].index), TensorShape({2, 4}));
  auto s = testing::MakeSession(root);
  std::vector<Tensor> out;
  ASSERT_TRUE(s->Run({}, {parts[0].name(), parts[1].name(), parts[2].name()}, {}, &out).ok());
  EXPECT_THAT(Values<int32_t>(out[0]), ElementsAre(0, 5));
  EXPECT_THAT(Values<int32_t>(out[1]), ElementsAre(1, 2, 3, 4, 6, 7, 8, 9));
  EXPECT_EQ(out[2].shape(), TensorShape({2, 0}));
}

TEST(ConcatSplitTest, SplitVInfersOneSizeOfMinusOne) {
  Scope root = Scope::NewRootScope();
  auto parts = ops::SplitV(root, ops::Const(root, Iota({2, 5})), Tensor::FromVector<int32_t>({1, -1, 1}), 1, 3);
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(parts[1].node->output_shape(parts[1].index), TensorShape({2, 3}));
  auto s = testing::MakeSession(root);
  std::vector<Tensor> out;
  ASSERT_TRUE(s->Run({}, {parts[0].name(), parts[1].name(), parts[2].name()}, {}, &out).ok());
  EXPECT_THAT(Values<int32_t>(out[1]), ElementsAre(1, 2, 3, 6, 7, 8));
  EXPECT_THAT(Values<int32_t>(out[2]), ElementsAre(4, 9));

  // Two -1s, or sizes past the dimension, are errors naming the node.
  for (const std::vector<int32_t>& bad : {std::vector<int32_t>{-1, -1, 1}, std::vector<int32_t>{4, -1, 2}}) {
    Scope r = Scope::NewRootScope();
    auto x = ops::Placeholder(r.WithOpName("x"), DataType::kInt32);
    auto sizes = ops::Placeholder(r.WithOpName("sizes"), DataType::kInt32);
    auto p = ops::SplitV(r.WithOpName("cut"), x, sizes, 1, 3);
    auto session = testing::MakeSession(r);
    Status st = session->Run({{"x", Iota({2, 5})}, {"sizes", Tensor::FromVector<int32_t>(bad)}}, {p[0].name()}, {}, &out);
    EXPECT_EQ(st.code(), Code::kInvalidArgument) << st;
    EXPECT_THAT(st.message(), HasSubstr("cut"));
  }
}

TEST(ConcatSplitTest, BatchSplitSharesTheBuffer) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DataType::kFloat, TensorShape({-1, 3}));
  auto parts = ops::Split(root.WithOpName("split"), 0, x, 2);
  ASSERT_TRUE(root.ok()) << root.status();
  auto s = testing::MakeSession(root);
  Tensor batch = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, TensorShape({4, 3}));
  std::vector<Tensor> out;
  ASSERT_TRUE(s->Run({{"x", batch}}, {"split:0", "split:1"}, {}, &out).ok());
  EXPECT_THAT(Values<float>(out[1]), ElementsAre(7, 8, 9, 10, 11, 12));
  EXPECT_EQ(out[1].raw_data(), batch.data<float>() + 6);
}

TEST(ConcatSplitTest, BadInputsAreErrorsNamingTheNode) {
  {
    Scope root = Scope::NewRootScope();
    ops::Concat(root, {ops::Const(root, Iota({2, 2})), ops::Const(root, Iota({3, 3}))}, 0);
    EXPECT_EQ(root.status().code(), Code::kInvalidArgument);
    EXPECT_THAT(root.status().message(), HasSubstr("must match in every dimension but axis 0"));
  }
  {
    Scope root = Scope::NewRootScope();
    ops::Split(root, 0, ops::Const(root, Iota({5, 2})), 2);
    EXPECT_THAT(root.status().message(), HasSubstr("evenly divide"));
  }
  {
    Scope root = Scope::NewRootScope();
    ops::Split(root, 2, ops::Const(root, Iota({5, 2})), 1);
    EXPECT_THAT(root.status().message(), HasSubstr("out of range"));
  }
  // Known only at run time: the kernel reports it, and the session runs on.
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DataType::kInt32);
  ops::Split(root.WithOpName("split"), 0, x, 2);
  auto s = testing::MakeSession(root);
  std::vector<Tensor> out;
  Status st = s->Run({{"x", Iota({3})}}, {"split:0"}, {}, &out);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("split"));
  EXPECT_THAT(st.message(), HasSubstr("evenly divide"));
  ASSERT_TRUE(s->Run({{"x", Iota({4})}}, {"split:1"}, {}, &out).ok());
  EXPECT_THAT(Values<int32_t>(out[0]), ElementsAre(2, 3));
}

}  // namespace
}  // namespace tessera
