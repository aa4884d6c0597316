// AttrValue: the value of one node attribute (an int, a dtype, a shape, a tensor, ...),
// and AttrMap, a node's attributes by name.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "graph/tensor.h"
#include "graph/tensor_shape.h"
#include "graph/types.h"

namespace tessera {

enum class AttrType {
  kInt, kFloat, kBool, kString, kType, kShape, kTensor, kListInt, kListType, kListShape, kFunc
};

struct FunctionDef;  // graph/function.h

std::string_view AttrTypeName(AttrType t);  // "int", "list(int)", ...

class AttrValue {
 public:
  using Value = std::variant<int64_t, double, bool, std::string, DataType, TensorShape, Tensor,
                             std::vector<int64_t>, std::vector<DataType>, std::vector<TensorShape>,
                             std::shared_ptr<const FunctionDef>>;

  AttrValue() = default;
  AttrValue(int64_t v) : value_(v) {}                       // NOLINT
  AttrValue(int v) : value_(static_cast<int64_t>(v)) {}      // NOLINT
  AttrValue(double v) : value_(v) {}                        // NOLINT
  AttrValue(bool v) : value_(v) {}                          // NOLINT
  AttrValue(std::string v) : value_(std::move(v)) {}        // NOLINT
  AttrValue(const char* v) : value_(std::string(v)) {}      // NOLINT
  AttrValue(DataType v) : value_(v) {}                      // NOLINT
  AttrValue(TensorShape v) : value_(v) {}                   // NOLINT
  AttrValue(Tensor v) : value_(std::move(v)) {}             // NOLINT
  AttrValue(std::vector<int64_t> v) : value_(std::move(v)) {}   // NOLINT
  AttrValue(std::vector<DataType> v) : value_(std::move(v)) {}  // NOLINT
  AttrValue(std::vector<TensorShape> v) : value_(std::move(v)) {}  // NOLINT
  AttrValue(std::shared_ptr<const FunctionDef> v) : value_(std::move(v)) {}  // NOLINT

  AttrType type() const { return static_cast<AttrType>(value_.index()); }
  template <typename T>
  const T* get_if() const {
    return std::get_if<T>(&value_);
  }
  const Value& value() const { return value_; }

  // Short readable form for error messages and DOT labels.
  std::string DebugString() const;

 private:
  Value value_;
};

using AttrMap = std::map<std::string, AttrValue, std::less<>>;

// Reads attr `name` of type T from `attrs`; InvalidArgument naming `node` when it is
// missing or of another type.
template <typename T>
Status GetAttr(const AttrMap& attrs, std::string_view node, std::string_view name, T* out) {
  auto it = attrs.find(name);
  if (it == attrs.end()) {
    return errors::InvalidArgument("Node '", node, "' has no attr named '", name, "'");
  }
  if constexpr (std::is_same_v<T, int32_t> || std::is_same_v<T, int>) {
    const int64_t* v = it->second.get_if<int64_t>();
    if (v != nullptr) {
      *out = static_cast<T>(*v);
      return Status::OK();
    }
  } else if constexpr (std::is_same_v<T, float>) {
    const double* v = it->second.get_if<double>();
    if (v != nullptr) {
      *out = static_cast<float>(*v);
      return Status::OK();
    }
  } else {
    const T* v = it->second.get_if<T>();
    if (v != nullptr) {
      *out = *v;
      return Status::OK();
    }
  }
  return errors::InvalidArgument("Attr '", name, "' of node '", node, "' has type ",
                                 AttrTypeName(it->second.type()), ", not the type asked for");
}

}  // namespace tessera
