// The RecvTensor stream as bytes on the wire, written and read without copying a large
// tensor more often than gRPC must. The server answers with a stream of RecvTensorResponse
// messages whose parts, concatenated, are tensor_codec's encoding: the elements in pieces
// of at most kRecvTensorPartBytes, the first preceded by the header, so that a small tensor
// is one message (a string tensor, whose elements are not contiguous, is one message whole). Each piece refers to the
// tensor's own memory, which it keeps alive until gRPC lets go of it, so a 64 MiB tensor is
// never copied into messages; the receiver copies each piece into the new tensor as it
// arrives, while the next is still on its way, and while it is still in cache.
//
//   StatusOr<std::vector<grpc::ByteBuffer>> parts = EncodeRecvTensorStream(value);  // server
//   RecvTensorAssembler assembler;                                                 // client
//   for (each message) RETURN_IF_ERROR(assembler.Add(message));
//   StatusOr<Tensor> value = assembler.Finish();
//
// A dead value (rendezvous.h) is one message, {is_dead: true}, and assembles to Tensor().
// The bytes of each message are the message exactly as protobuf writes it, so
// worker_service.proto stays the contract. Assembling trusts nothing (a response is a
// peer's bytes): a message that is not one field 1 filling it, a first part without a whole
// header, elements past the shape's size or short of it are DataLoss or InvalidArgument.
// Internal to distributed/. EncodeRecvTensorStream is thread-safe; an assembler is used by
// one thread at a time.
#pragma once

#include <grpcpp/support/byte_buffer.h>

#include <cstdint>
#include <vector>

#include "graph/tensor.h"

namespace tessera {

// Small enough that a piece is still in cache when the receiver copies it, large enough
// that the per-message cost is small beside the bytes.
inline constexpr size_t kRecvTensorPartBytes = size_t{1} << 20;

StatusOr<std::vector<grpc::ByteBuffer>> EncodeRecvTensorStream(const Tensor& value,
                                                               size_t part_bytes = kRecvTensorPartBytes);

class RecvTensorAssembler {
 public:
  // The tensor is allocated when the header comes, at the size it announces: a peer that
  // passed authentication is trusted that far. A header announcing more than max_bytes of
  // elements is ResourceExhausted instead.
  explicit RecvTensorAssembler(size_t max_bytes = SIZE_MAX) : max_bytes_(max_bytes) {}

  Status Add(const grpc::ByteBuffer& message);
  // Every element has come: Finish succeeds, and only a hostile peer would send more.
  bool Complete() const;
  // The tensor, once every element has come; DataLoss when the stream ended short. Once
  // only: the assembler takes no more parts after.
  StatusOr<Tensor> Finish();

 private:
  const size_t max_bytes_;
  enum class Stage {
    kHeader,    // nothing came yet
    kElements,  // the header came and the tensor is being filled
    kWhole,     // a string tensor came whole in the first part
    kDead,      // the value is dead: no tensor comes
    kTaken,     // Finish gave the tensor away
  };
  Stage stage_ = Stage::kHeader;
  Tensor tensor_;
  size_t filled_ = 0;  // element bytes copied into tensor_
};

}  // namespace tessera
