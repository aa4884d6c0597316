// Schemas of string ops: the ones TensorFlow's savers build their file names with.
#include "graph/ops/core_ops.h"
#include "graph/shape_inference.h"

namespace tessera {
namespace {

// StringJoin's inputs are scalars or tensors of one shape, which the output has.
Status StringJoinShape(InferenceContext& c) {
  TensorShape out;
  for (int i = 0; i < c.num_inputs(); ++i) {
    if (c.input(i).rank() == 0) continue;
    if (out.rank() == 0) {
      out = c.input(i);
    } else {
      ASSIGN_OR_RETURN(out, InferenceContext::Merge(out, c.input(i)));
    }
  }
  c.set_output(0, out);
  return Status::OK();
}

}  // namespace

void RegisterStringOps(OpRegistry& r) {
  RegisterCoreOp(r, OpDefBuilder("StringJoin").Input("inputs: N * string").Output("output: string")
                  .Attr("N: int >= 0").Attr("separator: string = \"\"").SetShapeFn(StringJoinShape));
  // Each string's length in bytes, or in UTF-8 characters with unit "UTF8_CHAR".
  RegisterCoreOp(r, OpDefBuilder("StringLength").Input("input: string").Output("output: int32")
                  .Attr("unit: string = \"BYTE\"").SetShapeFn(UnchangedShape));
  // Whether each string matches the whole of an RE2 pattern (TensorFlow's regex syntax).
  RegisterCoreOp(r, OpDefBuilder("StaticRegexFullMatch").Input("input: string").Output("output: bool")
                  .Attr("pattern: string").SetShapeFn(UnchangedShape));
  RegisterCoreOp(r, OpDefBuilder("RegexFullMatch").Input("input: string").Input("pattern: string")
                  .Output("output: bool").SetShapeFn(UnchangedShape));
}

}  // namespace tessera
