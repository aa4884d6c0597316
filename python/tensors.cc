// NumPy arrays to and from engine tensors. A fed array's buffer becomes the tensor's (an
// allocator that hands out that one buffer, and lets go of the array when the tensor goes);
// a fetched tensor's buffer becomes the array's (a capsule holding the tensor).
#include <nanobind/ndarray.h>

#include "python/bindings.h"

namespace tessera::python {

using namespace nb::literals;

namespace {

bool Finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing();
#else
  return _Py_IsFinalizing();
#endif
}

// Hands out one buffer it does not own, an exporter's (PEP 3118), and releases the view when
// the tensor made on it goes. The last reference to the tensor may drop on an engine thread:
// the release takes the GIL then.
class BorrowedBuffer final : public Allocator {
 public:
  explicit BorrowedBuffer(const Py_buffer& view) : view_(view) {}
  ~BorrowedBuffer() override { Release(); }
  std::string_view name() const override { return "numpy"; }
  void* AllocateRaw(size_t bytes) override { return view_.buf; }
  void DeallocateRaw(void* ptr, size_t bytes) override { Release(); }

 private:
  void Release() {
    // At exit the interpreter has let go of everything; taking the GIL then would hang.
    if (view_.obj == nullptr || !Py_IsInitialized() || Finalizing()) return;
    nb::gil_scoped_acquire gil;
    PyBuffer_Release(&view_);
  }
  Py_buffer view_;
};

// The dtype of a buffer's struct format ("f", "<d", "=q", ...) and item size.
StatusOr<DataType> DtypeOfFormat(const char* format, Py_ssize_t itemsize) {
  std::string_view f = format == nullptr ? "B" : format;
  if (!f.empty() && (f[0] == '<' || f[0] == '=' || f[0] == '@' || f[0] == '|')) f.remove_prefix(1);
  if (f.size() == 1) {
    switch (f[0]) {
      case 'f': return DataType::kFloat;
      case 'd': return DataType::kDouble;
      case 'e': return DataType::kHalf;
      case 'B': return DataType::kUInt8;
      case '?': return DataType::kBool;
      case 'i': case 'l': case 'q':
        if (itemsize == 4) return DataType::kInt32;
        if (itemsize == 8) return DataType::kInt64;
        break;
      default: break;
    }
  }
  return errors::InvalidArgument("an array of format '", format == nullptr ? "" : format, "' (", itemsize,
                                 "-byte items): Tessera's tensors hold float16/32/64, int32/64, uint8, bool and "
                                 "strings");
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

const char* NumpyDtypeName(DataType dt) {
  switch (dt) {
    case DataType::kFloat: return "float32";
    case DataType::kDouble: return "float64";
    case DataType::kHalf: return "float16";
    case DataType::kBFloat16: return "float32";  // NumPy has no bfloat16: fetched widened
    case DataType::kInt32: return "int32";
    case DataType::kInt64: return "int64";
    case DataType::kUInt8: return "uint8";
    case DataType::kBool: return "bool";
    default: return "object";
  }
}

StatusOr<Tensor> TensorFromArray(nb::handle array) {
  const std::string kind = nb::cast<std::string>(array.attr("dtype").attr("kind"));
  if (kind == "O" || kind == "S" || kind == "U") return StringTensor(array);
  Py_buffer view;
  if (PyObject_GetBuffer(array.ptr(), &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) != 0) {
    PyErr_Clear();
    return errors::InvalidArgument("a feed must be a C-contiguous array");
  }
  StatusOr<DataType> dtype = DtypeOfFormat(view.format, view.itemsize);
  StatusOr<TensorShape> shape = TensorShape::Make(std::vector<int64_t>(view.shape, view.shape + view.ndim));
  if (!dtype.ok() || !shape.ok() || view.len == 0) {
    PyBuffer_Release(&view);
    if (!dtype.ok()) return dtype.status();
    if (!shape.ok()) return shape.status();
    return Tensor(*dtype, *shape);  // nothing to borrow
  }
  return Tensor::Allocate(std::make_shared<BorrowedBuffer>(view), *dtype, *shape);
}

nb::object ArrayFromTensor(const Tensor& t) {
  std::vector<size_t> shape;
  for (int64_t d : t.shape().dims()) shape.push_back(static_cast<size_t>(d));
  nb::module_ np = nb::module_::import_("numpy");
  if (DataTypeHoldsStrings(t.dtype())) {
    nb::list items;
    for (const std::string& s : t.flat<std::string>()) items.append(nb::bytes(s.data(), s.size()));
    nb::object flat = np.attr("empty")(items.size(), "dtype"_a = "object");
    flat[nb::slice(nb::none(), nb::none(), nb::none())] = items;
    return flat.attr("reshape")(nb::tuple(nb::cast(shape)));
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
  nb::dlpack::dtype dtype;
  switch (held.dtype()) {
    case DataType::kFloat: dtype = nb::dtype<float>(); break;
    case DataType::kDouble: dtype = nb::dtype<double>(); break;
    case DataType::kHalf: dtype = {static_cast<uint8_t>(nb::dlpack::dtype_code::Float), 16, 1}; break;
    case DataType::kInt32: dtype = nb::dtype<int32_t>(); break;
    case DataType::kInt64: dtype = nb::dtype<int64_t>(); break;
    case DataType::kUInt8: dtype = nb::dtype<uint8_t>(); break;
    case DataType::kBool: dtype = nb::dtype<bool>(); break;
    default:
      Raise(errors::Unimplemented("a tensor of dtype ", DataTypeName(held.dtype()), " cannot be fetched into NumPy"));
  }
  auto* owner = new Tensor(std::move(held));
  nb::capsule keep(owner, [](void* p) noexcept { delete static_cast<Tensor*>(p); });
  return nb::ndarray<nb::numpy>(owner->raw_data(), shape.size(), shape.data(), keep, nullptr, dtype).cast();
}

}  // namespace tessera::python
