// NumPy arrays to and from engine tensors, through NumPy's C API: a step's feeds and fetches
// cross here, and each Python-level call on the way would cost it more than the engine's own
// run of a small graph. A fed array becomes the tensor's buffer (an allocator that hands
// out the array's data and holds a reference to the array until the tensor goes); a
// fetched tensor's buffer becomes the array's (a capsule holding the tensor is its base).
#define PY_ARRAY_UNIQUE_SYMBOL tessera_numpy_api
#define NPY_NO_DEPRECATED_API NPY_1_23_API_VERSION
#include <numpy/arrayobject.h>

#include <algorithm>

#include "python/bindings.h"

namespace tessera::python {

using namespace nb::literals;

bool Finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing();
#else
  return _Py_IsFinalizing();
#endif
}

namespace {

// Hands out the data of an array it holds a reference to, and lets go of the array when
// the tensor made on it goes. The last reference to the tensor may drop on an engine thread:
// the release takes the GIL then.
class BorrowedArray final : public Allocator {
 public:
  explicit BorrowedArray(PyArrayObject* array) : array_(array) { Py_INCREF(array); }
  ~BorrowedArray() override { Release(); }
  std::string_view name() const override { return "numpy"; }
  void* AllocateRaw(size_t bytes) override { return PyArray_DATA(array_); }
  void DeallocateRaw(void* ptr, size_t bytes) override { Release(); }

 private:
  void Release() {
    // At exit the interpreter has let go of everything; taking the GIL then would hang.
    if (array_ == nullptr || !Py_IsInitialized() || Finalizing()) return;
    nb::gil_scoped_acquire gil;
    Py_CLEAR(array_);
  }
  PyArrayObject* array_;
};

// The dtype of an array's elements, where Tessera holds it.
StatusOr<DataType> DtypeOf(PyArray_Descr* descr) {
  const int64_t size = PyDataType_ELSIZE(descr);
  switch (descr->kind) {
    case 'f':
      if (size == 4) return DataType::kFloat;
      if (size == 8) return DataType::kDouble;
      if (size == 2) return DataType::kHalf;
      break;
    case 'i':
      if (size == 4) return DataType::kInt32;
      if (size == 8) return DataType::kInt64;
      break;
    case 'u':
      if (size == 1) return DataType::kUInt8;
      break;
    case 'b': return DataType::kBool;
    default: break;
  }
  return errors::InvalidArgument("an array of dtype '", descr->kind, size,
                                 "': Tessera's tensors hold float16/32/64, int32/64, uint8, bool and strings");
}

int NumpyTypeOf(DataType dt) {
  switch (dt) {
    case DataType::kFloat: return NPY_FLOAT;
    case DataType::kDouble: return NPY_DOUBLE;
    case DataType::kHalf: return NPY_HALF;
    case DataType::kInt32: return NPY_INT32;
    case DataType::kInt64: return NPY_INT64;
    case DataType::kUInt8: return NPY_UINT8;
    case DataType::kBool: return NPY_BOOL;
    default: return -1;
  }
}

StatusOr<Tensor> StringTensor(nb::handle array) {
  std::vector<int64_t> dims;
  for (nb::handle d : array.attr("shape")) dims.push_back(nb::cast<int64_t>(d));
  ASSIGN_OR_RETURN(TensorShape shape, TensorShape::Make(dims));
  Tensor t(DataType::kString, shape);
  std::string* out = t.data<std::string>();
  int64_t i = 0;
  for (nb::handle item : array.attr("ravel")().attr("tolist")()) {
    if (nb::isinstance<nb::bytes>(item)) {
      nb::bytes b = nb::borrow<nb::bytes>(item);
      out[i++].assign(b.c_str(), b.size());
    } else if (nb::isinstance<nb::str>(item)) {
      out[i++] = nb::cast<std::string>(item);
    } else {
      return errors::InvalidArgument("a string tensor's elements are bytes or str; got ",
                                     nb::cast<std::string>(nb::str(item.type().attr("__name__"))));
    }
  }
  return t;
}

}  // namespace

bool InitNumpy() { return PyArray_ImportNumPyAPI() == 0; }

StatusOr<Tensor> TensorFromArray(nb::handle object) {
  if (!PyArray_Check(object.ptr())) return errors::InvalidArgument("a feed must be a NumPy array");
  auto* array = reinterpret_cast<PyArrayObject*>(object.ptr());
  const char kind = PyArray_DESCR(array)->kind;
  if (kind == 'O' || kind == 'S' || kind == 'U') return StringTensor(object);
  if (!PyArray_IS_C_CONTIGUOUS(array) || !PyArray_ISALIGNED(array) || !PyArray_ISNOTSWAPPED(array)) {
    return errors::InvalidArgument("a feed must be an aligned, C-contiguous array in the machine's byte order");
  }
  ASSIGN_OR_RETURN(DataType dtype, DtypeOf(PyArray_DESCR(array)));
  const npy_intp* dims = PyArray_DIMS(array);
  ASSIGN_OR_RETURN(TensorShape shape, TensorShape::Make(std::vector<int64_t>(dims, dims + PyArray_NDIM(array))));
  if (PyArray_NBYTES(array) == 0) return Tensor(dtype, shape);  // nothing to borrow
  return Tensor::Allocate(std::make_shared<BorrowedArray>(array), dtype, shape);
}

bool ArrayFits(nb::handle value, int numpy_type, const std::vector<int64_t>* dims) {
  if (numpy_type < 0 || !PyArray_CheckExact(value.ptr())) return false;
  auto* array = reinterpret_cast<PyArrayObject*>(value.ptr());
  if ((PyArray_TYPE(array) != numpy_type && !PyArray_EquivTypenums(PyArray_TYPE(array), numpy_type)) ||
      !PyArray_IS_C_CONTIGUOUS(array) || !PyArray_ISALIGNED(array) || !PyArray_ISNOTSWAPPED(array)) {
    return false;
  }
  if (dims == nullptr) return true;
  if (PyArray_NDIM(array) != static_cast<int>(dims->size())) return false;
  for (size_t i = 0; i < dims->size(); ++i) {
    if ((*dims)[i] >= 0 && (*dims)[i] != PyArray_DIM(array, static_cast<int>(i))) return false;
  }
  return true;
}

nb::object ScalarOrArray(nb::object array) {
  if (!PyArray_Check(array.ptr()) || PyArray_NDIM(reinterpret_cast<PyArrayObject*>(array.ptr())) != 0) return array;
  PyObject* scalar = PyArray_Return(reinterpret_cast<PyArrayObject*>(array.release().ptr()));
  if (scalar == nullptr) throw nb::python_error();
  return nb::steal(scalar);
}

nb::object ArrayFromTensor(const Tensor& t) {
  std::vector<npy_intp> dims(t.shape().dims().begin(), t.shape().dims().end());
  if (DataTypeHoldsStrings(t.dtype())) {
    nb::object out = nb::steal(PyArray_SimpleNew(static_cast<int>(dims.size()), dims.data(), NPY_OBJECT));
    if (!out.is_valid()) throw nb::python_error();
    // A new object array's slots are not set; NumPy lets go of those still null.
    auto** items = static_cast<PyObject**>(PyArray_DATA(reinterpret_cast<PyArrayObject*>(out.ptr())));
    std::fill_n(items, t.NumElements(), nullptr);
    int64_t i = 0;
    for (const std::string& s : t.flat<std::string>()) {
      items[i] = PyBytes_FromStringAndSize(s.data(), static_cast<Py_ssize_t>(s.size()));
      if (items[i++] == nullptr) throw nb::python_error();
    }
    return out;
  }
  const int type = NumpyTypeOf(t.dtype() == DataType::kBFloat16 ? DataType::kFloat : t.dtype());
  if (type < 0) {
    Raise(errors::Unimplemented("a tensor of dtype ", DataTypeName(t.dtype()), " cannot be fetched into NumPy"));
  }
  Tensor held;
  if (t.dtype() == DataType::kBFloat16) {
    held = Tensor(DataType::kFloat, t.shape());
    for (int64_t i = 0; i < t.NumElements(); ++i) held.data<float>()[i] = BFloat16ToFloat(t.data<BFloat16>()[i]);
  } else if (t.BufferIsUnshared()) {
    held = t;
  } else {
    held = t.DeepCopy();
  }
  if (held.NumElements() == 0) {
    return nb::steal(PyArray_SimpleNew(static_cast<int>(dims.size()), dims.data(), type));
  }
  auto* owner = new Tensor(std::move(held));
  nb::capsule keep(owner, [](void* p) noexcept { delete static_cast<Tensor*>(p); });
  nb::object out = nb::steal(PyArray_New(&PyArray_Type, static_cast<int>(dims.size()), dims.data(), type, nullptr,
                                         owner->raw_data(), 0, NPY_ARRAY_CARRAY, nullptr));
  if (!out.is_valid()) throw nb::python_error();
  if (PyArray_SetBaseObject(reinterpret_cast<PyArrayObject*>(out.ptr()), keep.release().ptr()) != 0) {
    throw nb::python_error();
  }
  return out;
}

}  // namespace tessera::python
