// Schemas of summaries, TensorBoard's inputs: each op outputs a serialized Summary proto
// (graph/serialize/summary.h), which a FileWriter puts in an event file.
#include "graph/ops/core_ops.h"
#include "graph/shape_inference.h"

namespace tessera {

void RegisterSummaryOps(OpRegistry& r) {
  constexpr const char* kRealTypes = "T: {float32, float64, float16, bfloat16, int32, int64, uint8} = float32";
  // One scalar per tag: tags and values have one shape.
  RegisterCoreOp(r, OpDefBuilder("ScalarSummary").Input("tags: string").Input("values: T").Output("summary: string")
                  .Attr(kRealTypes).SetShapeFn(ScalarShape));
  // A histogram of every value; a NaN or infinity is an error naming the node.
  RegisterCoreOp(r, OpDefBuilder("HistogramSummary").Input("tag: string").Input("values: T")
                  .Output("summary: string").Attr(kRealTypes).SetShapeFn(ScalarShape));
  // The first max_images images of a [batch, height, width, 1|3|4] tensor as PNGs, tagged
  // TAG/image/I (TAG/image when max_images is 1). Floats are scaled into 0-255 per image:
  // by 255/max when none is negative, else by 127/max|v| around 128; a pixel with a
  // non-finite channel is red. (TensorFlow's bad_color attr, which sets that colour, is not
  // declared.)
  RegisterCoreOp(r, OpDefBuilder("ImageSummary").Input("tag: string").Input("tensor: T").Output("summary: string")
                  .Attr("max_images: int >= 1 = 3").Attr("T: {uint8, float32, float16} = float32")
                  .SetShapeFn(ScalarShape));
  // Every input's summaries as one; two values with one tag are an error.
  RegisterCoreOp(r, OpDefBuilder("MergeSummary").Input("inputs: N * string").Output("summary: string")
                  .Attr("N: int >= 1").SetShapeFn(ScalarShape));
}

}  // namespace tessera
