// Schemas of variables and their assignment through reference edges.
#include "graph/ops/core_ops.h"
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

  // Resource variables, what tf.compat.v1 creates by default in TensorFlow 2: a handle names
  // the variable, which the first AssignVariableOp creates; reading one never assigned is
  // FailedPrecondition. The value's shape is not known from the handle.
  RegisterCoreOp(r, OpDefBuilder("VarHandleOp").Output("resource: resource").Attr("container: string = \"\"")
                  .Attr("shared_name: string = \"\"").Attr("dtype: type").Attr("shape: shape").SetIsStateful()
                  .SetShapeFn(ScalarShape));
  RegisterCoreOp(r, OpDefBuilder("ReadVariableOp").Input("resource: resource").Output("value: dtype")
                  .Attr("dtype: type").SetIsStateful().SetShapeFn(UnknownShape));
  RegisterCoreOp(r, OpDefBuilder("AssignVariableOp").Input("resource: resource").Input("value: dtype")
                  .Attr("dtype: type").Attr("validate_shape: bool = false").SetIsStateful());
  for (const char* op : {"AssignAddVariableOp", "AssignSubVariableOp"}) {
    RegisterCoreOp(r, OpDefBuilder(op).Input("resource: resource").Input("value: dtype")
                    .Attr("dtype: {float32, float64, int32, int64}").SetIsStateful());
  }
  // TensorFlow's hint that reads need not copy; TF2's savers read variables after it.
  RegisterCoreOp(r, OpDefBuilder("DisableCopyOnRead").Input("resource: resource").SetIsStateful());
  RegisterCoreOp(r, OpDefBuilder("VarIsInitializedOp").Input("resource: resource").Output("is_initialized: bool")
                  .SetIsStateful().SetShapeFn(ScalarShape));
}

}  // namespace tessera
