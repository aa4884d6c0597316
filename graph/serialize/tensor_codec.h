// A tensor as bytes, for the wire between processes: the dtype, the shape and the raw
// elements, with every string length-prefixed. Little-endian, as every machine Tessera runs
// on stores them, so encoding a numeric tensor is one copy of its buffer.
//
//   "TNSR" | u8 version (1) | u8 dtype | u8 rank | i64 dims[rank] | elements
//   elements: num_elements * DataTypeSize bytes, or for strings, per element
//             u64 length | bytes
//
//   std::string wire = EncodeTensor(t);
//   StatusOr<Tensor> back = DecodeTensor(wire);
//
// The header (everything before the elements) can be written and read on its own, for a
// transport that sends a numeric tensor's elements straight from its buffer:
// EncodeTensor(t) == EncodeTensorHeader(t) + t's TotalBytes() bytes at raw_data().
//
// Decoding trusts nothing: a wrong magic, an unknown dtype, a shape whose size overflows,
// a length past the end or bytes left over are InvalidArgument (DataLoss for a truncated
// body), checked before anything is allocated. Variants (datasets) have no bytes and are
// refused. Both functions are thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "graph/tensor.h"

namespace tessera {

// InvalidArgument for a variant tensor.
StatusOr<std::string> EncodeTensor(const Tensor& tensor);
StatusOr<Tensor> DecodeTensor(std::string_view bytes, std::shared_ptr<Allocator> allocator = CpuAllocator());

struct TensorHeader {
  DataType dtype;
  TensorShape shape;
  size_t size;  // bytes the header takes; the elements follow
};
// No header is longer than this, so that many bytes (or all there are) suffice to decode one.
inline constexpr size_t kMaxTensorHeaderBytes = 7 + 8 * TensorShape::kMaxRank;
StatusOr<std::string> EncodeTensorHeader(const Tensor& tensor);
// Reads the header at the front of `bytes`, which may hold less than the elements or none.
StatusOr<TensorHeader> DecodeTensorHeader(std::string_view bytes);

}  // namespace tessera
