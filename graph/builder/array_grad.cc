// Gradients of the ops that move elements without computing them (transposes, stacks,
// tiles, gathers, slices, pads), following TensorFlow's array_grad. Where TensorFlow gives
// a gather's gradient as IndexedSlices, these give the dense tensor they stand for.
#include "graph/builder/gradients.h"
#include "graph/builder/op_builder.h"
#include "graph/builder/ops.h"

namespace tessera {
namespace {

Output In(const Operation& op, int i) { return OpInput(op, i); }

Output ToInt32(const Scope& s, const Output& o) {
  return o.type() == DataType::kInt32 ? o : ops::Cast(s, o, DataType::kInt32);
}

// The gradient goes back through the inverse permutation: computed when the graph is built
// for a constant perm, by a scatter of 0..n-1 to perm's places otherwise.
Status TransposeGrad(const Scope& s, const Operation& op, const std::vector<Output>& g, std::vector<Output>* grads) {
  const Output perm = In(op, 1);
  Input inverse = Output();
  if (const Tensor* value = perm.node->constant_value()) {
    const std::vector<int64_t> p = IntTensorValues(*value);
    std::vector<int32_t> inv(p.size());
    for (size_t i = 0; i < p.size(); ++i) {
      if (p[i] < 0 || p[i] >= static_cast<int64_t>(p.size())) {
        return errors::InvalidArgument("Transpose '", op.name(), "': perm ", p[i], " is out of range");
      }
      inv[p[i]] = static_cast<int32_t>(i);
    }
    inverse = Tensor::FromVector(inv);
  } else {
    const Output p = ToInt32(s, perm);
    const Output n = ops::Size(s, p);
    inverse = ops::Build(s, "UnsortedSegmentSum", {ops::Build(s, "Range", {0, n, 1}), p, n});
  }
  *grads = {ops::Build(s, "Transpose", {g[0], inverse}), Output()};
  return s.status();
}

Status PackGrad(const Scope& s, const Operation& op, const std::vector<Output>& g, std::vector<Output>* grads) {
  int64_t n = 0, axis = 0;
  RETURN_IF_ERROR(op.node()->GetAttr("N", &n));
  RETURN_IF_ERROR(op.node()->GetAttr("axis", &axis));
  *grads = ops::AllOutputs(ops::Build(s, "Unpack", {g[0]}, {{"num", n}, {"axis", axis}}));
  return s.status();
}

Status UnpackGrad(const Scope& s, const Operation& op, const std::vector<Output>& g, std::vector<Output>* grads) {
  int64_t axis = 0;
  RETURN_IF_ERROR(op.node()->GetAttr("axis", &axis));
  *grads = {ops::Build(s, "Pack", std::vector<Input>(g.begin(), g.end()),
                       {{"N", static_cast<int64_t>(g.size())}, {"axis", axis}})};
  return s.status();
}

// The result, reshaped to [m0, d0, m1, d1, ...] (multiples interleaved with the input's
// dims), summed over the multiples' axes.
Status TileGrad(const Scope& s, const Operation& op, const std::vector<Output>& g, std::vector<Output>* grads) {
  const Output shape_x = ops::Shape(s, In(op, 0));
  const Output pairs = ops::Build(s, "Pack", {ToInt32(s, In(op, 1)), shape_x}, {{"N", int64_t{2}}, {"axis", int64_t{0}}});
  const Output split = ops::Reshape(s, ops::Build(s, "Transpose", {pairs, {1, 0}}), {-1});
  const Output axes = ops::Build(s, "Range", {0, ops::Size(s, split), 2});
  *grads = {ops::Sum(s, ops::Reshape(s, g[0], split), axes), Output()};
  return s.status();
}

// Gather along axis 0 (embedding_lookup's): each gathered row's gradient summed into the row
// it came from.
Status GatherGrad(const Scope& s, const Operation& op, const std::vector<Output>& g, std::vector<Output>* grads) {
  const bool v2 = op.node()->op() == "GatherV2";
  if (v2) {
    const Tensor* axis = In(op, 2).node->constant_value();
    int64_t batch_dims = 0;
    RETURN_IF_ERROR(op.node()->GetAttr("batch_dims", &batch_dims));
    if (axis == nullptr || IntTensorValues(*axis) != std::vector<int64_t>{0} || batch_dims != 0) {
      return errors::Unimplemented("The gradient of GatherV2 '", op.name(),
                                   "' is for a constant axis 0 without batch_dims (tf.gather's default)");
    }
  }
  const Output params = In(op, 0);
  const Output shape_p = ops::Shape(s, params);
  const Output rest = ops::Build(s, "Slice", {shape_p, {1}, {-1}});
  const Output values = ops::Reshape(s, g[0], ops::Concat(s, {Tensor::FromVector<int32_t>({-1}), rest}, 0));
  const Output rows = ops::Build(s, "GatherV2", {shape_p, 0, 0});
  *grads = {ops::Build(s, "UnsortedSegmentSum", {values, ops::Reshape(s, In(op, 1), {-1}), rows}), Output()};
  if (v2) grads->push_back(Output());
  return s.status();
}

Status StridedSliceGrad(const Scope& s, const Operation& op, const std::vector<Output>& g,
                        std::vector<Output>* grads) {
  AttrMap attrs;
  for (const char* mask : {"begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask"}) {
    int64_t value = 0;
    RETURN_IF_ERROR(op.node()->GetAttr(mask, &value));
    attrs.emplace(mask, value);
  }
  const Output begin = In(op, 1);
  Output shape = ops::Shape(s, In(op, 0));
  if (begin.type() != DataType::kInt32) shape = ops::Cast(s, shape, begin.type());
  *grads = {ops::Build(s, "StridedSliceGrad", {shape, begin, In(op, 2), In(op, 3), g[0]}, std::move(attrs)), Output(),
            Output(), Output()};
  return s.status();
}

// The slice's gradient padded with zeros back to the input's extent.
Status SliceGrad(const Scope& s, const Operation& op, const std::vector<Output>& g, std::vector<Output>* grads) {
  const Output begin = ToInt32(s, In(op, 1));
  const Output before = ops::Reshape(s, begin, {-1, 1});
  const Output rest = ops::Sub(s, ops::Sub(s, ops::Shape(s, In(op, 0)), ops::Shape(s, Output(op.node(), 0))), begin);
  const Output paddings = ops::Concat(s, {before, ops::Reshape(s, rest, {-1, 1})}, 1);
  *grads = {ops::Build(s, "Pad", {g[0], paddings}), Output(), Output()};
  return s.status();
}

// The padded result's gradient cut back to the input's place in it.
Status PadGrad(const Scope& s, const Operation& op, const std::vector<Output>& g, std::vector<Output>* grads) {
  const Output before = ops::Build(s, "Slice", {ToInt32(s, In(op, 1)), {0, 0}, {-1, 1}});
  grads->assign(op.node()->num_inputs(), Output());
  (*grads)[0] = ops::Build(s, "Slice", {g[0], ops::Reshape(s, before, {-1}), ops::Shape(s, In(op, 0))});
  return s.status();
}

}  // namespace

void RegisterArrayGradients(GradientRegistry& r) {
  RegisterCoreGradient(r, "Transpose", TransposeGrad);
  RegisterCoreGradient(r, "Pack", PackGrad);
  RegisterCoreGradient(r, "Unpack", UnpackGrad);
  RegisterCoreGradient(r, "Tile", TileGrad);
  RegisterCoreGradient(r, "Gather", GatherGrad);
  RegisterCoreGradient(r, "GatherV2", GatherGrad);
  RegisterCoreGradient(r, "StridedSlice", StridedSliceGrad);
  RegisterCoreGradient(r, "Slice", SliceGrad);
  RegisterCoreGradient(r, "Pad", PadGrad);
  RegisterCoreGradient(r, "PadV2", PadGrad);
}

}  // namespace tessera
