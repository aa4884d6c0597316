// Schemas of collectives.
#include "graph/ops/core_ops.h"
#include "graph/shape_inference.h"

namespace tessera {
namespace {

// Output i has the shape of input i.
Status PairwiseUnchangedShapes(InferenceContext& c) {
  for (int i = 0; i < c.num_outputs(); ++i) c.set_output(i, c.input(i));
  return Status::OK();
}

}  // namespace

void RegisterCollectiveOps(OpRegistry& r) {
  // One member per device of a group: the members of (group_key, instance_key) reduce
  // their inputs elementwise and each gets the result. Several inputs are fused into one
  // ring pass. The session assigns each member its place in the ring. communication_hint
  // (TF's CollectiveReduceV2 has one too): "auto" or "ring" (the engine's own, faster here
  // on one machine and between machines alike) or "gloo" (Gloo's, on CPUs).
  RegisterCoreOp(r, OpDefBuilder("AllReduce").Input("input: N * T").Output("output: N * T")
                  .Attr("T: {float32, float64, int32}").Attr("N: int >= 1")
                  .Attr("reduction: string = \"sum\"").Attr("group_key: int")
                  .Attr("group_size: int >= 1").Attr("instance_key: int")
                  .Attr("wire_float16: bool = false")
                  .Attr("communication_hint: string = \"auto\"").SetIsStateful()
                  .SetShapeFn(PairwiseUnchangedShapes));
}

}  // namespace tessera
