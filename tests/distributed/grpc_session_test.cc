// Sessions whose target is a cluster task: the graph runs on the master task, its variables
// live there for every client, Reset drops them, and failures say who and why.
#include "distributed/grpc_session.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <thread>

#include "distributed/cluster_server.h"
#include "graph/builder/ops.h"
#include "runtime/session.h"
#include "tests/distributed/free_port.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
using testing::FreePort;
using testing::LoopbackAddress;

// A counter: v starts at 1, `bump` adds x * 2 to it.
GraphSpec CounterGraph() {
  Scope root = Scope::NewRootScope();
  auto v = ops::Variable(root.WithOpName("v"), TensorShape({}), DataType::kFloat);
  ops::Assign(root.WithOpName("init"), v, Tensor::Scalar<float>(1));
  auto x = ops::Placeholder(root.WithOpName("x"), DataType::kFloat, TensorShape({}));
  ops::AssignAdd(root.WithOpName("bump"), v, ops::Mul(root, x, 2.0f));
  GraphSpec def;
  EXPECT_TRUE(root.ToSpec(&def).ok());
  return def;
}

class GrpcSessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    RegisterGrpcSessionFactory();
    unsetenv("TESSERA_CLUSTER_TOKEN");
    auto cluster = ClusterSpec::FromJson(StrCat(R"({"worker": [")", LoopbackAddress(FreePort()), R"("]})"));
    ASSERT_TRUE(cluster.ok());
    ClusterServerOptions options;
    options.token = token_;
    auto server = ClusterServer::Create(*cluster, "worker", 0, options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    if (!token_.empty()) setenv("TESSERA_CLUSTER_TOKEN", token_.c_str(), 1);
  }
  void TearDown() override { unsetenv("TESSERA_CLUSTER_TOKEN"); }

  std::unique_ptr<Session> Open(const GraphSpec& def) {
    auto s = Session::Create(server_->target(), SessionConfig(), def);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? std::move(*s) : nullptr;
  }

  std::string token_;
  std::unique_ptr<ClusterServer> server_;
};

TEST_F(GrpcSessionTest, StepsRunOnTheMasterAndItsVariablesAreSharedByEveryClient) {
  auto first = Open(CounterGraph());
  ASSERT_NE(first, nullptr);
  std::vector<Tensor> out;
  ASSERT_TRUE(first->Run({}, {}, {"init"}, &out).ok());
  ASSERT_TRUE(first->Run({{"x", Tensor::Scalar<float>(3)}}, {}, {"bump"}, &out).ok());
  // Where it ran: the master task's device.
  bool placed_on_master = false;
  for (const PlacementRecord& r : first->placement()) {
    if (r.node == "bump") placed_on_master = r.device == "/job:worker/replica:0/task:0/device:CPU:0";
  }
  EXPECT_TRUE(placed_on_master);
  EXPECT_EQ(first->devices().devices().at(0)->name(), "/job:worker/replica:0/task:0/device:CPU:0");
  first.reset();  // the client goes; the variable stays on the master
  auto second = Open(CounterGraph());
  ASSERT_NE(second, nullptr);
  Status s = second->Run({}, {"v"}, {}, &out);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(out.at(0).data<float>()[0], 7.0f);
  // Reset drops the default container for everyone.
  ASSERT_TRUE(Session::Reset(server_->target(), {""}).ok());
  s = second->Run({}, {"v"}, {}, &out);
  EXPECT_EQ(s.code(), Code::kFailedPrecondition) << s;
}

TEST_F(GrpcSessionTest, AStepErrorComesBackWithTheMastersWords) {
  auto session = Open(CounterGraph());
  ASSERT_NE(session, nullptr);
  std::vector<Tensor> out;
  Status s = session->Run({}, {}, {"bump"}, &out);  // x not fed
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("x"));
  s = session->Run({{"x", Tensor::Scalar<float>(1)}}, {"nope:0"}, {}, &out);
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("nope"));
}

TEST_F(GrpcSessionTest, AMasterThatIsGoneIsUnavailableNamingIt) {
  auto session = Open(CounterGraph());
  ASSERT_NE(session, nullptr);
  const std::string target = server_->target();
  server_.reset();
  std::vector<Tensor> out;
  RunOptions options;
  options.timeout_in_ms = 1000;
  Status s = session->Run(options, {}, {}, {"init"}, &out, nullptr);
  EXPECT_TRUE(s.code() == Code::kUnavailable || s.code() == Code::kDeadlineExceeded) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("the master at " + target + " did not answer"));
  auto again = Session::Create(target, SessionConfig(), CounterGraph());
  EXPECT_FALSE(again.ok());
}

// The master answers for a task that does not: the error names that task, and the user's
// operation timeout bounds the master's wait for it (it used to wait 59 s whatever was set).
TEST(GrpcSessionDeadTaskTest, ATaskThatNeverCameUpIsNamedWithinTheOperationTimeout) {
  RegisterGrpcSessionFactory();
  unsetenv("TESSERA_CLUSTER_TOKEN");
  auto cluster = ClusterSpec::FromJson(StrCat(R"({"worker": [")", LoopbackAddress(FreePort()), R"(", ")",
                                              LoopbackAddress(FreePort()), R"("]})"));
  ASSERT_TRUE(cluster.ok());
  auto master = ClusterServer::Create(*cluster, "worker", 0, {});
  ASSERT_TRUE(master.ok()) << master.status();
  Scope root = Scope::NewRootScope();
  ops::Neg(root.WithOpName("far").WithDevice("/job:worker/task:1"), ops::Const(root, Tensor::Scalar(1.0f)));
  GraphSpec def;
  ASSERT_TRUE(root.ToSpec(&def).ok());
  SessionConfig config;
  config.operation_timeout_in_ms = 2000;
  const auto start = std::chrono::steady_clock::now();
  auto session = Session::Create((*master)->target(), config, def);
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(session.ok());
  EXPECT_TRUE(session.status().code() == Code::kDeadlineExceeded || session.status().code() == Code::kUnavailable)
      << session.status();
  EXPECT_THAT(std::string(session.status().message()), HasSubstr("/job:worker/replica:0/task:1 did not answer"));
  EXPECT_THAT(std::string(session.status().message()), ::testing::Not(HasSubstr("the master at")));
  EXPECT_LT(took, std::chrono::seconds(20));
}

// A session whose client went away without closing it (idle past the server's limit, no
// step running) is closed when the next session is made, its graphs with it; one in use is
// not.
TEST(GrpcSessionIdleTest, SessionsLeftIdleAreClosedAndOthersAreNot) {
  RegisterGrpcSessionFactory();
  unsetenv("TESSERA_CLUSTER_TOKEN");
  auto cluster = ClusterSpec::FromJson(StrCat(R"({"worker": [")", LoopbackAddress(FreePort()), R"("]})"));
  ASSERT_TRUE(cluster.ok());
  ClusterServerOptions options;
  options.limits.idle_session_timeout = std::chrono::seconds(1);
  auto server = ClusterServer::Create(*cluster, "worker", 0, options);
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string target = (*server)->target();
  auto idle = Session::Create(target, SessionConfig(), CounterGraph());
  auto busy = Session::Create(target, SessionConfig(), CounterGraph());
  ASSERT_TRUE(idle.ok() && busy.ok());
  std::vector<Tensor> out;
  ASSERT_TRUE((*idle)->Run({}, {}, {"init"}, &out).ok());
  ASSERT_TRUE((*busy)->Run({}, {}, {"init"}, &out).ok());
  for (int i = 0; i < 4; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    ASSERT_TRUE((*busy)->Run({{"x", Tensor::Scalar<float>(1)}}, {}, {"bump"}, &out).ok());
  }
  ASSERT_TRUE(Session::Create(target, SessionConfig(), CounterGraph()).ok());  // the next session
  Status gone = (*idle)->Run({}, {"v"}, {}, &out);
  EXPECT_EQ(gone.code(), Code::kNotFound) << gone;
  EXPECT_THAT(std::string(gone.message()), HasSubstr("left idle for more than 1 s"));
  ASSERT_TRUE((*busy)->Run({}, {"v"}, {}, &out).ok());
  EXPECT_EQ(out[0].data<float>()[0], 9.0f);
}

class GrpcSessionWithTokenTest : public GrpcSessionTest {
 protected:
  GrpcSessionWithTokenTest() { token_ = "clients-too"; }
};

TEST_F(GrpcSessionWithTokenTest, ClientsNeedTheTokenToo) {
  auto with = Open(CounterGraph());
  ASSERT_NE(with, nullptr);
  unsetenv("TESSERA_CLUSTER_TOKEN");
  auto without = Session::Create(server_->target(), SessionConfig(), CounterGraph());
  EXPECT_EQ(without.status().code(), Code::kUnauthenticated) << without.status();
  std::vector<Tensor> out;
  EXPECT_EQ(with->Run({}, {}, {"init"}, &out).code(), Code::kUnauthenticated);
}

}  // namespace
}  // namespace tessera
