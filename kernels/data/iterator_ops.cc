// The iterator ops: Iterator and OneShotIterator make an IteratorResource and output its
// handle [container, name]; MakeIterator starts a pass; IteratorGetNext takes an element;
// IteratorToStringHandle and IteratorFromStringHandle turn a handle into one string (the
// resource handles' encoding) and back, for iterators chosen by a feed.
//
// A handle's name is the shared_name, or else the node's name, so every step of a session
// (each with its own executor) reaches the same iterator; sessions on one local server
// share iterators of the same name.
#include "kernels/data/data_kernels.h"
#include "kernels/data/dataset_op_kernel.h"
#include "kernels/data/iterator_resource.h"
#include "kernels/resource_handle.h"

namespace tessera::data {
namespace {

StatusOr<std::shared_ptr<IteratorResource>> IteratorFromHandle(OpKernelContext* ctx, int i) {
  const Tensor& h = ctx->input(i);
  if (h.dtype() != DataType::kString || h.NumElements() != 2) {
    return errors::InvalidArgument("An iterator handle is a string vector [container, name], got ",
                                   DataTypeName(h.dtype()), " ", h.shape().DebugString());
  }
  if (ctx->resource_manager() == nullptr) return errors::Internal("An iterator needs a resource manager");
  return ctx->resource_manager()->Lookup<IteratorResource>(h.data<std::string>()[0], h.data<std::string>()[1]);
}

class IteratorHandleOp : public OpKernel {
 public:
  explicit IteratorHandleOp(OpKernelConstruction* c) : OpKernel(c) {
    Status s = c->GetAttr("output_types", &dtypes_);
    if (s.ok()) s = c->GetAttr("output_shapes", &shapes_);
    if (s.ok()) s = c->GetAttr("container", &container_);
    if (s.ok()) s = c->GetAttr("shared_name", &name_);
    if (s.ok() && dtypes_.size() != shapes_.size()) {
      s = errors::InvalidArgument("Iterator '", name(), "' declares ", dtypes_.size(), " output types but ",
                                  shapes_.size(), " output shapes");
    }
    if (name_.empty()) name_ = name();
    if (!s.ok()) c->SetStatus(s);
  }
  void Compute(OpKernelContext* ctx) override {
    OP_REQUIRES(ctx, ctx->resource_manager() != nullptr, errors::Internal("An iterator needs a resource manager"));
    auto it = ctx->resource_manager()->LookupOrCreate<IteratorResource>(
        container_, name_, [this] { return std::make_shared<IteratorResource>(dtypes_, shapes_); });
    OP_REQUIRES_OK(ctx, it.status());
    OP_REQUIRES(ctx, (*it)->dtypes() == dtypes_,
                errors::InvalidArgument("Shared iterator '", name_, "' yields ", DataTypesString((*it)->dtypes()),
                                        ", not ", DataTypesString(dtypes_)));
    OP_REQUIRES_OK(ctx, Prepare(ctx, **it));
    Tensor* handle;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({2}), &handle));
    handle->data<std::string>()[0] = container_;
    handle->data<std::string>()[1] = name_;
  }
  bool IsExpensive() const override { return false; }

 protected:
  virtual Status Prepare(OpKernelContext*, IteratorResource&) { return Status::OK(); }

 private:
  std::vector<DataType> dtypes_;
  std::vector<TensorShape> shapes_;
  std::string container_;
  std::string name_;
};

// Initializes its iterator on first use from dataset_factory, a function of no arguments
// returning the dataset, so the dataset's ops run once and not on every step.
class OneShotIteratorOp : public IteratorHandleOp {
 public:
  explicit OneShotIteratorOp(OpKernelConstruction* c) : IteratorHandleOp(c) {
    Status s = c->GetAttr("dataset_factory", &factory_);
    if (!s.ok()) c->SetStatus(s);
  }

 protected:
  Status Prepare(OpKernelContext* ctx, IteratorResource& it) override {
    auto make = [&]() -> StatusOr<DatasetPtr> {
      ASSIGN_OR_RETURN(auto f, DatasetOpKernel::Instantiate(ctx, *factory_, "dataset_factory"));
      std::vector<Tensor> rets;
      RETURN_IF_ERROR(f->Run({}, &rets).WithPrefix("In the dataset_factory of a OneShotIterator: "));
      if (rets.size() != 1) return errors::InvalidArgument("A dataset_factory must return one dataset");
      return DatasetFromTensor(rets[0]);
    };
    return it.InitializeOnce(make, DatasetOpKernel::EnvOf(ctx), StrCat("OneShotIterator '", name(), "'"));
  }

 private:
  std::shared_ptr<const FunctionDef> factory_;
};

class MakeIteratorOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    StatusOr<DatasetPtr> dataset = DatasetFromTensor(ctx->input(0));
    OP_REQUIRES_OK(ctx, dataset.status());
    auto it = IteratorFromHandle(ctx, 1);
    OP_REQUIRES_OK(ctx, it.status());
    OP_REQUIRES_OK(ctx, (*it)->Initialize(std::move(*dataset), DatasetOpKernel::EnvOf(ctx),
                                          StrCat("The iterator of MakeIterator '", name(), "'")));
  }
};

// Synchronous: it may wait on a prefetching thread, as TensorFlow's does on its own.
class IteratorGetNextOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    auto it = IteratorFromHandle(ctx, 0);
    OP_REQUIRES_OK(ctx, it.status());
    std::vector<Tensor> element;
    OP_REQUIRES_OK(ctx, (*it)->GetNext(IteratorContext{ctx->cancellation_manager()}, &element));
    OP_REQUIRES(ctx, static_cast<int>(element.size()) == num_outputs(),
                errors::InvalidArgument("The iterator yields ", element.size(), " components; IteratorGetNext '",
                                        name(), "' expects ", num_outputs()));
    for (int i = 0; i < num_outputs(); ++i) {
      OP_REQUIRES(ctx, element[i].dtype() == output_type(i),
                  errors::InvalidArgument("Component ", i, " of the iterator is ", DataTypeName(element[i].dtype()),
                                          "; IteratorGetNext '", name(), "' expects ", DataTypeName(output_type(i))));
      ctx->set_output(i, std::move(element[i]));
    }
  }
};

class IteratorToStringHandleOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    OP_REQUIRES_OK(ctx, IteratorFromHandle(ctx, 0).status());
    const std::string* h = ctx->input(0).data<std::string>();
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({}), &out));
    out->data<std::string>()[0] = EncodeResourceHandle({h[0], h[1]});
  }
  bool IsExpensive() const override { return false; }
};

class IteratorFromStringHandleOp : public OpKernel {
 public:
  explicit IteratorFromStringHandleOp(OpKernelConstruction* c) : OpKernel(c) {
    Status s = c->GetAttr("output_types", &dtypes_);
    if (!s.ok()) c->SetStatus(s);
  }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    OP_REQUIRES(ctx, in.NumElements() == 1 && in.rank() == 0,
                errors::InvalidArgument("IteratorFromStringHandle '", name(), "' takes a scalar string, got ",
                                        in.shape().DebugString()));
    StatusOr<ResourceName> handle = DecodeResourceHandle(in.data<std::string>()[0]);
    OP_REQUIRES(ctx, handle.ok(),
                errors::InvalidArgument("IteratorFromStringHandle '", name(),
                                        "' was given no iterator's string handle: ", handle.status().message()));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({2}), &out));
    out->data<std::string>()[0] = handle->container;
    out->data<std::string>()[1] = handle->name;
    OP_REQUIRES(ctx, ctx->resource_manager() != nullptr, errors::Internal("An iterator needs a resource manager"));
    auto it = ctx->resource_manager()->Lookup<IteratorResource>(handle->container, handle->name);
    OP_REQUIRES(ctx, it.ok(),
                errors::NotFound("IteratorFromStringHandle '", name(), "': no iterator '", handle->name,
                                 "' in this session"));
    OP_REQUIRES(ctx, dtypes_.empty() || (*it)->dtypes() == dtypes_,
                errors::InvalidArgument("IteratorFromStringHandle '", name(), "' expects an iterator of ",
                                        DataTypesString(dtypes_), "; '", handle->name, "' yields ",
                                        DataTypesString((*it)->dtypes())));
  }
  bool IsExpensive() const override { return false; }

 private:
  std::vector<DataType> dtypes_;
};

}  // namespace

void RegisterIteratorKernels(KernelRegistry& r) {
  r.Register<IteratorHandleOp>(KernelDefBuilder("Iterator").Device(kDeviceCpu));
  r.Register<OneShotIteratorOp>(KernelDefBuilder("OneShotIterator").Device(kDeviceCpu));
  r.Register<MakeIteratorOp>(KernelDefBuilder("MakeIterator").Device(kDeviceCpu));
  r.Register<IteratorGetNextOp>(KernelDefBuilder("IteratorGetNext").Device(kDeviceCpu));
  r.Register<IteratorToStringHandleOp>(KernelDefBuilder("IteratorToStringHandle").Device(kDeviceCpu));
  r.Register<IteratorFromStringHandleOp>(KernelDefBuilder("IteratorFromStringHandle").Device(kDeviceCpu));
}

}  // namespace tessera::data
