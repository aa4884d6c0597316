#include "kernels/util/batch_util.h"

#include <algorithm>
#include <cstring>

#include "graph/variant.h"

namespace tessera {
namespace {

// Copies `n` elements; strings and variants by assignment, the rest as bytes.
void CopyElements(DataType dtype, const char* src, char* dst, int64_t n) {
  if (DataTypeHoldsStrings(dtype)) {
    std::copy_n(reinterpret_cast<const std::string*>(src), n, reinterpret_cast<std::string*>(dst));
  } else if (dtype == DataType::kVariant) {
    std::copy_n(reinterpret_cast<const Variant*>(src), n, reinterpret_cast<Variant*>(dst));
  } else {
    std::memcpy(dst, src, static_cast<size_t>(n) * DataTypeSize(dtype));
  }
}

// Copies `src` (dims from[d..]) into `dst` (dims to[d..], each at least from's).
void CopyPadded(DataType dtype, const char* src, const TensorShape& from, char* dst, const TensorShape& to, int d) {
  const size_t size = DataTypeStorageSize(dtype);
  int64_t src_inner = 1, dst_inner = 1;
  bool same = true;
  for (int i = d; i < from.rank(); ++i) {
    src_inner *= from.dim(i);
    dst_inner *= to.dim(i);
    same = same && from.dim(i) == to.dim(i);
  }
  if (same) {
    CopyElements(dtype, src, dst, src_inner);
    return;
  }
  const int64_t src_stride = src_inner / from.dim(d), dst_stride = dst_inner / to.dim(d);
  for (int64_t r = 0; r < from.dim(d); ++r) {
    CopyPadded(dtype, src + r * src_stride * size, from, dst + r * dst_stride * size, to, d + 1);
  }
}

}  // namespace

void FillWithScalar(const Tensor& value, Tensor* t) {
  const size_t size = DataTypeStorageSize(t->dtype());
  char* dst = static_cast<char*>(t->raw_data());
  for (int64_t i = 0; i < t->NumElements(); ++i) {
    CopyElements(t->dtype(), static_cast<const char*>(value.raw_data()), dst + i * size, 1);
  }
}

void CopyElementIntoBatch(const Tensor& element, int64_t index, Tensor* batch) {
  TensorShape row;
  for (int d = 1; d < batch->rank(); ++d) row.AddDim(batch->dim(d));
  const size_t size = DataTypeStorageSize(batch->dtype());
  char* dst = static_cast<char*>(batch->raw_data()) + index * row.num_elements() * size;
  if (element.NumElements() == 0) return;
  CopyPadded(batch->dtype(), static_cast<const char*>(element.raw_data()), element.shape(), dst, row, 0);
}

}  // namespace tessera
