// The parts of the extension module tessera._core (module.cc), one Bind function each, and
// what they share: engine Statuses raised as TensorFlow's exception classes, and tensors
// to and from NumPy.
#pragma once

#include <nanobind/nanobind.h>
// Every type caster any part uses, in every part: a cast instantiated without its caster in
// one file and with it in another is two different functions under one name.
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/set.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <memory>

#include "graph/graph.h"
#include "graph/platform/status.h"
#include "graph/tensor.h"

namespace tessera::python {

namespace nb = nanobind;

// The graph a Python program builds (tessera._core.Graph): Python names the nodes and
// holds the scopes; the Graph checks each node as it comes.
struct GraphHandle {
  std::unique_ptr<Graph> graph = std::make_unique<Graph>();
};

// Raises the tessera.errors class of s's code (InvalidArgumentError, NotFoundError, ...)
// with s's message. Precondition: !s.ok(); the GIL is held.
[[noreturn]] void Raise(const Status& s);
template <typename T>
T ValueOrRaise(StatusOr<T> v) {
  if (!v.ok()) Raise(v.status());
  return std::move(*v);
}
inline void OkOrRaise(const Status& s) {
  if (!s.ok()) Raise(s);
}

// Whether the interpreter is shutting down: a thread that takes the GIL then is ended.
bool Finalizing();

// NumPy's C API, for the functions below; false (a Python error set) where NumPy is missing.
// Called once, by the module's init.
bool InitNumpy();
// A tensor of `array`'s values: for an aligned, C-contiguous ndarray of a numeric dtype, the
// array's data itself (the tensor keeps the array alive); for an array of bytes or str
// objects, a string tensor. InvalidArgument for anything else. The GIL is held (as for all
// of these).
StatusOr<Tensor> TensorFromArray(nb::handle array);
// Whether `value` is an ndarray TensorFromArray takes as it is, of NumPy type number
// `numpy_type` (-1: never), whose shape fits `dims` (-1 where any size goes; null where any
// rank goes).
bool ArrayFits(nb::handle value, int numpy_type, const std::vector<int64_t>* dims);
// A NumPy array of t's values: t's own buffer where nothing else holds it, a copy where
// something does (a variable's value, which a later step may change); an object array of
// bytes for strings.
nb::object ArrayFromTensor(const Tensor& t);
// `array` itself, or its NumPy scalar where it has rank 0 (the element for an object array).
nb::object ScalarOrArray(nb::object array);

void BindGraph(nb::module_& m);
void BindSession(nb::module_& m);
void BindSummary(nb::module_& m);
void BindServer(nb::module_& m);
// The kernel of PyFunc (py_func.cc), registered once, by the module's init.
void RegisterPyFuncKernel();

}  // namespace tessera::python
