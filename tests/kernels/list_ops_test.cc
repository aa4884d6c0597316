// The TensorList ops in a session: what TensorArrays do (reserve, write, read, stack, grow,
// pop), and what they refuse, naming the node: a read past the end, an element of another
// dtype, a list where a float is expected and a float where a list is.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "graph/builder/op_builder.h"
#include "tests/test_util.h"

namespace tessera {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

Output I32(const Scope& s, int32_t v) { return ops::Const(s, Tensor::Scalar<int32_t>(v)); }
Output Shape(const Scope& s, std::vector<int32_t> dims) { return ops::Const(s, Tensor::FromVector<int32_t>(dims)); }

Output Reserve(const Scope& s, int32_t n, std::vector<int32_t> shape) {
  return ops::Build(s, "TensorListReserve", {Shape(s, shape), I32(s, n)}, {{"element_dtype", DataType::kFloat}});
}

Output Set(const Scope& s, Output list, int32_t i, std::vector<float> v) {
  return ops::Build(s, "TensorListSetItem", {list, I32(s, i), ops::Const(s, Tensor::FromVector<float>(v))},
                    {{"element_dtype", DataType::kFloat}});
}

Status RunFetch(const Scope& root, const Output& out, Tensor* value) {
  auto session = testing::MakeSession(root);
  if (session == nullptr) return errors::Internal("no session");
  std::vector<Tensor> outs;
  Status s = session->Run({}, {out.name()}, {}, &outs);
  if (s.ok()) *value = outs[0];
  return s;
}

TEST(ListOpsTest, WritesReadsAndStacksWithUnsetElementsAsZeros) {
  Scope root = Scope::NewRootScope();
  Output list = Set(root, Set(root, Reserve(root, 3, {2}), 0, {1, 2}), 2, {5, 6});
  Output stacked = ops::Build(root, "TensorListStack", {list, Shape(root, {2})}, {{"element_dtype", DataType::kFloat}});
  Output item = ops::Build(root, "TensorListGetItem", {list, I32(root, 2), Shape(root, {2})},
                           {{"element_dtype", DataType::kFloat}});
  Output length = ops::Build(root, "TensorListLength", {list});
  EXPECT_THAT(testing::Values<float>(testing::Eval(root, stacked)), ElementsAre(1, 2, 0, 0, 5, 6));
  EXPECT_THAT(testing::Values<float>(testing::Eval(root, item)), ElementsAre(5, 6));
  EXPECT_EQ(testing::Eval(root, length).data<int32_t>()[0], 3);
}

TEST(ListOpsTest, PushBackPopBackAndConcat) {
  Scope root = Scope::NewRootScope();
  Output empty = ops::Build(root, "EmptyTensorList", {Shape(root, {-1}), I32(root, -1)},
                            {{"element_dtype", DataType::kFloat}});
  Output list = empty;
  for (std::vector<float> v : {std::vector<float>{1}, {2, 3}, {4, 5, 6}}) {
    list = ops::Build(root, "TensorListPushBack", {list, ops::Const(root, Tensor::FromVector<float>(v))},
                      {{"element_dtype", DataType::kFloat}});
  }
  std::vector<Output> concat = ops::AllOutputs(ops::Build(
      root, "TensorListConcatV2",
      {list, Shape(root, {-1}), ops::Const(root, Tensor::FromVector<int64_t>(std::vector<int64_t>{}))},
      {{"element_dtype", DataType::kFloat}}));
  EXPECT_THAT(testing::Values<float>(testing::Eval(root, concat[0])), ElementsAre(1, 2, 3, 4, 5, 6));
  EXPECT_THAT(testing::Values<int64_t>(testing::Eval(root, concat[1])), ElementsAre(1, 2, 3));
  std::vector<Output> popped = ops::AllOutputs(
      ops::Build(root, "TensorListPopBack", {list, Shape(root, {-1})}, {{"element_dtype", DataType::kFloat}}));
  EXPECT_THAT(testing::Values<float>(testing::Eval(root, popped[1])), ElementsAre(4, 5, 6));
  EXPECT_EQ(testing::Eval(root, ops::Build(root, "TensorListLength", {popped[0]})).data<int32_t>()[0], 2);
}

TEST(ListOpsTest, AReadPastTheEndIsAnErrorNamingTheNode) {
  Scope root = Scope::NewRootScope();
  Output item = ops::Build(root.WithOpName("read"), "TensorListGetItem", {Reserve(root, 3, {2}), I32(root, 5),
                                                                         Shape(root, {2})},
                           {{"element_dtype", DataType::kFloat}});
  Tensor unused;
  Status s = RunFetch(root, item, &unused);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("Trying to access element 5 in a list with 3 elements."));
  EXPECT_THAT(std::string(s.message()), HasSubstr("node read"));
}

TEST(ListOpsTest, AnElementOfAnotherDtypeOrAnUnknownShapeIsRefused) {
  Scope root = Scope::NewRootScope();
  Output list = ops::Build(root.WithOpName("set"), "TensorListSetItem",
                           {Reserve(root, 2, {2}), I32(root, 0), ops::Const(root, Tensor::FromVector<int32_t>({1, 2}))},
                           {{"element_dtype", DataType::kInt32}});
  Tensor unused;
  Status s = RunFetch(root, list, &unused);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("op elements int32 but list elements float32"));
  Scope r2 = Scope::NewRootScope();
  Output unknown = ops::Build(r2, "TensorListStack", {Reserve(r2, 2, {-1}), Shape(r2, {-1})},
                              {{"element_dtype", DataType::kFloat}});
  s = RunFetch(r2, unknown, &unused);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("is not set and its shape"));
}

TEST(ListOpsTest, AListWhereAFloatIsExpectedAndAFloatWhereAListIsAreRefused) {
  Scope root = Scope::NewRootScope();
  (void)ops::Relu(root.WithOpName("relu"), Reserve(root, 1, {1}));
  EXPECT_FALSE(root.status().ok());
  EXPECT_THAT(std::string(root.status().message()), HasSubstr("relu"));
  Scope r2 = Scope::NewRootScope();
  (void)ops::Build(r2.WithOpName("length"), "TensorListLength", {ops::Const(r2, Tensor::Scalar<float>(1))});
  EXPECT_FALSE(r2.status().ok());
  EXPECT_THAT(std::string(r2.status().message()), HasSubstr("length"));
}

}  // namespace
}  // namespace tessera
