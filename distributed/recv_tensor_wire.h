// The RecvTensor response as bytes on the wire, written and read without copying a large
// tensor more often than gRPC must. The sender's buffer refers to the tensor's own memory
// (which it keeps alive until gRPC lets go of it), so a 64 MiB tensor is not copied into a
// message first; the receiver copies the elements once, from gRPC's slices into the new
// tensor. The bytes are the RecvTensorResponse message exactly as protobuf writes it
// (field 1: tensor_codec's encoding), so worker_service.proto stays the contract.
//
//   StatusOr<grpc::ByteBuffer> wire = EncodeRecvTensorResponse(value);  // the server
//   StatusOr<Tensor> back = DecodeRecvTensorResponse(*wire);            // the client
//
// Decoding trusts nothing (a response is a peer's bytes): anything but one field 1 whose
// length is the rest of the message, or a tensor encoding that does not fill it exactly,
// is DataLoss or InvalidArgument. Internal to distributed/; both functions are thread-safe.
#pragma once

#include <grpcpp/support/byte_buffer.h>

#include "graph/tensor.h"

namespace tessera {

StatusOr<grpc::ByteBuffer> EncodeRecvTensorResponse(const Tensor& value);
StatusOr<Tensor> DecodeRecvTensorResponse(const grpc::ByteBuffer& response);

}  // namespace tessera
