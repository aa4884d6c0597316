// Synchronous between-graph training over a cluster of one ps and two workers, in this
// process: every worker's step waits for the chief's update, which averages one gradient
// from each; the chief's runner stops when its session closes.
#include "training/sync_replicas.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>

#include "distributed/cluster_server.h"
#include "distributed/grpc_session.h"
#include "graph/builder/ops.h"
#include "runtime/session.h"
#include "tests/distributed/free_port.h"

namespace tessera {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::FreePort;
using testing::LoopbackAddress;

// Worker `task`'s graph: w [2] and global_step on the ps; loss = sum(w * x) with x fed, so
// the gradient of w is x. Plain SGD with learning rate 1.
struct WorkerGraph {
  GraphSpec def;
  std::string train, local_init, chief_init, init_tokens, sync, init;
};

WorkerGraph BuildWorkerGraph(int task, const SyncReplicasOptions& options) {
  Scope root = Scope::NewRootScope();
  const Scope ps = root.WithDevice("/job:ps/task:0");
  const Scope local = root.WithDevice(StrCat("/job:worker/task:", task));
  auto w = ops::Variable(ps.WithOpName("w"), TensorShape({2}), DataType::kFloat);
  GlobalStep step = CreateGlobalStep(ps);
  auto init_w = ops::Assign(ps.WithOpName("init_w"), w, Tensor::FromVector<float>({0, 0}));
  auto x = ops::Placeholder(local.WithOpName("x"), DataType::kFloat, TensorShape({2}));
  auto loss = ops::Sum(local.WithOpName("loss"), ops::Mul(local, w, x), {0});
  std::vector<Output> grads;
  EXPECT_TRUE(AddSymbolicGradients(local, {loss}, {w}, &grads).ok());
  auto sync = SyncReplicas(root, local, GradientDescentOptimizer(1.0), options, {{grads[0], w}}, step.var);
  EXPECT_TRUE(sync.ok()) << sync.status();
  WorkerGraph g;
  if (!sync.ok()) return g;
  ops::NoOp(root.WithOpName("init").WithControlDependencies({init_w.op(), step.init, sync->init}));
  EXPECT_TRUE(root.ToSpec(&g.def).ok()) << root.status();
  g.train = sync->train.name();
  g.local_init = sync->local_init.name();
  g.chief_init = sync->chief_init.name();
  g.init_tokens = sync->init_tokens.name();
  g.sync = sync->sync.name();
  g.init = "init";
  return g;
}

class SyncReplicasTest : public ::testing::Test {
 protected:
  void SetUp() override {
    RegisterGrpcSessionFactory();
    unsetenv("TESSERA_CLUSTER_TOKEN");
    auto cluster = ClusterSpec::FromJson(StrCat(R"({"ps": [")", LoopbackAddress(FreePort()), R"("], "worker": [")",
                                                LoopbackAddress(FreePort()), R"(", ")", LoopbackAddress(FreePort()),
                                                R"("]})"));
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    for (auto [job, task] : {std::pair{"ps", 0}, {"worker", 0}, {"worker", 1}}) {
      auto server = ClusterServer::Create(*cluster, job, task, {});
      ASSERT_TRUE(server.ok()) << server.status();
      servers_.push_back(std::move(*server));
    }
  }

  std::unique_ptr<Session> Open(int task, const WorkerGraph& g) {
    SessionConfig config;
    config.device_filters = {"/job:ps", StrCat("/job:worker/task:", task)};
    auto s = Session::Create(servers_[1 + task]->target(), config, g.def);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? std::move(*s) : nullptr;
  }

  // One worker step with gradient x; the global step that let it go.
  static StatusOr<int64_t> Step(Session& session, const WorkerGraph& g, std::vector<float> x) {
    std::vector<Tensor> out;
    RETURN_IF_ERROR(session.Run({{"x", Tensor::FromVector<float>(x)}}, {g.train}, {}, &out));
    return out[0].data<int64_t>()[0];
  }

  std::vector<std::unique_ptr<ClusterServer>> servers_;
};

TEST_F(SyncReplicasTest, EachUpdateAveragesOneGradientFromEveryWorker) {
  const SyncReplicasOptions options{.replicas_to_aggregate = 2, .total_num_replicas = 2};
  WorkerGraph g0 = BuildWorkerGraph(0, options), g1 = BuildWorkerGraph(1, options);
  auto chief = Open(0, g0), other = Open(1, g1), runner = Open(0, g0);
  ASSERT_TRUE(chief && other && runner);
  std::vector<Tensor> out;
  for (const std::string& op : {g0.init, g0.chief_init, g0.init_tokens, g0.local_init}) {
    ASSERT_TRUE(chief->Run({}, {}, {op}, &out).ok()) << op;
  }
  ASSERT_TRUE(other->Run({}, {}, {g1.local_init}, &out).ok());
  // The chief's queue runner, until its session closes.
  std::promise<Status> runner_done;
  std::thread runner_thread([&] {
    Status s;
    while (s.ok()) s = runner->Run({}, {}, {g0.sync}, nullptr);
    runner_done.set_value(s);
  });

  for (int round = 1; round <= 3; ++round) {
    auto first = std::async(std::launch::async, [&] { return Step(*chief, g0, {1, 2}); });
    // The chief's step waits for the other worker's gradient.
    EXPECT_EQ(first.wait_for(std::chrono::milliseconds(200)), std::future_status::timeout) << "round " << round;
    StatusOr<int64_t> second = Step(*other, g1, {3, 6});
    ASSERT_TRUE(second.ok()) << second.status();
    StatusOr<int64_t> released = first.get();
    ASSERT_TRUE(released.ok()) << released.status();
    EXPECT_EQ(*released, round);
    EXPECT_EQ(*second, round);
  }
  ASSERT_TRUE(chief->Run({}, {"w", "global_step"}, {}, &out).ok());
  // Three updates of minus the average gradient [2, 4].
  EXPECT_THAT(std::vector<float>(out[0].data<float>(), out[0].data<float>() + 2), ElementsAre(-6, -12));
  EXPECT_EQ(out[1].data<int64_t>()[0], 3);

  // The runner waits in a take for gradients that never come, until its session closes.
  auto done = runner_done.get_future();
  EXPECT_EQ(done.wait_for(std::chrono::milliseconds(100)), std::future_status::timeout);
  runner->Close();
  Status stopped = done.get();
  runner_thread.join();
  EXPECT_EQ(stopped.code(), Code::kCancelled) << stopped;
}

TEST_F(SyncReplicasTest, BadCountsAreRefused) {
  Scope root = Scope::NewRootScope();
  auto w = ops::Variable(root.WithOpName("w"), TensorShape({2}), DataType::kFloat);
  GlobalStep step = CreateGlobalStep(root);
  auto sync = SyncReplicas(root, root, GradientDescentOptimizer(1.0), {.replicas_to_aggregate = 0},
                           {{ops::Const(root, Tensor::FromVector<float>({1, 1})), w}}, step.var);
  EXPECT_EQ(sync.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(sync.status().message(), HasSubstr("replicas_to_aggregate"));
}

}  // namespace
}  // namespace tessera
