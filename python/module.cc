// tessera._core: the engine as the Python package (python/tessera) sees it.
#include "python/bindings.h"

NB_MODULE(_core, m) {
  m.doc() = "Tessera's engine: graphs, sessions and tensors for the tessera package";
  if (!tessera::python::InitNumpy()) throw nanobind::python_error();
  tessera::python::BindGraph(m);
  tessera::python::BindSession(m);
  tessera::python::BindSummary(m);
  tessera::python::BindServer(m);
  tessera::python::RegisterPyFuncKernel();
}
