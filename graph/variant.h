// VariantValue: an object held by a tensor of dtype variant, as TensorFlow's DT_VARIANT holds
// a dataset. Tensors hold `Variant`s (shared pointers to const objects), so copying or
// slicing such a tensor shares the objects; they are immutable once made, so any number of
// threads may use one.
#pragma once

#include <string>

#include "graph/types.h"

namespace tessera {

class VariantValue {
 public:
  virtual ~VariantValue() = default;
  // Shown by Tensor::DebugString, e.g. "RangeDataset".
  virtual std::string DebugString() const = 0;
};

}  // namespace tessera
