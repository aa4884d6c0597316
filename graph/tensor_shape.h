// TensorShape: a rank and the size of each dimension, where a dimension may be unknown (-1)
// and, for placeholders and shape inference, the rank itself may be unknown.
//
//   TensorShape s({-1, 2});     // [?,2]: a batch of pairs
//   s.IsFullyDefined();         // false
//   s.IsCompatibleWith(TensorShape({5, 2}));   // true
//
// Dimensions are stored inline (no allocation), so a shape is cheap to copy on the
// executor's per-node path. Rank is limited to kMaxRank.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "graph/platform/status.h"

namespace tessera {

class TensorShape {
 public:
  static constexpr int kMaxRank = 8;
  static constexpr int64_t kUnknownDim = -1;

  // A scalar: rank 0.
  TensorShape() = default;
  // Precondition: dims.size() <= kMaxRank and every dim >= -1. Use Make() for user input.
  TensorShape(std::initializer_list<int64_t> dims);
  explicit TensorShape(std::span<const int64_t> dims);

  static TensorShape UnknownRank();
  // Validates rank, dimensions, and that the known dimensions' product fits in int64_t.
  // Every shape that comes from user data (files, feeds, attrs, a kernel's input values)
  // is made with this.
  static StatusOr<TensorShape> Make(std::span<const int64_t> dims);

  bool unknown_rank() const { return unknown_rank_; }
  int rank() const { return rank_; }
  int64_t dim(int i) const { return dims_[i]; }
  std::span<const int64_t> dims() const { return {dims_.data(), static_cast<size_t>(rank_)}; }
  std::vector<int64_t> dim_vector() const { return {dims_.begin(), dims_.begin() + rank_}; }

  bool IsFullyDefined() const;
  // Product of the dimensions; -1 when not fully defined; INT64_MAX when the product
  // overflows (which only an unvalidated shape can do, and no allocation accepts).
  int64_t num_elements() const;
  // True when some fully defined shape matches both.
  bool IsCompatibleWith(const TensorShape& other) const;

  // Precondition: rank() < kMaxRank.
  void AddDim(int64_t size);
  void set_dim(int i, int64_t size) { dims_[i] = size; }

  // "[2,?]", "<unknown>" for unknown rank, "[]" for a scalar.
  std::string DebugString() const;

  friend bool operator==(const TensorShape& a, const TensorShape& b);

 private:
  std::array<int64_t, kMaxRank> dims_{};
  int8_t rank_ = 0;
  bool unknown_rank_ = false;
};

}  // namespace tessera
