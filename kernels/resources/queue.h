// Queue: the resource behind FIFOQueue, RandomShuffleQueue and PaddingFIFOQueue, with
// TensorFlow 1.x's semantics. An element is a tuple of tensors of fixed component dtypes
// (and shapes, when given). Operations that cannot proceed (enqueue into a full queue,
// dequeue from an empty one) wait without a thread: they are kept as pending attempts and
// completed, in arrival order, by whichever call makes room or brings elements.
//
//   auto q = std::make_shared<Queue>(Queue::Options{.kind = Queue::Kind::kFifo, .name = "q",
//                                                   .capacity = 10, .dtypes = {DataType::kFloat}});
//   q->Enqueue({t}, cancellation, [](const Status& s) { ... });
//   q->Dequeue(1, Queue::kExactly, cancellation, [](const Status& s, Queue::Tuple batch) { ... });
//
// - Enqueue after Close is Cancelled ("... is closed."); enqueues pending at Close still
//   complete as room appears, unless Close cancels them.
// - A dequeue that a closed queue cannot satisfy is OutOfRange; DequeueUpTo returns what
//   is left if anything is. A batch is taken at once when all of it is there, so a
//   dequeue that is cancelled or times out never loses elements.
// - Cancelling the CancellationManager an attempt was made with fails it with Cancelled
//   (the session turns a deadline into DeadlineExceeded) and leaves the queue as it was.
//
// All methods are thread-safe; callbacks run on the calling thread or on the thread whose
// call completed them, never under the queue's lock.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "kernels/op_kernel.h"
#include "kernels/resource_mgr.h"

namespace tessera {

class Queue : public ResourceBase, public std::enable_shared_from_this<Queue> {
 public:
  enum class Kind { kFifo, kRandomShuffle, kPaddingFifo };
  struct Options {
    Kind kind = Kind::kFifo;
    std::string name;           // for messages: the queue's shared name
    int64_t capacity = -1;      // -1: unbounded
    std::vector<DataType> dtypes{};
    std::vector<TensorShape> shapes{};  // empty, or one per component; -1 dims only when padding
    int64_t min_after_dequeue = 0;      // kRandomShuffle: kept back until the queue closes
    int64_t seed = 0;                   // kRandomShuffle: 0 and 0 pick a random seed
    int64_t seed2 = 0;
  };
  using Tuple = std::vector<Tensor>;
  using DoneCallback = std::function<void(const Status&)>;
  using DequeueCallback = std::function<void(const Status&, Tuple)>;
  enum DequeueMode { kOne, kExactly, kUpTo };

  // InvalidArgument for options no queue can have (no components, shapes that do not
  // match them, unknown dims in a queue that does not pad).
  static Status Validate(const Options& options);
  explicit Queue(Options options);
  ~Queue() override;

  // For a second queue op with the same shared_name: InvalidArgument unless it asks for
  // the same kind, capacity, dtypes and shapes ("Shared queue 'q' has capacity 5 but
  // requested capacity was 3").
  Status CheckCompatible(const Options& requested) const;

  // One element. `cancellation` may be null.
  void Enqueue(Tuple element, CancellationManager* cancellation, DoneCallback done);
  // Dimension 0 of every component is the batch: each row becomes one element.
  void EnqueueMany(Tuple batch, CancellationManager* cancellation, DoneCallback done);
  // kOne: one element, as enqueued. kExactly/kUpTo: `n` elements batched along a new
  // dimension 0 (padded with zeros to the largest shape in a padding queue).
  void Dequeue(int64_t n, DequeueMode mode, CancellationManager* cancellation, DequeueCallback done);
  void Close(bool cancel_pending_enqueues);

  int64_t Size() const;
  const Options& options() const { return options_; }
  std::string DebugString() const override;

 private:
  struct Attempt;
  Status CheckElement(const Tuple& element, std::string_view what) const;
  // Runs pending attempts while they make progress, adding the callbacks to run once the
  // lock is released.
  void FlushLocked(std::vector<std::function<void()>>* callbacks);
  // The callback that ends enqueue `a` with `s`, to run outside the lock.
  static std::function<void()> FinishEnqueue(Attempt& a, Status s);
  Status ClosedError() const;  // "FIFOQueue 'q' is closed."
  bool TryEnqueueLocked(Attempt& a);
  bool TryDequeueLocked(Attempt& a, std::vector<std::function<void()>>* done);
  StatusOr<Tuple> Batch(std::vector<Tuple> elements) const;
  void Add(Attempt attempt, CancellationManager* cancellation);
  void Cancel(int64_t id);
  std::string KindName() const;

  const Options options_;
  mutable std::mutex mu_;
  bool closed_ = false;                // guarded by mu_
  std::deque<Tuple> elements_;         // guarded by mu_
  std::list<Attempt> enqueues_;        // guarded by mu_: in arrival order
  std::list<Attempt> dequeues_;        // guarded by mu_: in arrival order
  int64_t next_id_ = 0;                // guarded by mu_
  std::mt19937_64 rng_;                // guarded by mu_
};

}  // namespace tessera
