#include "graph/attr_value.h"

#include <sstream>

namespace tessera {

std::string_view AttrTypeName(AttrType t) {
  switch (t) {
    case AttrType::kInt: return "int";
    case AttrType::kFloat: return "float";
    case AttrType::kBool: return "bool";
    case AttrType::kString: return "string";
    case AttrType::kType: return "type";
    case AttrType::kShape: return "shape";
    case AttrType::kTensor: return "tensor";
    case AttrType::kListInt: return "list(int)";
    case AttrType::kListType: return "list(type)";
    case AttrType::kListShape: return "list(shape)";
    case AttrType::kFunc: return "func";
  }
  return "unknown";
}

std::string AttrValue::DebugString() const {
  std::ostringstream os;
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, bool>) {
          os << (v ? "true" : "false");
        } else if constexpr (std::is_same_v<T, std::string>) {
          os << '"' << v << '"';
        } else if constexpr (std::is_same_v<T, DataType>) {
          os << DataTypeName(v);
        } else if constexpr (std::is_same_v<T, TensorShape>) {
          os << v.DebugString();
        } else if constexpr (std::is_same_v<T, Tensor>) {
          os << v.DebugString(4);
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          os << "[";
          for (size_t i = 0; i < v.size(); ++i) os << (i ? "," : "") << v[i];
          os << "]";
        } else if constexpr (std::is_same_v<T, std::vector<DataType>>) {
          os << "[";
          for (size_t i = 0; i < v.size(); ++i) os << (i ? "," : "") << DataTypeName(v[i]);
          os << "]";
        } else if constexpr (std::is_same_v<T, std::vector<TensorShape>>) {
          os << "[";
          for (size_t i = 0; i < v.size(); ++i) os << (i ? "," : "") << v[i].DebugString();
          os << "]";
        } else if constexpr (std::is_same_v<T, std::shared_ptr<const FunctionDef>>) {
          os << "<function>";
        } else {
          os << v;
        }
      },
      value_);
  return os.str();
}

}  // namespace tessera
