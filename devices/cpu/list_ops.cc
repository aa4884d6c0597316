// The TensorList ops on the CPU (kernels/util/tensor_list.h). Every op that changes a list
// makes a new one sharing the elements' buffers; an element not yet set reads as zeros of
// the element shape, when that shape is fully known, as in TensorFlow.
#include <cstring>

#include "devices/cpu/cpu_kernels.h"
#include "kernels/util/tensor_list.h"

namespace tessera::cpu {
namespace {

using ListPtr = std::shared_ptr<const TensorList>;

StatusOr<int64_t> ScalarIndex(const Tensor& t, std::string_view what) {
  if (t.NumElements() != 1 || (t.dtype() != DataType::kInt32 && t.dtype() != DataType::kInt64)) {
    return errors::InvalidArgument(what, " must be an integer scalar, got ", DataTypeName(t.dtype()), " ",
                                   t.shape().DebugString());
  }
  return t.dtype() == DataType::kInt32 ? static_cast<int64_t>(t.data<int32_t>()[0]) : t.data<int64_t>()[0];
}

Tensor Zeros(DataType dtype, const TensorShape& shape) {
  Tensor t(dtype, shape);
  if (!DataTypeHoldsStrings(dtype) && dtype != DataType::kVariant) std::memset(t.raw_data(), 0, t.TotalBytes());
  return t;
}

// Copies `src` into `dst` at element offset `at` (row-major).
void CopyInto(const Tensor& src, Tensor* dst, int64_t at) {
  if (DataTypeHoldsStrings(src.dtype())) {
    for (int64_t i = 0; i < src.NumElements(); ++i) dst->data<std::string>()[at + i] = src.data<std::string>()[i];
  } else if (src.dtype() == DataType::kVariant) {
    for (int64_t i = 0; i < src.NumElements(); ++i) dst->data<Variant>()[at + i] = src.data<Variant>()[i];
  } else {
    std::memcpy(static_cast<char*>(dst->raw_data()) + at * DataTypeSize(src.dtype()), src.raw_data(),
                src.TotalBytes());
  }
}

Status CheckItem(const TensorList& list, const Tensor& item) {
  if (item.dtype() != list.element_dtype) {
    return errors::InvalidArgument("Invalid data types; list elements ", DataTypeName(list.element_dtype),
                                   " but tried to add ", DataTypeName(item.dtype()));
  }
  if (!list.element_shape.IsCompatibleWith(item.shape())) {
    return errors::InvalidArgument("Tried to add an element of shape ", item.shape().DebugString(),
                                   " to a list whose elements are ", list.element_shape.DebugString());
  }
  return Status::OK();
}

// Element i, or zeros of the known element shape where it is not set.
StatusOr<Tensor> Element(const TensorList& list, int64_t i, const TensorShape& hint) {
  const Tensor& e = list.elements[static_cast<size_t>(i)];
  if (e.IsInitialized()) return e;
  ASSIGN_OR_RETURN(TensorShape shape, InferenceContext::Merge(list.element_shape, hint));
  if (!shape.IsFullyDefined()) {
    return errors::InvalidArgument("Element ", i, " of the list is not set and its shape ", shape.DebugString(),
                                   " is not fully known");
  }
  return Zeros(list.element_dtype, shape);
}

class ListOpBase : public OpKernel {
 public:
  explicit ListOpBase(OpKernelConstruction* c) : OpKernel(c) {
    Status s = c->GetAttr("element_dtype", &element_dtype_);
    if (!s.ok()) c->SetStatus(s);
  }

 protected:
  DataType element_dtype_ = DataType::kInvalid;

  // The input list, its dtype checked against the op's.
  StatusOr<ListPtr> Input(OpKernelContext* ctx, int i) const {
    ASSIGN_OR_RETURN(ListPtr list, ListOf(ctx->input(i), "input_handle"));
    if (list->element_dtype != element_dtype_) {
      return errors::InvalidArgument("Invalid data types; op elements ", DataTypeName(element_dtype_),
                                     " but list elements ", DataTypeName(list->element_dtype));
    }
    return list;
  }
};

// EmptyTensorList and TensorListReserve: a list of `num_elements` unset elements.
class ReserveOp : public ListOpBase {
 public:
  using ListOpBase::ListOpBase;
  void Compute(OpKernelContext* ctx) override {
    StatusOr<TensorShape> shape = ElementShapeOf(ctx->input(0));
    OP_REQUIRES_OK(ctx, shape.status());
    StatusOr<int64_t> n = ScalarIndex(ctx->input(1), "num_elements");
    OP_REQUIRES_OK(ctx, n.status());
    const bool empty = type_string() == "EmptyTensorList";
    OP_REQUIRES(ctx, *n >= (empty ? -1 : 0) && *n <= (int64_t{1} << 31),
                errors::InvalidArgument(empty ? "max_num_elements" : "num_elements", " must be ",
                                        empty ? ">= -1" : "non-negative", ", got ", *n));
    auto list = std::make_shared<TensorList>();
    list->element_dtype = element_dtype_;
    list->element_shape = *shape;
    if (empty) {
      list->max_num_elements = *n;
    } else {
      list->elements.resize(static_cast<size_t>(*n));
    }
    ctx->set_output(0, ListTensor(std::move(list)));
  }
};

class FromTensorOp : public ListOpBase {
 public:
  using ListOpBase::ListOpBase;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& t = ctx->input(0);
    StatusOr<TensorShape> shape = ElementShapeOf(ctx->input(1));
    OP_REQUIRES_OK(ctx, shape.status());
    OP_REQUIRES(ctx, t.rank() >= 1, errors::InvalidArgument("TensorListFromTensor needs a tensor of rank >= 1"));
    auto list = std::make_shared<TensorList>();
    list->element_dtype = element_dtype_;
    list->element_shape = *shape;
    for (int64_t i = 0; i < t.dim(0); ++i) {
      Tensor row = t.SubSlice(i);
      OP_REQUIRES_OK(ctx, CheckItem(*list, row));
      list->elements.push_back(row);
    }
    ctx->set_output(0, ListTensor(std::move(list)));
  }
};

class SetItemOp : public ListOpBase {
 public:
  explicit SetItemOp(OpKernelConstruction* c) : ListOpBase(c) {
    Status s = c->GetAttr("resize_if_index_out_of_bounds", &resize_);
    if (!s.ok()) c->SetStatus(s);
  }
  void Compute(OpKernelContext* ctx) override {
    StatusOr<ListPtr> in = Input(ctx, 0);
    OP_REQUIRES_OK(ctx, in.status());
    StatusOr<int64_t> index = ScalarIndex(ctx->input(1), "index");
    OP_REQUIRES_OK(ctx, index.status());
    const Tensor& item = ctx->input(2);
    OP_REQUIRES_OK(ctx, CheckItem(**in, item));
    const auto size = static_cast<int64_t>((*in)->elements.size());
    OP_REQUIRES(ctx, *index >= 0 && (*index < size || (resize_ && *index <= (int64_t{1} << 31))),
                errors::InvalidArgument("Trying to modify element ", *index, " in a list with ", size, " elements."));
    auto out = std::make_shared<TensorList>(**in);
    if (*index >= size) out->elements.resize(static_cast<size_t>(*index + 1));
    out->elements[static_cast<size_t>(*index)] = item;
    ctx->set_output(0, ListTensor(std::move(out)));
  }

 private:
  bool resize_ = false;
};

class GetItemOp : public ListOpBase {
 public:
  using ListOpBase::ListOpBase;
  void Compute(OpKernelContext* ctx) override {
    StatusOr<ListPtr> in = Input(ctx, 0);
    OP_REQUIRES_OK(ctx, in.status());
    StatusOr<int64_t> index = ScalarIndex(ctx->input(1), "index");
    OP_REQUIRES_OK(ctx, index.status());
    const auto size = static_cast<int64_t>((*in)->elements.size());
    OP_REQUIRES(ctx, *index >= 0 && *index < size,
                errors::InvalidArgument("Trying to access element ", *index, " in a list with ", size, " elements."));
    StatusOr<TensorShape> hint = ElementShapeOf(ctx->input(2));
    OP_REQUIRES_OK(ctx, hint.status());
    StatusOr<Tensor> e = Element(**in, *index, *hint);
    OP_REQUIRES_OK(ctx, e.status());
    ctx->set_output(0, *e);
  }
};

// The elements stacked along a new first dimension.
class StackOp : public ListOpBase {
 public:
  explicit StackOp(OpKernelConstruction* c) : ListOpBase(c) {
    Status s = c->GetAttr("num_elements", &num_elements_);
    if (!s.ok()) c->SetStatus(s);
  }
  void Compute(OpKernelContext* ctx) override {
    StatusOr<ListPtr> in = Input(ctx, 0);
    OP_REQUIRES_OK(ctx, in.status());
    const TensorList& list = **in;
    StatusOr<TensorShape> hint = ElementShapeOf(ctx->input(1));
    OP_REQUIRES_OK(ctx, hint.status());
    const auto n = static_cast<int64_t>(list.elements.size());
    OP_REQUIRES(ctx, num_elements_ == -1 || num_elements_ == n,
                errors::InvalidArgument("Operation expected a list with ", num_elements_, " elements but got a list with ",
                                        n, " elements."));
    std::vector<Tensor> elements;
    TensorShape shape = *hint;
    for (int64_t i = 0; i < n; ++i) {
      if (list.elements[static_cast<size_t>(i)].IsInitialized()) {
        StatusOr<TensorShape> merged = InferenceContext::Merge(shape, list.elements[static_cast<size_t>(i)].shape());
        OP_REQUIRES(ctx, merged.ok(), errors::InvalidArgument("Elements of the list differ in shape: ",
                                                              merged.status().message()));
        shape = *merged;
      }
    }
    for (int64_t i = 0; i < n; ++i) {
      StatusOr<Tensor> e = Element(list, i, shape);
      OP_REQUIRES_OK(ctx, e.status());
      elements.push_back(std::move(*e));
    }
    if (n > 0) shape = elements[0].shape();
    StatusOr<TensorShape> full = InferenceContext::Merge(list.element_shape, shape);
    OP_REQUIRES_OK(ctx, full.status());
    OP_REQUIRES(ctx, full->IsFullyDefined(),
                errors::InvalidArgument("Tried to stack elements of an empty list with a shape not fully known: ",
                                        full->DebugString()));
    TensorShape out_shape({n});
    for (int64_t d : full->dims()) out_shape.AddDim(d);
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, out_shape, &out));
    for (int64_t i = 0; i < n; ++i) CopyInto(elements[static_cast<size_t>(i)], out, i * full->num_elements());
  }

 private:
  int64_t num_elements_ = -1;
};

class LengthOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    StatusOr<ListPtr> in = ListOf(ctx->input(0), "input_handle");
    OP_REQUIRES_OK(ctx, in.status());
    ctx->set_output(0, Tensor::Scalar<int32_t>(static_cast<int32_t>((*in)->elements.size())));
  }
};

class ElementShapeOp : public OpKernel {
 public:
  explicit ElementShapeOp(OpKernelConstruction* c) : OpKernel(c) {
    Status s = c->GetAttr("shape_type", &shape_type_);
    if (!s.ok()) c->SetStatus(s);
  }
  void Compute(OpKernelContext* ctx) override {
    StatusOr<ListPtr> in = ListOf(ctx->input(0), "input_handle");
    OP_REQUIRES_OK(ctx, in.status());
    const TensorShape& s = (*in)->element_shape;
    std::vector<int64_t> dims = s.unknown_rank() ? std::vector<int64_t>{-1} : s.dim_vector();
    Tensor out(shape_type_, s.unknown_rank() ? TensorShape() : TensorShape({s.rank()}));
    for (size_t i = 0; i < dims.size() && i < static_cast<size_t>(out.NumElements()); ++i) {
      if (shape_type_ == DataType::kInt32) {
        out.data<int32_t>()[i] = static_cast<int32_t>(dims[i]);
      } else {
        out.data<int64_t>()[i] = dims[i];
      }
    }
    ctx->set_output(0, out);
  }

 private:
  DataType shape_type_ = DataType::kInt32;
};

class PushBackOp : public ListOpBase {
 public:
  using ListOpBase::ListOpBase;
  void Compute(OpKernelContext* ctx) override {
    StatusOr<ListPtr> in = Input(ctx, 0);
    OP_REQUIRES_OK(ctx, in.status());
    const Tensor& item = ctx->input(1);
    OP_REQUIRES_OK(ctx, CheckItem(**in, item));
    const int64_t max = (*in)->max_num_elements;
    OP_REQUIRES(ctx, max < 0 || static_cast<int64_t>((*in)->elements.size()) < max,
                errors::InvalidArgument("Tried to push item into a full list; list size: ", (*in)->elements.size(),
                                        ", max_num_elements: ", max));
    auto out = std::make_shared<TensorList>(**in);
    out->elements.push_back(item);
    ctx->set_output(0, ListTensor(std::move(out)));
  }
};

class PopBackOp : public ListOpBase {
 public:
  using ListOpBase::ListOpBase;
  void Compute(OpKernelContext* ctx) override {
    StatusOr<ListPtr> in = Input(ctx, 0);
    OP_REQUIRES_OK(ctx, in.status());
    OP_REQUIRES(ctx, !(*in)->elements.empty(), errors::InvalidArgument("Trying to pop from an empty list."));
    StatusOr<TensorShape> hint = ElementShapeOf(ctx->input(1));
    OP_REQUIRES_OK(ctx, hint.status());
    StatusOr<Tensor> last = Element(**in, static_cast<int64_t>((*in)->elements.size()) - 1, *hint);
    OP_REQUIRES_OK(ctx, last.status());
    auto out = std::make_shared<TensorList>(**in);
    out->elements.pop_back();
    ctx->set_output(0, ListTensor(std::move(out)));
    ctx->set_output(1, *last);
  }
};

// The elements joined along their first dimension, and each one's length in it.
class ConcatOp : public ListOpBase {
 public:
  using ListOpBase::ListOpBase;
  void Compute(OpKernelContext* ctx) override {
    StatusOr<ListPtr> in = Input(ctx, 0);
    OP_REQUIRES_OK(ctx, in.status());
    const TensorList& list = **in;
    StatusOr<TensorShape> hint = ElementShapeOf(ctx->input(1));
    OP_REQUIRES_OK(ctx, hint.status());
    std::vector<Tensor> elements;
    int64_t rows = 0;
    TensorShape inner;
    for (size_t i = 0; i < list.elements.size(); ++i) {
      StatusOr<Tensor> e = Element(list, static_cast<int64_t>(i), *hint);
      OP_REQUIRES_OK(ctx, e.status());
      OP_REQUIRES(ctx, e->rank() >= 1, errors::InvalidArgument("Concat saw a scalar shape at index ", i));
      TensorShape rest;
      for (int d = 1; d < e->rank(); ++d) rest.AddDim(e->dim(d));
      OP_REQUIRES(ctx, i == 0 || rest == inner,
                  errors::InvalidArgument("Element ", i, " of the list has shape ", e->shape().DebugString(),
                                          ", which does not concatenate with [?", inner.DebugString().substr(1)));
      inner = rest;
      rows += e->dim(0);
      elements.push_back(std::move(*e));
    }
    OP_REQUIRES(ctx, !elements.empty() || (hint->IsFullyDefined() && hint->rank() >= 1),
                errors::InvalidArgument("Concat of an empty list needs a fully known element shape"));
    if (elements.empty()) {
      for (int d = 1; d < hint->rank(); ++d) inner.AddDim(hint->dim(d));
    }
    TensorShape out_shape({rows});
    for (int64_t d : inner.dims()) out_shape.AddDim(d);
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, out_shape, &out));
    Tensor* lengths;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, TensorShape({static_cast<int64_t>(elements.size())}), &lengths));
    int64_t at = 0;
    for (size_t i = 0; i < elements.size(); ++i) {
      CopyInto(elements[i], out, at);
      at += elements[i].NumElements();
      lengths->data<int64_t>()[i] = elements[i].dim(0);
    }
  }
};

}  // namespace

void RegisterListKernels(KernelRegistry& r) {
  r.Register<ReserveOp>(KernelDefBuilder("EmptyTensorList").Device(kDeviceCpu));
  r.Register<ReserveOp>(KernelDefBuilder("TensorListReserve").Device(kDeviceCpu));
  r.Register<FromTensorOp>(KernelDefBuilder("TensorListFromTensor").Device(kDeviceCpu));
  r.Register<SetItemOp>(KernelDefBuilder("TensorListSetItem").Device(kDeviceCpu));
  r.Register<GetItemOp>(KernelDefBuilder("TensorListGetItem").Device(kDeviceCpu));
  r.Register<StackOp>(KernelDefBuilder("TensorListStack").Device(kDeviceCpu));
  r.Register<LengthOp>(KernelDefBuilder("TensorListLength").Device(kDeviceCpu));
  r.Register<ElementShapeOp>(KernelDefBuilder("TensorListElementShape").Device(kDeviceCpu));
  r.Register<PushBackOp>(KernelDefBuilder("TensorListPushBack").Device(kDeviceCpu));
  r.Register<PopBackOp>(KernelDefBuilder("TensorListPopBack").Device(kDeviceCpu));
  r.Register<ConcatOp>(KernelDefBuilder("TensorListConcatV2").Device(kDeviceCpu));
}

}  // namespace tessera::cpu
