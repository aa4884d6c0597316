// OpDef: the schema of an op — its inputs, outputs, attrs and shape function — written with
// TensorFlow's spec syntax:
//
//   OpDefBuilder("MatMul")
//       .Input("a: T").Input("b: T").Output("product: T")
//       .Attr("T: {float, double, int32}")
//       .Attr("transpose_a: bool = false")
//       .SetShapeFn(MatMulShape);
//
// Input/output specs: "name: T" (type from attr T), "name: float" (fixed type),
// "name: N * T" (a list of N inputs of type T), "name: Ts" with Ts a list(type) attr (one
// input per listed type), "ref: Ref(T)" (a mutable reference, as
// VariableV2's output and Assign's first input). Attr specs: "name: type", with optional
// "{allowed, types}", "= default", and ">= minimum" for ints (a minimum length for lists).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "graph/attr_value.h"
#include "graph/shape_inference.h"
#include "graph/platform/status.h"

namespace tessera {

struct ArgDef {
  std::string name;
  DataType type = DataType::kInvalid;  // set for a fixed type
  std::string type_attr;               // set when the type comes from an attr
  std::string number_attr;             // set for "N * T" lists
  bool is_ref = false;
};

struct AttrDef {
  std::string name;
  AttrType type = AttrType::kInt;
  std::optional<AttrValue> default_value;
  std::vector<DataType> allowed_types;  // empty: any
  std::optional<int64_t> minimum;
};

struct OpDef {
  std::string name;
  std::vector<ArgDef> inputs;
  std::vector<ArgDef> outputs;
  std::vector<AttrDef> attrs;
  bool is_stateful = false;
  ShapeFn shape_fn;

  const AttrDef* FindAttr(std::string_view attr_name) const;
};

// An arg typed by a list(type) attr: one input or output per listed type.
bool IsTypeListArg(const OpDef& op, const ArgDef& arg);
// How many tensors `arg` stands for under `attrs` (of node `node`, for errors): its number
// attr, the length of its list(type) attr, or 1.
StatusOr<int64_t> ArgLength(const OpDef& op, const ArgDef& arg, const AttrMap& attrs, std::string_view node);

class OpDefBuilder {
 public:
  explicit OpDefBuilder(std::string name);
  OpDefBuilder& Input(std::string_view spec);
  OpDefBuilder& Output(std::string_view spec);
  OpDefBuilder& Attr(std::string_view spec);
  OpDefBuilder& SetIsStateful();
  OpDefBuilder& SetShapeFn(ShapeFn fn);

  // The first malformed spec, if any, is reported here.
  StatusOr<OpDef> Finalize() const;

 private:
  OpDef def_;
  Status status_;
};

}  // namespace tessera
