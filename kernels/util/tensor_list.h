// TensorList: the value a variant tensor holds for TF2's TensorArrays and while-loop
// accumulators (TensorFlow's TensorList): a sequence of tensors of one dtype whose shapes
// agree with a partially known element shape. A list is immutable once in a tensor (a write
// makes a new list sharing the elements' buffers), so any number of threads may read one.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "graph/tensor.h"
#include "graph/variant.h"

namespace tessera {

class TensorList final : public VariantValue {
 public:
  DataType element_dtype = DataType::kInvalid;
  TensorShape element_shape = TensorShape::UnknownRank();
  std::vector<Tensor> elements;  // an uninitialized Tensor: an element not yet set
  int64_t max_num_elements = -1;   // -1: no bound

  std::string DebugString() const override;
};

// A variant scalar holding `list`.
Tensor ListTensor(std::shared_ptr<const TensorList> list);
// The list a variant scalar holds; InvalidArgument naming `what` for anything else (a float
// where a list is expected, a dataset).
StatusOr<std::shared_ptr<const TensorList>> ListOf(const Tensor& t, std::string_view what);
// An element shape as TensorFlow's list ops take it: -1 (a scalar) for an unknown rank, else
// a vector of dimensions with -1 for unknown ones.
StatusOr<TensorShape> ElementShapeOf(const Tensor& t);

}  // namespace tessera
