// Schemas of queues, stacks and gradient accumulators.
#include "graph/ops/core_ops.h"
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
  // string vector [container, name], or for the V2 ops that tf.compat.v1 emits, a resource
  // scalar. timeout_ms is accepted and, as in TensorFlow, not supported.
  constexpr const char* kQueueAttrs[] = {"component_types: list(type) >= 1", "shapes: list(shape) = []",
                                         "capacity: int = -1", "container: string = \"\"",
                                         "shared_name: string = \"\""};
  for (const bool v2 : {false, true}) {
    const std::string suffix = v2 ? "V2" : "";
    const std::string handle = v2 ? "handle: resource" : "handle: string";
    for (const char* kind : {"FIFOQueue", "PaddingFIFOQueue", "RandomShuffleQueue"}) {
      OpDefBuilder b(kind + suffix);
      b.Output(handle).SetIsStateful().SetShapeFn(v2 ? ScalarShape : QueueHandleShape);
      for (const char* a : kQueueAttrs) b.Attr(a);
      if (std::string_view(kind) == "RandomShuffleQueue") {
        b.Attr("min_after_dequeue: int = 0").Attr("seed: int = 0").Attr("seed2: int = 0");
      }
      RegisterCoreOp(r, b);
    }
    for (const char* op : {"QueueEnqueue", "QueueEnqueueMany"}) {
      RegisterCoreOp(r, OpDefBuilder(op + suffix).Input(handle).Input("components: Tcomponents")
                      .Attr("Tcomponents: list(type) >= 1").Attr("timeout_ms: int = -1").SetIsStateful());
    }
    RegisterCoreOp(r, OpDefBuilder("QueueDequeue" + suffix).Input(handle).Output("components: component_types")
                    .Attr("component_types: list(type) >= 1").Attr("timeout_ms: int = -1").SetIsStateful());
    for (const char* op : {"QueueDequeueMany", "QueueDequeueUpTo"}) {
      RegisterCoreOp(r, OpDefBuilder(op + suffix).Input(handle).Input("n: int32").Output("components: component_types")
                      .Attr("component_types: list(type) >= 1").Attr("timeout_ms: int = -1").SetIsStateful());
    }
    RegisterCoreOp(r, OpDefBuilder("QueueClose" + suffix).Input(handle)
                    .Attr("cancel_pending_enqueues: bool = false").SetIsStateful());
    RegisterCoreOp(r, OpDefBuilder("QueueSize" + suffix).Input(handle).Output("size: int32").SetIsStateful()
                    .SetShapeFn(ScalarShape));
  }

  // Stacks that live for one step: the values a while loop's gradient reads back in reverse.
  RegisterCoreOp(r, OpDefBuilder("StackV2").Input("max_size: int32").Output("handle: resource").Attr("elem_type: type")
                  .Attr("stack_name: string = \"\"").SetIsStateful().SetShapeFn(ScalarShape));
  RegisterCoreOp(r, OpDefBuilder("StackPushV2").Input("handle: resource").Input("elem: T").Output("output: T")
                  .Attr("T: type").Attr("swap_memory: bool = false").SetIsStateful().SetShapeFn(
                      [](InferenceContext& c) {
                        c.set_output(0, c.input(1));
                        return Status::OK();
                      }));
  RegisterCoreOp(r, OpDefBuilder("StackPopV2").Input("handle: resource").Output("elem: elem_type")
                  .Attr("elem_type: type").SetIsStateful().SetShapeFn(UnknownShape));
  RegisterCoreOp(r, OpDefBuilder("StackCloseV2").Input("handle: resource").SetIsStateful());

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
