// Servers that run for weeks: a ps and a worker (`tessera server` processes) serve 10,000
// steps of a graph with edges between them, to clients that come and go (a new session each
// 1,000 steps, and clients killed in the middle of a step); after the first two thousand
// steps, the servers' resident memory, open file descriptors and threads stay where they are
// (within 5%), so nothing a step or a client leaves behind piles up.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <dirent.h>
#include <signal.h>

#include <fstream>
#include <sstream>
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

// AddressSanitizer's quarantine holds freed memory back (256 MB by default), so resident
// memory grows under it whatever the servers do: there only descriptors and threads count.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kMemoryCounts = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kMemoryCounts = false;
#else
constexpr bool kMemoryCounts = true;
#endif
#else
constexpr bool kMemoryCounts = true;
#endif

struct Usage {
  double rss_kb = 0;
  int fds = 0, threads = 0;
};

Usage UsageOf(pid_t pid) {
  Usage u;
  std::ifstream status(StrCat("/proc/", pid, "/status"));
  for (std::string line; std::getline(status, line);) {
    std::istringstream in(line);
    std::string key;
    in >> key;
    if (key == "VmRSS:") in >> u.rss_kb;
    if (key == "Threads:") in >> u.threads;
  }
  if (DIR* d = opendir(StrCat("/proc/", pid, "/fd").c_str())) {
    while (readdir(d) != nullptr) ++u.fds;
    closedir(d);
  }
  return u;
}

TEST(LongRunningServerTest, MemoryFilesAndThreadsStayFlatAsClientsComeAndGo) {
  RegisterGrpcSessionFactory();
  const int worker_port = FreePort(), ps_port = FreePort();
  const std::string cluster = StrCat(R"({"ps": [")", LoopbackAddress(ps_port), R"("], "worker": [")",
                                     LoopbackAddress(worker_port), R"("]})");
  Child worker({"server", "--cluster", cluster, "--job", "worker", "--task", "0"}, "");
  Child ps({"server", "--cluster", cluster, "--job", "ps", "--task", "0"}, "");
  ASSERT_THAT(worker.ReadUntil("Started server", std::chrono::seconds(20)), HasSubstr("Started server"));
  ASSERT_THAT(ps.ReadUntil("Started server", std::chrono::seconds(20)), HasSubstr("Started server"));

  // A variable on the ps, the arithmetic on the worker: every step crosses both ways.
  Scope root = Scope::NewRootScope();
  auto v = ops::Variable(root.WithOpName("v").WithDevice("/job:ps/task:0"), TensorShape({256}), DataType::kFloat);
  ops::Assign(root.WithOpName("init").WithDevice("/job:ps/task:0"), v,
              ops::Const(root, Tensor::FromVector(std::vector<float>(256, 0.0f))));
  auto x = ops::Placeholder(root.WithOpName("x"), DataType::kFloat, TensorShape({256}));
  auto doubled = ops::Mul(root.WithOpName("doubled").WithDevice("/job:worker/task:0"), x, 2.0f);
  auto bump = ops::AssignAdd(root.WithOpName("bump").WithDevice("/job:ps/task:0"), v, doubled);
  ops::Sum(root.WithOpName("total").WithDevice("/job:worker/task:0"), bump, {0});
  GraphSpec def;
  ASSERT_TRUE(root.ToSpec(&def).ok());
  const Tensor ones = Tensor::FromVector(std::vector<float>(256, 1.0f));
  const std::string waiting = StrCat(::testing::TempDir(), "/waiting_", getpid(), ".json");
  std::ofstream(waiting) << R"({"nodes": [
    {"name": "q", "op": "FIFOQueue", "device": "/job:worker/task:0", "attrs": {"component_types": ["float32"]}},
    {"name": "wait", "op": "QueueDequeue", "inputs": ["q"], "device": "/job:worker/task:0",
     "attrs": {"component_types": ["float32"]}}]})";
  const std::string target = "grpc://" + LoopbackAddress(worker_port);

  Usage warm_worker, warm_ps;
  int64_t steps = 0;
  for (int client = 0; client < 10; ++client) {
    auto session = Session::Create(target, SessionConfig(), def);
    ASSERT_TRUE(session.ok()) << session.status();
    std::vector<Tensor> out;
    if (client == 0) {
      ASSERT_TRUE((*session)->Run({}, {}, {"init"}, &out).ok());
    }
    for (int i = 0; i < 1000; ++i, ++steps) {
      Status s = (*session)->Run({{"x", ones}}, {"total"}, {}, &out);
      ASSERT_TRUE(s.ok()) << s << " at step " << steps;
    }
    EXPECT_FLOAT_EQ(out[0].data<float>()[0], 256.0f * 2.0f * static_cast<float>(steps));
    (*session)->Close();
    // A client killed in the middle of a step (a dequeue of an empty queue on the worker):
    // its session, graphs and step are left to the servers.
    Child killed({"run", waiting, "--master", target, "--fetch", "wait"}, "");
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    kill(killed.pid(), SIGKILL);
    killed.Wait(std::chrono::seconds(10));
    if (client == 1) {
      warm_worker = UsageOf(worker.pid());
      warm_ps = UsageOf(ps.pid());
    }
  }
  for (const auto& [name, warm, now] : {std::tuple{"worker", warm_worker, UsageOf(worker.pid())},
                                        std::tuple{"ps", warm_ps, UsageOf(ps.pid())}}) {
    SCOPED_TRACE(name);
    if (kMemoryCounts) {
      EXPECT_LE(now.rss_kb, warm.rss_kb * 1.05) << "RSS " << warm.rss_kb << " kB after 2,000 steps";
    }
    EXPECT_LE(now.fds, warm.fds * 1.05 + 1) << "fds " << warm.fds << " after 2,000 steps";
    EXPECT_LE(now.threads, warm.threads * 1.05 + 1) << "threads " << warm.threads << " after 2,000 steps";
  }
}

}  // namespace
}  // namespace tessera
