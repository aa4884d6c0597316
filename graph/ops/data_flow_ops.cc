// Schemas of queues and gradient accumulators.
#include "graph/ops/register.h"
#include "graph/shape_inference.h"

namespace tessera {
namespace {

Status QueueHandleShape(InferenceContext& c) {
  c.set_output(0, TensorShape({2}));
  return Status::OK();
}

}  // namespace

void RegisterDataFlowOps(OpRegistry& r) {
  // Queues (TensorFlow 1.x's data_flow_ops). A queue op creates or finds the queue named
  // by shared_name (its own name when empty) in its container and outputs a handle: the
  // string vector [container, name].
  constexpr const char* kQueueAttrs[] = {"component_types: list(type) >= 1", "shapes: list(shape) = []",
                                         "capacity: int = -1", "container: string = \"\"",
                                         "shared_name: string = \"\""};
  for (const char* op : {"FIFOQueue", "PaddingFIFOQueue", "RandomShuffleQueue"}) {
    OpDefBuilder b(op);
    b.Output("handle: string").SetIsStateful().SetShapeFn(QueueHandleShape);
    for (const char* a : kQueueAttrs) b.Attr(a);
    if (std::string_view(op) == "RandomShuffleQueue") {
      b.Attr("min_after_dequeue: int = 0").Attr("seed: int = 0").Attr("seed2: int = 0");
    }
    RegisterCoreOp(r, b);
  }
  for (const char* op : {"QueueEnqueue", "QueueEnqueueMany"}) {
    RegisterCoreOp(r, OpDefBuilder(op).Input("handle: string").Input("components: Tcomponents")
                    .Attr("Tcomponents: list(type) >= 1").SetIsStateful());
  }
  RegisterCoreOp(r, OpDefBuilder("QueueDequeue").Input("handle: string").Output("components: component_types")
                  .Attr("component_types: list(type) >= 1").SetIsStateful());
  for (const char* op : {"QueueDequeueMany", "QueueDequeueUpTo"}) {
    RegisterCoreOp(r, OpDefBuilder(op).Input("handle: string").Input("n: int32").Output("components: component_types")
                    .Attr("component_types: list(type) >= 1").SetIsStateful());
  }
  RegisterCoreOp(r, OpDefBuilder("QueueClose").Input("handle: string").Attr("cancel_pending_enqueues: bool = false")
                  .SetIsStateful());
  RegisterCoreOp(r, OpDefBuilder("QueueSize").Input("handle: string").Output("size: int32").SetIsStateful()
                  .SetShapeFn(ScalarShape));

  // SyncReplicasOptimizer's gradient accumulators, with the same string handles as queues.
  constexpr const char* kAccumulatorType = "dtype: {float32, float64}";
  RegisterCoreOp(r, OpDefBuilder("ConditionalAccumulator").Output("handle: string").Attr(kAccumulatorType)
                  .Attr("shape: shape").Attr("container: string = \"\"").Attr("shared_name: string = \"\"")
                  .Attr("reduction_type: string = \"MEAN\"").SetIsStateful().SetShapeFn(QueueHandleShape));
  RegisterCoreOp(r, OpDefBuilder("AccumulatorApplyGradient").Input("handle: string").Input("local_step: int64")
                  .Input("gradient: dtype").Attr(kAccumulatorType).SetIsStateful());
  RegisterCoreOp(r, OpDefBuilder("AccumulatorTakeGradient").Input("handle: string").Input("num_required: int32")
                  .Output("average: dtype").Attr(kAccumulatorType).SetIsStateful());
  RegisterCoreOp(r, OpDefBuilder("AccumulatorNumAccumulated").Input("handle: string")
                  .Output("num_accumulated: int32").SetIsStateful().SetShapeFn(ScalarShape));
  RegisterCoreOp(r, OpDefBuilder("AccumulatorSetGlobalStep").Input("handle: string")
                  .Input("new_global_step: int64").SetIsStateful());
}

}  // namespace tessera
