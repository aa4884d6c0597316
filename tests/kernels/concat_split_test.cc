// ConcatV2, Split and SplitV: values along every axis, static shapes, zero-copy batch
// splits, chains of concatenations grown in place, and the errors for mismatched inputs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "graph/builder/ops.h"
#include "kernels/kernel_registry.h"
#include "kernels/thread_pool.h"
#include "runtime/device_mgr.h"
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

// The kernel of one ConcatV2 node of two float inputs along axis 1, run by hand so that the
// test sees which buffer its output is in.
class ConcatChainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StatusOr<std::unique_ptr<ThreadPool>> pool = ThreadPool::Create("intra_op", 1);
    ASSERT_TRUE(pool.ok());
    pool_ = std::move(*pool);
    StatusOr<std::unique_ptr<DeviceMgr>> devices = DeviceMgr::CreateLocal({{"CPU", 1}}, pool_.get(), int64_t{1} << 30);
    ASSERT_TRUE(devices.ok()) << devices.status();
    devices_ = std::move(*devices);
  }

  std::unique_ptr<OpKernel> Kernel(int64_t reserve) {
    GraphSpec def;
    for (const char* name : {"a", "b"}) {
      NodeSpec p;
      p.name = name;
      p.op = "Placeholder";
      p.attrs["dtype"] = DataType::kFloat;
      def.nodes.push_back(p);
    }
    NodeSpec axis;
    axis.name = "axis";
    axis.op = "Const";
    axis.attrs["dtype"] = DataType::kInt32;
    axis.attrs["value"] = Tensor::Scalar<int32_t>(1);
    def.nodes.push_back(axis);
    NodeSpec concat;
    concat.name = "link";
    concat.op = "ConcatV2";
    concat.inputs = {"a", "b", "axis"};
    concat.attrs["T"] = DataType::kFloat;
    concat.attrs["N"] = int64_t{2};
    concat.attrs["Tidx"] = DataType::kInt32;
    if (reserve > 0) concat.attrs["_reserve_axis_size"] = reserve;
    def.nodes.push_back(concat);
    StatusOr<std::unique_ptr<Graph>> g = Graph::FromSpec(def);
    EXPECT_TRUE(g.ok()) << g.status();
    if (!g.ok()) return nullptr;
    StatusOr<std::unique_ptr<OpKernel>> k =
        KernelRegistry::Global()->CreateKernel(*(*g)->FindNode("link"), devices_->devices().at(0));
    EXPECT_TRUE(k.ok()) << k.status();
    return k.ok() ? std::move(*k) : nullptr;
  }

  // Runs `kernel` on a and b (moved in: the kernel may take a's buffer over).
  StatusOr<Tensor> Run(OpKernel& kernel, Tensor a, Tensor b) {
    TensorValue inputs[3];
    inputs[0].tensor = std::move(a);
    inputs[1].tensor = std::move(b);
    inputs[2].tensor = Tensor::Scalar<int32_t>(1);
    TensorValue outputs[1];
    OpKernelContext::Params params;
    params.kernel = &kernel;
    params.device = devices_->devices().at(0);
    params.inputs = inputs;
    params.outputs = outputs;
    OpKernelContext ctx(params);
    kernel.Compute(&ctx);
    RETURN_IF_ERROR(ctx.status());
    return outputs[0].tensor;
  }

  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<DeviceMgr> devices_;
};

TEST_F(ConcatChainTest, LinksFillTheRoomTheFirstReserved) {
  std::unique_ptr<OpKernel> first = Kernel(/*reserve=*/4), next = Kernel(0);
  ASSERT_TRUE(first && next);
  auto x = [](std::vector<float> v) { return Tensor::FromVector<float>(v, TensorShape({1, int64_t(v.size()) / 2, 2})); };
  StatusOr<Tensor> joined = Run(*first, x({1, 2}), x({3, 4}));
  ASSERT_TRUE(joined.ok()) << joined.status();
  EXPECT_EQ(joined->shape(), TensorShape({1, 2, 2}));
  EXPECT_TRUE(joined->Resized(TensorShape({1, 4, 2})).ok()) << "no room reserved";
  const float* where = joined->data<float>();
  StatusOr<Tensor> longer = Run(*next, *std::move(joined), x({5, 6}));
  ASSERT_TRUE(longer.ok()) << longer.status();
  EXPECT_EQ(longer->data<float>(), where);
  EXPECT_THAT(Values<float>(*longer), ElementsAre(1, 2, 3, 4, 5, 6));
  // Held elsewhere too, the first input is copied, not written past.
  Tensor held = *longer;
  StatusOr<Tensor> branch = Run(*next, held, x({7, 8}));
  ASSERT_TRUE(branch.ok()) << branch.status();
  EXPECT_NE(branch->data<float>(), where);
  EXPECT_THAT(Values<float>(*branch), ElementsAre(1, 2, 3, 4, 5, 6, 7, 8));
  EXPECT_THAT(Values<float>(held), ElementsAre(1, 2, 3, 4, 5, 6));
  held = Tensor();
  StatusOr<Tensor> last = Run(*next, *std::move(longer), x({9, 10}));
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_EQ(last->data<float>(), where);
  EXPECT_THAT(Values<float>(*last), ElementsAre(1, 2, 3, 4, 5, 6, 9, 10));
  // Out of room: a buffer of its own.
  StatusOr<Tensor> beyond = Run(*next, *std::move(last), x({11, 12}));
  ASSERT_TRUE(beyond.ok()) << beyond.status();
  EXPECT_NE(beyond->data<float>(), where);
  EXPECT_THAT(Values<float>(*beyond), ElementsAre(1, 2, 3, 4, 5, 6, 9, 10, 11, 12));
}

// With more than one row before the axis, the inputs interleave in the result: no room is
// reserved, and nothing is grown in place.
TEST_F(ConcatChainTest, RowsBeforeTheAxisCopyAsAlways) {
  std::unique_ptr<OpKernel> first = Kernel(/*reserve=*/4);
  ASSERT_TRUE(first);
  auto x = [](std::vector<float> v) { return Tensor::FromVector<float>(v, TensorShape({2, 1, 1})); };
  StatusOr<Tensor> joined = Run(*first, x({1, 2}), x({3, 4}));
  ASSERT_TRUE(joined.ok()) << joined.status();
  EXPECT_THAT(Values<float>(*joined), ElementsAre(1, 3, 2, 4));
  EXPECT_FALSE(joined->Resized(TensorShape({2, 3, 1})).ok());
  StatusOr<Tensor> again = Run(*first, *std::move(joined), x({5, 6}));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_THAT(Values<float>(*again), ElementsAre(1, 3, 5, 2, 4, 6));
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
