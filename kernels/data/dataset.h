// Dataset and DatasetIterator: tf.data's model. A Dataset is an immutable description of a
// sequence of elements (each element a fixed number of tensors with known dtypes); dataset
// ops pass it along as a scalar variant tensor, each op wrapping its input's Dataset in a
// new one. An iterator walks one pass over a dataset.
//
//   DatasetPtr ds = ...;                                  // from a dataset op's output
//   StatusOr<std::unique_ptr<DatasetIterator>> it = ds->MakeIterator(env);
//   IteratorContext ctx{step_cancellation};
//   std::vector<Tensor> element;
//   bool end = false;
//   while ((*it)->GetNext(ctx, &element, &end).ok() && !end) { ... }
//
// A Dataset may be shared by any number of threads and iterators. One DatasetIterator is
// used by one thread at a time (IteratorResource serialises its callers).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "graph/tensor.h"
#include "graph/variant.h"
#include "kernels/function_runtime.h"
#include "kernels/op_kernel.h"
#include "kernels/thread_pool.h"

namespace tessera {

// What an iterator may use while it runs: where parallel work goes and how functions run.
// The pointers are borrowed from the session and outlive every iterator.
struct IteratorEnv {
  ThreadPool* intra_op_pool = nullptr;
  DeviceBase* device = nullptr;
  ResourceMgr* resources = nullptr;
  const FunctionRuntime* functions = nullptr;
};

// Where an iterator's elements are allocated: the device's allocator, whose accounting
// (and the session's memory limit) sees every element a pipeline holds.
std::shared_ptr<Allocator> ElementAllocator(const IteratorEnv& env);

// What one GetNext call may use of whoever asked for the element.
struct IteratorContext {
  // The asking step's cancellation (its deadline passed, another node failed), or null.
  // An iterator checks it between the input elements it consumes and while it waits, so a
  // batch of a billion elements stops at the step's deadline.
  CancellationManager* cancellation = nullptr;

  bool IsCancelled() const { return cancellation != nullptr && cancellation->IsCancelled(); }
  // Cancelled once the asker is.
  Status CheckCancelled() const {
    return IsCancelled() ? errors::Cancelled("Step was cancelled while the input pipeline ran") : Status::OK();
  }
};

class DatasetIterator {
 public:
  virtual ~DatasetIterator() = default;
  // Sets *out to the next element, or *end to true (leaving *out empty) once the sequence is
  // exhausted; later calls keep reporting the end. An error leaves the iterator usable
  // where the source allows (a filter whose predicate failed skips nothing).
  virtual Status GetNext(const IteratorContext& ctx, std::vector<Tensor>* out, bool* end) = 0;
};

class Dataset : public VariantValue {
 public:
  Dataset(std::string type, std::vector<DataType> dtypes, std::vector<TensorShape> shapes)
      : type_(std::move(type)), dtypes_(std::move(dtypes)), shapes_(std::move(shapes)) {}

  // The dataset op that made it, e.g. "RangeDataset".
  const std::string& type() const { return type_; }
  const std::vector<DataType>& output_dtypes() const { return dtypes_; }
  // Statically known shapes; -1 where elements differ (a batch's last one).
  const std::vector<TensorShape>& output_shapes() const { return shapes_; }
  std::string DebugString() const override { return type_; }

  // The iterator may point into this dataset, which must outlive it.
  virtual StatusOr<std::unique_ptr<DatasetIterator>> MakeIterator(const IteratorEnv& env) const = 0;

 private:
  std::string type_;
  std::vector<DataType> dtypes_;
  std::vector<TensorShape> shapes_;
};

using DatasetPtr = std::shared_ptr<const Dataset>;

// A scalar variant tensor holding `dataset`.
Tensor DatasetToTensor(DatasetPtr dataset);
// InvalidArgument unless `t` is a scalar variant holding a Dataset.
StatusOr<DatasetPtr> DatasetFromTensor(const Tensor& t);

// InvalidArgument naming `what` unless `dtypes` equal the dataset's and every shape is
// compatible with the dataset's.
Status CheckElementSpec(const Dataset& dataset, const std::vector<DataType>& dtypes,
                        const std::vector<TensorShape>& shapes, std::string_view what);

// "[int64, float32]" and "[[], [?,2]]" for messages.
std::string DataTypesString(const std::vector<DataType>& dtypes);
std::string ShapesString(const std::vector<TensorShape>& shapes);

}  // namespace tessera
