// Feeds hostile bytes to what a cluster task decodes from other tasks: the first byte picks
// the message, the rest is its protobuf encoding. A RegisterGraph request that decodes is
// registered on a real task (every kernel constructed on its device) and deregistered; a
// RunGraph request's arguments are decoded; a RecvTensor stream is assembled from messages
// framed by a length byte each (and each cut in two slices), and what assembles must
// survive its own round trip. Nothing may crash, leak or hang.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "distributed/cluster_spec.h"
#include "distributed/graph_mgr.h"
#include "distributed/recv_tensor_wire.h"
#include "graph/serialize/tensor_codec.h"
#include "distributed/rpc_decode.h"

namespace {

tessera::GraphMgr& Graphs() {
  using namespace tessera;
  static auto* server = new std::shared_ptr<Server>(*Server::CreateForTask({}, "worker", 0));
  static auto* pool = ThreadPool::Create("fuzz", 1)->release();
  static auto* graphs = new GraphMgr(
      *server, "worker", 0,
      std::make_shared<WorkerChannels>(*ClusterSpec::FromJson(R"({"worker": ["127.0.0.1:1"]})"), ""), pool);
  return *graphs;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tessera;
  if (size == 0) return 0;
  const char* body = reinterpret_cast<const char*>(data + 1);
  const int body_size = static_cast<int>(size - 1);
  if (data[0] % 3 == 2) {
    // The assembler allocates what a header announces: bounded here so that a short input
    // cannot ask for more than the fuzzer lets a process allocate.
    RecvTensorAssembler assembler(size_t{1} << 20);
    Status added;
    for (int at = 0; at < body_size && added.ok();) {
      const int length = std::min<int>(static_cast<uint8_t>(body[at]), body_size - at - 1);
      const char* message = body + at + 1;
      grpc::Slice halves[] = {grpc::Slice(message, length / 2), grpc::Slice(message + length / 2, length - length / 2)};
      added = assembler.Add(grpc::ByteBuffer(halves, 2));
      at += 1 + length;
    }
    if (!added.ok()) return 0;
    StatusOr<Tensor> tensor = assembler.Finish();
    if (!tensor.ok()) return 0;
    RecvTensorAssembler again;
    for (const grpc::ByteBuffer& part : *EncodeRecvTensorStream(*tensor, 16)) {
      if (!again.Add(part).ok()) std::abort();
    }
    StatusOr<Tensor> back = again.Finish();
    if (!back.ok() || *EncodeTensor(*back) != *EncodeTensor(*tensor)) std::abort();
  } else if (data[0] % 3 == 0) {
    rpc::RegisterGraphRequest request;
    if (!request.ParseFromArray(body, body_size)) return 0;
    StatusOr<std::vector<std::pair<std::string, GraphDef>>> partitions = DecodePartitions(request);
    if (!partitions.ok()) return 0;
    StatusOr<std::string> handle = Graphs().Register(*std::move(partitions));
    if (handle.ok() && !Graphs().Deregister(*handle).ok()) std::abort();
  } else {
    rpc::RunGraphRequest request;
    if (!request.ParseFromArray(body, body_size)) return 0;
    (void)DecodeArgs(request);
  }
  return 0;
}
