// Schemas of TensorFlow 1.x's dataflow control flow, what tf.compat.v1.cond and while_loop
// build: Switch routes a value to one of two outputs and leaves the other dead; Merge
// forwards whichever input is alive; Enter, Exit and NextIteration move values into, out of
// and around a loop's frame; LoopCond marks a loop's predicate. The executor gives them
// their meaning (runtime/executor.h); the Ref variants carry references.
#include "graph/ops/core_ops.h"
#include "graph/shape_inference.h"

namespace tessera {
namespace {

Status SwitchShape(InferenceContext& c) {
  c.set_output(0, c.input(0));
  c.set_output(1, c.input(0));
  return Status::OK();
}

// The shape every input agrees on, with dimensions they disagree on unknown.
Status MergeShape(InferenceContext& c) {
  TensorShape out = c.input(0);
  for (int i = 1; i < c.num_inputs() && !out.unknown_rank(); ++i) {
    const TensorShape& in = c.input(i);
    if (in.unknown_rank() || in.rank() != out.rank()) {
      out = TensorShape::UnknownRank();
      break;
    }
    std::vector<int64_t> dims(out.dims().begin(), out.dims().end());
    for (int d = 0; d < in.rank(); ++d) {
      if (dims[d] != in.dim(d)) dims[d] = -1;
    }
    out = TensorShape(dims);
  }
  c.set_output(0, out);
  c.set_output(1, TensorShape());
  return Status::OK();
}

}  // namespace

void RegisterControlFlowOps(OpRegistry& r) {
  for (const bool ref : {false, true}) {
    const std::string prefix = ref ? "Ref" : "";
    const std::string t = ref ? "Ref(T)" : "T";
    RegisterCoreOp(r, OpDefBuilder(prefix + "Switch").Input("data: " + t).Input("pred: bool")
                    .Output("output_false: " + t).Output("output_true: " + t).Attr("T: type")
                    .SetShapeFn(SwitchShape));
    RegisterCoreOp(r, OpDefBuilder(prefix + "Merge").Input("inputs: N * " + t).Output("output: " + t)
                    .Output("value_index: int32").Attr("T: type").Attr("N: int >= 1").SetShapeFn(MergeShape));
    RegisterCoreOp(r, OpDefBuilder(prefix + "Enter").Input("data: " + t).Output("output: " + t).Attr("T: type")
                    .Attr("frame_name: string").Attr("is_constant: bool = false")
                    .Attr("parallel_iterations: int = 10").SetShapeFn(UnchangedShape));
    for (const char* op : {"Exit", "NextIteration"}) {
      RegisterCoreOp(r, OpDefBuilder(prefix + op).Input("data: " + t).Output("output: " + t).Attr("T: type")
                      .SetShapeFn(UnchangedShape));
    }
  }
  // The switch of a lowered Case: `data` to output `output_index`, or to the last output when
  // the index is out of range, as TensorFlow's.
  RegisterCoreOp(r, OpDefBuilder("_SwitchN").Input("data: T").Input("output_index: int32")
                  .Output("outputs: num_outs * T").Attr("num_outs: int >= 1").Attr("T: type")
                  .SetShapeFn([](InferenceContext& c) -> Status {
                    for (int i = 0; i < c.num_outputs(); ++i) c.set_output(i, c.input(0));
                    return Status::OK();
                  }));
  RegisterCoreOp(r, OpDefBuilder("LoopCond").Input("input: bool").Output("output: bool").SetShapeFn(UnchangedShape));
  // Runs, and lets its successors run, even when its inputs are dead.
  RegisterCoreOp(r, OpDefBuilder("ControlTrigger").SetShapeFn(ScalarShape));
}

}  // namespace tessera
