// Datasets that run a function per element: MapDataset and ParallelMapDataset (f, which may
// end the dataset by failing with OutOfRange), FilterDataset (predicate) and
// InterleaveDataset (f returns a dataset).
#include <condition_variable>
#include <deque>
#include <mutex>
#include <utility>

#include "kernels/data/data_kernels.h"
#include "kernels/data/dataset_op_kernel.h"

namespace tessera::data {
namespace {

using Element = std::vector<Tensor>;
using FunctionPtr = std::shared_ptr<const InstantiatedFunction>;

Status CheckArgs(const Dataset& input, const InstantiatedFunction& f, std::string_view who) {
  if (f.arg_types() != input.output_dtypes()) {
    return errors::InvalidArgument(who, " takes arguments of types ", DataTypesString(f.arg_types()),
                                   ", but the input ", input.type(), " gives elements of types ",
                                   DataTypesString(input.output_dtypes()));
  }
  return Status::OK();
}

class MapDataset : public Dataset {
 public:
  MapDataset(DatasetPtr input, FunctionPtr f, int parallelism)
      : Dataset("MapDataset", f->signature().ret_types, f->signature().ret_shapes),
        input_(std::move(input)),
        f_(std::move(f)),
        parallelism_(parallelism) {}
  StatusOr<std::unique_ptr<DatasetIterator>> MakeIterator(const IteratorEnv& env) const override {
    ASSIGN_OR_RETURN(auto in, input_->MakeIterator(env));
    return std::unique_ptr<DatasetIterator>(std::make_unique<Iterator>(*this, env.intra_op_pool, std::move(in)));
  }

 private:
  // Keeps calls of f in flight, up to kWindow per unit of parallelism, and hands out their
  // results in input order. Up to parallelism - 1 pool workers take calls in order while any
  // are waiting, and the consumer runs its next call itself when no worker has started it,
  // so a cheap f costs no thread hand-off per element.
  static constexpr int kWindow = 4;

  class Iterator : public DatasetIterator {
   public:
    Iterator(const MapDataset& ds, ThreadPool* pool, std::unique_ptr<DatasetIterator> in)
        : ds_(ds), pool_(pool), in_(std::move(in)), pending_(std::make_shared<Pending>()) {}
    ~Iterator() override {
      for (const auto& call : calls_) {
        if (call->TryStart()) {
          call->Finish(errors::Cancelled("The iterator was destroyed"), {});
        } else {
          call->Wait();
        }
      }
    }

    Status GetNext(const IteratorContext& ctx, Element* out, bool* end) override {
      const bool parallel = ds_.parallelism_ > 1 && pool_ != nullptr;
      const size_t window = parallel ? static_cast<size_t>(ds_.parallelism_) * kWindow : 1;
      while (!in_end_ && calls_.size() < window) {
        auto call = std::make_shared<Call>();
        Status s = in_->GetNext(ctx, &call->args, &in_end_);
        if (s.ok() && in_end_) break;
        calls_.push_back(call);
        if (!s.ok()) {
          call->TryStart();
          call->Finish(s, {});
        } else if (parallel) {
          Offer(std::move(call));
        }
      }
      if (calls_.empty()) {
        *end = true;
        return Status::OK();
      }
      std::shared_ptr<Call> call = std::move(calls_.front());
      calls_.pop_front();
      if (call->TryStart()) {
        Run(*ds_.f_, *call);
      } else {
        call->Wait();
      }
      if (call->status.code() == Code::kOutOfRange) {
        // f may end the dataset early, as TensorFlow lets it (a generator's StopIteration).
        in_end_ = true;
        for (const auto& later : calls_) {
          if (later->TryStart()) later->Finish(errors::Cancelled("The dataset ended before this element"), {});
        }
        calls_.clear();
        *end = true;
        return Status::OK();
      }
      if (!call->status.ok()) return call->status;
      *out = std::move(call->result);
      return Status::OK();
    }

   private:
    // One element's call of f, run by whichever thread starts it first.
    struct Call {
      Element args;
      std::mutex mu;
      std::condition_variable cv;
      bool started = false;  // guarded by mu
      bool done = false;     // guarded by mu; status and result are written before it is set
      Status status;
      Element result;
      bool TryStart() {
        std::lock_guard<std::mutex> lock(mu);
        return !std::exchange(started, true);
      }
      void Finish(Status s, Element r) {
        std::lock_guard<std::mutex> lock(mu);
        status = std::move(s);
        result = std::move(r);
        done = true;
        cv.notify_all();
      }
      void Wait() {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [this] { return done; });
      }
    };
    // Calls not yet taken by a worker, shared with the workers, which may outlive the
    // iterator by a moment.
    struct Pending {
      std::mutex mu;
      std::deque<std::shared_ptr<Call>> calls;  // guarded by mu
      int workers = 0;                           // guarded by mu
    };

    void Offer(std::shared_ptr<Call> call) {
      {
        std::lock_guard<std::mutex> lock(pending_->mu);
        pending_->calls.push_back(std::move(call));
        if (pending_->workers >= ds_.parallelism_ - 1) return;
        ++pending_->workers;
      }
      pool_->Schedule([f = ds_.f_, pending = pending_] {
        while (true) {
          std::shared_ptr<Call> next;
          {
            std::lock_guard<std::mutex> lock(pending->mu);
            if (pending->calls.empty()) {
              --pending->workers;
              return;
            }
            next = std::move(pending->calls.front());
            pending->calls.pop_front();
          }
          if (next->TryStart()) Run(*f, *next);
        }
      });
    }
    static void Run(const InstantiatedFunction& f, Call& call) {
      Element rets;
      Status s = f.Run(std::move(call.args), &rets);
      call.Finish(s.WithPrefix("In the function of a MapDataset: "), std::move(rets));
    }

    const MapDataset& ds_;
    ThreadPool* pool_;
    std::unique_ptr<DatasetIterator> in_;
    bool in_end_ = false;
    std::deque<std::shared_ptr<Call>> calls_;  // in input order
    std::shared_ptr<Pending> pending_;
  };

  DatasetPtr input_;
  FunctionPtr f_;
  int parallelism_;
};

class FilterDataset : public Dataset {
 public:
  FilterDataset(DatasetPtr input, FunctionPtr predicate)
      : Dataset("FilterDataset", input->output_dtypes(), input->output_shapes()),
        input_(std::move(input)),
        predicate_(std::move(predicate)) {}
  StatusOr<std::unique_ptr<DatasetIterator>> MakeIterator(const IteratorEnv& env) const override {
    ASSIGN_OR_RETURN(auto in, input_->MakeIterator(env));
    return std::unique_ptr<DatasetIterator>(std::make_unique<Iterator>(*this, std::move(in)));
  }

 private:
  class Iterator : public DatasetIterator {
   public:
    Iterator(const FilterDataset& ds, std::unique_ptr<DatasetIterator> in) : ds_(ds), in_(std::move(in)) {}
    Status GetNext(const IteratorContext& ctx, Element* out, bool* end) override {
      while (true) {
        RETURN_IF_ERROR(ctx.CheckCancelled());
        out->clear();
        RETURN_IF_ERROR(in_->GetNext(ctx, out, end));
        if (*end) return Status::OK();
        Element rets;
        Status s = ds_.predicate_->Run(*out, &rets);
        if (!s.ok()) return s.WithPrefix("In the predicate of a FilterDataset: ");
        if (rets.size() != 1 || rets[0].dtype() != DataType::kBool || rets[0].NumElements() != 1) {
          return errors::InvalidArgument("The predicate of a FilterDataset must return a scalar bool");
        }
        if (rets[0].data<bool>()[0]) return Status::OK();
      }
    }

   private:
    const FilterDataset& ds_;
    std::unique_ptr<DatasetIterator> in_;
  };

  DatasetPtr input_;
  FunctionPtr predicate_;
};

// Opens up to cycle_length of f's datasets at once and takes block_length elements from
// each in turn; a finished one is replaced by the dataset of the next input element (the
// order of TensorFlow's InterleaveDataset).
class InterleaveDataset : public Dataset {
 public:
  InterleaveDataset(DatasetPtr input, FunctionPtr f, std::vector<DataType> dtypes, std::vector<TensorShape> shapes,
                    int64_t cycle_length, int64_t block_length)
      : Dataset("InterleaveDataset", std::move(dtypes), std::move(shapes)),
        input_(std::move(input)),
        f_(std::move(f)),
        cycle_length_(cycle_length),
        block_length_(block_length) {}
  StatusOr<std::unique_ptr<DatasetIterator>> MakeIterator(const IteratorEnv& env) const override {
    ASSIGN_OR_RETURN(auto in, input_->MakeIterator(env));
    return std::unique_ptr<DatasetIterator>(std::make_unique<Iterator>(*this, env, std::move(in)));
  }

 private:
  class Iterator : public DatasetIterator {
   public:
    Iterator(const InterleaveDataset& ds, IteratorEnv env, std::unique_ptr<DatasetIterator> in)
        : ds_(ds), env_(env), in_(std::move(in)), cycle_(ds.cycle_length_) {}

    Status GetNext(const IteratorContext& ctx, Element* out, bool* end) override {
      while (!in_end_ || open_ > 0) {
        RETURN_IF_ERROR(ctx.CheckCancelled());
        Open& slot = cycle_[index_];
        if (slot.iterator != nullptr) {
          bool slot_end = false;
          RETURN_IF_ERROR(slot.iterator->GetNext(ctx, out, &slot_end));
          if (!slot_end) {
            if (++block_ == ds_.block_length_) NextInCycle();
            return Status::OK();
          }
          slot = Open{};
          --open_;
          NextInCycle();
        } else if (!in_end_) {
          Element args;
          RETURN_IF_ERROR(in_->GetNext(ctx, &args, &in_end_));
          if (!in_end_) {
            RETURN_IF_ERROR(OpenSlot(std::move(args), &slot));
            ++open_;
          }
        } else {
          NextInCycle();
        }
      }
      *end = true;
      return Status::OK();
    }

   private:
    struct Open {
      DatasetPtr dataset;  // keeps the iterator's dataset alive
      std::unique_ptr<DatasetIterator> iterator;
    };
    void NextInCycle() {
      block_ = 0;
      index_ = (index_ + 1) % cycle_.size();
    }
    Status OpenSlot(Element args, Open* slot) {
      Element rets;
      Status s = ds_.f_->Run(std::move(args), &rets);
      if (!s.ok()) return s.WithPrefix("In the function of an InterleaveDataset: ");
      if (rets.size() != 1) return errors::InvalidArgument("The function of an InterleaveDataset must return a dataset");
      ASSIGN_OR_RETURN(DatasetPtr dataset, DatasetFromTensor(rets[0]));
      RETURN_IF_ERROR(CheckElementSpec(*dataset, ds_.output_dtypes(), ds_.output_shapes(),
                                       "The InterleaveDataset"));
      ASSIGN_OR_RETURN(slot->iterator, dataset->MakeIterator(env_));
      slot->dataset = std::move(dataset);
      return Status::OK();
    }

    const InterleaveDataset& ds_;
    IteratorEnv env_;
    std::unique_ptr<DatasetIterator> in_;
    bool in_end_ = false;
    std::vector<Open> cycle_;
    size_t index_ = 0;
    int64_t block_ = 0;
    int64_t open_ = 0;
  };

  DatasetPtr input_;
  FunctionPtr f_;
  int64_t cycle_length_;
  int64_t block_length_;
};

class MapDatasetOp : public DatasetOpKernel {
 public:
  explicit MapDatasetOp(OpKernelConstruction* c) : DatasetOpKernel(c) {
    Status s = c->GetAttr("f", &f_);
    if (!s.ok()) c->SetStatus(s);
  }
  StatusOr<DatasetPtr> MakeDataset(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(DatasetPtr input, InputDataset(ctx, 0));
    int parallelism = 1;
    if (ctx->num_inputs() > 1) {
      ASSIGN_OR_RETURN(int64_t n, ScalarInt64(ctx, 1, "num_parallel_calls"));
      // tf.data.AUTOTUNE: as many calls as the intra-op pool has threads.
      if (n == -1) n = ctx->intra_op_pool()->NumThreads();
      if (n < 1) return errors::InvalidArgument("num_parallel_calls must be positive or -1 (AUTOTUNE), got ", n);
      parallelism = static_cast<int>(std::min<int64_t>(n, 1024));
    }
    ASSIGN_OR_RETURN(FunctionPtr f, Instantiate(ctx, *f_, "f"));
    RETURN_IF_ERROR(CheckArgs(*input, *f, "The map function"));
    return DatasetPtr(std::make_shared<MapDataset>(std::move(input), std::move(f), parallelism));
  }

 private:
  std::shared_ptr<const FunctionDef> f_;
};

class FilterDatasetOp : public DatasetOpKernel {
 public:
  explicit FilterDatasetOp(OpKernelConstruction* c) : DatasetOpKernel(c) {
    Status s = c->GetAttr("predicate", &predicate_);
    if (!s.ok()) c->SetStatus(s);
  }
  StatusOr<DatasetPtr> MakeDataset(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(DatasetPtr input, InputDataset(ctx, 0));
    ASSIGN_OR_RETURN(FunctionPtr predicate, Instantiate(ctx, *predicate_, "predicate"));
    RETURN_IF_ERROR(CheckArgs(*input, *predicate, "The filter predicate"));
    const FunctionSignature& sig = predicate->signature();
    if (sig.ret_types != std::vector<DataType>{DataType::kBool} || !sig.ret_shapes[0].IsCompatibleWith(TensorShape())) {
      return errors::InvalidArgument("The predicate of a FilterDataset must return a scalar bool, it returns ",
                                     DataTypesString(sig.ret_types), " of shapes ", ShapesString(sig.ret_shapes));
    }
    return DatasetPtr(std::make_shared<FilterDataset>(std::move(input), std::move(predicate)));
  }

 private:
  std::shared_ptr<const FunctionDef> predicate_;
};

class InterleaveDatasetOp : public DatasetOpKernel {
 public:
  explicit InterleaveDatasetOp(OpKernelConstruction* c) : DatasetOpKernel(c) {
    Status s = c->GetAttr("f", &f_);
    if (!s.ok()) c->SetStatus(s);
  }
  StatusOr<DatasetPtr> MakeDataset(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(DatasetPtr input, InputDataset(ctx, 0));
    ASSIGN_OR_RETURN(int64_t cycle_length, ScalarInt64(ctx, 1, "cycle_length"));
    ASSIGN_OR_RETURN(int64_t block_length, ScalarInt64(ctx, 2, "block_length"));
    if (cycle_length == -1) cycle_length = ctx->intra_op_pool()->NumThreads();
    if (cycle_length < 1 || cycle_length > 4096) {
      return errors::InvalidArgument("cycle_length must be in [1, 4096] or -1 (AUTOTUNE), got ", cycle_length);
    }
    if (block_length < 1) return errors::InvalidArgument("block_length must be positive, got ", block_length);
    ASSIGN_OR_RETURN(FunctionPtr f, Instantiate(ctx, *f_, "f"));
    RETURN_IF_ERROR(CheckArgs(*input, *f, "The interleave function"));
    if (f->signature().ret_types != std::vector<DataType>{DataType::kVariant}) {
      return errors::InvalidArgument("The function of an InterleaveDataset must return one dataset");
    }
    // The element is what the node declares: f's datasets are only made as it runs.
    return DatasetPtr(std::make_shared<InterleaveDataset>(std::move(input), std::move(f), declared_dtypes(),
                                                          declared_shapes(), cycle_length, block_length));
  }

 private:
  std::shared_ptr<const FunctionDef> f_;
};

}  // namespace

void RegisterFunctionDatasetKernels(KernelRegistry& r) {
  r.Register<MapDatasetOp>(KernelDefBuilder("MapDataset").Device(kDeviceCpu));
  r.Register<MapDatasetOp>(KernelDefBuilder("ParallelMapDataset").Device(kDeviceCpu));
  r.Register<FilterDatasetOp>(KernelDefBuilder("FilterDataset").Device(kDeviceCpu));
  r.Register<InterleaveDatasetOp>(KernelDefBuilder("InterleaveDataset").Device(kDeviceCpu));
}

}  // namespace tessera::data
