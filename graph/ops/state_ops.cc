// Schemas of variables and their assignment through reference edges.
#include "graph/ops/register.h"
#include "graph/shape_inference.h"

namespace tessera {
namespace {

Status AssignShape(InferenceContext& c) {
  bool validate = true;
  RETURN_IF_ERROR(c.GetAttr("validate_shape", &validate));
  if (!validate) {
    c.set_output(0, c.input(1));
    return Status::OK();
  }
  return MergedInputsShape(c);
}

}  // namespace

void RegisterStateOps(OpRegistry& r) {
  RegisterCoreOp(r, OpDefBuilder("VariableV2").Output("ref: Ref(dtype)").Attr("shape: shape")
                  .Attr("dtype: type").Attr("container: string = \"\"")
                  .Attr("shared_name: string = \"\"").SetIsStateful().SetShapeFn(ShapeFromAttr));
  RegisterCoreOp(r, OpDefBuilder("Assign").Input("ref: Ref(T)").Input("value: T")
                  .Output("output_ref: Ref(T)").Attr("T: type").Attr("validate_shape: bool = true")
                  .Attr("use_locking: bool = true").SetShapeFn(AssignShape));
  // What a non-chief worker polls before it trains (tf.is_variable_initialized).
  RegisterCoreOp(r, OpDefBuilder("IsVariableInitialized").Input("ref: Ref(dtype)").Output("is_initialized: bool")
                  .Attr("dtype: type").SetShapeFn(ScalarShape));
  for (const char* op : {"AssignAdd", "AssignSub"}) {
    RegisterCoreOp(r, OpDefBuilder(op).Input("ref: Ref(T)").Input("value: T")
                    .Output("output_ref: Ref(T)").Attr(kNumeric).Attr("use_locking: bool = false")
                    .SetShapeFn(MergedInputsShape));
  }
}

}  // namespace tessera
