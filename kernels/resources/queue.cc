#include "kernels/resources/queue.h"

#include <algorithm>
#include <cstring>

#include "kernels/util/batch_util.h"

namespace tessera {

struct Queue::Attempt {
  int64_t id = 0;
  CancellationManager* cancellation = nullptr;
  CancellationManager::Token token = 0;
  // An enqueue: the elements still to add.
  std::deque<Tuple> pending;
  DoneCallback enqueue_done;
  // A dequeue.
  int64_t n = 1;
  DequeueMode mode = kOne;
  DequeueCallback dequeue_done;
};

namespace {

bool Compatible(const TensorShape& want, const TensorShape& got) { return want.IsCompatibleWith(got); }

}  // namespace

Status Queue::Validate(const Options& o) {
  if (o.dtypes.empty()) return errors::InvalidArgument("A queue needs at least one component type");
  for (DataType dt : o.dtypes) {
    if (dt == DataType::kVariant || dt == DataType::kInvalid) {
      return errors::Unimplemented("Queue '", o.name, "' cannot hold ", DataTypeName(dt), " components");
    }
  }
  if (!o.shapes.empty() && o.shapes.size() != o.dtypes.size()) {
    return errors::InvalidArgument("Queue '", o.name, "' has ", o.dtypes.size(), " component types but ",
                                   o.shapes.size(), " shapes");
  }
  for (size_t i = 0; i < o.shapes.size(); ++i) {
    if (o.kind != Kind::kPaddingFifo && !o.shapes[i].IsFullyDefined()) {
      return errors::InvalidArgument("Queue '", o.name, "': shape ", o.shapes[i].DebugString(), " of component ", i,
                                     " is not fully defined; only a PaddingFIFOQueue takes unknown dimensions");
    }
  }
  if (o.kind == Kind::kPaddingFifo && o.shapes.size() != o.dtypes.size()) {
    return errors::InvalidArgument("PaddingFIFOQueue '", o.name, "' needs a shape for every component");
  }
  if (o.capacity == 0 || o.capacity < -1) {
    return errors::InvalidArgument("Queue '", o.name, "' capacity must be positive or -1, got ", o.capacity);
  }
  if (o.min_after_dequeue < 0) return errors::InvalidArgument("min_after_dequeue must be >= 0");
  return Status::OK();
}

Queue::Queue(Options options) : options_(std::move(options)) {
  if (options_.seed == 0 && options_.seed2 == 0) {
    rng_.seed(std::random_device{}());
  } else {
    rng_.seed(static_cast<uint64_t>(options_.seed) * 0x9E3779B97F4A7C15ULL ^ static_cast<uint64_t>(options_.seed2));
  }
}

Queue::~Queue() {
  // Resetting a container can drop a queue that still has waiters; they fail rather than hang.
  Status gone = errors::Cancelled(KindName(), " '", options_.name, "' was destroyed");
  for (Attempt& a : enqueues_) {
    if (a.cancellation != nullptr) a.cancellation->DeregisterCallback(a.token);
    a.enqueue_done(gone);
  }
  for (Attempt& a : dequeues_) {
    if (a.cancellation != nullptr) a.cancellation->DeregisterCallback(a.token);
    a.dequeue_done(gone, {});
  }
}

std::string Queue::KindName() const {
  switch (options_.kind) {
    case Kind::kFifo: return "FIFOQueue";
    case Kind::kRandomShuffle: return "RandomShuffleQueue";
    case Kind::kPaddingFifo: return "PaddingFIFOQueue";
  }
  return "Queue";
}

std::string Queue::DebugString() const { return StrCat(KindName(), " '", options_.name, "'"); }

std::function<void()> Queue::FinishEnqueue(Attempt& a, Status s) {
  return [cm = a.cancellation, token = a.token, done = std::move(a.enqueue_done), s] {
    if (cm != nullptr) cm->DeregisterCallback(token);
    done(s);
  };
}

Status Queue::ClosedError() const { return errors::Cancelled(KindName(), " '", options_.name, "' is closed."); }

Status Queue::CheckCompatible(const Options& r) const {
  const Options& o = options_;
  const std::string who = StrCat("Shared queue '", o.name, "'");
  if (r.kind != o.kind) return errors::InvalidArgument(who, " is a ", KindName(), ", not the kind requested");
  if (r.capacity != o.capacity) {
    return errors::InvalidArgument(who, " has capacity ", o.capacity, " but requested capacity was ", r.capacity);
  }
  if (r.dtypes != o.dtypes) {
    auto names = [](const std::vector<DataType>& v) {
      std::string s;
      for (DataType t : v) s += StrCat(s.empty() ? "" : ", ", DataTypeName(t));
      return s;
    };
    return errors::InvalidArgument(who, " has component types ", names(o.dtypes),
                                   " but requested component types were ", names(r.dtypes));
  }
  if (r.shapes != o.shapes) {
    auto names = [](const std::vector<TensorShape>& v) {
      std::string s;
      for (const TensorShape& t : v) s += StrCat(s.empty() ? "" : ", ", t.DebugString());
      return s;
    };
    return errors::InvalidArgument(who, " has component shapes ", names(o.shapes),
                                   " but requested component shapes were ", names(r.shapes));
  }
  if (r.min_after_dequeue != o.min_after_dequeue) {
    return errors::InvalidArgument(who, " has min_after_dequeue ", o.min_after_dequeue,
                                   " but requested min_after_dequeue was ", r.min_after_dequeue);
  }
  return Status::OK();
}

Status Queue::CheckElement(const Tuple& element, std::string_view what) const {
  if (element.size() != options_.dtypes.size()) {
    return errors::InvalidArgument("Wrong number of components in tuple. Expected ", options_.dtypes.size(),
                                   ", got ", element.size());
  }
  for (size_t i = 0; i < element.size(); ++i) {
    if (element[i].dtype() != options_.dtypes[i]) {
      return errors::InvalidArgument("Type mismatch in tuple component ", i, ". Expected ",
                                     DataTypeName(options_.dtypes[i]), ", got ", DataTypeName(element[i].dtype()));
    }
    if (!options_.shapes.empty() && !Compatible(options_.shapes[i], element[i].shape())) {
      return errors::InvalidArgument("Shape mismatch in tuple component ", i, ". Expected ",
                                     options_.shapes[i].DebugString(), ", got ", element[i].shape().DebugString(),
                                     what);
    }
  }
  return Status::OK();
}

void Queue::Enqueue(Tuple element, CancellationManager* cancellation, DoneCallback done) {
  Status s = CheckElement(element, "");
  if (!s.ok()) {
    done(s);
    return;
  }
  Attempt a;
  a.pending.push_back(std::move(element));
  a.enqueue_done = std::move(done);
  Add(std::move(a), cancellation);
}

void Queue::EnqueueMany(Tuple batch, CancellationManager* cancellation, DoneCallback done) {
  if (batch.size() != options_.dtypes.size()) {
    done(errors::InvalidArgument("Wrong number of components in tuple. Expected ", options_.dtypes.size(),
                                 ", got ", batch.size()));
    return;
  }
  int64_t rows = -1;
  for (size_t i = 0; i < batch.size(); ++i) {
    if (batch[i].rank() == 0) {
      done(errors::InvalidArgument("EnqueueMany needs a batch dimension: component ", i, " is a scalar"));
      return;
    }
    if (rows >= 0 && batch[i].dim(0) != rows) {
      done(errors::InvalidArgument("EnqueueMany components have different batch sizes: ", rows, " and ",
                                   batch[i].dim(0), " (component ", i, ")"));
      return;
    }
    rows = batch[i].dim(0);
  }
  Attempt a;
  for (int64_t r = 0; r < rows; ++r) {
    Tuple element;
    for (const Tensor& t : batch) {
      TensorShape row_shape;
      for (int d = 1; d < t.rank(); ++d) row_shape.AddDim(t.dim(d));
      element.push_back(*t.Slice(r, r + 1).Reshaped(row_shape));
    }
    Status s = CheckElement(element, StrCat(" (row ", r, " of the batch)"));
    if (!s.ok()) {
      done(s);
      return;
    }
    a.pending.push_back(std::move(element));
  }
  a.enqueue_done = std::move(done);
  Add(std::move(a), cancellation);
}

void Queue::Dequeue(int64_t n, DequeueMode mode, CancellationManager* cancellation, DequeueCallback done) {
  if (n < 0) {
    done(errors::InvalidArgument("Dequeue of ", n, " elements: the count must be >= 0"), {});
    return;
  }
  Attempt a;
  a.n = mode == kOne ? 1 : n;
  a.mode = mode;
  a.dequeue_done = std::move(done);
  Add(std::move(a), cancellation);
}

void Queue::Add(Attempt attempt, CancellationManager* cancellation) {
  const bool is_enqueue = attempt.enqueue_done != nullptr;
  attempt.cancellation = cancellation;
  if (cancellation != nullptr) attempt.token = cancellation->NewToken();
  const CancellationManager::Token token = attempt.token;
  int64_t id = 0;
  bool queued = false;
  std::vector<std::function<void()>> callbacks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (is_enqueue && closed_) {
      callbacks.push_back(FinishEnqueue(attempt, ClosedError()));
    } else {
      id = attempt.id = next_id_++;
      queued = true;
      (is_enqueue ? enqueues_ : dequeues_).push_back(std::move(attempt));
      FlushLocked(&callbacks);
    }
  }
  // Registered after the attempt is queued (a cancel finding nothing is harmless) and
  // before any callback runs (the step, and its CancellationManager, may end with one).
  if (cancellation != nullptr && queued) {
    std::weak_ptr<Queue> weak = weak_from_this();
    if (!cancellation->RegisterCallback(token, [weak, id] {
          if (auto q = weak.lock()) q->Cancel(id);
        })) {
      Cancel(id);
    }
  }
  for (auto& cb : callbacks) cb();
}

void Queue::Cancel(int64_t id) {
  std::vector<std::function<void()>> callbacks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto* list : {&enqueues_, &dequeues_}) {
      auto it = std::find_if(list->begin(), list->end(), [id](const Attempt& a) { return a.id == id; });
      if (it == list->end()) continue;
      if (it->enqueue_done) {
        callbacks.push_back([done = std::move(it->enqueue_done)] { done(errors::Cancelled("Enqueue operation was cancelled")); });
      } else {
        callbacks.push_back([done = std::move(it->dequeue_done)] { done(errors::Cancelled("Dequeue operation was cancelled"), {}); });
      }
      list->erase(it);
      // A dequeue that was first in line may have held back smaller ones behind it.
      FlushLocked(&callbacks);
      break;
    }
  }
  for (auto& cb : callbacks) cb();
}

void Queue::Close(bool cancel_pending_enqueues) {
  std::vector<std::function<void()>> callbacks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    if (cancel_pending_enqueues) {
      for (Attempt& a : enqueues_) callbacks.push_back(FinishEnqueue(a, ClosedError()));
      enqueues_.clear();
    }
    FlushLocked(&callbacks);
  }
  for (auto& cb : callbacks) cb();
}

int64_t Queue::Size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(elements_.size());
}

void Queue::FlushLocked(std::vector<std::function<void()>>* callbacks) {
  bool progress = true;
  while (progress) {
    progress = false;
    while (!enqueues_.empty()) {
      Attempt& a = enqueues_.front();
      size_t before = a.pending.size();
      bool done = TryEnqueueLocked(a);
      progress |= a.pending.size() != before;
      if (!done) break;
      callbacks->push_back(FinishEnqueue(a, Status::OK()));
      enqueues_.pop_front();
      progress = true;
    }
    while (!dequeues_.empty() && TryDequeueLocked(dequeues_.front(), callbacks)) {
      dequeues_.pop_front();
      progress = true;
    }
  }
}

bool Queue::TryEnqueueLocked(Attempt& a) {
  while (!a.pending.empty() && (options_.capacity < 0 || static_cast<int64_t>(elements_.size()) < options_.capacity)) {
    elements_.push_back(std::move(a.pending.front()));
    a.pending.pop_front();
  }
  return a.pending.empty();
}

bool Queue::TryDequeueLocked(Attempt& a, std::vector<std::function<void()>>* callbacks) {
  const int64_t size = static_cast<int64_t>(elements_.size());
  const int64_t held_back = options_.kind == Kind::kRandomShuffle && !closed_ ? options_.min_after_dequeue : 0;
  int64_t take = -1;
  if (size - held_back >= a.n) {
    take = a.n;
  } else if (closed_) {
    if (a.mode == kUpTo && size > 0) {
      take = size;
    } else {
      Status s = errors::OutOfRange(KindName(), " '", options_.name, "' is closed and has insufficient elements (requested ",
                                    a.n, ", current size ", size, ")");
      callbacks->push_back([cm = a.cancellation, token = a.token, done = std::move(a.dequeue_done), s] {
        if (cm != nullptr) cm->DeregisterCallback(token);
        done(s, {});
      });
      return true;
    }
  } else {
    return false;
  }
  std::vector<Tuple> taken;
  for (int64_t i = 0; i < take; ++i) {
    if (options_.kind == Kind::kRandomShuffle) {
      std::uniform_int_distribution<size_t> pick(0, elements_.size() - 1);
      std::swap(elements_[pick(rng_)], elements_.back());
      taken.push_back(std::move(elements_.back()));
      elements_.pop_back();
    } else {
      taken.push_back(std::move(elements_.front()));
      elements_.pop_front();
    }
  }
  // Batching copies: done outside the lock, by the callback.
  callbacks->push_back([this, self = shared_from_this(), cm = a.cancellation, token = a.token,
                        done = std::move(a.dequeue_done), mode = a.mode, taken = std::move(taken)]() mutable {
    if (cm != nullptr) cm->DeregisterCallback(token);
    if (mode == kOne) {
      done(Status::OK(), std::move(taken.front()));
      return;
    }
    StatusOr<Tuple> batch = Batch(std::move(taken));
    if (batch.ok()) {
      done(Status::OK(), std::move(*batch));
    } else {
      done(batch.status(), {});
    }
  });
  return true;
}

StatusOr<Queue::Tuple> Queue::Batch(std::vector<Tuple> elements) const {
  Tuple batch;
  const int64_t k = static_cast<int64_t>(elements.size());
  for (size_t c = 0; c < options_.dtypes.size(); ++c) {
    TensorShape row;
    if (k == 0) {
      if (options_.shapes.empty() || !options_.shapes[c].IsFullyDefined()) {
        return errors::InvalidArgument(KindName(), " '", options_.name,
                                       "': a batch of zero elements needs fully defined component shapes");
      }
      row = options_.shapes[c];
    } else {
      row = elements[0][c].shape();
      for (int64_t i = 1; i < k; ++i) {
        const TensorShape& s = elements[i][c].shape();
        if (options_.kind == Kind::kPaddingFifo && s.rank() == row.rank()) {
          for (int d = 0; d < row.rank(); ++d) row.set_dim(d, std::max(row.dim(d), s.dim(d)));
        } else if (s != row) {
          return errors::InvalidArgument("Shape mismatch in tuple component ", c, ": dequeuing a batch of elements of "
                                         "shapes ", row.DebugString(), " and ", s.DebugString(),
                                         " needs a PaddingFIFOQueue");
        }
      }
    }
    TensorShape shape({k});
    for (int d = 0; d < row.rank(); ++d) shape.AddDim(row.dim(d));
    ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(CpuAllocator(), options_.dtypes[c], shape));
    if (!DataTypeHoldsStrings(t.dtype())) std::memset(t.raw_data(), 0, t.TotalBytes());
    for (int64_t i = 0; i < k; ++i) CopyElementIntoBatch(elements[i][c], i, &t);
    batch.push_back(std::move(t));
  }
  return batch;
}

}  // namespace tessera
