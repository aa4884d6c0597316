#include "graph/serialize/tensor_codec.h"

#include <cstring>

namespace tessera {
namespace {

constexpr char kMagic[4] = {'T', 'N', 'S', 'R'};
constexpr uint8_t kVersion = 1;

template <typename T>
void Put(std::string* out, T value) {
  out->append(reinterpret_cast<const char*>(&value), sizeof(value));
}

// Reads from the front of a byte string, never past its end.
class Reader {
 public:
  explicit Reader(std::string_view bytes) : rest_(bytes) {}
  template <typename T>
  bool Get(T* value) {
    if (rest_.size() < sizeof(T)) return false;
    std::memcpy(value, rest_.data(), sizeof(T));
    rest_.remove_prefix(sizeof(T));
    return true;
  }
  bool Take(size_t n, std::string_view* out) {
    if (rest_.size() < n) return false;
    *out = rest_.substr(0, n);
    rest_.remove_prefix(n);
    return true;
  }
  size_t remaining() const { return rest_.size(); }

 private:
  std::string_view rest_;
};

bool IsEncodable(uint8_t dtype) {
  switch (static_cast<DataType>(dtype)) {
    case DataType::kFloat:
    case DataType::kDouble:
    case DataType::kHalf:
    case DataType::kBFloat16:
    case DataType::kInt32:
    case DataType::kInt64:
    case DataType::kUInt8:
    case DataType::kBool:
    case DataType::kString:
    case DataType::kResource:
      return true;
    default:
      return false;
  }
}

}  // namespace

StatusOr<std::string> EncodeTensorHeader(const Tensor& tensor) {
  if (!IsEncodable(static_cast<uint8_t>(tensor.dtype()))) {
    return errors::InvalidArgument("A ", DataTypeName(tensor.dtype()), " tensor has no wire encoding");
  }
  std::string out(kMagic, sizeof(kMagic));
  Put<uint8_t>(&out, kVersion);
  Put<uint8_t>(&out, static_cast<uint8_t>(tensor.dtype()));
  Put<uint8_t>(&out, static_cast<uint8_t>(tensor.rank()));
  for (int i = 0; i < tensor.rank(); ++i) Put<int64_t>(&out, tensor.dim(i));
  return out;
}

StatusOr<std::string> EncodeTensor(const Tensor& tensor) {
  ASSIGN_OR_RETURN(std::string out, EncodeTensorHeader(tensor));
  if (DataTypeHoldsStrings(tensor.dtype())) {
    for (const std::string& s : tensor.flat<std::string>()) {
      Put<uint64_t>(&out, s.size());
      out += s;
    }
  } else {
    out.append(static_cast<const char*>(tensor.raw_data()), tensor.TotalBytes());
  }
  return out;
}

StatusOr<TensorHeader> DecodeTensorHeader(std::string_view bytes) {
  Reader in(bytes);
  std::string_view magic;
  uint8_t version = 0, dtype = 0, rank = 0;
  if (!in.Take(sizeof(kMagic), &magic) || magic != std::string_view(kMagic, sizeof(kMagic))) {
    return errors::InvalidArgument("Not an encoded tensor: it does not start with \"TNSR\"");
  }
  if (!in.Get(&version) || version != kVersion) {
    return errors::InvalidArgument("Encoded tensor of version ", static_cast<int>(version), "; this build reads ",
                                   static_cast<int>(kVersion));
  }
  if (!in.Get(&dtype) || !IsEncodable(dtype)) {
    return errors::InvalidArgument("Encoded tensor with unknown dtype ", static_cast<int>(dtype));
  }
  if (!in.Get(&rank) || rank > TensorShape::kMaxRank) {
    return errors::InvalidArgument("Encoded tensor of rank ", static_cast<int>(rank), "; at most ",
                                   TensorShape::kMaxRank, " is allowed");
  }
  std::vector<int64_t> dims(rank);
  for (int64_t& d : dims) {
    if (!in.Get(&d)) return errors::DataLoss("Encoded tensor ends inside its shape");
    if (d < 0) return errors::InvalidArgument("Encoded tensor has a negative dimension ", d);
  }
  ASSIGN_OR_RETURN(TensorShape shape, TensorShape::Make(dims));
  return TensorHeader{static_cast<DataType>(dtype), std::move(shape), bytes.size() - in.remaining()};
}

StatusOr<Tensor> DecodeTensor(std::string_view bytes, std::shared_ptr<Allocator> allocator) {
  ASSIGN_OR_RETURN(TensorHeader header, DecodeTensorHeader(bytes));
  Reader in(bytes.substr(header.size));
  const DataType type = header.dtype;
  const TensorShape& shape = header.shape;
  const int64_t n = shape.num_elements();
  if (DataTypeHoldsStrings(type)) {
    // Every string takes at least its 8-byte length.
    if (static_cast<uint64_t>(n) > in.remaining() / sizeof(uint64_t)) {
      return errors::DataLoss("Encoded tensor of ", n, " strings holds only ", in.remaining(), " bytes");
    }
  } else if (static_cast<uint64_t>(n) > in.remaining() / DataTypeSize(type)) {
    return errors::DataLoss("Encoded ", DataTypeName(type), " tensor of shape ", shape.DebugString(), " needs ",
                            n, " elements, has ", in.remaining() / DataTypeSize(type));
  }
  ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(std::move(allocator), type, shape));
  if (DataTypeHoldsStrings(type)) {
    for (std::string& s : t.flat<std::string>()) {
      uint64_t length = 0;
      std::string_view chars;
      if (!in.Get(&length) || !in.Take(length, &chars)) {
        return errors::DataLoss("Encoded string tensor ends inside element ", &s - t.data<std::string>());
      }
      s.assign(chars);
    }
  } else {
    std::string_view raw;
    in.Take(t.TotalBytes(), &raw);
    std::memcpy(t.raw_data(), raw.data(), raw.size());
  }
  if (in.remaining() != 0) {
    return errors::InvalidArgument("Encoded tensor has ", in.remaining(), " bytes after its last element");
  }
  return t;
}

}  // namespace tessera
