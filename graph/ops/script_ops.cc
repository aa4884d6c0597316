// The schema of PyFunc, TensorFlow's tf.py_func: a Python function, known by `token`, run by
// the step on its inputs. Its kernel is the Python package's (python/py_func.cc); a program
// without Python has the op but no kernel, and says so when a step needs one.
#include "graph/ops/core_ops.h"
#include "graph/shape_inference.h"

namespace tessera {

void RegisterScriptOps(OpRegistry& r) {
  RegisterCoreOp(r, OpDefBuilder("PyFunc").Input("input: Tin").Output("output: Tout").Attr("token: string")
                  .Attr("Tin: list(type) >= 0").Attr("Tout: list(type) >= 0").SetIsStateful()
                  .SetShapeFn(UnknownShape));
}

}  // namespace tessera
