#include "distributed/recv_tensor_wire.h"

#include <grpcpp/support/slice.h>

#include <algorithm>
#include <cstring>

#include "graph/serialize/tensor_codec.h"

namespace tessera {
namespace {

// Field 1 with wire type 2 (length-delimited): RecvTensorResponse.tensor_part's tag.
constexpr uint8_t kPartFieldTag = (1 << 3) | 2;
// RecvTensorResponse{is_dead: true}: field 2, varint, 1.
constexpr uint8_t kDeadMessage[] = {(2 << 3) | 0, 1};

void PutVarint(std::string* out, uint64_t value) {
  while (value >= 0x80) {
    out->push_back(static_cast<char>(value | 0x80));
    value >>= 7;
  }
  out->push_back(static_cast<char>(value));
}

// The tag and length that make `size` bytes one RecvTensorResponse.
grpc::Slice PartPrefix(size_t size) {
  std::string prefix(1, static_cast<char>(kPartFieldTag));
  PutVarint(&prefix, size);
  return grpc::Slice(prefix);
}

// Reads a sequence of gRPC slices front to back, copying only what it is asked for.
class SliceReader {
 public:
  explicit SliceReader(std::vector<grpc::Slice> slices) : slices_(std::move(slices)) {
    for (const grpc::Slice& s : slices_) remaining_ += s.size();
  }
  size_t remaining() const { return remaining_; }

  // Copies the next n bytes to dst; false (and nothing read) when fewer remain.
  bool Read(void* dst, size_t n) {
    if (n > remaining_) return false;
    auto* out = static_cast<uint8_t*>(dst);
    while (n > 0) {
      const grpc::Slice& s = slices_[index_];
      const size_t take = std::min(n, s.size() - offset_);
      std::memcpy(out, s.begin() + offset_, take);
      out += take;
      n -= take;
      remaining_ -= take;
      offset_ += take;
      if (offset_ == s.size()) {
        ++index_;
        offset_ = 0;
      }
    }
    return true;
  }

  bool ReadVarint(uint64_t* value) {
    *value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      uint8_t byte = 0;
      if (!Read(&byte, 1)) return false;
      *value |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return true;
    }
    return false;
  }

 private:
  std::vector<grpc::Slice> slices_;
  size_t index_ = 0;   // the slice being read
  size_t offset_ = 0;  // into slices_[index_]
  size_t remaining_ = 0;
};

void ReleaseTensor(void* tensor) { delete static_cast<Tensor*>(tensor); }

}  // namespace

StatusOr<std::vector<grpc::ByteBuffer>> EncodeRecvTensorStream(const Tensor& value, size_t part_bytes) {
  if (part_bytes == 0) return errors::InvalidArgument("RecvTensor parts must hold at least one byte");
  if (!value.IsInitialized()) {
    grpc::Slice dead(kDeadMessage, sizeof kDeadMessage);
    return std::vector<grpc::ByteBuffer>{grpc::ByteBuffer(&dead, 1)};
  }
  // Strings are not contiguous in memory: they go whole through the plain encoding. Other
  // tensors send the header first and the elements from their own buffer.
  const bool strings = DataTypeHoldsStrings(value.dtype());
  ASSIGN_OR_RETURN(std::string head, strings ? EncodeTensor(value) : EncodeTensorHeader(value));
  const size_t elements = strings ? 0 : value.TotalBytes();
  auto* data = const_cast<char*>(static_cast<const char*>(value.raw_data()));
  // The first part holds the header and the first piece, so a small tensor is one message.
  std::vector<grpc::ByteBuffer> parts;
  for (size_t offset = 0; offset == 0 || offset < elements; offset += part_bytes) {
    const size_t size = std::min(part_bytes, elements - offset);
    const size_t head_size = offset == 0 ? head.size() : 0;
    std::vector<grpc::Slice> slices{PartPrefix(head_size + size)};
    if (head_size > 0) slices.emplace_back(head);
    // Each piece owns a reference to the tensor's buffer until gRPC has written it.
    if (size > 0) slices.emplace_back(data + offset, size, ReleaseTensor, new Tensor(value));
    parts.emplace_back(slices.data(), slices.size());
  }
  return parts;
}

Status RecvTensorAssembler::Add(const grpc::ByteBuffer& message) {
  std::vector<grpc::Slice> slices;
  if (grpc::Status s = message.Dump(&slices); !s.ok()) {
    return errors::Internal("Could not read a RecvTensor response: ", s.error_message());
  }
  SliceReader in(std::move(slices));
  if (stage_ == Stage::kDead) return errors::DataLoss("A RecvTensor stream goes on after saying its value is dead");
  if (stage_ == Stage::kHeader && in.remaining() == sizeof kDeadMessage) {
    uint8_t bytes[sizeof kDeadMessage];
    in.Read(bytes, sizeof bytes);
    if (std::memcmp(bytes, kDeadMessage, sizeof bytes) != 0) {
      return errors::DataLoss("A RecvTensor response is neither a tensor part nor a dead value");
    }
    stage_ = Stage::kDead;
    return Status::OK();
  }
  uint8_t tag = 0;
  uint64_t length = 0;
  if (!in.Read(&tag, 1) || tag != kPartFieldTag || !in.ReadVarint(&length) || length != in.remaining()) {
    return errors::DataLoss("A RecvTensor response is not one tensor part of ", in.remaining(), " bytes");
  }
  if (stage_ == Stage::kWhole) return errors::DataLoss("A RecvTensor stream goes on after its string tensor");
  if (stage_ == Stage::kTaken) return errors::FailedPrecondition("A RecvTensor stream's tensor was already taken");
  if (stage_ == Stage::kHeader) {
    stage_ = Stage::kElements;
    std::string prefix(std::min(in.remaining(), kMaxTensorHeaderBytes), '\0');
    in.Read(prefix.data(), prefix.size());
    ASSIGN_OR_RETURN(TensorHeader header, DecodeTensorHeader(prefix));
    if (DataTypeHoldsStrings(header.dtype)) {
      std::string bytes = std::move(prefix);
      const size_t head = bytes.size();
      bytes.resize(head + in.remaining());
      in.Read(bytes.data() + head, in.remaining());
      ASSIGN_OR_RETURN(tensor_, DecodeTensor(bytes));
      stage_ = Stage::kWhole;
      return Status::OK();
    }
    const auto elements = static_cast<uint64_t>(header.shape.num_elements());
    if (elements > max_bytes_ / DataTypeSize(header.dtype)) {
      return errors::ResourceExhausted("A RecvTensor stream announces a ", DataTypeName(header.dtype),
                                       " tensor of shape ", header.shape.DebugString(), ", more than the ",
                                       max_bytes_, " bytes this receiver takes");
    }
    ASSIGN_OR_RETURN(tensor_, Tensor::Allocate(CpuAllocator(), header.dtype, header.shape));
    const size_t head = prefix.size() - header.size;
    if (head > tensor_.TotalBytes()) {
      return errors::DataLoss("A RecvTensor stream holds more elements than a ", DataTypeName(header.dtype),
                              " tensor of shape ", header.shape.DebugString());
    }
    if (head > 0) std::memcpy(tensor_.raw_data(), prefix.data() + header.size, head);
    filled_ = head;
  }
  if (in.remaining() > tensor_.TotalBytes() - filled_) {
    return errors::DataLoss("A RecvTensor stream holds more elements than a ", DataTypeName(tensor_.dtype()),
                            " tensor of shape ", tensor_.shape().DebugString());
  }
  const size_t size = in.remaining();
  in.Read(static_cast<char*>(tensor_.raw_data()) + filled_, size);
  filled_ += size;
  return Status::OK();
}

bool RecvTensorAssembler::Complete() const {
  return stage_ == Stage::kWhole || stage_ == Stage::kDead || (stage_ == Stage::kElements && filled_ == tensor_.TotalBytes());
}

StatusOr<Tensor> RecvTensorAssembler::Finish() {
  if (stage_ == Stage::kHeader) return errors::DataLoss("A RecvTensor stream ended before its tensor's header");
  if (stage_ == Stage::kTaken) return errors::FailedPrecondition("A RecvTensor stream's tensor was already taken");
  if (stage_ == Stage::kElements && filled_ != tensor_.TotalBytes()) {
    return errors::DataLoss("A RecvTensor stream ended after ", filled_, " of the ", tensor_.TotalBytes(),
                            " bytes of a ", DataTypeName(tensor_.dtype()), " tensor of shape ",
                            tensor_.shape().DebugString());
  }
  const bool dead = stage_ == Stage::kDead;
  stage_ = Stage::kTaken;
  if (dead) return Tensor();
  return std::move(tensor_);
}

}  // namespace tessera
