#include "kernels/resources/conditional_accumulator.h"

#include <algorithm>

namespace tessera {
namespace {

template <typename T>
void AddInto(Tensor& sum, const Tensor& value) {
  T* s = sum.data<T>();
  const T* v = value.data<T>();
  const int64_t n = sum.NumElements();
  for (int64_t i = 0; i < n; ++i) s[i] += v[i];
}

template <typename T>
void DivideBy(Tensor& t, int64_t count) {
  T* p = t.data<T>();
  const T divisor = static_cast<T>(count);
  const int64_t n = t.NumElements();
  for (int64_t i = 0; i < n; ++i) p[i] /= divisor;
}

const char* ReductionName(ConditionalAccumulator::Reduction r) {
  return r == ConditionalAccumulator::Reduction::kMean ? "MEAN" : "SUM";
}

}  // namespace

Status ConditionalAccumulator::Validate(const Options& o) {
  if (o.dtype != DataType::kFloat && o.dtype != DataType::kDouble) {
    return errors::InvalidArgument("ConditionalAccumulator '", o.name, "' accumulates float32 or float64, not ",
                                   DataTypeName(o.dtype));
  }
  return Status::OK();
}

ConditionalAccumulator::ConditionalAccumulator(Options options) : options_(std::move(options)) {}

ConditionalAccumulator::~ConditionalAccumulator() {
  // Resetting a container can drop an accumulator that still has takers; they fail rather
  // than hang.
  for (Taker& t : takers_) {
    if (t.cancellation != nullptr) t.cancellation->DeregisterCallback(t.token);
    t.done(errors::Cancelled(DebugString(), " was destroyed"), Tensor());
  }
}

std::string ConditionalAccumulator::DebugString() const {
  return StrCat("ConditionalAccumulator '", options_.name, "'");
}

Status ConditionalAccumulator::CheckCompatible(const Options& r) const {
  const Options& o = options_;
  if (r.dtype != o.dtype || !(r.shape == o.shape) || r.reduction != o.reduction) {
    return errors::InvalidArgument("Shared ", DebugString(), " accumulates ", DataTypeName(o.dtype), " ",
                                   o.shape.DebugString(), " by ", ReductionName(o.reduction), " but ",
                                   DataTypeName(r.dtype), " ", r.shape.DebugString(), " by ",
                                   ReductionName(r.reduction), " was requested");
  }
  return Status::OK();
}

Status ConditionalAccumulator::ApplyGradient(int64_t local_step, const Tensor& gradient) {
  if (gradient.dtype() != options_.dtype) {
    return errors::InvalidArgument(DebugString(), " accumulates ", DataTypeName(options_.dtype), ", got a ",
                                   DataTypeName(gradient.dtype()), " gradient");
  }
  if (!options_.shape.IsCompatibleWith(gradient.shape())) {
    return errors::InvalidArgument(DebugString(), " accumulates gradients of shape ", options_.shape.DebugString(),
                                   ", got ", gradient.shape().DebugString());
  }
  std::vector<std::function<void()>> callbacks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (local_step < global_step_) {
      ++dropped_;
      return Status::OK();
    }
    if (count_ == 0) {
      // A copy of its own: the caller's tensor may be a view of a variable that moves on.
      sum_ = gradient.DeepCopy();
    } else {
      if (!(sum_.shape() == gradient.shape())) {
        return errors::InvalidArgument(DebugString(), " holds gradients of shape ", sum_.shape().DebugString(),
                                       " since its last take, got ", gradient.shape().DebugString());
      }
      if (options_.dtype == DataType::kFloat) AddInto<float>(sum_, gradient);
      else AddInto<double>(sum_, gradient);
    }
    ++count_;
    FlushLocked(&callbacks);
  }
  for (auto& cb : callbacks) cb();
  return Status::OK();
}

void ConditionalAccumulator::FlushLocked(std::vector<std::function<void()>>* callbacks) {
  while (!takers_.empty() && count_ >= takers_.front().num_required) {
    Taker t = std::move(takers_.front());
    takers_.pop_front();
    Tensor result = std::move(sum_);
    if (options_.reduction == Reduction::kMean) {
      if (options_.dtype == DataType::kFloat) DivideBy<float>(result, count_);
      else DivideBy<double>(result, count_);
    }
    sum_ = Tensor();
    count_ = 0;
    ++global_step_;
    callbacks->push_back([t = std::move(t), result = std::move(result)]() mutable {
      if (t.cancellation != nullptr) t.cancellation->DeregisterCallback(t.token);
      t.done(Status::OK(), std::move(result));
    });
  }
}

void ConditionalAccumulator::TakeGradient(int64_t num_required, CancellationManager* cancellation,
                                          TakeCallback done) {
  if (num_required < 1) {
    done(errors::InvalidArgument("Argument num_required of a take from ", DebugString(),
                                 " must be positive, but was ", num_required),
         Tensor());
    return;
  }
  int64_t id = 0;
  CancellationManager::Token token = cancellation != nullptr ? cancellation->NewToken() : 0;
  std::vector<std::function<void()>> callbacks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    id = next_id_++;
    takers_.push_back({id, num_required, cancellation, token, std::move(done)});
    FlushLocked(&callbacks);
  }
  // Registered after the taker is queued (a cancel finding nothing is harmless) and before
  // any callback runs (the step, and its CancellationManager, may end with one).
  if (cancellation != nullptr) {
    std::weak_ptr<ConditionalAccumulator> weak = weak_from_this();
    if (!cancellation->RegisterCallback(token, [weak, id] {
          if (auto acc = weak.lock()) acc->Cancel(id);
        })) {
      Cancel(id);
    }
  }
  for (auto& cb : callbacks) cb();
}

void ConditionalAccumulator::Cancel(int64_t id) {
  TakeCallback done;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = std::find_if(takers_.begin(), takers_.end(), [id](const Taker& t) { return t.id == id; });
    if (it == takers_.end()) return;
    done = std::move(it->done);
    takers_.erase(it);
  }
  done(errors::Cancelled("Take from ", DebugString(), " was cancelled"), Tensor());
}

void ConditionalAccumulator::SetGlobalStep(int64_t step) {
  std::lock_guard<std::mutex> lock(mu_);
  global_step_ = step;
}

int64_t ConditionalAccumulator::num_accumulated() const {
  std::lock_guard<std::mutex> lock(mu_);
  return count_;
}

int64_t ConditionalAccumulator::global_step() const {
  std::lock_guard<std::mutex> lock(mu_);
  return global_step_;
}

int64_t ConditionalAccumulator::dropped() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dropped_;
}

}  // namespace tessera
