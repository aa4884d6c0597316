// Cluster costs over loopback, each beside the peer a user would otherwise reach for, in the
// same process: a 64 MiB tensor received from another task (the remote rendezvous, over gRPC
// and over the direct transport's Unix socket) beside
// the same bytes streamed by plain gRPC, and the round trip of a step with one cross-task
// edge beside one plain gRPC unary call. Both "tasks" are servers in this process talking through loopback sockets, as two
// processes on one machine would; the peers run the same way. TensorFlow's server is timed
// on the same graph by bench/tf_cluster_step.py, and the cross-process all-reduce by
// bench/cluster_all_reduce.cc.
#include <benchmark/benchmark.h>
#include <grpcpp/grpcpp.h>

#include <cstring>
#include <future>

#include "bench/protos/byte_stream.grpc.pb.h"
#include "distributed/cluster_server.h"
#include "distributed/grpc_session.h"
#include "distributed/remote_rendezvous.h"
#include "graph/builder/ops.h"
#include "runtime/session.h"
#include "tests/distributed/free_port.h"

namespace tessera::bench {
namespace {

constexpr int64_t kTensorBytes = int64_t{64} << 20;

// Streams slices of one source buffer, each chunk copied into its message as a plain gRPC
// server would.
class ByteStreamService final : public tessera::bench::ByteStream::Service {
 public:
  explicit ByteStreamService(int64_t bytes) : source_(bytes, 'x') {}
  grpc::Status Pull(grpc::ServerContext*, const PullRequest* request, grpc::ServerWriter<Chunk>* writer) override {
    const int64_t total = std::min<int64_t>(request->bytes(), source_.size());
    Chunk chunk;
    for (int64_t offset = 0; offset < total; offset += request->chunk_bytes()) {
      chunk.set_data(source_.data() + offset, std::min(request->chunk_bytes(), total - offset));
      if (!writer->Write(chunk)) return grpc::Status(grpc::StatusCode::CANCELLED, "the reader left");
    }
    return grpc::Status::OK;
  }
  grpc::Status Ping(grpc::ServerContext*, const Chunk*, Chunk*) override { return grpc::Status::OK; }

 private:
  const std::string source_;
};

// A stub of the plain gRPC peers' server, started on first use.
std::unique_ptr<ByteStream::Stub> ByteStreamStub() {
  static ByteStreamService service(kTensorBytes);
  static std::unique_ptr<grpc::Server> server;
  static int port = 0;
  if (server == nullptr) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.SetMaxReceiveMessageSize(-1);
    builder.SetMaxSendMessageSize(-1);
    builder.RegisterService(&service);
    server = builder.BuildAndStart();
  }
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  return ByteStream::NewStub(
      grpc::CreateCustomChannel(testing::LoopbackAddress(port), grpc::InsecureChannelCredentials(), args));
}

// The plain gRPC peer: a 64 MiB buffer pulled as a stream of chunk_bytes messages, each
// copied into the destination as it arrives.
void BM_GrpcStreaming(benchmark::State& state) {
  auto stub = ByteStreamStub();
  std::vector<char> destination(kTensorBytes);
  PullRequest request;
  request.set_bytes(kTensorBytes);
  request.set_chunk_bytes(state.range(0));
  for (auto _ : state) {
    grpc::ClientContext context;
    auto reader = stub->Pull(&context, request);
    Chunk chunk;
    size_t received = 0;
    while (reader->Read(&chunk)) {
      std::memcpy(destination.data() + received, chunk.data().data(), chunk.data().size());
      received += chunk.data().size();
    }
    grpc::Status s = reader->Finish();
    if (!s.ok() || received != destination.size()) state.SkipWithError(s.error_message().c_str());
  }
  state.SetBytesProcessed(state.iterations() * kTensorBytes);
}
BENCHMARK(BM_GrpcStreaming)->Arg(256 << 10)->Arg(1 << 20)->Arg(4 << 20)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_GrpcUnaryRoundTrip(benchmark::State& state) {
  auto stub = ByteStreamStub();
  Chunk request, response;
  for (auto _ : state) {
    grpc::ClientContext context;
    if (grpc::Status s = stub->Ping(&context, request, &response); !s.ok()) state.SkipWithError(s.error_message().c_str());
  }
}
BENCHMARK(BM_GrpcUnaryRoundTrip)->UseRealTime()->Unit(benchmark::kMicrosecond);

// A ps task and a worker task in this process, made once per transport: what the Tessera
// benchmarks talk between. The argument of each benchmark picks the transport: 1, the
// direct transport's Unix socket that tasks of one machine use; 0, gRPC only, as under TLS.
struct TwoTasks {
  explicit TwoTasks(bool direct) {
    RegisterGrpcSessionFactory();
    cluster = *ClusterSpec::FromJson(StrCat(R"({"ps": [")", testing::LoopbackAddress(testing::FreePort()),
                                            R"("], "worker": [")", testing::LoopbackAddress(testing::FreePort()),
                                            R"("]})"));
    ClusterServerOptions options;
    options.direct_transport = direct;
    auto made_ps = ClusterServer::Create(cluster, "ps", 0, options);
    auto made_worker = ClusterServer::Create(cluster, "worker", 0, options);
    if (!made_ps.ok() || !made_worker.ok()) std::abort();
    ps = std::move(*made_ps);
    worker = std::move(*made_worker);
    channels = std::make_shared<WorkerChannels>(cluster, "");
  }
  static TwoTasks& Get(bool direct) {
    static auto* over_grpc = new TwoTasks(false);
    static auto* on_one_host = new TwoTasks(true);
    return direct ? *on_one_host : *over_grpc;
  }
  ClusterSpec cluster;
  std::unique_ptr<ClusterServer> ps, worker;
  std::shared_ptr<WorkerChannels> channels;
};

constexpr char kPsCpu[] = "/job:ps/replica:0/task:0/device:CPU:0";
constexpr char kWorkerCpu[] = "/job:worker/replica:0/task:0/device:CPU:0";

// A 64 MiB float tensor sent on the ps task and received on the worker through the remote
// rendezvous: one RecvTensor call, the tensor decoded into a new buffer.
void BM_RemoteRecv(benchmark::State& state) {
  TwoTasks& tasks = TwoTasks::Get(state.range(0) != 0);
  Tensor value(DataType::kFloat, TensorShape({kTensorBytes / 4}));
  std::memset(value.raw_data(), 1, value.TotalBytes());
  const std::string key = Rendezvous::CreateKey(kPsCpu, 1, kWorkerCpu, "value:0");
  for (auto _ : state) {
    const int64_t step = NewStepId();
    if (Status s = tasks.ps->local()->rendezvous()->Find(step)->Send(key, value); !s.ok()) {
      state.SkipWithError(s.ToString().c_str());
      break;
    }
    RemoteRendezvous receiver(tasks.worker->local()->rendezvous()->Find(step), "worker", 0, tasks.channels, step,
                              std::chrono::seconds(60));
    std::promise<Status> got;
    receiver.RecvAsync(key, [&got](const Status& s, const Tensor& t) {
      got.set_value(s.ok() && t.TotalBytes() != kTensorBytes ? errors::Internal("wrong size") : s);
    });
    if (Status s = got.get_future().get(); !s.ok()) state.SkipWithError(s.ToString().c_str());
    tasks.ps->local()->rendezvous()->Cleanup(step);
    tasks.worker->local()->rendezvous()->Cleanup(step);
  }
  state.SetBytesProcessed(state.iterations() * kTensorBytes);
}
BENCHMARK(BM_RemoteRecv)->Arg(0)->Arg(1)->UseRealTime()->Unit(benchmark::kMillisecond);

// One step through a client session whose master is the worker: x = 1 on the ps, y = x + 1
// on the worker, y fetched. Client, master and ps talk over loopback gRPC; the tensor from
// the ps comes by the benchmark's transport.
void BM_RemoteStepRoundTrip(benchmark::State& state) {
  TwoTasks& tasks = TwoTasks::Get(state.range(0) != 0);
  Scope root = Scope::NewRootScope();
  auto x = ops::Const(root.WithOpName("x").WithDevice(kPsCpu), Tensor::Scalar<float>(1));
  ops::Add(root.WithOpName("y").WithDevice(kWorkerCpu), x, 1.0f);
  GraphSpec def;
  if (Status s = root.ToSpec(&def); !s.ok()) {
    state.SkipWithError(s.ToString().c_str());
    return;
  }
  SessionConfig config;
  config.constant_folding = false;  // y = 1 + 1 would be computed once, ahead
  auto session = Session::Create(tasks.worker->target(), config, def);
  if (!session.ok()) {
    state.SkipWithError(session.status().ToString().c_str());
    return;
  }
  std::vector<Tensor> out;
  for (auto _ : state) {
    Status s = (*session)->Run({}, {"y"}, {}, &out);
    if (!s.ok() || out[0].data<float>()[0] != 2.0f) state.SkipWithError(s.ToString().c_str());
  }
  (void)(*session)->Close();
}
BENCHMARK(BM_RemoteStepRoundTrip)->Arg(0)->Arg(1)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace tessera::bench

BENCHMARK_MAIN();
