// The PyFunc kernel (tf.py_func, tf.numpy_function, Dataset.from_generator): a Python
// function run by the step on the thread the executor gives it, holding the GIL while it
// runs. Session.run lets go of the GIL for the step, so the two never wait on each other.
// The function is found by its token in tessera.script_ops, which keeps it; the kernel
// holds no Python object, as it may be destroyed on a thread without the GIL.
#include "kernels/kernel_registry.h"
#include "kernels/op_kernel.h"
#include "python/bindings.h"

namespace tessera::python {
namespace {

// The Status for the exception a Python function raised: TensorFlow's mapping (StopIteration
// ends a dataset as OutOfRange), or the code of one of tessera.errors' classes.
Status StatusOfException(nb::python_error& e, const std::string& where) {
  struct Mapping {
    PyObject* type;
    Code code;
  };
  const Mapping mappings[] = {
      {PyExc_StopIteration, Code::kOutOfRange},     {PyExc_IndexError, Code::kOutOfRange},
      {PyExc_ValueError, Code::kInvalidArgument},   {PyExc_TypeError, Code::kInvalidArgument},
      {PyExc_NotImplementedError, Code::kUnimplemented}, {PyExc_MemoryError, Code::kResourceExhausted}};
  Code code = Code::kUnknown;
  for (const Mapping& m : mappings) {
    if (e.matches(m.type)) {
      code = m.code;
      break;
    }
  }
  // One of tessera.errors' (or TensorFlow's) classes: its code, where it is one (1 to 16).
  try {
    nb::handle value = e.value();
    if (nb::hasattr(value, "error_code")) {
      const int error_code = nb::cast<int>(value.attr("error_code"));
      if (error_code >= 1 && error_code <= 16) code = static_cast<Code>(error_code);
    }
  } catch (const std::exception&) {  // an error_code that is no int, or whose reading raises
  }
  return Status(code, StrCat(where, ": ", e.what()));
}

class PyFuncOp : public OpKernel {
 public:
  explicit PyFuncOp(OpKernelConstruction* c) : OpKernel(c) {
    Status s = c->GetAttr("token", &token_);
    if (!s.ok()) c->SetStatus(s);
  }

  void Compute(OpKernelContext* ctx) override { OP_REQUIRES_OK(ctx, Call(ctx)); }

 private:
  Status Call(OpKernelContext* ctx) {
    const std::string where = StrCat("The Python function of PyFunc '", name(), "' (", token_, ")");
    if (!Py_IsInitialized() || Finalizing()) return errors::Cancelled(where, ": the interpreter is ending");
    nb::gil_scoped_acquire gil;
    std::vector<Tensor> results;
    try {
      nb::list args;
      for (int i = 0; i < num_inputs(); ++i) args.append(ArrayFromTensor(ctx->input(i)));
      nb::object returned = nb::module_::import_("tessera.script_ops").attr("_call")(token_, args);
      for (nb::handle value : returned) {
        StatusOr<Tensor> t = TensorFromArray(value);
        if (!t.ok()) return errors::InvalidArgument(where, " returned ", nb::str(value.type()).c_str(), ": ",
                                                    t.status().message());
        // A copy: the function may change its array once it returns (a generator's buffer).
        results.push_back(t->DeepCopy());
      }
    } catch (nb::python_error& e) {
      return StatusOfException(e, where);
    }
    if (static_cast<int>(results.size()) != num_outputs()) {
      return errors::InvalidArgument(where, " returned ", results.size(), " values; PyFunc declares ", num_outputs());
    }
    for (int i = 0; i < num_outputs(); ++i) {
      if (results[i].dtype() != output_type(i)) {
        return errors::InvalidArgument(i, "-th value returned by ", where, " is ", DataTypeName(results[i].dtype()),
                                       ", but expects ", DataTypeName(output_type(i)));
      }
      ctx->set_output(i, std::move(results[i]));
    }
    return Status::OK();
  }

  std::string token_;
};

}  // namespace

void RegisterPyFuncKernel() { KernelRegistry::Global()->Register<PyFuncOp>(KernelDefBuilder("PyFunc").Device(kDeviceCpu)); }

}  // namespace tessera::python
