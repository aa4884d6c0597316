// A cluster of `tessera server` processes losing a task: a worker killed mid-step, a ps
// frozen. The step fails as Unavailable naming the task, in bounded time, and what the
// surviving tasks hold is kept.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include "distributed/grpc_session.h"
#include "graph/builder/ops.h"
#include "runtime/session.h"
#include "tests/distributed/free_port.h"
#include "tests/tools/child_process.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
using testing::Child;
using testing::FreePort;
using testing::LoopbackAddress;

class ClusterFaultsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    RegisterGrpcSessionFactory();
    unsetenv("TESSERA_CLUSTER_TOKEN");
    ps_address_ = LoopbackAddress(FreePort());
    worker_addresses_ = {LoopbackAddress(FreePort()), LoopbackAddress(FreePort())};
    cluster_ = StrCat(R"({"ps": [")", ps_address_, R"("], "worker": [")", worker_addresses_[0], R"(", ")",
                      worker_addresses_[1], R"("]})");
    ps_ = Start("ps", 0);
    workers_.push_back(Start("worker", 0));
    workers_.push_back(Start("worker", 1));
  }

  std::unique_ptr<Child> Start(const std::string& job, int task) {
    auto child = std::make_unique<Child>(
        std::vector<std::string>{"server", "--cluster", cluster_, "--job", job, "--task", std::to_string(task)}, "");
    EXPECT_THAT(child->ReadUntil("Started server", std::chrono::seconds(20)), HasSubstr("Started server"));
    return child;
  }

  std::string Target(int worker) const { return "grpc://" + worker_addresses_[worker]; }

  std::string cluster_;
  std::string ps_address_;
  std::vector<std::string> worker_addresses_;
  std::unique_ptr<Child> ps_;
  std::vector<std::unique_ptr<Child>> workers_;
};

// w on the ps; worker 1 dequeues from a queue nobody fills (a step that never ends by
// itself); worker 0, the master, adds the two.
GraphSpec WaitingGraph() {
  Scope root = Scope::NewRootScope();
  Scope ps = root.WithDevice("/job:ps/task:0");
  auto w = ops::Variable(ps.WithOpName("w"), TensorShape({}), DataType::kFloat);
  ops::Assign(ps.WithOpName("init"), w, Tensor::Scalar<float>(3));
  Scope worker1 = root.WithDevice("/job:worker/task:1");
  auto q = ops::FIFOQueue(worker1.WithOpName("q"), {DataType::kFloat});
  auto d = ops::QueueDequeue(worker1.WithOpName("d"), q, {DataType::kFloat});
  ops::Add(root.WithOpName("y").WithDevice("/job:worker/task:0"), d.at(0), w);
  GraphSpec def;
  EXPECT_TRUE(root.ToSpec(&def).ok());
  return def;
}

TEST_F(ClusterFaultsTest, AWorkerKilledMidStepFailsTheStepNamingItAndThePsKeepsItsVariables) {
  auto session = Session::Create(Target(0), SessionConfig(), WaitingGraph());
  ASSERT_TRUE(session.ok()) << session.status();
  std::vector<Tensor> out;
  ASSERT_TRUE((*session)->Run({}, {}, {"init"}, &out).ok());
  auto step = std::async(std::launch::async, [&] {
    RunOptions options;
    options.timeout_in_ms = 60000;
    std::vector<Tensor> mine;
    return (*session)->Run(options, {}, {"y"}, {}, &mine, nullptr);
  });
  // The step is under way on every task when worker 1 dies.
  EXPECT_EQ(step.wait_for(std::chrono::milliseconds(500)), std::future_status::timeout);
  const auto killed = std::chrono::steady_clock::now();
  kill(workers_[1]->pid(), SIGKILL);
  ASSERT_EQ(step.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  EXPECT_LT(std::chrono::steady_clock::now() - killed, std::chrono::seconds(20));
  Status s = step.get();
  EXPECT_EQ(s.code(), Code::kUnavailable) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("/job:worker/replica:0/task:1"));
  // The ps and its variable are untouched.
  Status read = (*session)->Run({}, {"w"}, {}, &out);
  ASSERT_TRUE(read.ok()) << read;
  EXPECT_EQ(out.at(0).data<float>()[0], 3.0f);
}

// Whether every thread of the process is stopped (state T in /proc/PID/task/TID/stat)
// within a few seconds: kill returns once SIGSTOP is queued, and on a loaded machine the
// process's threads may go on serving for a while before each of them runs the stop.
bool WaitUntilStopped(pid_t pid) {
  const auto stopped = [](const std::filesystem::path& stat_file) {
    std::ifstream stat(stat_file);
    std::string line;
    std::getline(stat, line);
    // "TID (COMM) STATE ...": COMM may hold spaces and parentheses, so read after the last ')'.
    const size_t close = line.rfind(')');
    return close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'T';
  };
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < end) {
    bool all = true;
    std::error_code error;
    for (const auto& task : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", error)) {
      all = all && stopped(task.path() / "stat");
    }
    if (all && !error) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

TEST_F(ClusterFaultsTest, AFrozenPsIsFoundByTheHeartbeatEvenWithoutADeadline) {
  Scope root = Scope::NewRootScope();
  auto w = ops::Variable(root.WithOpName("w").WithDevice("/job:ps/task:0"), TensorShape({}), DataType::kFloat);
  ops::Assign(root.WithOpName("init").WithDevice("/job:ps/task:0"), w, Tensor::Scalar<float>(3));
  ops::Mul(root.WithOpName("y"), w, 2.0f);
  GraphSpec def;
  ASSERT_TRUE(root.ToSpec(&def).ok());
  SessionConfig config;
  config.device_filters = {"/job:ps", "/job:worker/task:0"};
  auto session = Session::Create(Target(0), config, def);
  ASSERT_TRUE(session.ok()) << session.status();
  std::vector<Tensor> out;
  ASSERT_TRUE((*session)->Run({}, {}, {"init"}, &out).ok());
  ASSERT_TRUE((*session)->Run({}, {"y"}, {}, &out).ok());
  kill(ps_->pid(), SIGSTOP);
  ASSERT_TRUE(WaitUntilStopped(ps_->pid()));
  const auto frozen = std::chrono::steady_clock::now();
  Status s = (*session)->Run({}, {"y"}, {}, &out);  // no timeout: only the heartbeat can end it
  // A ping every 5 s, answered within 5 s or the connection is dropped.
  EXPECT_LT(std::chrono::steady_clock::now() - frozen, std::chrono::seconds(30));
  kill(ps_->pid(), SIGCONT);
  EXPECT_EQ(s.code(), Code::kUnavailable) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("/job:ps/replica:0/task:0"));
}

}  // namespace
}  // namespace tessera
