// `tessera server` as a process: it says when it listens, serves its task, and stops cleanly
// on SIGTERM; bad clusters, tasks and ports are errors with exit code 1.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "distributed/cluster_server.h"
#include "distributed/worker_channels.h"
#include "tests/distributed/free_port.h"
#include "tests/tools/child_process.h"
#include "tools/cli.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
using testing::Child;
using testing::FreePort;
using testing::LoopbackAddress;

std::string Cluster(int ps, int worker) {
  return StrCat(R"({"ps": [")", LoopbackAddress(ps), R"("], "worker": [")", LoopbackAddress(worker), R"("]})");
}

TEST(ServerCliTest, ServesUntilSigtermThenExitsCleanly) {
  const int port = FreePort();
  Child server({"server", "--cluster", Cluster(FreePort(), port), "--job", "worker", "--task", "0"}, "");
  const std::string target = "grpc://" + LoopbackAddress(port);
  EXPECT_THAT(server.ReadUntil(target, std::chrono::seconds(20)), HasSubstr("Started server with target: " + target));
  StatusOr<TaskStatus> status = GetTaskStatus(target, "", std::chrono::seconds(5));
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->devices.at(0).name, "/job:worker/replica:0/task:0/device:CPU:0");
  kill(server.pid(), SIGTERM);
  EXPECT_EQ(server.Wait(std::chrono::seconds(10)), 0);
  EXPECT_THAT(server.ReadUntil("Stopped", std::chrono::seconds(1)), HasSubstr("Stopped server /job:worker/replica:0/task:0"));
}

TEST(ServerCliTest, TakesItsTaskFromTfConfig) {
  const int port = FreePort();
  Child server({"server"}, StrCat(R"({"cluster": )", Cluster(port, FreePort()), R"(, "task": {"type": "ps", "index": 0}})"));
  const std::string target = "grpc://" + LoopbackAddress(port);
  EXPECT_THAT(server.ReadUntil(target, std::chrono::seconds(20)), HasSubstr("Started server with target: " + target));
  StatusOr<TaskStatus> status = GetTaskStatus(target, "", std::chrono::seconds(5));
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->task, "/job:ps/replica:0/task:0");
  kill(server.pid(), SIGINT);
  EXPECT_EQ(server.Wait(std::chrono::seconds(10)), 0);
}

// As srun starts the second of two tasks on one node: with --jobs ps:1,worker:1 it is the
// worker, at the port base plus its index on the node.
TEST(ServerCliTest, TakesItsTaskFromSrunsVariables) {
  const int port = FreePort();
  Child server({"server", "--resolver", "slurm", "--jobs", "ps:1,worker:1", "--port-base", std::to_string(port - 1)},
               "", [] {
                 setenv("SLURM_PROCID", "1", 1);
                 setenv("SLURM_STEP_NODELIST", "127.0.0.1", 1);
                 setenv("SLURM_STEP_TASKS_PER_NODE", "2", 1);
               });
  const std::string target = "grpc://" + LoopbackAddress(port);
  EXPECT_THAT(server.ReadUntil(target, std::chrono::seconds(20)), HasSubstr("Started server with target: " + target));
  StatusOr<TaskStatus> status = GetTaskStatus(target, "", std::chrono::seconds(5));
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->task, "/job:worker/replica:0/task:0");
  kill(server.pid(), SIGTERM);
  EXPECT_EQ(server.Wait(std::chrono::seconds(10)), 0);
  // The evaluator of TF_CONFIG serves nothing; a launcher's variables that disagree are named.
  Child evaluator({"server"}, StrCat(R"({"cluster": )", Cluster(FreePort(), FreePort()),
                                     R"(, "task": {"type": "evaluator", "index": 0}})"));
  EXPECT_EQ(evaluator.Wait(std::chrono::seconds(10)), 1);
  Child wrong({"server", "--resolver", "slurm"}, "", [] {
    setenv("SLURM_PROCID", "2", 1);
    setenv("SLURM_STEP_NODELIST", "127.0.0.1", 1);
    setenv("SLURM_STEP_TASKS_PER_NODE", "2", 1);
  });
  EXPECT_EQ(wrong.Wait(std::chrono::seconds(10)), 1);
}

// Three client processes, one after another, on one server: the variable the first
// initialises and the second bumps is what the third reads.
TEST(ServerCliTest, VariablesOnThePsOutliveEachClientProcess) {
  const int port = FreePort();
  const std::string cluster = Cluster(FreePort(), port);
  Child server({"server", "--cluster", cluster, "--job", "worker", "--task", "0"}, "");
  Child ps({"server", "--cluster", cluster, "--job", "ps", "--task", "0"}, "");
  const std::string target = "grpc://" + LoopbackAddress(port);
  ASSERT_THAT(server.ReadUntil(target, std::chrono::seconds(20)), HasSubstr("Started server"));
  ASSERT_THAT(ps.ReadUntil("Started server", std::chrono::seconds(20)), HasSubstr("Started server"));
  const std::string graph = ::testing::TempDir() + "/counter_" + std::to_string(getpid()) + ".json";
  {
    std::ofstream f(graph);
    f << R"({"nodes": [
      {"name": "v", "op": "VariableV2", "device": "/job:ps/task:0", "attrs": {"shape": [], "dtype": "float32"}},
      {"name": "one", "op": "Const", "attrs": {"value": {"dtype": "float32", "shape": [], "data": [1]}, "dtype": "float32"}},
      {"name": "init", "op": "Assign", "inputs": ["v", "one"]},
      {"name": "x", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": []}},
      {"name": "bump", "op": "AssignAdd", "inputs": ["v", "x"]}]})";
  }
  auto client = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"run", graph, "--master", target});
    Child c(args, "");
    const std::string printed = c.ReadUntil("\n", std::chrono::seconds(20));
    EXPECT_EQ(c.Wait(std::chrono::seconds(20)), 0) << printed;
    return printed;
  };
  client({"--target", "init"});
  client({"--target", "bump", "--feed", R"(x={"dtype": "float32", "shape": [], "data": [41]})"});
  EXPECT_THAT(client({"--fetch", "v"}), HasSubstr(R"("data":[42.0])"));
  kill(server.pid(), SIGTERM);
  kill(ps.pid(), SIGTERM);
  EXPECT_EQ(server.Wait(std::chrono::seconds(10)), 0);
  EXPECT_EQ(ps.Wait(std::chrono::seconds(10)), 0);
  std::remove(graph.c_str());
}

TEST(ServerCliTest, BadClustersTasksAndPortsExitWithOne) {
  const int port = FreePort();
  auto cluster = ClusterSpec::FromJson(Cluster(FreePort(), port));
  ASSERT_TRUE(cluster.ok());
  auto taken = ClusterServer::Create(*cluster, "worker", 0, {});
  ASSERT_TRUE(taken.ok()) << taken.status();
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"server", "--cluster", "{\"worker\": [", "--job", "worker", "--task", "0"}, "cluster spec"},
      {{"server", "--cluster", Cluster(FreePort(), FreePort()), "--job", "worker", "--task", "1"},
       "task index 1 is out of range"},
      {{"server", "--cluster", Cluster(FreePort(), port), "--job", "worker", "--task", "0"}, "cannot listen on"},
      {{"server", "--cluster", Cluster(FreePort(), FreePort()), "--job", "worker"}, "--cluster needs --job and --task"},
      {{"server", "--bogus"}, "unexpected argument '--bogus'"},
      // Unset shell variables must not start the server without TLS.
      {{"server", "--cluster", Cluster(FreePort(), FreePort()), "--job", "worker", "--task", "0", "--tls-cert", "",
        "--tls-key", "", "--tls-ca", ""},
       "--tls-cert needs a file, got ''"}};
  for (const auto& [args, why] : cases) {
    std::ostringstream out, err;
    EXPECT_EQ(RunCli(args, out, err), 1) << why;
    EXPECT_THAT(err.str(), HasSubstr(why));
    EXPECT_THAT(out.str(), ::testing::Not(HasSubstr("Started server")));
  }
}

}  // namespace
}  // namespace tessera
