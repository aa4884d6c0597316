// DataType: the element types a Tensor can hold, with their names and sizes.
//
// float16 and bfloat16 are storage types: tensors of them can be created, fed, fetched,
// stored in variables and cast to and from float, but arithmetic kernels take float,
// double, int32 and int64.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "graph/platform/status.h"

namespace tessera {

enum class DataType : uint8_t {
  kInvalid = 0,
  kFloat,
  kDouble,
  kHalf,
  kBFloat16,
  kInt32,
  kInt64,
  kUInt8,
  kBool,
  kString,
  kVariant,   // an opaque object, such as a dataset (graph/variant.h)
  kResource,  // a handle naming a resource (a variable, a queue); stored as an encoded string
};

class VariantValue;
using Variant = std::shared_ptr<const VariantValue>;

// IEEE binary16 and bfloat16, stored as raw bits.
struct Half {
  uint16_t bits = 0;
};
struct BFloat16 {
  uint16_t bits = 0;
};
float HalfToFloat(Half h);
Half FloatToHalf(float f);
float BFloat16ToFloat(BFloat16 b);
BFloat16 FloatToBFloat16(float f);

// The JSON and user-facing name: "float32", "float64", "float16", "bfloat16", "int32",
// "int64", "uint8", "bool", "string", "variant", "resource".
std::string_view DataTypeName(DataType dt);
// Accepts the names above and TensorFlow's aliases ("float", "double", "half", "DT_FLOAT").
StatusOr<DataType> DataTypeFromName(std::string_view name);
// Bytes per element; 0 for kString, kResource and kVariant (elements are C++ objects) and
// kInvalid.
size_t DataTypeSize(DataType dt);
// Bytes one element takes in a tensor buffer: DataTypeSize, or the object's size.
size_t DataTypeStorageSize(DataType dt);
bool DataTypeIsNumeric(DataType dt);
// kString and kResource: elements are std::strings.
inline bool DataTypeHoldsStrings(DataType dt) { return dt == DataType::kString || dt == DataType::kResource; }

template <typename T>
struct DataTypeToEnum;
#define TESSERA_MATCH_TYPE(T, E) \
  template <>                    \
  struct DataTypeToEnum<T> {     \
    static constexpr DataType value = DataType::E; \
  };
TESSERA_MATCH_TYPE(float, kFloat)
TESSERA_MATCH_TYPE(double, kDouble)
TESSERA_MATCH_TYPE(Half, kHalf)
TESSERA_MATCH_TYPE(BFloat16, kBFloat16)
TESSERA_MATCH_TYPE(int32_t, kInt32)
TESSERA_MATCH_TYPE(int64_t, kInt64)
TESSERA_MATCH_TYPE(uint8_t, kUInt8)
TESSERA_MATCH_TYPE(bool, kBool)
TESSERA_MATCH_TYPE(std::string, kString)
TESSERA_MATCH_TYPE(Variant, kVariant)
#undef TESSERA_MATCH_TYPE

// Calls fn(T{}) with the C++ type of `dt` (std::string for kResource); returns fn's result.
// Variant is not visited: callers handle kVariant first.
template <typename Fn>
auto VisitDataType(DataType dt, Fn&& fn) {
  switch (dt) {
    case DataType::kDouble: return fn(double{});
    case DataType::kHalf: return fn(Half{});
    case DataType::kBFloat16: return fn(BFloat16{});
    case DataType::kInt32: return fn(int32_t{});
    case DataType::kInt64: return fn(int64_t{});
    case DataType::kUInt8: return fn(uint8_t{});
    case DataType::kBool: return fn(bool{});
    case DataType::kString:
    case DataType::kResource: return fn(std::string{});
    default: return fn(float{});
  }
}

}  // namespace tessera
