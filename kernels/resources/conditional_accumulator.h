// ConditionalAccumulator: the gradients of one variable from many workers, summed until a
// taker asks for their average, as TensorFlow's ConditionalAccumulator does for
// SyncReplicasOptimizer.
//
//   acc->ApplyGradient(local_step, grad);          // from each worker
//   acc->TakeGradient(n, cancellation, [](const Status& s, Tensor average) { ... });
//
// - A gradient computed at a local step older than the accumulator's global step is stale
//   and dropped (ApplyGradient still succeeds, as in TensorFlow; dropped() counts them).
// - TakeGradient waits until at least n gradients are in, then hands out their mean (or sum),
//   empties the accumulator and advances its global step by one. Takers are served in order.
// - SetGlobalStep sets the step outright (the chief, after a restore).
// Every gradient must be compatible with the accumulator's shape and equal to the first one
// in since the last take.
//
// All methods are thread-safe; a take's callback runs on the thread whose call completed it,
// never under the accumulator's lock. Cancelling the CancellationManager of a waiting take
// fails it with Cancelled and takes nothing.
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>

#include "graph/tensor.h"
#include "kernels/op_kernel.h"
#include "kernels/resource_mgr.h"

namespace tessera {

class ConditionalAccumulator : public ResourceBase, public std::enable_shared_from_this<ConditionalAccumulator> {
 public:
  enum class Reduction { kMean, kSum };
  struct Options {
    std::string name;  // for messages: the shared name
    DataType dtype = DataType::kFloat;
    TensorShape shape = TensorShape::UnknownRank();
    Reduction reduction = Reduction::kMean;
  };
  using TakeCallback = std::function<void(const Status&, Tensor)>;

  // InvalidArgument for a dtype other than float32 or float64.
  static Status Validate(const Options& options);
  explicit ConditionalAccumulator(Options options);
  ~ConditionalAccumulator() override;

  // For a second accumulator op with the same shared_name: InvalidArgument unless it asks
  // for the same dtype, shape and reduction.
  Status CheckCompatible(const Options& requested) const;

  Status ApplyGradient(int64_t local_step, const Tensor& gradient);
  // InvalidArgument for num_required < 1.
  void TakeGradient(int64_t num_required, CancellationManager* cancellation, TakeCallback done);
  void SetGlobalStep(int64_t step);

  int64_t num_accumulated() const;
  int64_t global_step() const;
  int64_t dropped() const;
  const Options& options() const { return options_; }
  std::string DebugString() const override;

 private:
  struct Taker {
    int64_t id;
    int64_t num_required;
    CancellationManager* cancellation;
    CancellationManager::Token token;
    TakeCallback done;
  };
  // Serves the takers at the front whose count is in; appends their callbacks.
  void FlushLocked(std::vector<std::function<void()>>* callbacks);
  void Cancel(int64_t id);

  const Options options_;
  mutable std::mutex mu_;
  Tensor sum_;                    // guarded by mu_: valid while count_ > 0
  int64_t count_ = 0;             // guarded by mu_
  int64_t global_step_ = 0;       // guarded by mu_
  int64_t dropped_ = 0;           // guarded by mu_
  std::list<Taker> takers_;       // guarded by mu_: in arrival order
  int64_t next_id_ = 0;           // guarded by mu_
};

}  // namespace tessera
