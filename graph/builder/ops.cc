#include "graph/builder/ops.h"

#include <limits>

#include "graph/builder/op_builder.h"

namespace tessera::ops {

Output Build(const Scope& s, std::string_view op, std::vector<Input> inputs, AttrMap attrs) {
  NodeSpec def;
  def.op = std::string(op);
  def.attrs = std::move(attrs);
  for (const Input& in : inputs) {
    Output o = s.AsOutput(in);
    if (o.node == nullptr) return Output();
    def.inputs.push_back(o.name());
  }
  return Output(s.AddNode(std::move(def)));
}

std::vector<Output> AllOutputs(Output first) {
  std::vector<Output> outputs;
  if (first.node == nullptr) return outputs;
  for (int i = 0; i < first.node->num_outputs(); ++i) outputs.emplace_back(first.node, i);
  return outputs;
}

Output Const(const Scope& s, const Tensor& value) {
  return Build(s, "Const", {}, {{"value", value}, {"dtype", value.dtype()}});
}

Output Placeholder(const Scope& s, DataType dtype, TensorShape shape) {
  return Build(s, "Placeholder", {}, {{"dtype", dtype}, {"shape", shape}});
}

Output Identity(const Scope& s, Input x) { return Build(s, "Identity", {x}); }

Operation NoOp(const Scope& s) { return Build(s, "NoOp", {}).op(); }

Output Variable(const Scope& s, TensorShape shape, DataType dtype, const VariableAttrs& attrs) {
  AttrMap a{{"shape", shape}, {"dtype", dtype}, {"shared_name", attrs.shared_name}};
  if (!attrs.container.empty()) a["container"] = attrs.container;
  return Build(s, "VariableV2", {}, std::move(a));
}

Output Assign(const Scope& s, Input ref, Input value, const AssignAttrs& attrs) {
  return Build(s, "Assign", {ref, value},
               {{"validate_shape", attrs.validate_shape}, {"use_locking", attrs.use_locking}});
}
Output AssignAdd(const Scope& s, Input ref, Input value) { return Build(s, "AssignAdd", {ref, value}); }
Output AssignSub(const Scope& s, Input ref, Input value) { return Build(s, "AssignSub", {ref, value}); }
Output IsVariableInitialized(const Scope& s, Input ref) { return Build(s, "IsVariableInitialized", {ref}); }

Output ApplyGradientDescent(const Scope& s, Input var, Input alpha, Input delta) {
  return Build(s, "ApplyGradientDescent", {var, alpha, delta});
}
Output ApplyMomentum(const Scope& s, Input var, Input accum, Input lr, Input grad, Input momentum, bool use_nesterov) {
  return Build(s, "ApplyMomentum", {var, accum, lr, grad, momentum}, {{"use_nesterov", use_nesterov}});
}
Output ApplyRMSProp(const Scope& s, Input var, Input ms, Input mom, Input lr, Input rho, Input momentum,
                    Input epsilon, Input grad) {
  return Build(s, "ApplyRMSProp", {var, ms, mom, lr, rho, momentum, epsilon, grad});
}
Output ApplyAdam(const Scope& s, Input var, Input m, Input v, Input beta1_power, Input beta2_power, Input lr,
                 Input beta1, Input beta2, Input epsilon, Input grad) {
  return Build(s, "ApplyAdam", {var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad});
}

Output Add(const Scope& s, Input x, Input y) { return Build(s, "Add", {x, y}); }
Output Sub(const Scope& s, Input x, Input y) { return Build(s, "Sub", {x, y}); }
Output Mul(const Scope& s, Input x, Input y) { return Build(s, "Mul", {x, y}); }
Output Div(const Scope& s, Input x, Input y) { return Build(s, "Div", {x, y}); }
Output Maximum(const Scope& s, Input x, Input y) { return Build(s, "Maximum", {x, y}); }
Output Minimum(const Scope& s, Input x, Input y) { return Build(s, "Minimum", {x, y}); }
Output Equal(const Scope& s, Input x, Input y) { return Build(s, "Equal", {x, y}); }
Output Greater(const Scope& s, Input x, Input y) { return Build(s, "Greater", {x, y}); }
Output Less(const Scope& s, Input x, Input y) { return Build(s, "Less", {x, y}); }
Output AddN(const Scope& s, const std::vector<Input>& inputs) { return Build(s, "AddN", inputs); }

Output Concat(const Scope& s, const std::vector<Input>& values, Input axis) {
  std::vector<Input> inputs = values;
  inputs.push_back(std::move(axis));
  return Build(s, "ConcatV2", std::move(inputs), {{"N", static_cast<int64_t>(values.size())}});
}
std::vector<Output> Split(const Scope& s, Input axis, Input value, int64_t num_split) {
  return AllOutputs(Build(s, "Split", {std::move(axis), std::move(value)}, {{"num_split", num_split}}));
}
std::vector<Output> SplitV(const Scope& s, Input value, Input size_splits, Input axis, int64_t num_split) {
  return AllOutputs(
      Build(s, "SplitV", {std::move(value), std::move(size_splits), std::move(axis)}, {{"num_split", num_split}}));
}

Output Neg(const Scope& s, Input x) { return Build(s, "Neg", {x}); }
Output Square(const Scope& s, Input x) { return Build(s, "Square", {x}); }
Output Sqrt(const Scope& s, Input x) { return Build(s, "Sqrt", {x}); }
Output Exp(const Scope& s, Input x) { return Build(s, "Exp", {x}); }
Output Log(const Scope& s, Input x) { return Build(s, "Log", {x}); }
Output Relu(const Scope& s, Input features) { return Build(s, "Relu", {features}); }
Output Softmax(const Scope& s, Input logits) { return Build(s, "Softmax", {logits}); }
Output LogSoftmax(const Scope& s, Input logits) { return Build(s, "LogSoftmax", {logits}); }

Output Conv2D(const Scope& s, Input input, Input filter, const std::vector<int64_t>& strides, std::string padding) {
  return Build(s, "Conv2D", {input, filter}, {{"strides", strides}, {"padding", std::move(padding)}});
}
Output Conv2DBackpropInput(const Scope& s, Input input_sizes, Input filter, Input out_backprop,
                           const std::vector<int64_t>& strides, std::string padding) {
  return Build(s, "Conv2DBackpropInput", {input_sizes, filter, out_backprop},
               {{"strides", strides}, {"padding", std::move(padding)}});
}
Output Conv2DBackpropFilter(const Scope& s, Input input, Input filter_sizes, Input out_backprop,
                            const std::vector<int64_t>& strides, std::string padding) {
  return Build(s, "Conv2DBackpropFilter", {input, filter_sizes, out_backprop},
               {{"strides", strides}, {"padding", std::move(padding)}});
}
Output MaxPool(const Scope& s, Input input, const std::vector<int64_t>& ksize, const std::vector<int64_t>& strides,
               std::string padding) {
  return Build(s, "MaxPool", {input}, {{"ksize", ksize}, {"strides", strides}, {"padding", std::move(padding)}});
}
Output AvgPool(const Scope& s, Input value, const std::vector<int64_t>& ksize, const std::vector<int64_t>& strides,
               std::string padding) {
  return Build(s, "AvgPool", {value}, {{"ksize", ksize}, {"strides", strides}, {"padding", std::move(padding)}});
}
Output MaxPoolGrad(const Scope& s, Input orig_input, Input orig_output, Input grad, const std::vector<int64_t>& ksize,
                   const std::vector<int64_t>& strides, std::string padding) {
  return Build(s, "MaxPoolGrad", {orig_input, orig_output, grad},
               {{"ksize", ksize}, {"strides", strides}, {"padding", std::move(padding)}});
}
Output AvgPoolGrad(const Scope& s, Input orig_input_shape, Input grad, const std::vector<int64_t>& ksize,
                   const std::vector<int64_t>& strides, std::string padding) {
  return Build(s, "AvgPoolGrad", {orig_input_shape, grad},
               {{"ksize", ksize}, {"strides", strides}, {"padding", std::move(padding)}});
}
Output Flatten(const Scope& s, Input x) {
  Output in = s.AsOutput(x);
  if (in.node == nullptr) return Output();
  const TensorShape& shape = in.node->output_shape(in.index);
  int64_t rest = 1;
  for (int d = 1; !shape.unknown_rank() && d < shape.rank(); ++d) rest = shape.dim(d) < 0 ? -1 : rest * shape.dim(d);
  if (shape.unknown_rank() || shape.rank() < 1 || rest < 0) {
    s.UpdateStatus(errors::InvalidArgument("Flatten needs the dimensions past the first known, got ",
                                           shape.DebugString(), " for ", in.name()));
    return Output();
  }
  // An int32 shape where it fits, as Keras's Flatten makes: on a GPU an int32 stays in host
  // memory, where Reshape reads its shape; an int64 would be copied back from the GPU mid-step.
  if (rest <= std::numeric_limits<int32_t>::max()) {
    return Reshape(s, in, Tensor::FromVector<int32_t>({-1, static_cast<int32_t>(rest)}));
  }
  return Reshape(s, in, Tensor::FromVector<int64_t>({-1, rest}));
}
std::vector<Output> SparseSoftmaxCrossEntropyWithLogits(const Scope& s, Input features, Input labels) {
  return AllOutputs(Build(s, "SparseSoftmaxCrossEntropyWithLogits", {features, labels}));
}
Output ArgMax(const Scope& s, Input input, Input dimension, DataType output_type) {
  return Build(s, "ArgMax", {input, dimension}, {{"output_type", output_type}});
}
Output RandomUniform(const Scope& s, Input shape, DataType dtype, const RandomAttrs& a) {
  return Build(s, "RandomUniform", {shape}, {{"dtype", dtype}, {"seed", a.seed}, {"seed2", a.seed2}});
}
Output RandomNormal(const Scope& s, Input shape, DataType dtype, const RandomAttrs& a) {
  return Build(s, "RandomStandardNormal", {shape}, {{"dtype", dtype}, {"seed", a.seed}, {"seed2", a.seed2}});
}
Output TruncatedNormal(const Scope& s, Input shape, DataType dtype, const RandomAttrs& a) {
  return Build(s, "TruncatedNormal", {shape}, {{"dtype", dtype}, {"seed", a.seed}, {"seed2", a.seed2}});
}

Output MatMul(const Scope& s, Input a, Input b, const MatMulAttrs& attrs) {
  return Build(s, "MatMul", {a, b},
               {{"transpose_a", attrs.transpose_a}, {"transpose_b", attrs.transpose_b}});
}
Output BiasAdd(const Scope& s, Input value, Input bias, std::string data_format) {
  return Build(s, "BiasAdd", {value, bias}, {{"data_format", std::move(data_format)}});
}

Output Reshape(const Scope& s, Input tensor, Input shape) { return Build(s, "Reshape", {tensor, shape}); }
Output Cast(const Scope& s, Input x, DataType dst) { return Build(s, "Cast", {x}, {{"DstT", dst}}); }
Output Sum(const Scope& s, Input input, Input axis, const ReductionAttrs& attrs) {
  return Build(s, "Sum", {input, axis}, {{"keep_dims", attrs.keep_dims}});
}
Output Mean(const Scope& s, Input input, Input axis, const ReductionAttrs& attrs) {
  return Build(s, "Mean", {input, axis}, {{"keep_dims", attrs.keep_dims}});
}
Output Max(const Scope& s, Input input, Input axis, const ReductionAttrs& attrs) {
  return Build(s, "Max", {input, axis}, {{"keep_dims", attrs.keep_dims}});
}

Output Fill(const Scope& s, Input dims, Input value) { return Build(s, "Fill", {dims, value}); }
Output ZerosLike(const Scope& s, Input x) { return Build(s, "ZerosLike", {x}); }
Output OnesLike(const Scope& s, Input x) { return Build(s, "OnesLike", {x}); }
Output Shape(const Scope& s, Input input, DataType out_type) {
  return Build(s, "Shape", {input}, {{"out_type", out_type}});
}
Output Size(const Scope& s, Input input, DataType out_type) {
  return Build(s, "Size", {input}, {{"out_type", out_type}});
}
Output BroadcastTo(const Scope& s, Input input, Input shape) { return Build(s, "BroadcastTo", {input, shape}); }

Output ReluGrad(const Scope& s, Input gradients, Input features) {
  return Build(s, "ReluGrad", {gradients, features});
}
Output BiasAddGrad(const Scope& s, Input out_backprop, std::string data_format) {
  return Build(s, "BiasAddGrad", {out_backprop}, {{"data_format", std::move(data_format)}});
}
std::vector<Output> BroadcastGradientArgs(const Scope& s, Input s0, Input s1) {
  return AllOutputs(Build(s, "BroadcastGradientArgs", {s0, s1}));
}

std::vector<Output> AllReduce(const Scope& s, const std::vector<Input>& inputs, const AllReduceAttrs& attrs) {
  Output first = Build(s, "AllReduce", inputs,
                       {{"reduction", attrs.reduction},
                        {"group_key", attrs.group_key},
                        {"group_size", attrs.group_size},
                        {"instance_key", attrs.instance_key},
                        {"wire_float16", attrs.wire_float16},
                        {"communication_hint", attrs.communication_hint}});
  return AllOutputs(first);
}

namespace {

Output MakeQueue(const Scope& s, std::string_view op, const std::vector<DataType>& types, const QueueAttrs& a) {
  AttrMap attrs{{"component_types", types},
                {"shapes", a.shapes},
                {"capacity", a.capacity},
                {"container", a.container},
                {"shared_name", a.shared_name}};
  if (op == "RandomShuffleQueue") {
    attrs["min_after_dequeue"] = a.min_after_dequeue;
    attrs["seed"] = a.seed;
    attrs["seed2"] = a.seed2;
  }
  return Build(s, op, {}, std::move(attrs));
}

std::vector<Input> Prepend(Input handle, const std::vector<Input>& rest) {
  std::vector<Input> inputs = {std::move(handle)};
  inputs.insert(inputs.end(), rest.begin(), rest.end());
  return inputs;
}

}  // namespace

Output FIFOQueue(const Scope& s, const std::vector<DataType>& types, const QueueAttrs& attrs) {
  return MakeQueue(s, "FIFOQueue", types, attrs);
}
Output PaddingFIFOQueue(const Scope& s, const std::vector<DataType>& types, const QueueAttrs& attrs) {
  return MakeQueue(s, "PaddingFIFOQueue", types, attrs);
}
Output RandomShuffleQueue(const Scope& s, const std::vector<DataType>& types, const QueueAttrs& attrs) {
  return MakeQueue(s, "RandomShuffleQueue", types, attrs);
}
Operation QueueEnqueue(const Scope& s, Input handle, const std::vector<Input>& components) {
  return Build(s, "QueueEnqueue", Prepend(std::move(handle), components)).op();
}
Operation QueueEnqueueMany(const Scope& s, Input handle, const std::vector<Input>& components) {
  return Build(s, "QueueEnqueueMany", Prepend(std::move(handle), components)).op();
}
std::vector<Output> QueueDequeue(const Scope& s, Input handle, const std::vector<DataType>& types) {
  return AllOutputs(Build(s, "QueueDequeue", {std::move(handle)}, {{"component_types", types}}));
}
std::vector<Output> QueueDequeueMany(const Scope& s, Input handle, Input n, const std::vector<DataType>& types) {
  return AllOutputs(Build(s, "QueueDequeueMany", {std::move(handle), std::move(n)}, {{"component_types", types}}));
}
std::vector<Output> QueueDequeueUpTo(const Scope& s, Input handle, Input n, const std::vector<DataType>& types) {
  return AllOutputs(Build(s, "QueueDequeueUpTo", {std::move(handle), std::move(n)}, {{"component_types", types}}));
}
Operation QueueClose(const Scope& s, Input handle, bool cancel_pending_enqueues) {
  return Build(s, "QueueClose", {std::move(handle)}, {{"cancel_pending_enqueues", cancel_pending_enqueues}}).op();
}
Output QueueSize(const Scope& s, Input handle) { return Build(s, "QueueSize", {std::move(handle)}); }

Output ConditionalAccumulator(const Scope& s, DataType dtype, const AccumulatorAttrs& a) {
  return Build(s, "ConditionalAccumulator", {},
               {{"dtype", dtype},
                {"shape", a.shape},
                {"container", a.container},
                {"shared_name", a.shared_name},
                {"reduction_type", a.reduction_type}});
}
Operation AccumulatorApplyGradient(const Scope& s, Input handle, Input local_step, Input gradient) {
  return Build(s, "AccumulatorApplyGradient", {std::move(handle), std::move(local_step), std::move(gradient)}).op();
}
Output AccumulatorTakeGradient(const Scope& s, Input handle, Input num_required, DataType dtype) {
  return Build(s, "AccumulatorTakeGradient", {std::move(handle), std::move(num_required)}, {{"dtype", dtype}});
}
Output AccumulatorNumAccumulated(const Scope& s, Input handle) {
  return Build(s, "AccumulatorNumAccumulated", {std::move(handle)});
}
Operation AccumulatorSetGlobalStep(const Scope& s, Input handle, Input new_global_step) {
  return Build(s, "AccumulatorSetGlobalStep", {std::move(handle), std::move(new_global_step)}).op();
}

std::vector<Output> DecodeCSV(const Scope& s, Input records, const std::vector<Input>& record_defaults,
                              const DecodeCSVAttrs& attrs) {
  return AllOutputs(Build(s, "DecodeCSV", Prepend(std::move(records), record_defaults),
                          {{"field_delim", attrs.field_delim},
                           {"use_quote_delim", attrs.use_quote_delim},
                           {"na_value", attrs.na_value}}));
}

}  // namespace tessera::ops
