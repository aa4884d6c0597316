// Schemas of random tensors.
#include "graph/ops/core_ops.h"
#include "graph/shape_inference.h"

namespace tessera {

void RegisterRandomOps(OpRegistry& r) {
  // Random tensors of a given shape; both seeds 0 means a fresh random sequence, otherwise
  // the sequence is the same in every session.
  for (const char* op : {"RandomUniform", "RandomStandardNormal", "TruncatedNormal"}) {
    RegisterCoreOp(r, OpDefBuilder(op).Input("shape: T").Output("output: dtype").Attr("seed: int = 0")
                    .Attr("seed2: int = 0").Attr("dtype: {float32, float64}").Attr("T: {int32, int64}")
                    .SetIsStateful().SetShapeFn(ShapeFromInput0));
  }
}

}  // namespace tessera
