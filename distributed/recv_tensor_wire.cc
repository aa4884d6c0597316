#include "distributed/recv_tensor_wire.h"

#include <grpcpp/support/slice.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "graph/serialize/tensor_codec.h"

namespace tessera {
namespace {

// Field 1 with wire type 2 (length-delimited): RecvTensorResponse.tensor's tag.
constexpr uint8_t kTensorFieldTag = (1 << 3) | 2;

void PutVarint(std::string* out, uint64_t value) {
  while (value >= 0x80) {
    out->push_back(static_cast<char>(value | 0x80));
    value >>= 7;
  }
  out->push_back(static_cast<char>(value));
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

StatusOr<grpc::ByteBuffer> EncodeRecvTensorResponse(const Tensor& value) {
  // Strings are not contiguous in memory: they go whole through the plain encoding. Other
  // tensors send the header here and the elements from their own buffer.
  const bool strings = value.dtype() == DataType::kString;
  ASSIGN_OR_RETURN(std::string encoded, strings ? EncodeTensor(value) : EncodeTensorHeader(value));
  const size_t elements = strings ? 0 : value.TotalBytes();
  std::string prefix(1, static_cast<char>(kTensorFieldTag));
  PutVarint(&prefix, encoded.size() + elements);
  prefix += encoded;
  std::vector<grpc::Slice> slices;
  slices.emplace_back(prefix);
  if (elements > 0) {
    // The slice owns a reference to the tensor's buffer until gRPC has written it.
    auto* keep = new Tensor(value);
    slices.emplace_back(keep->raw_data(), elements, ReleaseTensor, keep);
  }
  return grpc::ByteBuffer(slices.data(), slices.size());
}

StatusOr<Tensor> DecodeRecvTensorResponse(const grpc::ByteBuffer& response) {
  std::vector<grpc::Slice> slices;
  if (grpc::Status s = response.Dump(&slices); !s.ok()) {
    return errors::Internal("Could not read a RecvTensor response: ", s.error_message());
  }
  SliceReader in(std::move(slices));
  uint8_t tag = 0;
  uint64_t length = 0;
  if (!in.Read(&tag, 1) || tag != kTensorFieldTag || !in.ReadVarint(&length) || length != in.remaining()) {
    return errors::DataLoss("A RecvTensor response is not one tensor field of ", in.remaining(), " bytes");
  }
  std::string prefix(std::min(in.remaining(), kMaxTensorHeaderBytes), '\0');
  in.Read(prefix.data(), prefix.size());
  ASSIGN_OR_RETURN(TensorHeader header, DecodeTensorHeader(prefix));
  if (header.dtype == DataType::kString) {
    std::string bytes = prefix;
    bytes.resize(prefix.size() + in.remaining());
    in.Read(bytes.data() + prefix.size(), in.remaining());
    return DecodeTensor(bytes);
  }
  const size_t element_bytes = prefix.size() - header.size + in.remaining();
  const auto n = static_cast<uint64_t>(header.shape.num_elements());
  if (n != element_bytes / DataTypeSize(header.dtype) || element_bytes % DataTypeSize(header.dtype) != 0) {
    return errors::DataLoss("A RecvTensor response holds ", element_bytes, " bytes of elements for a ",
                            DataTypeName(header.dtype), " tensor of shape ", header.shape.DebugString());
  }
  ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(CpuAllocator(), header.dtype, header.shape));
  auto* out = static_cast<char*>(t.raw_data());
  const size_t head = prefix.size() - header.size;
  if (head > 0) std::memcpy(out, prefix.data() + header.size, head);
  in.Read(out + head, in.remaining());
  return t;
}

}  // namespace tessera
