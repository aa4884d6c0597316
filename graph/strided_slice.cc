#include "graph/strided_slice.h"

#include <algorithm>
#include <bit>

namespace tessera {

StatusOr<StridedSliceRange> ResolveStridedSlice(const TensorShape& input, const std::vector<int64_t>& begin,
                                                const std::vector<int64_t>& end,
                                                const std::vector<int64_t>& strides, const StridedSliceMasks& masks) {
  const int sparse = static_cast<int>(begin.size());
  if (end.size() != begin.size() || strides.size() != begin.size()) {
    return errors::InvalidArgument("Expected begin, end, and strides to be 1D equal size tensors, but got shapes [",
                                   begin.size(), "], [", end.size(), "], and [", strides.size(), "] instead.");
  }
  if (sparse > 32) return errors::InvalidArgument("a strided slice spec of ", sparse, " entries is too long");
  if (std::popcount(static_cast<uint64_t>(masks.ellipsis)) > 1) {
    return errors::InvalidArgument("Multiple ellipses in slice spec not allowed");
  }
  auto bit = [](int64_t mask, int i) { return i < 63 && ((mask >> i) & 1) != 0; };
  const int rank = input.rank();
  // Entries of the spec as dense per-dimension ones; an implicit ellipsis ends a spec that
  // has none, so unnamed trailing dimensions are taken whole.
  struct Dense {
    int64_t begin = 0, end = 0, stride = 1;
    bool begin_full = true, end_full = true, shrink = false;
  };
  std::vector<Dense> dense(static_cast<size_t>(rank));
  enum : int { kNewAxis = -1, kShrunk = -2 };
  std::vector<int> gather;  // per result dimension: an input dimension, kNewAxis
  bool has_ellipsis = masks.ellipsis != 0;
  int full = 0;
  for (int i = 0; i < sparse || (!has_ellipsis && i == sparse); ++i) {
    const bool ellipsis = i == sparse || bit(masks.ellipsis, i);
    if (ellipsis) {
      int new_axes_after = 0;
      for (int j = i + 1; j < sparse; ++j) new_axes_after += bit(masks.new_axis, j);
      const int next = std::min(rank - (sparse - i) + 1 + new_axes_after, rank);
      for (; full < next; ++full) gather.push_back(full);
      if (i == sparse) break;
      continue;
    }
    if (bit(masks.new_axis, i)) {
      gather.push_back(kNewAxis);
      continue;
    }
    if (full >= rank) {
      return errors::InvalidArgument("Index out of range using input dim ", full, "; input has only ", rank, " dims");
    }
    Dense& d = dense[full];
    d.begin = begin[i];
    d.end = end[i];
    d.stride = strides[i];
    d.begin_full = bit(masks.begin, i);
    d.end_full = bit(masks.end, i);
    d.shrink = bit(masks.shrink_axis, i);
    gather.push_back(d.shrink ? kShrunk : full);
    ++full;
  }
  StridedSliceRange r;
  for (int i = 0; i < rank; ++i) {
    const Dense& d = dense[i];
    const int64_t n = input.dim(i);
    if (d.stride == 0) return errors::InvalidArgument("strides[", i, "] must be non-zero");
    if (d.shrink) {
      const int64_t x = d.begin < 0 ? d.begin + n : d.begin;
      if (x < 0 || x >= n) {
        return errors::InvalidArgument("slice index ", d.begin, " of dimension ", i, " out of bounds.");
      }
      r.begin.push_back(x);
      r.stride.push_back(1);
      r.size.push_back(1);
      continue;
    }
    const bool forward = d.stride > 0;
    auto canonical = [&](int64_t x, bool whole, bool is_begin) {
      if (whole) return forward ? (is_begin ? 0 : n) : (is_begin ? n - 1 : -1);
      const int64_t fwd = x < 0 ? n + x : x;
      return forward ? std::clamp<int64_t>(fwd, 0, n) : std::clamp<int64_t>(fwd, -1, n - 1);
    };
    const int64_t b = canonical(d.begin, d.begin_full, true);
    const int64_t e = canonical(d.end, d.end_full, false);
    const int64_t interval = e - b;
    int64_t size = 0;
    if (interval != 0 && (interval < 0) == (d.stride < 0)) {
      size = interval / d.stride + (interval % d.stride != 0);
    }
    r.begin.push_back(b);
    r.stride.push_back(d.stride);
    r.size.push_back(size);
  }
  std::vector<int64_t> dims;
  for (int g : gather) {
    if (g == kNewAxis) {
      dims.push_back(1);
      r.result_source.push_back(-1);
    } else if (g != kShrunk) {
      dims.push_back(r.size[g]);
      r.result_source.push_back(g);
    }
  }
  ASSIGN_OR_RETURN(r.result, TensorShape::Make(dims));
  return r;
}

}  // namespace tessera
