// Schemas of optimizer updates.
#include "graph/ops/core_ops.h"
#include "graph/shape_inference.h"

namespace tessera {

void RegisterTrainingOps(OpRegistry& r) {
  // Optimizer updates, in place through references to the variable and its accumulators,
  // with TensorFlow's formulas (training/optimizers.h builds them).
  const char* kFloat = "T: {float32, float64}";
  RegisterCoreOp(r, OpDefBuilder("ApplyGradientDescent").Input("var: Ref(T)").Input("alpha: T").Input("delta: T")
                  .Output("out: Ref(T)").Attr(kFloat).Attr("use_locking: bool = false").SetShapeFn(UnchangedShape));
  RegisterCoreOp(r, OpDefBuilder("ApplyMomentum").Input("var: Ref(T)").Input("accum: Ref(T)").Input("lr: T")
                  .Input("grad: T").Input("momentum: T").Output("out: Ref(T)").Attr(kFloat)
                  .Attr("use_locking: bool = false").Attr("use_nesterov: bool = false").SetShapeFn(UnchangedShape));
  RegisterCoreOp(r, OpDefBuilder("ApplyRMSProp").Input("var: Ref(T)").Input("ms: Ref(T)").Input("mom: Ref(T)")
                  .Input("lr: T").Input("rho: T").Input("momentum: T").Input("epsilon: T").Input("grad: T")
                  .Output("out: Ref(T)").Attr(kFloat).Attr("use_locking: bool = false").SetShapeFn(UnchangedShape));
  RegisterCoreOp(r, OpDefBuilder("ApplyAdam").Input("var: Ref(T)").Input("m: Ref(T)").Input("v: Ref(T)")
                  .Input("beta1_power: T").Input("beta2_power: T").Input("lr: T").Input("beta1: T").Input("beta2: T")
                  .Input("epsilon: T").Input("grad: T").Output("out: Ref(T)").Attr(kFloat)
                  .Attr("use_locking: bool = false").Attr("use_nesterov: bool = false").SetShapeFn(UnchangedShape));
  // The same updates on resource variables: the handles instead of references, no output.
  RegisterCoreOp(r, OpDefBuilder("ResourceApplyGradientDescent").Input("var: resource").Input("alpha: T")
                  .Input("delta: T").Attr(kFloat).Attr("use_locking: bool = false").SetIsStateful());
  RegisterCoreOp(r, OpDefBuilder("ResourceApplyMomentum").Input("var: resource").Input("accum: resource")
                  .Input("lr: T").Input("grad: T").Input("momentum: T").Attr(kFloat).Attr("use_locking: bool = false")
                  .Attr("use_nesterov: bool = false").SetIsStateful());
  RegisterCoreOp(r, OpDefBuilder("ResourceApplyRMSProp").Input("var: resource").Input("ms: resource")
                  .Input("mom: resource").Input("lr: T").Input("rho: T").Input("momentum: T").Input("epsilon: T")
                  .Input("grad: T").Attr(kFloat).Attr("use_locking: bool = false").SetIsStateful());
  RegisterCoreOp(r, OpDefBuilder("ResourceApplyAdam").Input("var: resource").Input("m: resource")
                  .Input("v: resource").Input("beta1_power: T").Input("beta2_power: T").Input("lr: T").Input("beta1: T")
                  .Input("beta2: T").Input("epsilon: T").Input("grad: T").Attr(kFloat).Attr("use_locking: bool = false")
                  .Attr("use_nesterov: bool = false").SetIsStateful());
}

}  // namespace tessera
