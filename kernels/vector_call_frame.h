// VectorCallFrame: the CallFrame of a step or a function call whose feeds and fetches are
// numbered from 0: the args given, and one slot per retval for the _Retval kernels to fill.
//
//   VectorCallFrame frame({x}, /*num_retvals=*/1);
//   ... run the executor with args.call_frame = &frame ...
//   Tensor y = frame.retvals()[0];
//
// GetArg and SetRetval may be called concurrently (one _Retval per index); a retval set twice
// (a _Retval that fires again) is an error, as in TensorFlow. retvals() is read once the run
// is over.
#pragma once

#include <atomic>
#include <memory>
#include <utility>
#include <vector>

#include "kernels/op_kernel.h"

namespace tessera {

class VectorCallFrame final : public CallFrame {
 public:
  VectorCallFrame(std::vector<Tensor> args, size_t num_retvals)
      : args_(std::move(args)), retvals_(num_retvals), set_(new std::atomic<bool>[num_retvals]()) {}
  StatusOr<Tensor> GetArg(int index) const override {
    if (index < 0 || static_cast<size_t>(index) >= args_.size()) {
      return errors::Internal("The call has no argument ", index, "; it has ", args_.size());
    }
    return args_[index];
  }
  Status SetRetval(int index, const Tensor& value) override {
    if (index < 0 || static_cast<size_t>(index) >= retvals_.size()) {
      return errors::Internal("The call has no return value ", index, "; it has ", retvals_.size());
    }
    if (set_[index].exchange(true)) return errors::Internal("Retval[", index, "] has already been set");
    retvals_[index] = value;
    return Status::OK();
  }
  std::vector<Tensor>& args() { return args_; }
  const std::vector<Tensor>& args() const { return args_; }
  std::vector<Tensor>& retvals() { return retvals_; }

 private:
  std::vector<Tensor> args_;
  std::vector<Tensor> retvals_;
  std::unique_ptr<std::atomic<bool>[]> set_;  // by index: SetRetval has been called
};

}  // namespace tessera
