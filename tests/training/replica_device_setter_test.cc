// The device function of between-graph replication, as tf.train.replica_device_setter
// places: variables over the ps tasks, the rest on the worker, the op's own request first.
#include "training/replica_device_setter.h"

#include <gtest/gtest.h>

#include "graph/builder/ops.h"

namespace tessera {
namespace {

std::string Requested(const Scope& root, const std::string& node) {
  return root.graph()->FindNode(node)->requested_device();
}

TEST(ReplicaDeviceSetterTest, VariablesRoundRobinOverPsTasksAndTheRestOnTheWorker) {
  Scope root = Scope::NewRootScope();
  auto setter = ReplicaDeviceSetter({.ps_tasks = 2, .worker_device = "/job:worker/task:1"});
  ASSERT_TRUE(setter.ok()) << setter.status();
  Scope model = root.WithDeviceFunction(*setter);
  auto a = ops::Variable(model.WithOpName("a"), TensorShape({2}), DataType::kFloat);
  auto b = ops::Variable(model.WithOpName("b"), TensorShape({2}), DataType::kFloat);
  auto c = ops::Variable(model.WithOpName("c"), TensorShape({2}), DataType::kFloat);
  ops::Assign(model.WithOpName("init_a"), a, Tensor::FromVector(std::vector<float>{1, 2}));
  ops::Add(model.WithOpName("sum"), b, c);
  // The op's own request wins field by field.
  ops::Variable(model.WithOpName("pinned").WithDevice("/job:ps/task:1"), TensorShape({}), DataType::kFloat);
  ops::Neg(model.WithOpName("on_cpu").WithDevice("/cpu:0"), a);
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(Requested(root, "a"), "/job:ps/task:0");
  EXPECT_EQ(Requested(root, "b"), "/job:ps/task:1");
  EXPECT_EQ(Requested(root, "c"), "/job:ps/task:0");
  EXPECT_EQ(Requested(root, "sum"), "/job:worker/task:1");
  EXPECT_EQ(Requested(root, "pinned"), "/job:ps/task:1");
  EXPECT_EQ(Requested(root, "on_cpu"), "/job:worker/task:1/device:CPU:0");
}

TEST(ReplicaDeviceSetterTest, BySizePutsEachVariableOnTheLightestTask) {
  Scope root = Scope::NewRootScope();
  auto setter = ReplicaDeviceSetter({.ps_tasks = 2, .strategy = PsStrategy::kBySize});
  ASSERT_TRUE(setter.ok());
  Scope model = root.WithDeviceFunction(*setter);
  ops::Variable(model.WithOpName("big"), TensorShape({1000}), DataType::kFloat);   // task 0: 4000 bytes
  ops::Variable(model.WithOpName("small"), TensorShape({10}), DataType::kFloat);   // task 1: 40
  ops::Variable(model.WithOpName("medium"), TensorShape({100}), DataType::kFloat);  // task 1: 440
  ops::Variable(model.WithOpName("more"), TensorShape({1000}), DataType::kDouble);  // task 1: 8440
  ops::Variable(model.WithOpName("last"), TensorShape({1}), DataType::kFloat);      // task 0
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(Requested(root, "big"), "/job:ps/task:0");
  EXPECT_EQ(Requested(root, "small"), "/job:ps/task:1");
  EXPECT_EQ(Requested(root, "medium"), "/job:ps/task:1");
  EXPECT_EQ(Requested(root, "more"), "/job:ps/task:1");
  EXPECT_EQ(Requested(root, "last"), "/job:ps/task:0");
}

TEST(ReplicaDeviceSetterTest, NoPsTasksKeepsEverythingOnTheWorkerAndBadNamesAreRefused) {
  Scope root = Scope::NewRootScope();
  auto setter = ReplicaDeviceSetter({});
  ASSERT_TRUE(setter.ok());
  ops::Variable(root.WithDeviceFunction(*setter).WithOpName("v"), TensorShape({}), DataType::kFloat);
  EXPECT_EQ(Requested(root, "v"), "/job:worker");
  EXPECT_EQ(ReplicaDeviceSetter({.ps_tasks = -1}).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(ReplicaDeviceSetter({.ps_tasks = 1, .ps_device = "/job:ps/task:x"}).status().code(),
            Code::kInvalidArgument);
}

}  // namespace
}  // namespace tessera
