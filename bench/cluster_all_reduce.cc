// The cross-process all-reduce benchmark: each process a task of a worker cluster, they sum
// a float32 tensor in place with the ring all-reduce, as the AllReduce op of a multi-worker
// step does. Gloo and OpenMPI are timed the same way by bench/peers/. Prints
// one JSON line (rank 0's timings) for bench/report.py.
//
// By default two processes on this machine (this one and a forked child), talking over the
// direct transport's Unix socket as two tasks of one machine do. With --cluster, this
// process is rank --rank of that cluster's "worker" job, the others started apart
// (bench/cluster_hosts.sh starts one per emulated host), reducing with the engine's ring
// (over the direct transport's TCP) or with --gloo by Gloo (the AllReduce op's two
// backends). --grpc moves the ring's pieces over gRPC only. Given the link's --link-gbit
// and --link-latency-us, rank 0 prints beside what it measured the ring's predicted time,
// 2(N-1)/N x bytes / bandwidth + 2(N-1) x latency, and the share of it the run reached.
//
//   cluster_all_reduce [--bytes N] [--iterations N] [--grpc]
//   cluster_all_reduce --cluster JSON --rank R [--gloo] [--bytes N] [--iterations N] [--link-gbit G]
//                      [--link-latency-us L]
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
#include <thread>
#include <vector>

#include "distributed/cluster_server.h"
#include "distributed/remote_rendezvous.h"
#include "kernels/collectives/gloo_all_reduce.h"
#include "kernels/collectives/ring_all_reduce.h"
#include "tests/distributed/free_port.h"

namespace tessera {
namespace {

struct Link {
  double gbit = 0;        // bandwidth per direction; 0: not given
  double latency_us = 0;
};

// `barrier`, with two processes, is this rank's end of a socket pair to the other: each says
// when it is done and keeps serving until the other has said so too, since either may still
// be fetching the other's last piece after its own end. Without one (-1), the ranks end with
// a last, small all-reduce, which no rank finishes before every rank has finished the big
// ones, and a second's grace for its own last pieces.
int Run(int rank, const ClusterSpec& cluster, int64_t bytes, int iterations, bool grpc_only, bool gloo, int barrier,
        const Link& link) {
  ClusterServerOptions options;
  options.direct_transport = !grpc_only;
  auto server = ClusterServer::Create(cluster, "worker", rank, options);
  if (!server.ok()) {
    std::fprintf(stderr, "rank %d: %s\n", rank, server.status().ToString().c_str());
    return 1;
  }
  const int size = cluster.num_tasks("worker");
  auto channels = std::make_shared<WorkerChannels>(cluster, "");
  for (int peer = 0; peer < size; ++peer) {
    if (peer == rank) continue;
    auto channel = channels->ForTask("worker", peer);
    if (!channel.ok() ||
        !(*channel)->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(60))) {
      std::fprintf(stderr, "rank %d: task %d never answered\n", rank, peer);
      return 1;
    }
  }
  auto pool = ThreadPool::Create("reduce", 2);
  const auto device = [](int task) { return StrCat("/job:worker/replica:0/task:", task, "/device:CPU:0"); };
  RingAllReduce::Params params;
  params.rank = rank;
  params.size = size;
  params.device = device(rank);
  params.prev_device = device((rank + size - 1) % size);
  params.next_device = device((rank + 1) % size);
  params.pool = pool->get();
  GlooAllReduce::Params gloo_params;
  gloo_params.rank = rank;
  gloo_params.size = size;
  for (int task = 0; task < size; ++task) gloo_params.devices.push_back(device(task));
  gloo_params.incarnations.assign(size, 0);
  for (int task = 0; task < size; ++task) gloo_params.hosts.push_back(cluster.TaskHost("worker", task));
  gloo_params.name = "bench";
  GlooAllReduce gloo_member(gloo_params);
  const float want = static_cast<float>(size * (size + 1) / 2);
  // A new tensor each time (another task may still be reading the last one's pieces, which
  // are sent from the tensor's own memory), made and filled before the clock starts, as
  // Gloo's benchmark fills its buffer.
  auto input = [&](int64_t n) {
    Tensor data(DataType::kFloat, TensorShape({n / 4}));
    std::fill_n(data.data<float>(), data.NumElements(), static_cast<float>(rank + 1));
    return data;
  };
  auto all_reduce = [&](int i, Tensor data) -> Status {
    const int64_t step = 1000 + i;
    RemoteRendezvous rendezvous((*server)->local()->rendezvous()->Find(step), "worker", rank, channels, step,
                                std::chrono::seconds(60));
    params.name = StrCat("bench", i);
    std::promise<Status> done;
    if (gloo) {
      gloo_member.Start(&rendezvous, step, data, data, [&done](const Status& s) { done.set_value(s); });
    } else {
      RingAllReduce::Start(params, &rendezvous, data, data, [&done](const Status& s) { done.set_value(s); });
    }
    RETURN_IF_ERROR(done.get_future().get());
    if (data.data<float>()[0] != want || data.data<float>()[data.NumElements() - 1] != want) {
      return errors::Internal("wrong sum ", data.data<float>()[0], ", not ", want);
    }
    return Status::OK();
  };
  const int warmup = 3;
  std::vector<double> seconds;
  for (int i = 0; i < warmup + iterations; ++i) {
    Tensor data = input(bytes);
    const auto start = std::chrono::steady_clock::now();
    if (Status s = all_reduce(i, std::move(data)); !s.ok()) {
      std::fprintf(stderr, "rank %d: %s\n", rank, s.ToString().c_str());
      return 1;
    }
    if (i >= warmup) seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  if (barrier >= 0) {
    char byte = 1;
    if (write(barrier, &byte, 1) != 1 || read(barrier, &byte, 1) != 1) return 1;
  } else {
    if (Status s = all_reduce(warmup + iterations, input(4 * size)); !s.ok()) return 1;
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  if (rank == 0) {
    std::sort(seconds.begin(), seconds.end());
    const double median = seconds[seconds.size() / 2];
    std::string model;
    if (link.gbit > 0) {
      // The ring's bound: each rank sends and receives 2(N-1)/N of the tensor, in 2(N-1) steps.
      const double predicted = 2.0 * (size - 1) / size * static_cast<double>(bytes) / (link.gbit * 1e9 / 8) +
                               2.0 * (size - 1) * link.latency_us * 1e-6;
      model = StrCat(", \"ranks\": ", size, ", \"link_gbit\": ", link.gbit, ", \"link_latency_us\": ",
                     link.latency_us, ", \"predicted_s\": ", predicted, ", \"of_predicted\": ", predicted / median);
    }
    std::printf("{\"impl\": \"%s\", \"bytes\": %lld, \"median_s\": %.6f, \"min_s\": %.6f, \"max_s\": %.6f%s}\n",
                gloo ? "tessera gloo" : grpc_only ? "tessera grpc" : "tessera", static_cast<long long>(bytes), median, seconds.front(),
                seconds.back(), model.c_str());
  }
  return 0;
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  int64_t bytes = int64_t{64} << 20;
  int iterations = 20, rank = -1;
  bool grpc_only = false, gloo = false;
  std::string cluster_json;
  tessera::Link link;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--grpc") == 0) grpc_only = true;
    if (std::strcmp(argv[i], "--gloo") == 0) gloo = true;
    if (i + 1 >= argc) continue;
    if (std::strcmp(argv[i], "--bytes") == 0) bytes = std::atoll(argv[i + 1]);
    if (std::strcmp(argv[i], "--iterations") == 0) iterations = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--cluster") == 0) cluster_json = argv[i + 1];
    if (std::strcmp(argv[i], "--rank") == 0) rank = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--link-gbit") == 0) link.gbit = std::atof(argv[i + 1]);
    if (std::strcmp(argv[i], "--link-latency-us") == 0) link.latency_us = std::atof(argv[i + 1]);
  }
  if (bytes < 8 || iterations < 1) return 2;
  if (!cluster_json.empty()) {  // one rank of a cluster started apart
    auto cluster = tessera::ClusterSpec::FromJson(cluster_json);
    if (!cluster.ok() || rank < 0 || rank >= cluster->num_tasks("worker")) return 2;
    return tessera::Run(rank, *cluster, bytes, iterations, grpc_only, gloo, -1, link);
  }
  using tessera::testing::FreePort;
  using tessera::testing::LoopbackAddress;
  auto cluster = tessera::ClusterSpec::FromJson(tessera::StrCat(R"({"worker": [")", LoopbackAddress(FreePort()),
                                                                R"(", ")", LoopbackAddress(FreePort()), R"("]})"));
  if (!cluster.ok()) return 2;
  int barrier[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, barrier) != 0) return 2;
  // Fork before gRPC starts any thread in this process.
  const pid_t child = fork();
  if (child == 0) {
    close(barrier[0]);  // so that the parent ending without a word is an end of file here
    _exit(tessera::Run(1, *cluster, bytes, iterations, grpc_only, /*gloo=*/false, barrier[1], link));
  }
  close(barrier[1]);
  const int result = tessera::Run(0, *cluster, bytes, iterations, grpc_only, /*gloo=*/false, barrier[0], link);
  close(barrier[0]);
  int status = 0;
  waitpid(child, &status, 0);
  return result != 0 ? result : (WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}
