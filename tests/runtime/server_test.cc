#include "runtime/server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "graph/builder/ops.h"
#include "runtime/session.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;

GraphSpec CounterGraph() {
  Scope root = Scope::NewRootScope();
  auto v = ops::Variable(root.WithContainer("shared").WithOpName("v"), TensorShape({}), DataType::kFloat);
  ops::Assign(root.WithOpName("init"), v, 1.0f);
  ops::AssignAdd(root.WithOpName("inc"), v, 1.0f);
  ops::Identity(root.WithOpName("read"), v);
  GraphSpec def;
  EXPECT_TRUE(root.ToSpec(&def).ok());
  return def;
}

float Read(Session& s) {
  std::vector<Tensor> out;
  Status st = s.Run({}, {"read"}, {}, &out);
  EXPECT_TRUE(st.ok()) << st;
  return st.ok() ? out[0].flat<float>()[0] : -1;
}

TEST(ServerTest, SessionsOnOneServerShareVariables) {
  auto server = Server::CreateLocal();
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_THAT((*server)->target(), ::testing::StartsWith("local://"));
  auto a = Session::Create((*server)->target(), {}, CounterGraph());
  auto b = Session::Create((*server)->target(), {}, CounterGraph());
  ASSERT_TRUE(a.ok() && b.ok());
  std::vector<Tensor> out;
  ASSERT_TRUE((*a)->Run({}, {}, {"init"}, &out).ok());
  ASSERT_TRUE((*b)->Run({}, {}, {"inc"}, &out).ok());
  EXPECT_EQ(Read(**a), 2.0f);
  EXPECT_EQ(Read(**b), 2.0f);
}

TEST(ServerTest, PlainSessionsKeepTheirOwn) {
  auto a = Session::Create({}, CounterGraph());
  auto b = Session::Create({}, CounterGraph());
  std::vector<Tensor> out;
  ASSERT_TRUE((*a)->Run({}, {}, {"init"}, &out).ok());
  Status s = (*b)->Run({}, {"read"}, {}, &out);
  EXPECT_EQ(s.code(), Code::kFailedPrecondition) << s;
}

TEST(ServerTest, ResetByTargetClearsAContainerForEverySession) {
  auto server = Server::CreateLocal();
  auto a = Session::Create((*server)->target(), {}, CounterGraph());
  auto b = Session::Create((*server)->target(), {}, CounterGraph());
  std::vector<Tensor> out;
  ASSERT_TRUE((*a)->Run({}, {}, {"init"}, &out).ok());
  ASSERT_TRUE(Session::Reset((*server)->target(), {"other"}).ok());
  EXPECT_EQ(Read(**b), 1.0f);  // another container: untouched
  ASSERT_TRUE(Session::Reset((*server)->target(), {"shared"}).ok());
  for (auto* s : {&a, &b}) {
    Status st = (**s)->Run({}, {"read"}, {}, &out);
    EXPECT_EQ(st.code(), Code::kFailedPrecondition) << st;
  }
}

TEST(ServerTest, DevicesComeFromTheServer) {
  SessionConfig config;
  config.device_count = {{"CPU", 3}};
  auto server = Server::CreateLocal(config);
  ASSERT_TRUE(server.ok());
  SessionConfig ignored;
  ignored.device_count = {{"CPU", 1}};
  Scope root = Scope::NewRootScope();
  ops::Neg(root.WithOpName("n").WithDevice("/cpu:2"), 1.0f);
  GraphSpec def;
  ASSERT_TRUE(root.ToSpec(&def).ok());
  auto session = Session::Create((*server)->target(), ignored, def);
  ASSERT_TRUE(session.ok()) << session.status();
  EXPECT_EQ((*session)->devices().devices().size(), 3u);
}

TEST(ServerTest, UnknownOrGoneTargetsAreNotFoundAndSessionsOutliveTheServer) {
  EXPECT_EQ(Session::Create("local://999999", {}, CounterGraph()).status().code(), Code::kNotFound);
  EXPECT_EQ(Session::Reset("local://999999", {}).code(), Code::kNotFound);
  auto server = Server::CreateLocal();
  std::string target = (*server)->target();
  auto a = Session::Create(target, {}, CounterGraph());
  ASSERT_TRUE(a.ok());
  server->reset();
  auto gone = Session::Create(target, {}, CounterGraph());
  EXPECT_EQ(gone.status().code(), Code::kNotFound);
  EXPECT_THAT(gone.status().message(), HasSubstr(target));
  std::vector<Tensor> out;
  ASSERT_TRUE((*a)->Run({}, {}, {"init"}, &out).ok());
  EXPECT_EQ(Read(**a), 1.0f);
}

}  // namespace
}  // namespace tessera
