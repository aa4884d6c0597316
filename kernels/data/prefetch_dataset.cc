// PrefetchDataset: a background thread runs the input pipeline ahead of the consumer,
// keeping up to buffer_size elements ready.
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "kernels/data/data_kernels.h"
#include "kernels/data/dataset_op_kernel.h"

namespace tessera::data {
namespace {

using Element = std::vector<Tensor>;

class PrefetchDataset : public Dataset {
 public:
  PrefetchDataset(DatasetPtr input, int64_t buffer_size)
      : Dataset("PrefetchDataset", input->output_dtypes(), input->output_shapes()),
        input_(std::move(input)),
        buffer_size_(buffer_size) {}
  StatusOr<std::unique_ptr<DatasetIterator>> MakeIterator(const IteratorEnv& env) const override {
    ASSIGN_OR_RETURN(auto in, input_->MakeIterator(env));
    return std::unique_ptr<DatasetIterator>(std::make_unique<Iterator>(buffer_size_, std::move(in)));
  }

 private:
  // The producer thread starts with the first GetNext, so an iterator that is made and
  // dropped (a re-run initializer) costs no thread.
  class Iterator : public DatasetIterator {
   public:
    Iterator(int64_t buffer_size, std::unique_ptr<DatasetIterator> in)
        : buffer_size_(buffer_size), in_(std::move(in)) {}
    ~Iterator() override {
      {
        std::lock_guard<std::mutex> lock(mu_);
        cancelled_ = true;
      }
      cv_.notify_all();
      // Stops an input that is inside a long loop (a large batch) between two elements.
      producer_cancellation_.StartCancel();
      if (producer_.joinable()) producer_.join();
    }

    Status GetNext(const IteratorContext& ctx, Element* out, bool* end) override {
      std::unique_lock<std::mutex> lock(mu_);
      if (!producer_.joinable()) producer_ = std::thread([this] { Produce(); });
      // Looks at the asker's cancellation every 10 ms: a producer that takes long (a large
      // batch) must not hold the step past its deadline.
      while (buffer_.empty() && !input_done_) {
        RETURN_IF_ERROR(ctx.CheckCancelled());
        cv_.wait_for(lock, std::chrono::milliseconds(10));
      }
      if (buffer_.empty()) {
        *end = true;
        return Status::OK();
      }
      Slot slot = std::move(buffer_.front());
      buffer_.pop_front();
      lock.unlock();
      cv_.notify_all();
      if (!slot.status.ok()) return slot.status;
      *out = std::move(slot.element);
      return Status::OK();
    }

   private:
    struct Slot {
      Status status;
      Element element;
    };

    void Produce() {
      while (true) {
        {
          std::unique_lock<std::mutex> lock(mu_);
          cv_.wait(lock, [this] { return cancelled_ || static_cast<int64_t>(buffer_.size()) < buffer_size_; });
          if (cancelled_) return;
        }
        // The input runs outside the lock, so the consumer takes ready elements meanwhile.
        Slot slot;
        bool end = false;
        slot.status = in_->GetNext(IteratorContext{&producer_cancellation_}, &slot.element, &end);
        {
          std::lock_guard<std::mutex> lock(mu_);
          if (end && slot.status.ok()) {
            input_done_ = true;
          } else {
            buffer_.push_back(std::move(slot));
          }
        }
        cv_.notify_all();
        if (end) return;
      }
    }

    const int64_t buffer_size_;
    std::unique_ptr<DatasetIterator> in_;  // used by the producer thread only
    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<Slot> buffer_;  // guarded by mu_
    bool input_done_ = false;  // guarded by mu_
    bool cancelled_ = false;   // guarded by mu_
    CancellationManager producer_cancellation_;  // cancelled when the iterator goes
    std::thread producer_;                       // started and joined by the consumer
  };

  DatasetPtr input_;
  int64_t buffer_size_;
};

// tf.data.AUTOTUNE (-1) asks the runtime to choose; Tessera keeps two elements ready, enough
// to hide one step's input behind the step before it.
constexpr int64_t kAutotuneBufferSize = 2;

class PrefetchDatasetOp : public DatasetOpKernel {
 public:
  using DatasetOpKernel::DatasetOpKernel;
  StatusOr<DatasetPtr> MakeDataset(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(DatasetPtr input, InputDataset(ctx, 0));
    ASSIGN_OR_RETURN(int64_t buffer_size, ScalarInt64(ctx, 1, "buffer_size"));
    if (buffer_size == -1) buffer_size = kAutotuneBufferSize;
    if (buffer_size < 0) return errors::InvalidArgument("buffer_size must be >= 0 or -1 (AUTOTUNE), got ", buffer_size);
    // A buffer of zero prefetches nothing: the input itself is the dataset.
    if (buffer_size == 0) return input;
    return DatasetPtr(std::make_shared<PrefetchDataset>(std::move(input), buffer_size));
  }
};

}  // namespace

void RegisterPrefetchDatasetKernels(KernelRegistry& r) {
  r.Register<PrefetchDatasetOp>(KernelDefBuilder("PrefetchDataset").Device(kDeviceCpu));
}

}  // namespace tessera::data
