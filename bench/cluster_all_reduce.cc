// The cross-process all-reduce benchmark: two processes (this one and a forked child), each a
// task of a two-worker cluster, sum a float32 tensor in place with the ring all-reduce over
// gRPC, as the AllReduce op of a multi-worker step does. Gloo and OpenMPI are timed the same
// way by bench/peers/. Prints one JSON line (rank 0's timings) for bench/report.py. The tasks
// talk over the same-host transport, as two tasks of one machine do, or with --grpc over
// gRPC only, as tasks of two machines do.
//
//   cluster_all_reduce [--bytes N] [--iterations N] [--grpc]
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <future>
#include <grpcpp/grpcpp.h>
#include <string>
#include <vector>

#include "distributed/cluster_server.h"
#include "distributed/remote_rendezvous.h"
#include "kernels/collectives/ring_all_reduce.h"
#include "tests/distributed/free_port.h"

namespace tessera {
namespace {

// `barrier` is this rank's end of a socket pair to the other: each says when it is done and
// keeps serving until the other has said so too, since either may still be fetching the
// other's last piece after its own end.
int Run(int rank, const ClusterSpec& cluster, int64_t bytes, int iterations, bool grpc_only, int barrier) {
  ClusterServerOptions options;
  options.same_host_transport = !grpc_only;
  auto server = ClusterServer::Create(cluster, "worker", rank, options);
  if (!server.ok()) {
    std::fprintf(stderr, "rank %d: %s\n", rank, server.status().ToString().c_str());
    return 1;
  }
  auto channels = std::make_shared<WorkerChannels>(cluster, "");
  const int peer = 1 - rank;
  auto channel = channels->ForTask("worker", peer);
  if (!channel.ok() ||
      !(*channel)->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(30))) {
    std::fprintf(stderr, "rank %d: the other task never answered\n", rank);
    return 1;
  }
  auto pool = ThreadPool::Create("reduce", 2);
  const auto device = [](int task) { return StrCat("/job:worker/replica:0/task:", task, "/device:CPU:0"); };
  RingAllReduce::Params params;
  params.rank = rank;
  params.size = 2;
  params.device = device(rank);
  params.prev_device = params.next_device = device(peer);
  params.pool = pool->get();
  const int warmup = 3;
  std::vector<double> seconds;
  for (int i = 0; i < warmup + iterations; ++i) {
    // A new tensor each time: the other task may still be reading the last one's pieces,
    // which are sent from the tensor's own memory.
    Tensor data(DataType::kFloat, TensorShape({bytes / 4}));
    std::fill_n(data.data<float>(), data.NumElements(), static_cast<float>(rank + 1));
    const int64_t step = 1000 + i;
    RemoteRendezvous rendezvous((*server)->local()->rendezvous()->Find(step), "worker", rank, channels, step,
                                std::chrono::seconds(60));
    params.name = StrCat("bench", i);
    std::promise<Status> done;
    const auto start = std::chrono::steady_clock::now();
    RingAllReduce::Start(params, &rendezvous, data, data, [&done](const Status& s) { done.set_value(s); });
    if (Status s = done.get_future().get(); !s.ok()) {
      std::fprintf(stderr, "rank %d: %s\n", rank, s.ToString().c_str());
      return 1;
    }
    if (i >= warmup) seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    if (data.data<float>()[0] != 3.0f || data.data<float>()[data.NumElements() - 1] != 3.0f) {
      std::fprintf(stderr, "rank %d: wrong sum %g\n", rank, data.data<float>()[0]);
      return 1;
    }
  }
  char byte = 1;
  if (write(barrier, &byte, 1) != 1 || read(barrier, &byte, 1) != 1) return 1;
  if (rank == 0) {
    std::sort(seconds.begin(), seconds.end());
    std::printf("{\"impl\": \"%s\", \"bytes\": %lld, \"median_s\": %.6f, \"min_s\": %.6f, \"max_s\": %.6f}\n",
                grpc_only ? "tessera grpc" : "tessera", static_cast<long long>(bytes), seconds[seconds.size() / 2], seconds.front(), seconds.back());
  }
  return 0;
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  int64_t bytes = int64_t{64} << 20;
  int iterations = 20;
  bool grpc_only = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--grpc") == 0) grpc_only = true;
    if (i + 1 < argc && std::strcmp(argv[i], "--bytes") == 0) bytes = std::atoll(argv[i + 1]);
    if (i + 1 < argc && std::strcmp(argv[i], "--iterations") == 0) iterations = std::atoi(argv[i + 1]);
  }
  using tessera::testing::FreePort;
  using tessera::testing::LoopbackAddress;
  auto cluster = tessera::ClusterSpec::FromJson(tessera::StrCat(R"({"worker": [")", LoopbackAddress(FreePort()),
                                                                R"(", ")", LoopbackAddress(FreePort()), R"("]})"));
  if (!cluster.ok() || bytes < 8 || iterations < 1) return 2;
  int barrier[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, barrier) != 0) return 2;
  // Fork before gRPC starts any thread in this process.
  const pid_t child = fork();
  if (child == 0) {
    close(barrier[0]);  // so that the parent ending without a word is an end of file here
    _exit(tessera::Run(1, *cluster, bytes, iterations, grpc_only, barrier[1]));
  }
  close(barrier[1]);
  const int result = tessera::Run(0, *cluster, bytes, iterations, grpc_only, barrier[0]);
  close(barrier[0]);
  int status = 0;
  waitpid(child, &status, 0);
  return result != 0 ? result : (WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}
