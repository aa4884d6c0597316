#include "kernels/util/tensor_list.h"

namespace tessera {

std::string TensorList::DebugString() const {
  return StrCat("TensorList<", DataTypeName(element_dtype), ", ", element_shape.DebugString(), ", ", elements.size(),
                " elements>");
}

Tensor ListTensor(std::shared_ptr<const TensorList> list) {
  Tensor t(DataType::kVariant, TensorShape());
  t.data<Variant>()[0] = std::move(list);
  return t;
}

StatusOr<std::shared_ptr<const TensorList>> ListOf(const Tensor& t, std::string_view what) {
  if (t.dtype() != DataType::kVariant || t.rank() != 0) {
    return errors::InvalidArgument(what, " must be a list (a variant scalar), got ", DataTypeName(t.dtype()), " ",
                                   t.shape().DebugString());
  }
  auto list = std::dynamic_pointer_cast<const TensorList>(t.data<Variant>()[0]);
  if (list == nullptr) {
    const Variant& v = t.data<Variant>()[0];
    return errors::InvalidArgument(what, " must be a list, got a variant holding ",
                                   v == nullptr ? std::string("nothing") : v->DebugString());
  }
  return list;
}

StatusOr<TensorShape> ElementShapeOf(const Tensor& t) {
  if (t.dtype() != DataType::kInt32 && t.dtype() != DataType::kInt64) {
    return errors::InvalidArgument("element_shape must be int32 or int64, got ", DataTypeName(t.dtype()));
  }
  auto at = [&](int64_t i) {
    return t.dtype() == DataType::kInt32 ? static_cast<int64_t>(t.data<int32_t>()[i]) : t.data<int64_t>()[i];
  };
  if (t.rank() == 0) {
    if (at(0) != -1) return errors::InvalidArgument("a scalar element_shape must be -1 (unknown rank), got ", at(0));
    return TensorShape::UnknownRank();
  }
  if (t.rank() != 1) return errors::InvalidArgument("element_shape must be a scalar or a vector");
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    if (at(i) < -1) return errors::InvalidArgument("element_shape has dimension ", at(i));
    dims.push_back(at(i));
  }
  return TensorShape::Make(dims);
}

}  // namespace tessera
