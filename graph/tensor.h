// Tensor: a dtype, a shape and a ref-counted, aligned buffer.
//
//   Tensor t(DataType::kFloat, TensorShape({2, 3}));
//   std::span<float> v = t.flat<float>();          // 6 elements, row-major
//   Tensor row = t.Slice(1, 2);                     // zero-copy view of row 1
//   Tensor s = Tensor::FromVector<float>({1, 2, 3, 4}, TensorShape({2, 2}));
//
// Copying a Tensor copies a handle: both share the buffer. Tensor objects are not
// synchronised (like std::shared_ptr): one Tensor object may not be written while another
// thread reads it, but distinct Tensor objects sharing a buffer may be used from different
// threads. Kernels see Eigen views through kernels/util/eigen_tensor.h.
#pragma once

#include <atomic>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "graph/allocator.h"
#include "graph/platform/status.h"
#include "graph/tensor_shape.h"
#include "graph/types.h"

namespace tessera {

// Owns one allocation; constructs and destroys std::string elements for string tensors.
class TensorBuffer {
 public:
  TensorBuffer(std::shared_ptr<Allocator> allocator, DataType dtype, int64_t num_elements);
  ~TensorBuffer();
  TensorBuffer(const TensorBuffer&) = delete;
  TensorBuffer& operator=(const TensorBuffer&) = delete;

  // Null when the allocator was exhausted.
  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  const Allocator* allocator() const { return allocator_.get(); }

  // Reference counting for Tensor. Dropping a reference releases, and RefCountIsOne
  // acquires, so a holder that finds itself alone also sees every write and read the
  // others made before letting go: it may then write the buffer in place.
  void Ref() const { refs_.fetch_add(1, std::memory_order_relaxed); }
  // True when that was the last reference.
  bool Unref() const { return refs_.fetch_sub(1, std::memory_order_acq_rel) == 1; }
  bool RefCountIsOne() const { return refs_.load(std::memory_order_acquire) == 1; }

 private:
  mutable std::atomic<int64_t> refs_{1};
  std::shared_ptr<Allocator> allocator_;
  DataType dtype_;
  int64_t num_elements_;
  size_t bytes_;
  void* data_;
};

class Tensor {
 public:
  // An uninitialised tensor (dtype kInvalid), as held by an unset slot.
  Tensor() = default;
  Tensor(const Tensor& other);
  // Takes `other`'s buffer reference; `other` keeps its dtype, shape and data pointer,
  // which stays valid while the buffer lives (a kernel that forwarded its input to its
  // output may still read the input's metadata).
  Tensor(Tensor&& other) noexcept;
  Tensor& operator=(const Tensor& other);
  Tensor& operator=(Tensor&& other) noexcept;
  ~Tensor();
  // Allocates from the process CPU allocator. Precondition: shape fully defined.
  Tensor(DataType dtype, const TensorShape& shape);
  Tensor(std::shared_ptr<Allocator> allocator, DataType dtype, const TensorShape& shape);
  // Like the constructor, but an undefined shape or an exhausted allocator is a Status
  // rather than a precondition violation or std::bad_alloc. An OOM names `device` (the
  // allocator's device, when known), the allocator and what it holds.
  static StatusOr<Tensor> Allocate(std::shared_ptr<Allocator> allocator, DataType dtype, const TensorShape& shape,
                                   std::string_view device = {});

  template <typename T>
  static Tensor Scalar(T value) {
    Tensor t(DataTypeToEnum<T>::value, TensorShape());
    t.data<T>()[0] = std::move(value);
    return t;
  }
  // Precondition: values.size() == shape.num_elements().
  template <typename T>
  static Tensor FromVector(const std::vector<T>& values, const TensorShape& shape) {
    Tensor t(DataTypeToEnum<T>::value, shape);
    std::copy(values.begin(), values.end(), t.data<T>());
    return t;
  }
  template <typename T>
  static Tensor FromVector(const std::vector<T>& values) {
    return FromVector(values, TensorShape({static_cast<int64_t>(values.size())}));
  }

  bool IsInitialized() const { return dtype_ != DataType::kInvalid; }
  DataType dtype() const { return dtype_; }
  const TensorShape& shape() const { return shape_; }
  int rank() const { return shape_.rank(); }
  int64_t dim(int i) const { return shape_.dim(i); }
  int64_t NumElements() const { return num_elements_; }
  size_t TotalBytes() const { return static_cast<size_t>(num_elements_) * DataTypeSize(dtype_); }

  // Precondition: T matches dtype().
  template <typename T>
  T* data() const {
    return static_cast<T*>(data_);
  }
  template <typename T>
  std::span<T> flat() const {
    return {data<T>(), static_cast<size_t>(num_elements_)};
  }
  void* raw_data() const { return data_; }

  // Rows [start, limit) of dimension 0, sharing this tensor's buffer.
  // Precondition: rank() >= 1 and 0 <= start <= limit <= dim(0).
  Tensor Slice(int64_t start, int64_t limit) const;
  // Row `index` of dimension 0 as a tensor of the remaining dimensions, sharing this
  // tensor's buffer. Precondition: rank() >= 1 and 0 <= index < dim(0).
  Tensor SubSlice(int64_t index) const;
  // The same buffer seen with another shape of the same number of elements.
  StatusOr<Tensor> Reshaped(const TensorShape& shape) const;
  // The same buffer from this tensor's first element, seen with a shape of fewer or more
  // elements: room reserved in a bigger allocation, taken up later. OutOfRange when the
  // elements would run past the buffer; Unimplemented for strings and variants (their
  // elements are objects, constructed for the buffer's own count).
  StatusOr<Tensor> Resized(const TensorShape& shape) const;
  // A copy with its own buffer.
  Tensor DeepCopy() const;
  // A copy with its own buffer from `allocator`; ResourceExhausted when it is exhausted.
  StatusOr<Tensor> DeepCopy(std::shared_ptr<Allocator> allocator) const;

  bool SharesBufferWith(const Tensor& other) const {
    return buffer_ != nullptr && buffer_ == other.buffer_;
  }
  // True when no other Tensor shares the buffer, so it may be written in place.
  bool BufferIsUnshared() const { return buffer_ != nullptr && buffer_->RefCountIsOne(); }

  // "Tensor<float32, [2,2]: 1 2 3 4>", eliding past `max_entries` elements.
  std::string DebugString(int max_entries = 16) const;
  // Exact element-wise equality of dtype, shape and values (NaN != NaN).
  bool Equals(const Tensor& other) const;

 private:
  DataType dtype_ = DataType::kInvalid;
  TensorShape shape_;
  int64_t num_elements_ = 0;
  TensorBuffer* buffer_ = nullptr;  // one reference, dropped by the destructor
  void* data_ = nullptr;
};

// The values of an int32 or int64 tensor (axes, dims, shapes) widened to int64.
// Precondition: t.dtype() is kInt32 or kInt64.
std::vector<int64_t> IntTensorValues(const Tensor& t);

}  // namespace tessera
