// InferenceContext: what an op's shape function sees of one node while the graph is built
// (its attrs, its input shapes, and the values of inputs that are constants), and where it
// writes the output shapes.
//
//   Status MatMulShape(InferenceContext& c) {
//     ... c.input(0), c.input(1), c.GetAttr("transpose_a", &ta) ...
//     c.set_output(0, TensorShape({m, n}));
//   }
//
// A shape function returns InvalidArgument for inputs that can never be valid; the graph
// adds the node, op and input shapes to the message.
#pragma once

#include <functional>
#include <span>
#include <vector>

#include "graph/attr_value.h"
#include "graph/platform/status.h"
#include "graph/tensor.h"
#include "graph/tensor_shape.h"

namespace tessera {

class InferenceContext {
 public:
  InferenceContext(std::string_view node_name, const AttrMap& attrs,
                   std::vector<TensorShape> input_shapes, std::vector<const Tensor*> input_values,
                   int num_outputs);

  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  const TensorShape& input(int i) const { return inputs_[i]; }
  // The value of input i when it is produced by a Const node; nullptr otherwise.
  const Tensor* input_tensor(int i) const { return values_[i]; }

  template <typename T>
  Status GetAttr(std::string_view name, T* out) const {
    return tessera::GetAttr(attrs_, node_name_, name, out);
  }
  const AttrMap& attrs() const { return attrs_; }

  int num_outputs() const { return static_cast<int>(outputs_.size()); }
  void set_output(int i, const TensorShape& s) { outputs_[i] = s; }
  const std::vector<TensorShape>& outputs() const { return outputs_; }

  // Numpy broadcasting of two (possibly partial) shapes.
  static StatusOr<TensorShape> BroadcastShapes(const TensorShape& a, const TensorShape& b);
  // The more specific of two compatible shapes.
  static StatusOr<TensorShape> Merge(const TensorShape& a, const TensorShape& b);
  // Whether two fully defined shapes are one but for dimensions of 1 before it ([C] and
  // [1, 1, 1, C]): the same values in the same order, which broadcast alike.
  static bool SameButLeadingOnes(const TensorShape& a, const TensorShape& b);

 private:
  std::string_view node_name_;
  const AttrMap& attrs_;
  std::vector<TensorShape> inputs_;
  std::vector<const Tensor*> values_;
  std::vector<TensorShape> outputs_;
};

using ShapeFn = std::function<Status(InferenceContext&)>;

// Common shape functions.
Status UnchangedShape(InferenceContext& c);          // output 0 = input 0
Status BroadcastBinaryShape(InferenceContext& c);    // output 0 = broadcast(input 0, 1)
Status UnknownShape(InferenceContext& c);            // every output of unknown rank
Status ScalarShape(InferenceContext& c);             // every output a scalar
Status ShapeFromAttr(InferenceContext& c);           // output 0 = attr "shape"
Status MergedInputsShape(InferenceContext& c);       // output 0 = every input, merged
Status ShapeFromInput0(InferenceContext& c);         // output 0 = the value of input 0
Status ShapeFromInput1(InferenceContext& c);         // output 0 = the value of input 1

// The output length of a window of `k` sliding by `stride` over `in`, and the padding
// before the first window, by TensorFlow's rules: "VALID" keeps windows inside the input,
// "SAME" gives ceil(in / stride) outputs with the padding split evenly (the extra after).
Status WindowedOutputSize(int64_t in, int64_t k, int64_t stride, std::string_view padding, int64_t* out,
                          int64_t* pad_before);

}  // namespace tessera
