// The ops tf.compat.v1 emits in TensorFlow 2 for queues and variables: resource handles
// (FIFOQueueV2 and its V2 users; VarHandleOp, ReadVariableOp, AssignVariableOp, ...) run
// from a GraphDef TensorFlow wrote, and from graphs built here.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "graph/serialize/graph_json.h"
#include "graph/serialize/tensorflow_graph.h"
#include "runtime/session.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;

// tf_queue_resource_var.pbtxt, from TensorFlow 2.21's tf.compat.v1 graph mode:
//   q = FIFOQueue(10, [float32], shapes=[[2]]); enq = q.enqueue([[1., 2.]]); deq = q.dequeue()
//   v = get_variable("v", initializer=3.0); a = v.assign_add(1.0); r = identity(v.read_value())
std::unique_ptr<Session> TensorFlowSession(int cpus = 1) {
  std::ifstream in(std::string(TESSERA_TEST_DATA_DIR) + "/tf_queue_resource_var.pbtxt");
  std::stringstream text;
  text << in.rdbuf();
  auto def = GraphSpecFromTensorFlow(text.str(), TensorFlowFormat::kText);
  EXPECT_TRUE(def.ok()) << def.status();
  SessionConfig config;
  config.device_count = {{"CPU", cpus}};
  auto session = Session::Create(config, *def);
  EXPECT_TRUE(session.ok()) << session.status();
  return session.ok() ? std::move(*session) : nullptr;
}

float Scalar(const Tensor& t) { return t.data<float>()[0]; }

TEST(ResourceOpsTest, QueueV2OpsFromTensorFlowsGraph) {
  auto session = TensorFlowSession();
  ASSERT_NE(session, nullptr);
  EXPECT_EQ(session->graph().FindNode("q")->output_type(0), DataType::kResource);
  std::vector<Tensor> out;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(session->Run({}, {}, {"enq"}, &out).ok());
  ASSERT_TRUE(session->Run({}, {"deq"}, {}, &out).ok());
  EXPECT_TRUE(out[0].Equals(Tensor::FromVector<float>({1, 2})));
}

TEST(ResourceOpsTest, ResourceVariableFromTensorFlowsGraph) {
  auto session = TensorFlowSession();
  ASSERT_NE(session, nullptr);
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({}, {"v/IsInitialized/VarIsInitializedOp"}, {}, &out).ok());
  EXPECT_FALSE(out[0].data<bool>()[0]);
  Status uninitialized = session->Run({}, {"r"}, {}, &out);
  EXPECT_EQ(uninitialized.code(), Code::kFailedPrecondition);
  EXPECT_THAT(uninitialized.message(), HasSubstr("Error while reading resource variable v"));

  ASSERT_TRUE(session->Run({}, {}, {"v/Assign"}, &out).ok());
  ASSERT_TRUE(session->Run({}, {"v/IsInitialized/VarIsInitializedOp", "r"}, {}, &out).ok());
  EXPECT_TRUE(out[0].data<bool>()[0]);
  EXPECT_EQ(Scalar(out[1]), 3.0f);
  ASSERT_TRUE(session->Run({}, {"ReadVariableOp"}, {}, &out).ok());  // after ^a
  EXPECT_EQ(Scalar(out[0]), 4.0f);
  ASSERT_TRUE(session->Run({}, {"ReadVariableOp"}, {}, &out).ok());
  EXPECT_EQ(Scalar(out[0]), 5.0f);
}

// Readers hold the value they read: an update after a read leaves the read tensor alone.
TEST(ResourceOpsTest, AReadIsASnapshot) {
  auto session = TensorFlowSession();
  ASSERT_NE(session, nullptr);
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({}, {}, {"v/Assign"}, &out).ok());
  ASSERT_TRUE(session->Run({}, {"r"}, {}, &out).ok());
  Tensor before = out[0];
  ASSERT_TRUE(session->Run({}, {}, {"a"}, &out).ok());
  EXPECT_EQ(Scalar(before), 3.0f);
}

// Every op that takes a handle runs where the handle's variable lives, as TensorFlow's placer
// colocates the ends of resource edges.
TEST(ResourceOpsTest, ResourceUsersAreColocatedWithTheHandle) {
  auto def = GraphSpecFromJson(R"({"nodes": [
    {"name": "v", "op": "VarHandleOp", "device": "/cpu:1", "attrs": {"dtype": "float32", "shape": [2]}},
    {"name": "init", "op": "Const", "attrs": {"dtype": "float32", "value": {"dtype": "float32", "shape": [2], "data": [1, 2]}}},
    {"name": "assign", "op": "AssignVariableOp", "inputs": ["v", "init"]},
    {"name": "read", "op": "ReadVariableOp", "inputs": ["v"], "attrs": {"dtype": "float32"}}
  ]})");
  ASSERT_TRUE(def.ok()) << def.status();
  SessionConfig config;
  config.device_count = {{"CPU", 2}};
  auto session = Session::Create(config, *def);
  ASSERT_TRUE(session.ok()) << session.status();
  for (const PlacementRecord& r : (*session)->placement()) {
    if (r.node == "assign" || r.node == "read") {
      EXPECT_EQ(r.device, "/job:localhost/replica:0/task:0/device:CPU:1") << r.node;
    }
  }
  std::vector<Tensor> out;
  ASSERT_TRUE((*session)->Run({}, {}, {"assign"}, &out).ok());
  ASSERT_TRUE((*session)->Run({}, {"read"}, {}, &out).ok());
  EXPECT_TRUE(out[0].Equals(Tensor::FromVector<float>({1, 2})));
}

TEST(ResourceOpsTest, WrongDtypesAndShapesAreErrorsNamingTheVariable) {
  auto def = GraphSpecFromJson(R"({"nodes": [
    {"name": "v", "op": "VarHandleOp", "attrs": {"dtype": "float32", "shape": [2]}},
    {"name": "init", "op": "Const", "attrs": {"dtype": "float32", "value": {"dtype": "float32", "shape": [2], "data": [1, 2]}}},
    {"name": "three", "op": "Const", "attrs": {"dtype": "float32", "value": {"dtype": "float32", "shape": [3], "data": [1, 2, 3]}}},
    {"name": "int", "op": "Const", "attrs": {"dtype": "int32", "value": {"dtype": "int32", "shape": [2], "data": [1, 2]}}},
    {"name": "assign", "op": "AssignVariableOp", "inputs": ["v", "init"]},
    {"name": "add_three", "op": "AssignAddVariableOp", "inputs": ["v", "three"]},
    {"name": "assign_int", "op": "AssignVariableOp", "inputs": ["v", "int"]},
    {"name": "read_int", "op": "ReadVariableOp", "inputs": ["v"], "attrs": {"dtype": "int32"}},
    {"name": "apply", "op": "ResourceApplyGradientDescent", "inputs": ["v", "lr", "init"]},
    {"name": "lr", "op": "Const", "attrs": {"dtype": "float32", "value": {"dtype": "float32", "shape": [], "data": [0.5]}}},
    {"name": "read", "op": "ReadVariableOp", "inputs": ["v", "^apply"], "attrs": {"dtype": "float32"}}
  ]})");
  ASSERT_TRUE(def.ok()) << def.status();
  auto session = Session::Create(SessionConfig(), *def);
  ASSERT_TRUE(session.ok()) << session.status();
  std::vector<Tensor> out;
  Status early = (*session)->Run({}, {}, {"apply"}, &out);
  EXPECT_EQ(early.code(), Code::kFailedPrecondition) << early;
  ASSERT_TRUE((*session)->Run({}, {}, {"assign"}, &out).ok());
  Status s = (*session)->Run({}, {}, {"add_three"}, &out);
  EXPECT_THAT(s.message(), HasSubstr("Cannot update variable with shape [2] using a Tensor with shape [3]"));
  s = (*session)->Run({}, {}, {"assign_int"}, &out);
  EXPECT_THAT(s.message(), HasSubstr("Trying to assign int32 to resource variable v of dtype float32"));
  s = (*session)->Run({}, {"read_int"}, {}, &out);
  EXPECT_THAT(s.message(), HasSubstr("Trying to access resource variable v of dtype float32 as int32"));
  ASSERT_TRUE((*session)->Run({}, {"read"}, {}, &out).ok());  // v - 0.5 * v
  EXPECT_TRUE(out[0].Equals(Tensor::FromVector<float>({0.5f, 1.0f})));
}

}  // namespace
}  // namespace tessera
