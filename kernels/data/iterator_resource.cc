#include "kernels/data/iterator_resource.h"

namespace tessera {

Status IteratorResource::Initialize(DatasetPtr dataset, const IteratorEnv& env, std::string_view who) {
  RETURN_IF_ERROR(CheckElementSpec(*dataset, dtypes_, shapes_, who));
  // The previous pass ends (its threads joined, its buffers freed) before the new one starts,
  // so two passes' shuffle and prefetch buffers are never held at once. Callers of GetNext
  // wait meanwhile.
  std::lock_guard<std::mutex> lock(mu_);
  iterator_.reset();
  dataset_.reset();
  ASSIGN_OR_RETURN(iterator_, dataset->MakeIterator(env));
  dataset_ = std::move(dataset);
  initialized_ = true;
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

Status IteratorResource::GetNext(const IteratorContext& ctx, std::vector<Tensor>* out) {
  std::lock_guard<std::mutex> lock(mu_);
  if (iterator_ == nullptr) {
    return errors::FailedPrecondition(
        "GetNext() failed because the iterator has not been initialized. Ensure that you have run the "
        "initializer operation for this iterator before getting the next element.");
  }
  bool end = false;
  out->clear();
  RETURN_IF_ERROR(iterator_->GetNext(ctx, out, &end));
  if (end) return errors::OutOfRange("End of sequence");
  return Status::OK();
}

}  // namespace tessera
