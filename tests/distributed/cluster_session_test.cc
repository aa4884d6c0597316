// Sessions over a cluster of two tasks, ps and worker, each a ClusterServer with its own
// devices, resources and rendezvous: the master places over both, runs each task's
// partition there, and a tensor crossing tasks goes by RPC. Failures name the task.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "distributed/cluster_server.h"
#include "distributed/grpc_session.h"
#include "distributed/master_session.h"
#include "graph/builder/ops.h"
#include "graph/serialize/tensorflow_graph.h"
#include "kernels/op_kernel.h"
#include "runtime/session.h"
#include "tests/distributed/free_port.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
using testing::FreePort;
using testing::LoopbackAddress;

constexpr char kPsCpu[] = "/job:ps/replica:0/task:0/device:CPU:0";
constexpr char kWorkerCpu[] = "/job:worker/replica:0/task:0/device:CPU:0";

std::string DeviceOf(const Session& session, const std::string& node) {
  for (const PlacementRecord& r : session.placement()) {
    if (r.node == node) return r.device;
  }
  return "";
}

// w lives on the ps; the worker computes y = x * w + 1 and bumps w by x.
GraphSpec PsWorkerGraph() {
  Scope root = Scope::NewRootScope();
  Scope ps = root.WithDevice("/job:ps/task:0");
  auto w = ops::Variable(ps.WithOpName("w"), TensorShape({}), DataType::kFloat);
  ops::Assign(ps.WithOpName("init"), w, Tensor::Scalar<float>(3));
  auto x = ops::Placeholder(root.WithOpName("x"), DataType::kFloat, TensorShape({}));
  ops::Add(root.WithOpName("y"), ops::Mul(root.WithOpName("xw"), x, w), 1.0f);
  ops::AssignAdd(ps.WithOpName("bump"), w, x);
  GraphSpec def;
  EXPECT_TRUE(root.ToSpec(&def).ok());
  return def;
}

// A queue on the ps, shared as `shared_name`: "enqueue" puts 4 in it, "next" takes one and
// adds 1 on the worker, waiting while it is empty.
GraphSpec PsQueueGraph(const std::string& shared_name) {
  Scope root = Scope::NewRootScope();
  Scope ps = root.WithDevice("/job:ps/task:0");
  auto q = ops::FIFOQueue(ps.WithOpName("q"), {DataType::kFloat}, {.shared_name = shared_name});
  ops::QueueEnqueue(ps.WithOpName("enqueue"), q, {ops::Const(ps, Tensor::Scalar<float>(4))});
  ops::Add(root.WithOpName("next"), ops::QueueDequeue(ps.WithOpName("dequeue"), q, {DataType::kFloat})[0], 1.0f);
  GraphSpec def;
  EXPECT_TRUE(root.ToSpec(&def).ok());
  return def;
}

class ClusterSessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    RegisterGrpcSessionFactory();
    unsetenv("TESSERA_CLUSTER_TOKEN");
    // worker:1 is in the cluster but never started.
    auto cluster = ClusterSpec::FromJson(StrCat(R"({"ps": [")", LoopbackAddress(FreePort()), R"("], "worker": [")",
                                                LoopbackAddress(FreePort()), R"(", ")", LoopbackAddress(FreePort()),
                                                R"("]})"));
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = *cluster;
    auto ps = ClusterServer::Create(cluster_, "ps", 0, {});
    ASSERT_TRUE(ps.ok()) << ps.status();
    ps_ = std::move(*ps);
    auto worker = ClusterServer::Create(cluster_, "worker", 0, {});
    ASSERT_TRUE(worker.ok()) << worker.status();
    worker_ = std::move(*worker);
  }

  // Sessions leave worker:1 out, as between-graph replication's workers do.
  std::unique_ptr<Session> Open(const GraphSpec& def) {
    SessionConfig config;
    config.device_filters = {"/job:ps", "/job:worker/task:0"};
    auto s = Session::Create(worker_->target(), config, def);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? std::move(*s) : nullptr;
  }

  ClusterSpec cluster_;
  std::unique_ptr<ClusterServer> ps_;
  std::unique_ptr<ClusterServer> worker_;
};

TEST_F(ClusterSessionTest, PlacesOverEveryTaskAndRunsEachPartitionWhereItWasPlaced) {
  auto session = Open(PsWorkerGraph());
  ASSERT_NE(session, nullptr);
  // The cluster's devices, the master's own first; worker:1 is filtered out.
  std::vector<std::string> devices;
  for (const Device* d : session->devices().devices()) devices.push_back(d->name());
  EXPECT_EQ(devices, (std::vector<std::string>{kWorkerCpu, kPsCpu}));
  EXPECT_EQ(DeviceOf(*session, "w"), kPsCpu);
  EXPECT_EQ(DeviceOf(*session, "bump"), kPsCpu);
  // Nodes that ask for no device go to the master's task.
  EXPECT_EQ(DeviceOf(*session, "xw"), kWorkerCpu);
  EXPECT_EQ(DeviceOf(*session, "y"), kWorkerCpu);

  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({}, {}, {"init"}, &out).ok());
  Status s = session->Run({{"x", Tensor::Scalar<float>(2)}}, {"y", "w"}, {}, &out);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(out.at(0).data<float>()[0], 7.0f);
  EXPECT_EQ(out.at(1).data<float>()[0], 3.0f);
  ASSERT_TRUE(session->Run({{"x", Tensor::Scalar<float>(2)}}, {}, {"bump"}, &out).ok());
  // The variable is the ps task's: a session on the ps itself sees the update.
  SessionConfig ps_only;
  ps_only.device_filters = {"/job:ps"};
  auto on_ps = Session::Create(ps_->target(), ps_only, PsWorkerGraph());
  ASSERT_TRUE(on_ps.ok()) << on_ps.status();
  s = (*on_ps)->Run({}, {"w"}, {}, &out);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(out.at(0).data<float>()[0], 5.0f);
}

// A client's graph grows after its session is made (tf.Session allows it): the master places
// the new nodes, steps reach them, and what was placed before stays where it was.
TEST_F(ClusterSessionTest, TheGraphMayGrowAfterTheSessionIsMade) {
  auto session = Open(PsWorkerGraph());
  ASSERT_NE(session, nullptr);
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({}, {}, {"init"}, &out).ok());
  GraphSpec grown;
  NodeSpec twice;
  twice.name = "twice";
  twice.op = "Mul";
  twice.inputs = {"w", "w"};
  NodeSpec bump_more;
  bump_more.name = "bump_more";
  bump_more.op = "AssignAdd";
  bump_more.inputs = {"w", "twice"};
  grown.nodes = {twice, bump_more};
  Status s = session->Extend(grown);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(DeviceOf(*session, "w"), kPsCpu);
  EXPECT_EQ(DeviceOf(*session, "bump_more"), kPsCpu);  // with the variable it changes
  EXPECT_EQ(DeviceOf(*session, "twice"), kWorkerCpu);
  s = session->Run({}, {"twice"}, {"bump_more"}, &out);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(out.at(0).data<float>()[0], 9.0f);
  ASSERT_TRUE(session->Run({}, {"w"}, {}, &out).ok());
  EXPECT_EQ(out.at(0).data<float>()[0], 12.0f);
  // A node the graph has is refused, naming it; the session goes on.
  Status again = session->Extend(grown);
  EXPECT_EQ(again.code(), Code::kInvalidArgument);
  EXPECT_THAT(again.message(), HasSubstr("'twice'"));
  ASSERT_TRUE(session->Run({{"x", Tensor::Scalar<float>(1)}}, {"y"}, {}, &out).ok());
  EXPECT_EQ(out.at(0).data<float>()[0], 13.0f);
}

// A remote task's share of an ended step is dropped with its next step (no call of its own
// per step), a bounded number wait, and the session's end drops the rest.
TEST_F(ClusterSessionTest, EndedStepsAreCleanedUpOnEveryTaskWithoutACallEach) {
  auto session = Open(PsWorkerGraph());
  ASSERT_NE(session, nullptr);
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({}, {}, {"init"}, &out).ok());
  for (int i = 0; i < 40; ++i) {
    Status s = session->Run({{"x", Tensor::Scalar<float>(2)}}, {"y"}, {}, &out);
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_EQ(out.at(0).data<float>()[0], 7.0f);
  }
  EXPECT_EQ(worker_->local()->rendezvous()->LiveSteps(), 0u);  // the master's own task cleans up at once
  const size_t waiting = ps_->local()->rendezvous()->LiveSteps();
  EXPECT_GE(waiting, 1u);
  EXPECT_LE(waiting, 16u);
  session.reset();  // closes it on the master
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (ps_->local()->rendezvous()->LiveSteps() > 0 && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(ps_->local()->rendezvous()->LiveSteps(), 0u);
}

TEST_F(ClusterSessionTest, ResetClearsTheContainersOfEveryTask) {
  auto session = Open(PsWorkerGraph());
  ASSERT_NE(session, nullptr);
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({}, {}, {"init"}, &out).ok());
  // The master asks every task, worker:1 included: it is down, and said so.
  Status s = Session::Reset(worker_->target(), {""});
  EXPECT_EQ(s.code(), Code::kUnavailable) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("/job:worker/replica:0/task:1"));
  auto worker1 = ClusterServer::Create(cluster_, "worker", 1, {});
  ASSERT_TRUE(worker1.ok()) << worker1.status();
  // Once up, the task is found again within the channel's reconnect backoff (at most 1 s).
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  do {
    s = Session::Reset(worker_->target(), {""});
  } while (s.code() == Code::kUnavailable && std::chrono::steady_clock::now() < give_up);
  ASSERT_TRUE(s.ok()) << s;
  s = session->Run({}, {"w"}, {}, &out);
  EXPECT_EQ(s.code(), Code::kFailedPrecondition) << s;
}

TEST_F(ClusterSessionTest, AnErrorOnAnotherTaskFailsTheStepWithItsWordsAndTheSessionGoesOn) {
  auto session = Open(PsWorkerGraph());
  ASSERT_NE(session, nullptr);
  std::vector<Tensor> out;
  // w is not initialized yet: the ps's read fails, and the worker's step with it.
  Status s = session->Run({{"x", Tensor::Scalar<float>(2)}}, {"y"}, {}, &out);
  EXPECT_EQ(s.code(), Code::kFailedPrecondition) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("w"));
  ASSERT_TRUE(session->Run({}, {}, {"init"}, &out).ok());
  s = session->Run({{"x", Tensor::Scalar<float>(2)}}, {"y"}, {}, &out);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(out.at(0).data<float>()[0], 7.0f);
}

TEST_F(ClusterSessionTest, ADeadTaskFailsTheStepWithinTheTimeoutNamingIt) {
  auto session = Open(PsWorkerGraph());
  ASSERT_NE(session, nullptr);
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({}, {}, {"init"}, &out).ok());
  ASSERT_TRUE(session->Run({{"x", Tensor::Scalar<float>(2)}}, {"y"}, {}, &out).ok());
  ps_.reset();
  RunOptions options;
  options.timeout_in_ms = 5000;
  const auto start = std::chrono::steady_clock::now();
  Status s = session->Run(options, {{"x", Tensor::Scalar<float>(2)}}, {"y"}, {}, &out, nullptr);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(options.timeout_in_ms));
  EXPECT_EQ(s.code(), Code::kUnavailable) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("/job:ps/replica:0/task:0"));
}

TEST_F(ClusterSessionTest, A64MiBTensorCrossesTasks) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DataType::kFloat, TensorShape({16 << 20}));
  auto on_ps = ops::Mul(root.WithOpName("twice").WithDevice("/job:ps/task:0"), x, 2.0f);
  ops::Sum(root.WithOpName("sum"), on_ps, 0);
  GraphSpec def;
  ASSERT_TRUE(root.ToSpec(&def).ok());
  auto session = Open(def);
  ASSERT_NE(session, nullptr);
  Tensor big(DataType::kFloat, TensorShape({16 << 20}));
  float* p = big.data<float>();
  for (int64_t i = 0; i < big.NumElements(); ++i) p[i] = static_cast<float>(i % 7);
  std::vector<Tensor> out;
  Status s = session->Run({{"x", big}}, {"sum", "twice"}, {}, &out);
  ASSERT_TRUE(s.ok()) << s;
  double expected = 0;
  for (int64_t i = 0; i < big.NumElements(); ++i) expected += 2.0 * (i % 7);
  EXPECT_NEAR(out.at(0).data<float>()[0], expected, expected * 1e-5);
  ASSERT_EQ(out.at(1).NumElements(), big.NumElements());
  EXPECT_EQ(out.at(1).data<float>()[12345], 2.0f * (12345 % 7));
}

// TensorFlow's cond and nested while_loop with their nodes spread over both tasks: every
// value inside a loop crosses by RPC under its iteration's key, dead ones too.
TEST_F(ClusterSessionTest, LoopsAndCondsSpanningTasks) {
  std::ifstream in(std::string(TESSERA_TEST_DATA_DIR) + "/tf_cond_nested_while.pbtxt");
  std::stringstream text;
  text << in.rdbuf();
  auto def = GraphSpecFromTensorFlow(text.str(), TensorFlowFormat::kText);
  ASSERT_TRUE(def.ok()) << def.status();
  for (size_t i = 0; i < def->nodes.size(); ++i) {
    if (def->nodes[i].colocate_with.empty()) def->nodes[i].device = i % 2 == 0 ? "/job:ps/task:0" : "/job:worker/task:0";
  }
  auto session = Open(*def);
  ASSERT_NE(session, nullptr);
  for (int n : {0, 1, 6}) {
    std::vector<Tensor> out;
    Status s = session->Run({{"n", Tensor::Scalar(n)}, {"x", Tensor::Scalar(-3.0f)}}, {"total", "y"}, {}, &out);
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_EQ(out.at(0).data<int32_t>()[0], (n - 1) * n * (2 * n - 1) / 6) << n;
    EXPECT_EQ(out.at(1).data<float>()[0], -4.0f);
  }
}

TEST_F(ClusterSessionTest, StepsFromManyThreadsMeetOnlyTheirOwnTensors) {
  auto session = Open(PsWorkerGraph());
  ASSERT_NE(session, nullptr);
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({}, {}, {"init"}, &out).ok());
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        std::vector<Tensor> mine;
        const float x = static_cast<float>(t * 100 + i);
        Status s = session->Run({{"x", Tensor::Scalar<float>(x)}}, {"y"}, {}, &mine);
        if (!s.ok() || mine.at(0).data<float>()[0] != x * 3 + 1) ++wrong;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST_F(ClusterSessionTest, DiscoveryWaitsForATaskThenNamesTheOneThatNeverCame) {
  auto local = Server::CreateForTask({}, "worker", 0);
  ASSERT_TRUE(local.ok());
  auto channels = std::make_shared<WorkerChannels>(cluster_, "");
  auto pool = ThreadPool::Create("test", 2);
  ASSERT_TRUE(pool.ok());
  MasterSession::Environment env{"worker", 0, *local,
                                 std::make_shared<GraphMgr>(*local, "worker", 0, channels, pool->get()), channels, nullptr};
  const auto start = std::chrono::steady_clock::now();
  auto session = MasterSession::Create(env, SessionConfig(), PsWorkerGraph(), std::chrono::milliseconds(1500));
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(1000));
  EXPECT_EQ(session.status().code(), Code::kDeadlineExceeded) << session.status();
  EXPECT_THAT(std::string(session.status().message()), HasSubstr("/job:worker/replica:0/task:1"));
}

// A step waiting on the ps for an element that never comes ends when its client closes the
// session, on the ps too: the queue still has no waiter and serves the next session.
TEST_F(ClusterSessionTest, ClosingTheClientsSessionCancelsTheStepOnEveryTask) {
  const GraphSpec def = PsQueueGraph("q");
  auto session = Open(def);
  ASSERT_NE(session, nullptr);
  Status waited;
  std::thread consumer([&] {
    std::vector<Tensor> out;
    waited = session->Run({}, {"next"}, {}, &out);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto closed = std::chrono::steady_clock::now();
  session->Close();
  consumer.join();
  EXPECT_EQ(waited.code(), Code::kCancelled) << waited;
  EXPECT_LT(std::chrono::steady_clock::now() - closed, std::chrono::seconds(2));
  // The tasks notice a cancelled call when they next look (every 50 ms at each hop); only
  // then is the ps's dequeue withdrawn.
  std::this_thread::sleep_for(std::chrono::seconds(1));

  auto next = Open(def);
  ASSERT_NE(next, nullptr);
  std::vector<Tensor> out;
  ASSERT_TRUE(next->Run({}, {}, {"enqueue"}, &out).ok());
  Status s = next->Run({}, {"next"}, {}, &out);
  ASSERT_TRUE(s.ok()) << s << " (the closed step's dequeue must not have taken the element)";
  EXPECT_EQ(out.at(0).data<float>()[0], 5.0f);
}

// A caller's cancellation (Python's Ctrl-C) cancels the one step on every task; the session
// stays open, and the ps's queue keeps its element for the next step.
TEST_F(ClusterSessionTest, ACallersCancellationCancelsTheStepAndTheSessionGoesOn) {
  const GraphSpec def = PsQueueGraph("q2");
  auto session = Open(def);
  ASSERT_NE(session, nullptr);
  CancellationManager interrupt;
  RunOptions options;
  options.cancellation = &interrupt;
  Status waited;
  std::thread consumer([&] {
    std::vector<Tensor> out;
    waited = session->Run(options, {}, {"next"}, {}, &out, nullptr);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto cancelled = std::chrono::steady_clock::now();
  interrupt.StartCancel();
  consumer.join();
  EXPECT_EQ(waited.code(), Code::kCancelled) << waited;
  EXPECT_LT(std::chrono::steady_clock::now() - cancelled, std::chrono::seconds(2));
  // As above: the tasks withdraw the dequeue when they next look.
  std::this_thread::sleep_for(std::chrono::seconds(1));
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({}, {}, {"enqueue"}, &out).ok());
  Status s = session->Run({}, {"next"}, {}, &out);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(out.at(0).data<float>()[0], 5.0f);
}

}  // namespace
}  // namespace tessera
