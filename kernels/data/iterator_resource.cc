#include "kernels/data/iterator_resource.h"

namespace tessera {

Status IteratorResource::Initialize(DatasetPtr dataset, const IteratorEnv& env, std::string_view who) {
  RETURN_IF_ERROR(CheckElementSpec(*dataset, dtypes_, shapes_, who));
  ASSIGN_OR_RETURN(std::unique_ptr<DatasetIterator> iterator, dataset->MakeIterator(env));
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::swap(dataset_, dataset);
    std::swap(iterator_, iterator);
  }
  initialized_ = true;
  // The previous pass ends here, outside the lock: its background threads are joined.
  iterator.reset();
  return Status::OK();
}

Status IteratorResource::InitializeOnce(const std::function<StatusOr<DatasetPtr>()>& make, const IteratorEnv& env,
                                        std::string_view who) {
  if (initialized_) return Status::OK();
  std::lock_guard<std::mutex> lock(init_mu_);
  if (initialized_) return Status::OK();
  ASSIGN_OR_RETURN(DatasetPtr dataset, make());
  return Initialize(std::move(dataset), env, who);
}

Status IteratorResource::GetNext(std::vector<Tensor>* out) {
  std::lock_guard<std::mutex> lock(mu_);
  if (iterator_ == nullptr) {
    return errors::FailedPrecondition(
        "GetNext() failed because the iterator has not been initialized. Ensure that you have run the "
        "initializer operation for this iterator before getting the next element.");
  }
  bool end = false;
  out->clear();
  RETURN_IF_ERROR(iterator_->GetNext(out, &end));
  if (end) return errors::OutOfRange("End of sequence");
  return Status::OK();
}

}  // namespace tessera
