// The queue ops: FIFOQueue, RandomShuffleQueue and PaddingFIFOQueue create or find a Queue
// resource; enqueue and dequeue are asynchronous kernels that never hold a thread while
// the queue is full or empty.
#include "kernels/common/common_kernels.h"
#include "kernels/resource_handle.h"
#include "kernels/resources/queue.h"

namespace tessera {
namespace {

class QueueOp : public OpKernel {
 public:
  QueueOp(OpKernelConstruction* c, Queue::Kind kind) : OpKernel(c) {
    options_.kind = kind;
    Status s = c->GetAttr("component_types", &options_.dtypes);
    if (s.ok()) s = c->GetAttr("shapes", &options_.shapes);
    if (s.ok()) s = c->GetAttr("capacity", &options_.capacity);
    if (s.ok()) s = c->GetAttr("container", &container_);
    if (s.ok()) s = c->GetAttr("shared_name", &options_.name);
    if (s.ok() && kind == Queue::Kind::kRandomShuffle) {
      s = c->GetAttr("min_after_dequeue", &options_.min_after_dequeue);
      if (s.ok()) s = c->GetAttr("seed", &options_.seed);
      if (s.ok()) s = c->GetAttr("seed2", &options_.seed2);
    }
    if (options_.name.empty()) options_.name = name();
    if (s.ok()) s = Queue::Validate(options_);
    if (!s.ok()) c->SetStatus(s);
  }
  void Compute(OpKernelContext* ctx) override {
    OP_REQUIRES(ctx, ctx->resource_manager() != nullptr, errors::Internal("A queue needs a resource manager"));
    auto queue = ctx->resource_manager()->LookupOrCreate<Queue>(
        container_, options_.name, [this] { return std::make_shared<Queue>(options_); });
    OP_REQUIRES_OK(ctx, queue.status());
    OP_REQUIRES_OK(ctx, (*queue)->CheckCompatible(options_));
    OP_REQUIRES_OK(ctx, OutputResourceHandle(ctx, container_, options_.name));
  }
  bool IsExpensive() const override { return false; }

 private:
  Queue::Options options_;
  std::string container_;
};

template <Queue::Kind kKind>
class TypedQueueOp : public QueueOp {
 public:
  explicit TypedQueueOp(OpKernelConstruction* c) : QueueOp(c, kKind) {}
};

StatusOr<std::shared_ptr<Queue>> QueueFromHandle(OpKernelContext* ctx) {
  return ResourceFromHandle<Queue>(ctx, "queue");
}

// The base of the kernels that may wait: finds the queue, then hands over to Start.
class QueueAsyncOp : public AsyncOpKernel {
 public:
  using AsyncOpKernel::AsyncOpKernel;
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) final {
    StatusOr<std::shared_ptr<Queue>> queue = QueueFromHandle(ctx);
    OP_REQUIRES_OK_ASYNC(ctx, queue.status(), done);
    Start(ctx, **queue, std::move(done));
  }
  bool IsExpensive() const override { return false; }

 protected:
  virtual void Start(OpKernelContext* ctx, Queue& queue, DoneCallback done) = 0;
};

template <bool kMany>
class EnqueueOp : public QueueAsyncOp {
 public:
  using QueueAsyncOp::QueueAsyncOp;

 protected:
  void Start(OpKernelContext* ctx, Queue& queue, DoneCallback done) override {
    Queue::Tuple tuple;
    for (int i = 1; i < num_inputs(); ++i) tuple.push_back(ctx->input(i));
    auto finish = [ctx, done = std::move(done)](const Status& s) {
      ctx->SetStatus(s);
      done();
    };
    if (kMany) {
      queue.EnqueueMany(std::move(tuple), ctx->cancellation_manager(), std::move(finish));
    } else {
      queue.Enqueue(std::move(tuple), ctx->cancellation_manager(), std::move(finish));
    }
  }
};

template <Queue::DequeueMode kMode>
class DequeueOp : public QueueAsyncOp {
 public:
  using QueueAsyncOp::QueueAsyncOp;

 protected:
  void Start(OpKernelContext* ctx, Queue& queue, DoneCallback done) override {
    int64_t n = 1;
    if (kMode != Queue::kOne) {
      const Tensor& count = ctx->input(1);
      OP_REQUIRES_ASYNC(ctx, count.NumElements() == 1,
                        errors::InvalidArgument("n must be a scalar, got shape ", count.shape().DebugString()), done);
      n = count.data<int32_t>()[0];
    }
    // Checked before dequeuing, so a mismatched op takes nothing from the queue.
    const std::vector<DataType>& have = queue.options().dtypes;
    bool same = static_cast<int>(have.size()) == num_outputs();
    for (int i = 0; same && i < num_outputs(); ++i) same = have[i] == output_type(i);
    auto want = [this] {
      std::string types;
      for (int i = 0; i < num_outputs(); ++i) types += StrCat(i ? ", " : "", DataTypeName(output_type(i)));
      return types;
    };
    OP_REQUIRES_ASYNC(ctx, same,
                      errors::InvalidArgument("Dequeue of components (", want(), ") from ", queue.DebugString(),
                                              ", whose components differ"),
                      done);
    queue.Dequeue(n, kMode, ctx->cancellation_manager(),
                  [ctx, done = std::move(done)](const Status& s, Queue::Tuple tuple) {
                    ctx->SetStatus(s);
                    for (size_t i = 0; s.ok() && i < tuple.size(); ++i) {
                      ctx->set_output(static_cast<int>(i), std::move(tuple[i]));
                    }
                    done();
                  });
  }
};

class CloseOp : public OpKernel {
 public:
  explicit CloseOp(OpKernelConstruction* c) : OpKernel(c) {
    Status s = c->GetAttr("cancel_pending_enqueues", &cancel_pending_enqueues_);
    if (!s.ok()) c->SetStatus(s);
  }
  void Compute(OpKernelContext* ctx) override {
    auto queue = QueueFromHandle(ctx);
    OP_REQUIRES_OK(ctx, queue.status());
    (*queue)->Close(cancel_pending_enqueues_);
  }
  bool IsExpensive() const override { return false; }

 private:
  bool cancel_pending_enqueues_ = false;
};

class SizeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    auto queue = QueueFromHandle(ctx);
    OP_REQUIRES_OK(ctx, queue.status());
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape(), &out));
    out->data<int32_t>()[0] = static_cast<int32_t>((*queue)->Size());
  }
  bool IsExpensive() const override { return false; }
};

}  // namespace

void RegisterQueueKernels(KernelRegistry& r, const std::string& device_type) {
  // The V2 ops differ only in the form of their handle, which OutputResourceHandle and
  // ResourceFromHandle take care of.
  for (const std::string suffix : {"", "V2"}) {
    r.Register<TypedQueueOp<Queue::Kind::kFifo>>(KernelDefBuilder("FIFOQueue" + suffix).Device(device_type));
    r.Register<TypedQueueOp<Queue::Kind::kPaddingFifo>>(
        KernelDefBuilder("PaddingFIFOQueue" + suffix).Device(device_type));
    r.Register<TypedQueueOp<Queue::Kind::kRandomShuffle>>(
        KernelDefBuilder("RandomShuffleQueue" + suffix).Device(device_type));
    r.Register<EnqueueOp<false>>(KernelDefBuilder("QueueEnqueue" + suffix).Device(device_type));
    r.Register<EnqueueOp<true>>(KernelDefBuilder("QueueEnqueueMany" + suffix).Device(device_type));
    r.Register<DequeueOp<Queue::kOne>>(KernelDefBuilder("QueueDequeue" + suffix).Device(device_type));
    r.Register<DequeueOp<Queue::kExactly>>(KernelDefBuilder("QueueDequeueMany" + suffix).Device(device_type));
    r.Register<DequeueOp<Queue::kUpTo>>(KernelDefBuilder("QueueDequeueUpTo" + suffix).Device(device_type));
    r.Register<CloseOp>(KernelDefBuilder("QueueClose" + suffix).Device(device_type));
    r.Register<SizeOp>(KernelDefBuilder("QueueSize" + suffix).Device(device_type));
  }
}

}  // namespace tessera
