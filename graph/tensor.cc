#include "graph/tensor.h"

#include "graph/variant.h"

#include <cstddef>
#include <cstring>
#include <limits>
#include <new>
#include <sstream>
#include <utility>

namespace tessera {

TensorBuffer::TensorBuffer(std::shared_ptr<Allocator> allocator, DataType dtype,
                           int64_t num_elements)
    : allocator_(std::move(allocator)),
      dtype_(dtype),
      num_elements_(num_elements),
      bytes_(static_cast<size_t>(num_elements) * DataTypeStorageSize(dtype)) {
  data_ = allocator_->AllocateRaw(bytes_);
  if (data_ == nullptr) return;
  if (DataTypeHoldsStrings(dtype_)) {
    std::uninitialized_value_construct_n(static_cast<std::string*>(data_), num_elements_);
  } else if (dtype_ == DataType::kVariant) {
    std::uninitialized_value_construct_n(static_cast<Variant*>(data_), num_elements_);
  }
}

TensorBuffer::~TensorBuffer() {
  if (data_ == nullptr) return;
  if (DataTypeHoldsStrings(dtype_)) {
    std::destroy_n(static_cast<std::string*>(data_), num_elements_);
  } else if (dtype_ == DataType::kVariant) {
    std::destroy_n(static_cast<Variant*>(data_), num_elements_);
  }
  allocator_->DeallocateRaw(data_, bytes_);
}

Tensor::Tensor(const Tensor& other)
    : dtype_(other.dtype_),
      shape_(other.shape_),
      num_elements_(other.num_elements_),
      buffer_(other.buffer_),
      data_(other.data_) {
  if (buffer_ != nullptr) buffer_->Ref();
}

Tensor::Tensor(Tensor&& other) noexcept
    : dtype_(other.dtype_),
      shape_(other.shape_),
      num_elements_(other.num_elements_),
      buffer_(std::exchange(other.buffer_, nullptr)),
      data_(other.data_) {}

Tensor& Tensor::operator=(const Tensor& other) {
  if (this != &other) *this = Tensor(other);
  return *this;
}

Tensor& Tensor::operator=(Tensor&& other) noexcept {
  if (this == &other) return *this;
  if (buffer_ != nullptr && buffer_->Unref()) delete buffer_;
  dtype_ = other.dtype_;
  shape_ = other.shape_;
  num_elements_ = other.num_elements_;
  buffer_ = std::exchange(other.buffer_, nullptr);
  data_ = other.data_;
  return *this;
}

Tensor::~Tensor() {
  if (buffer_ != nullptr && buffer_->Unref()) delete buffer_;
}

Tensor::Tensor(DataType dtype, const TensorShape& shape) : Tensor(CpuAllocator(), dtype, shape) {}

Tensor::Tensor(std::shared_ptr<Allocator> allocator, DataType dtype, const TensorShape& shape) {
  StatusOr<Tensor> t = Allocate(std::move(allocator), dtype, shape);
  if (!t.ok()) throw std::bad_alloc();  // like std::vector; Allocate reports it as a Status
  *this = std::move(*t);
}

namespace {

std::string OnDevice(std::string_view device) { return device.empty() ? "" : StrCat(" on ", device); }

}  // namespace

StatusOr<Tensor> Tensor::Allocate(std::shared_ptr<Allocator> allocator, DataType dtype, const TensorShape& shape,
                                  std::string_view device) {
  if (!shape.IsFullyDefined()) {
    return errors::InvalidArgument("Cannot allocate a tensor of undefined shape ",
                                   shape.DebugString());
  }
  if (dtype == DataType::kInvalid) return errors::InvalidArgument("Cannot allocate dtype invalid");
  const int64_t num_elements = shape.num_elements();
  if (num_elements == std::numeric_limits<int64_t>::max()) {
    return errors::InvalidArgument("Cannot allocate a tensor of shape ", shape.DebugString(),
                                   ": it has more than 2^63-1 elements");
  }
  // What a buffer may span: pointer differences within it must not overflow.
  size_t bytes;
  if (__builtin_mul_overflow(static_cast<size_t>(num_elements), DataTypeStorageSize(dtype), &bytes) ||
      bytes > static_cast<size_t>(std::numeric_limits<ptrdiff_t>::max())) {
    return errors::ResourceExhausted("OOM when allocating tensor with shape ", shape.DebugString(), " and type ",
                                     DataTypeName(dtype), OnDevice(device), " by allocator ", allocator->name(),
                                     ": more bytes than an address space holds");
  }
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = shape;
  t.num_elements_ = num_elements;
  t.buffer_ = new TensorBuffer(allocator, dtype, t.num_elements_);
  t.data_ = t.buffer_->data();
  if (t.data_ == nullptr) {
    const std::string limit = allocator->DescribeLimit();
    return errors::ResourceExhausted("OOM when allocating tensor with shape ", shape.DebugString(), " and type ",
                                     DataTypeName(dtype), OnDevice(device), " by allocator ", allocator->name(),
                                     limit.empty() ? "" : ": ", limit);
  }
  return t;
}

Tensor Tensor::Slice(int64_t start, int64_t limit) const {
  Tensor t = *this;
  int64_t row = shape_.dim(0) == 0 ? 0 : num_elements_ / shape_.dim(0);
  t.shape_.set_dim(0, limit - start);
  t.num_elements_ = row * (limit - start);
  size_t elem = DataTypeStorageSize(dtype_);
  t.data_ = static_cast<char*>(data_) + start * row * static_cast<int64_t>(elem);
  return t;
}

Tensor Tensor::SubSlice(int64_t index) const {
  Tensor t = Slice(index, index + 1);
  t.shape_ = TensorShape(shape_.dims().subspan(1));
  return t;
}

StatusOr<Tensor> Tensor::Reshaped(const TensorShape& shape) const {
  if (!shape.IsFullyDefined() || shape.num_elements() != num_elements_) {
    return errors::InvalidArgument("Cannot reshape a tensor with ", num_elements_,
                                   " elements to shape ", shape.DebugString());
  }
  Tensor t = *this;
  t.shape_ = shape;
  return t;
}

StatusOr<Tensor> Tensor::Resized(const TensorShape& shape) const {
  if (DataTypeHoldsStrings(dtype_) || dtype_ == DataType::kVariant) {
    return errors::Unimplemented("resizing a tensor of ", DataTypeName(dtype_), " in its buffer");
  }
  if (!shape.IsFullyDefined() || buffer_ == nullptr) {
    return errors::InvalidArgument("Cannot resize a tensor to shape ", shape.DebugString(), " in its buffer");
  }
  const size_t offset = static_cast<size_t>(static_cast<char*>(data_) - static_cast<char*>(buffer_->data()));
  const size_t room = (buffer_->bytes() - offset) / DataTypeStorageSize(dtype_);
  if (static_cast<uint64_t>(shape.num_elements()) > room) {
    return errors::OutOfRange("A buffer with room for ", room, " elements cannot hold shape ", shape.DebugString());
  }
  Tensor t = *this;
  t.shape_ = shape;
  t.num_elements_ = shape.num_elements();
  return t;
}

Tensor Tensor::DeepCopy() const {
  StatusOr<Tensor> t = DeepCopy(CpuAllocator());
  if (!t.ok()) throw std::bad_alloc();  // like the constructor
  return std::move(t).value();
}

StatusOr<Tensor> Tensor::DeepCopy(std::shared_ptr<Allocator> allocator) const {
  if (!IsInitialized()) return Tensor();
  ASSIGN_OR_RETURN(Tensor t, Allocate(std::move(allocator), dtype_, shape_));
  if (DataTypeHoldsStrings(dtype_)) {
    std::copy(data<std::string>(), data<std::string>() + num_elements_, t.data<std::string>());
  } else if (dtype_ == DataType::kVariant) {
    std::copy(data<Variant>(), data<Variant>() + num_elements_, t.data<Variant>());
  } else if (num_elements_ > 0) {
    std::memcpy(t.data_, data_, TotalBytes());
  }
  return t;
}

namespace {

template <typename T>
void PrintElement(std::ostream& os, const T& v) {
  if constexpr (std::is_same_v<T, Half>) {
    os << HalfToFloat(v);
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    os << BFloat16ToFloat(v);
  } else if constexpr (std::is_same_v<T, uint8_t>) {
    os << static_cast<int>(v);
  } else if constexpr (std::is_same_v<T, std::string>) {
    os << '"' << v << '"';
  } else {
    os << v;
  }
}

}  // namespace

std::string Tensor::DebugString(int max_entries) const {
  if (!IsInitialized()) return "Tensor<uninitialized>";
  std::ostringstream os;
  os << "Tensor<" << DataTypeName(dtype_) << ", " << shape_.DebugString() << ":";
  if (dtype_ == DataType::kVariant) {
    for (int64_t i = 0; i < num_elements_ && i < max_entries; ++i) {
      const Variant& v = data<Variant>()[i];
      os << " " << (v != nullptr ? v->DebugString() : "null");
    }
  } else {
    VisitDataType(dtype_, [&](auto zero) {
      using T = decltype(zero);
      const T* p = data<T>();
      for (int64_t i = 0; i < num_elements_ && i < max_entries; ++i) {
        os << " ";
        PrintElement(os, p[i]);
      }
    });
  }
  if (num_elements_ > max_entries) os << " ...";
  os << ">";
  return os.str();
}

std::vector<int64_t> IntTensorValues(const Tensor& t) {
  std::vector<int64_t> v(static_cast<size_t>(t.NumElements()));
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    v[i] = t.dtype() == DataType::kInt64 ? t.data<int64_t>()[i] : t.data<int32_t>()[i];
  }
  return v;
}

bool Tensor::Equals(const Tensor& other) const {
  if (dtype_ != other.dtype_ || !(shape_ == other.shape_)) return false;
  if (dtype_ == DataType::kVariant) {
    return std::equal(data<Variant>(), data<Variant>() + num_elements_, other.data<Variant>());
  }
  return VisitDataType(dtype_, [&](auto zero) {
    using T = decltype(zero);
    if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
      return std::memcmp(data_, other.data_, TotalBytes()) == 0;
    } else {
      return std::equal(data<T>(), data<T>() + num_elements_, other.data<T>());
    }
  });
}

}  // namespace tessera
