#include "kernels/data/dataset.h"

namespace tessera {

std::shared_ptr<Allocator> ElementAllocator(const IteratorEnv& env) {
  return env.device != nullptr ? env.device->allocator() : CpuAllocator();
}

Tensor DatasetToTensor(DatasetPtr dataset) {
  Tensor t(DataType::kVariant, TensorShape());
  t.data<Variant>()[0] = std::move(dataset);
  return t;
}

StatusOr<DatasetPtr> DatasetFromTensor(const Tensor& t) {
  if (t.dtype() != DataType::kVariant || t.rank() != 0) {
    return errors::InvalidArgument("A dataset is a scalar variant tensor, got ", DataTypeName(t.dtype()), " ",
                                   t.shape().DebugString());
  }
  auto dataset = std::dynamic_pointer_cast<const Dataset>(t.data<Variant>()[0]);
  if (dataset == nullptr) return errors::InvalidArgument("The variant tensor holds no dataset");
  return dataset;
}

std::string DataTypesString(const std::vector<DataType>& dtypes) {
  std::string s = "[";
  for (size_t i = 0; i < dtypes.size(); ++i) s += StrCat(i ? ", " : "", DataTypeName(dtypes[i]));
  return s + "]";
}

std::string ShapesString(const std::vector<TensorShape>& shapes) {
  std::string s = "[";
  for (size_t i = 0; i < shapes.size(); ++i) s += StrCat(i ? ", " : "", shapes[i].DebugString());
  return s + "]";
}

Status CheckElementSpec(const Dataset& dataset, const std::vector<DataType>& dtypes,
                        const std::vector<TensorShape>& shapes, std::string_view what) {
  bool ok = dtypes == dataset.output_dtypes() && shapes.size() == dtypes.size();
  for (size_t i = 0; ok && i < shapes.size(); ++i) {
    ok = shapes[i].IsCompatibleWith(dataset.output_shapes()[i]);
  }
  if (ok) return Status::OK();
  return errors::InvalidArgument(what, " expects elements of types ", DataTypesString(dtypes), " and shapes ",
                                 ShapesString(shapes), ", but the ", dataset.type(), " gives types ",
                                 DataTypesString(dataset.output_dtypes()), " and shapes ",
                                 ShapesString(dataset.output_shapes()));
}

}  // namespace tessera
