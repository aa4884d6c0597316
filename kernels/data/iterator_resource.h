// IteratorResource: the state behind an iterator handle (tf.data.Iterator): the dataset it
// walks and where it is. MakeIterator starts a pass; IteratorGetNext takes one element.
//
// Thread-safe: GetNext calls are serialised, so each element goes to exactly one caller,
// and Initialize may run while another thread waits in GetNext.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>

#include "kernels/data/dataset.h"
#include "kernels/resource_mgr.h"

namespace tessera {

class IteratorResource : public ResourceBase {
 public:
  IteratorResource(std::vector<DataType> dtypes, std::vector<TensorShape> shapes)
      : dtypes_(std::move(dtypes)), shapes_(std::move(shapes)) {}

  // Starts a new pass over `dataset`, ending the previous one. InvalidArgument, naming
  // `who`, when the dataset's element differs from the iterator's (the previous pass goes
  // on); when the new pass fails to start (say, a truncated file), the iterator is left
  // uninitialized.
  Status Initialize(DatasetPtr dataset, const IteratorEnv& env, std::string_view who);
  // Initializes with make()'s dataset unless already initialized: a one-shot iterator's
  // first run. Concurrent first runs call make() once.
  Status InitializeOnce(const std::function<StatusOr<DatasetPtr>()>& make, const IteratorEnv& env,
                        std::string_view who);
  // The next element; OutOfRange "End of sequence" after the last, FailedPrecondition before
  // Initialize, Cancelled when `ctx`'s step is cancelled meanwhile.
  Status GetNext(const IteratorContext& ctx, std::vector<Tensor>* out);

  const std::vector<DataType>& dtypes() const { return dtypes_; }
  const std::vector<TensorShape>& shapes() const { return shapes_; }
  std::string DebugString() const override { return "Iterator"; }

 private:
  const std::vector<DataType> dtypes_;
  const std::vector<TensorShape> shapes_;
  std::mutex init_mu_;  // serialises InitializeOnce
  // Read without mu_, so a one-shot iterator's every step need not wait for a GetNext.
  std::atomic<bool> initialized_{false};
  // Held through a whole GetNext, which may wait for a prefetching thread.
  mutable std::mutex mu_;
  DatasetPtr dataset_;                          // guarded by mu_
  std::unique_ptr<DatasetIterator> iterator_;  // guarded by mu_
};

}  // namespace tessera
