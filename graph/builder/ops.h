// Typed wrappers for the core ops: one C++ function per op, TensorFlow's names and inputs.
//
//   Scope root = Scope::NewRootScope();
//   auto x = ops::Placeholder(root.WithOpName("x"), DataType::kFloat, TensorShape({-1, 2}));
//   auto w = ops::Variable(root.WithOpName("w"), TensorShape({2, 1}), DataType::kFloat);
//   auto y = ops::MatMul(root.WithOpName("y"), x, w);
//   auto s = ops::Sum(root, y, {0, 1}, {.keep_dims = true});
//
// A wrapper whose inputs come from a failed op, or whose node is invalid, returns an empty
// Output and leaves the error in scope.status().
#pragma once

#include "graph/builder/scope.h"

namespace tessera::ops {

Output Const(const Scope& s, const Tensor& value);
Output Placeholder(const Scope& s, DataType dtype, TensorShape shape = TensorShape::UnknownRank());
Output Identity(const Scope& s, Input x);
Operation NoOp(const Scope& s);

struct VariableAttrs {
  std::string container;
  std::string shared_name;
};
// VariableV2: a mutable tensor kept across Session::Run calls.
Output Variable(const Scope& s, TensorShape shape, DataType dtype, const VariableAttrs& attrs = {});
struct AssignAttrs {
  bool validate_shape = true;
  bool use_locking = true;
};
Output Assign(const Scope& s, Input ref, Input value, const AssignAttrs& attrs = {});
Output AssignAdd(const Scope& s, Input ref, Input value);
Output AssignSub(const Scope& s, Input ref, Input value);
Output IsVariableInitialized(const Scope& s, Input ref);

// In-place optimizer updates (training/optimizers.h builds them); each returns the variable.
Output ApplyGradientDescent(const Scope& s, Input var, Input alpha, Input delta);
Output ApplyMomentum(const Scope& s, Input var, Input accum, Input lr, Input grad, Input momentum,
                     bool use_nesterov = false);
Output ApplyRMSProp(const Scope& s, Input var, Input ms, Input mom, Input lr, Input rho, Input momentum,
                    Input epsilon, Input grad);
Output ApplyAdam(const Scope& s, Input var, Input m, Input v, Input beta1_power, Input beta2_power, Input lr,
                 Input beta1, Input beta2, Input epsilon, Input grad);

Output Add(const Scope& s, Input x, Input y);
Output Sub(const Scope& s, Input x, Input y);
Output Mul(const Scope& s, Input x, Input y);
Output Div(const Scope& s, Input x, Input y);
Output Maximum(const Scope& s, Input x, Input y);
Output Minimum(const Scope& s, Input x, Input y);
Output Equal(const Scope& s, Input x, Input y);
Output Greater(const Scope& s, Input x, Input y);
Output Less(const Scope& s, Input x, Input y);
Output AddN(const Scope& s, const std::vector<Input>& inputs);

Output Neg(const Scope& s, Input x);
Output Square(const Scope& s, Input x);
Output Sqrt(const Scope& s, Input x);
Output Exp(const Scope& s, Input x);
Output Log(const Scope& s, Input x);
Output Relu(const Scope& s, Input features);
Output Softmax(const Scope& s, Input logits);
Output LogSoftmax(const Scope& s, Input logits);

// NHWC convolution of input [N, H, W, C] by filter [KH, KW, C, O]; strides [1, sh, sw, 1],
// padding "SAME" or "VALID".
Output Conv2D(const Scope& s, Input input, Input filter, const std::vector<int64_t>& strides, std::string padding);
Output Conv2DBackpropInput(const Scope& s, Input input_sizes, Input filter, Input out_backprop,
                           const std::vector<int64_t>& strides, std::string padding);
Output Conv2DBackpropFilter(const Scope& s, Input input, Input filter_sizes, Input out_backprop,
                            const std::vector<int64_t>& strides, std::string padding);
// ksize and strides [1, kh, kw, 1].
Output MaxPool(const Scope& s, Input input, const std::vector<int64_t>& ksize, const std::vector<int64_t>& strides,
               std::string padding);
Output AvgPool(const Scope& s, Input value, const std::vector<int64_t>& ksize, const std::vector<int64_t>& strides,
               std::string padding);
Output MaxPoolGrad(const Scope& s, Input orig_input, Input orig_output, Input grad, const std::vector<int64_t>& ksize,
                   const std::vector<int64_t>& strides, std::string padding);
Output AvgPoolGrad(const Scope& s, Input orig_input_shape, Input grad, const std::vector<int64_t>& ksize,
                   const std::vector<int64_t>& strides, std::string padding);
// Reshape to [batch, everything else], from the static shape of x (its dims past the first
// must be known).
Output Flatten(const Scope& s, Input x);
// {loss per row, backprop}: softmax cross-entropy of logits [batch, classes] against class
// indices [batch].
std::vector<Output> SparseSoftmaxCrossEntropyWithLogits(const Scope& s, Input features, Input labels);
Output ArgMax(const Scope& s, Input input, Input dimension, DataType output_type = DataType::kInt64);

struct RandomAttrs {
  int64_t seed = 0;  // seed and seed2 both 0: a fresh random sequence
  int64_t seed2 = 0;
};
// U[0, 1), N(0, 1), and N(0, 1) redrawn beyond two standard deviations.
Output RandomUniform(const Scope& s, Input shape, DataType dtype, const RandomAttrs& attrs = {});
Output RandomNormal(const Scope& s, Input shape, DataType dtype, const RandomAttrs& attrs = {});
Output TruncatedNormal(const Scope& s, Input shape, DataType dtype, const RandomAttrs& attrs = {});

struct MatMulAttrs {
  bool transpose_a = false;
  bool transpose_b = false;
};
Output MatMul(const Scope& s, Input a, Input b, const MatMulAttrs& attrs = {});
Output BiasAdd(const Scope& s, Input value, Input bias, std::string data_format = "NHWC");

Output Reshape(const Scope& s, Input tensor, Input shape);
Output Cast(const Scope& s, Input x, DataType dst);
struct ReductionAttrs {
  bool keep_dims = false;
};
Output Sum(const Scope& s, Input input, Input axis, const ReductionAttrs& attrs = {});
Output Mean(const Scope& s, Input input, Input axis, const ReductionAttrs& attrs = {});
Output Max(const Scope& s, Input input, Input axis, const ReductionAttrs& attrs = {});

Output Fill(const Scope& s, Input dims, Input value);
// Joins `values` along `axis` (tf.concat); they agree in every other dimension.
Output Concat(const Scope& s, const std::vector<Input>& values, Input axis);
// Cuts `value` into `num_split` equal parts along `axis` (tf.split with a number).
std::vector<Output> Split(const Scope& s, Input axis, Input value, int64_t num_split);
// Cuts `value` along `axis` into parts of the sizes in the vector `size_splits`.
std::vector<Output> SplitV(const Scope& s, Input value, Input size_splits, Input axis, int64_t num_split);
Output ZerosLike(const Scope& s, Input x);
Output OnesLike(const Scope& s, Input x);
Output Shape(const Scope& s, Input input, DataType out_type = DataType::kInt32);
Output Size(const Scope& s, Input input, DataType out_type = DataType::kInt32);
Output BroadcastTo(const Scope& s, Input input, Input shape);

// The building blocks of gradients (graph/builder/gradients.h).
Output ReluGrad(const Scope& s, Input gradients, Input features);
Output BiasAddGrad(const Scope& s, Input out_backprop, std::string data_format = "NHWC");
// r0, r1: the axes to sum the gradients of operands of shapes s0 and s1 over.
std::vector<Output> BroadcastGradientArgs(const Scope& s, Input s0, Input s1);

struct AllReduceAttrs {
  std::string reduction = "sum";  // sum, mean, max or min
  int64_t group_key = 0;
  int64_t group_size = 1;  // members of the group, one per device
  int64_t instance_key = 0;
  bool wire_float16 = false;  // send float16 between devices: half the bytes
  // "auto" or "ring" (the engine's ring), or "gloo" (Gloo's, on CPUs).
  std::string communication_hint = "auto";
};
// This device's member of an all-reduce group: one output per input, each the reduction of
// that input over every member. Several inputs are fused into one ring pass.
std::vector<Output> AllReduce(const Scope& s, const std::vector<Input>& inputs, const AllReduceAttrs& attrs);

struct QueueAttrs {
  std::vector<TensorShape> shapes{};  // empty, or one per component
  int64_t capacity = -1;              // -1: unbounded
  std::string container{};
  std::string shared_name{};          // "": the op's own name
  int64_t min_after_dequeue = 0;      // RandomShuffleQueue only
  int64_t seed = 0;                   // RandomShuffleQueue only
  int64_t seed2 = 0;
};
// Queue ops (tf.FIFOQueue and friends): the queue op outputs a handle the others take.
Output FIFOQueue(const Scope& s, const std::vector<DataType>& component_types, const QueueAttrs& attrs = {});
Output PaddingFIFOQueue(const Scope& s, const std::vector<DataType>& component_types, const QueueAttrs& attrs = {});
Output RandomShuffleQueue(const Scope& s, const std::vector<DataType>& component_types, const QueueAttrs& attrs = {});
Operation QueueEnqueue(const Scope& s, Input handle, const std::vector<Input>& components);
Operation QueueEnqueueMany(const Scope& s, Input handle, const std::vector<Input>& components);
std::vector<Output> QueueDequeue(const Scope& s, Input handle, const std::vector<DataType>& component_types);
std::vector<Output> QueueDequeueMany(const Scope& s, Input handle, Input n, const std::vector<DataType>& component_types);
std::vector<Output> QueueDequeueUpTo(const Scope& s, Input handle, Input n, const std::vector<DataType>& component_types);
Operation QueueClose(const Scope& s, Input handle, bool cancel_pending_enqueues = false);
Output QueueSize(const Scope& s, Input handle);

struct AccumulatorAttrs {
  TensorShape shape = TensorShape::UnknownRank();
  std::string container{};
  std::string shared_name{};         // "": the op's own name
  std::string reduction_type = "MEAN";  // or "SUM"
};
// SyncReplicasOptimizer's gradient accumulators (tf.ConditionalAccumulator): the accumulator
// op outputs a handle the others take. A gradient whose local_step is older than the
// accumulator's global step is dropped; a take waits for num_required gradients and
// advances the global step.
Output ConditionalAccumulator(const Scope& s, DataType dtype, const AccumulatorAttrs& attrs = {});
Operation AccumulatorApplyGradient(const Scope& s, Input handle, Input local_step, Input gradient);
Output AccumulatorTakeGradient(const Scope& s, Input handle, Input num_required, DataType dtype);
Output AccumulatorNumAccumulated(const Scope& s, Input handle);
Operation AccumulatorSetGlobalStep(const Scope& s, Input handle, Input new_global_step);

struct DecodeCSVAttrs {
  std::string field_delim = ",";
  bool use_quote_delim = true;  // fields may be "quoted", with "" for a quote inside
  std::string na_value{};       // a field equal to this counts as missing
};
// One output per column, of its default's dtype (float32, float64, int32, int64, string)
// and the records' shape. A default with no element makes the column required.
std::vector<Output> DecodeCSV(const Scope& s, Input records, const std::vector<Input>& record_defaults,
                              const DecodeCSVAttrs& attrs = {});

}  // namespace tessera::ops
