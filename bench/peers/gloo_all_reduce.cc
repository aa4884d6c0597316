// Gloo's peer of bench/cluster_all_reduce.cc: processes sum a float32 buffer in place over
// Gloo's TCP transport, timed the same way, with each of Gloo's ring algorithms (the
// classic ones, and the ring of gloo::allreduce, which Tessera's Gloo backend calls); prints
// one JSON line per algorithm (rank 0's timings). By default two processes (this one and a
// forked child) on loopback; with --rank, this process is one of --ranks, serving on
// --hostname and meeting the others through the file store --store (bench/cluster_hosts.sh
// starts one per emulated host).
//
//   gloo_all_reduce [--bytes N] [--iterations N]
//   gloo_all_reduce --ranks N --rank R --hostname ADDRESS --store DIR [--bytes N] [--iterations N]
#include <gloo/allreduce.h>
#include <gloo/allreduce_ring.h>
#include <gloo/allreduce_ring_chunked.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

// gloo::allreduce's ring (unbound buffers, pipelined segments) in the classic algorithms' form.
class UnboundRing {
 public:
  UnboundRing(const std::shared_ptr<gloo::Context>& context, const std::vector<float*>& pointers, int count)
      : context_(context), data_(pointers.front()), count_(count) {}
  void run() {
    gloo::AllreduceOptions opts(context_);
    opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
    opts.setOutput(data_, static_cast<size_t>(count_));
    opts.setReduceFunction(static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
    gloo::allreduce(opts);
  }

 private:
  std::shared_ptr<gloo::Context> context_;
  float* data_;
  int count_;
};

template <typename Algorithm>
void Time(const char* name, const std::shared_ptr<gloo::Context>& context, int rank, int ranks, long long bytes,
          int iterations) {
  const float want = static_cast<float>(ranks * (ranks + 1) / 2);
  std::vector<float> data(bytes / 4);
  std::vector<float*> pointers{data.data()};
  Algorithm algorithm(context, pointers, static_cast<int>(data.size()));
  const int warmup = 3;
  std::vector<double> seconds;
  for (int i = 0; i < warmup + iterations; ++i) {
    std::fill(data.begin(), data.end(), static_cast<float>(rank + 1));
    const auto start = std::chrono::steady_clock::now();
    algorithm.run();
    if (i >= warmup) seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    if (data.front() != want || data.back() != want) {
      std::fprintf(stderr, "%s: wrong sum %g\n", name, data.front());
      std::exit(1);
    }
  }
  if (rank != 0) return;
  std::sort(seconds.begin(), seconds.end());
  std::printf("{\"impl\": \"gloo %s\", \"bytes\": %lld, \"median_s\": %.6f, \"min_s\": %.6f, \"max_s\": %.6f}\n", name,
              bytes, seconds[seconds.size() / 2], seconds.front(), seconds.back());
  std::fflush(stdout);
}

int Run(int rank, int ranks, const std::string& hostname, const std::string& store_dir, long long bytes,
        int iterations) {
  gloo::transport::tcp::attr attr;
  attr.hostname = hostname;
  auto device = gloo::transport::tcp::CreateDevice(attr);
  gloo::rendezvous::FileStore store(store_dir);
  auto context = std::make_shared<gloo::rendezvous::Context>(rank, ranks);
  context->connectFullMesh(store, device);
  Time<gloo::AllreduceRing<float>>("ring", context, rank, ranks, bytes, iterations);
  Time<gloo::AllreduceRingChunked<float>>("ring_chunked", context, rank, ranks, bytes, iterations);
  Time<UnboundRing>("allreduce ring", context, rank, ranks, bytes, iterations);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  long long bytes = 64LL << 20;
  int iterations = 20, ranks = 2, rank = -1;
  std::string hostname = "127.0.0.1", store;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--bytes") == 0) bytes = std::atoll(argv[i + 1]);
    if (std::strcmp(argv[i], "--iterations") == 0) iterations = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--ranks") == 0) ranks = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--rank") == 0) rank = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--hostname") == 0) hostname = argv[i + 1];
    if (std::strcmp(argv[i], "--store") == 0) store = argv[i + 1];
  }
  if (bytes < 8 || iterations < 1) return 2;
  if (rank >= 0) {  // one rank of several started apart
    if (rank >= ranks || store.empty()) return 2;
    return Run(rank, ranks, hostname, store, bytes, iterations);
  }
  char dir[] = "/tmp/gloo-store-XXXXXX";
  if (mkdtemp(dir) == nullptr) return 2;
  const pid_t child = fork();
  if (child == 0) _exit(Run(1, 2, hostname, dir, bytes, iterations));
  const int result = Run(0, 2, hostname, dir, bytes, iterations);
  int status = 0;
  waitpid(child, &status, 0);
  std::string cleanup = std::string("rm -rf ") + dir;
  (void)std::system(cleanup.c_str());
  return result != 0 ? result : (WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}
