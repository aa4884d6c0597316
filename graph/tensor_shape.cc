#include "graph/tensor_shape.h"

#include <limits>
#include <optional>

namespace tessera {
namespace {

// The product of the known (non-negative) dimensions, or nullopt when it overflows.
std::optional<int64_t> KnownProduct(std::span<const int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d >= 0 && __builtin_mul_overflow(n, d, &n)) return std::nullopt;
  }
  return n;
}

}  // namespace

TensorShape::TensorShape(std::initializer_list<int64_t> dims)
    : TensorShape(std::span<const int64_t>(dims.begin(), dims.size())) {}

TensorShape::TensorShape(std::span<const int64_t> dims) {
  for (int64_t d : dims) AddDim(d);
}

TensorShape TensorShape::UnknownRank() {
  TensorShape s;
  s.unknown_rank_ = true;
  return s;
}

StatusOr<TensorShape> TensorShape::Make(std::span<const int64_t> dims) {
  if (dims.size() > static_cast<size_t>(kMaxRank)) {
    return errors::InvalidArgument("Shape of rank ", dims.size(), " exceeds the maximum rank ",
                                   kMaxRank);
  }
  for (int64_t d : dims) {
    if (d < kUnknownDim) return errors::InvalidArgument("Shape has a negative dimension ", d);
  }
  TensorShape shape(dims);
  if (!KnownProduct(dims)) {
    return errors::InvalidArgument("Shape ", shape.DebugString(), " has more than 2^63-1 elements");
  }
  return shape;
}

bool TensorShape::IsFullyDefined() const {
  if (unknown_rank_) return false;
  for (int i = 0; i < rank_; ++i) {
    if (dims_[i] < 0) return false;
  }
  return true;
}

int64_t TensorShape::num_elements() const {
  if (!IsFullyDefined()) return -1;
  return KnownProduct(dims()).value_or(std::numeric_limits<int64_t>::max());
}

bool TensorShape::IsCompatibleWith(const TensorShape& other) const {
  if (unknown_rank_ || other.unknown_rank_) return true;
  if (rank_ != other.rank_) return false;
  for (int i = 0; i < rank_; ++i) {
    if (dims_[i] >= 0 && other.dims_[i] >= 0 && dims_[i] != other.dims_[i]) return false;
  }
  return true;
}

void TensorShape::AddDim(int64_t size) {
  dims_[rank_++] = size;
  unknown_rank_ = false;
}

std::string TensorShape::DebugString() const {
  if (unknown_rank_) return "<unknown>";
  std::string s = "[";
  for (int i = 0; i < rank_; ++i) {
    if (i > 0) s += ",";
    s += dims_[i] < 0 ? "?" : std::to_string(dims_[i]);
  }
  return s + "]";
}

bool operator==(const TensorShape& a, const TensorShape& b) {
  if (a.unknown_rank_ != b.unknown_rank_ || a.rank_ != b.rank_) return false;
  for (int i = 0; i < a.rank_; ++i) {
    if (a.dims_[i] != b.dims_[i]) return false;
  }
  return true;
}

}  // namespace tessera
