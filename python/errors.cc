// Engine Statuses as Python exceptions: tessera.errors holds TensorFlow's classes, one per
// code, and this raises them.

#include "python/bindings.h"

namespace tessera::python {

void Raise(const Status& s) {
  nb::object cls = nb::module_::import_("tessera.errors").attr("exception_type_from_error_code")(
      static_cast<int>(s.code()));
  nb::object error = cls(nb::none(), nb::none(), s.message());
  PyErr_SetObject(cls.ptr(), error.ptr());
  throw nb::python_error();
}

}  // namespace tessera::python
