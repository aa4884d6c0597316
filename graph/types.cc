#include "graph/types.h"

#include <cctype>

#include <Eigen/Core>

namespace tessera {

// Eigen's half and bfloat16 do the rounding (to nearest even) and the special values.
float HalfToFloat(Half h) { return static_cast<float>(Eigen::numext::bit_cast<Eigen::half>(h.bits)); }
Half FloatToHalf(float f) { return Half{Eigen::numext::bit_cast<uint16_t>(Eigen::half(f))}; }
float BFloat16ToFloat(BFloat16 b) {
  return static_cast<float>(Eigen::numext::bit_cast<Eigen::bfloat16>(b.bits));
}
BFloat16 FloatToBFloat16(float f) {
  return BFloat16{Eigen::numext::bit_cast<uint16_t>(Eigen::bfloat16(f))};
}

std::string_view DataTypeName(DataType dt) {
  switch (dt) {
    case DataType::kFloat: return "float32";
    case DataType::kDouble: return "float64";
    case DataType::kHalf: return "float16";
    case DataType::kBFloat16: return "bfloat16";
    case DataType::kInt32: return "int32";
    case DataType::kInt64: return "int64";
    case DataType::kUInt8: return "uint8";
    case DataType::kBool: return "bool";
    case DataType::kString: return "string";
    case DataType::kVariant: return "variant";
    case DataType::kResource: return "resource";
    case DataType::kInvalid: break;
  }
  return "invalid";
}

StatusOr<DataType> DataTypeFromName(std::string_view name) {
  std::string n(name);
  for (char& c : n) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (n.rfind("dt_", 0) == 0) n = n.substr(3);
  struct Alias {
    const char* name;
    DataType dt;
  };
  static constexpr Alias kAliases[] = {
      {"float32", DataType::kFloat},  {"float", DataType::kFloat},     {"float64", DataType::kDouble},
      {"double", DataType::kDouble},  {"float16", DataType::kHalf},    {"half", DataType::kHalf},
      {"bfloat16", DataType::kBFloat16}, {"int32", DataType::kInt32},  {"int64", DataType::kInt64},
      {"uint8", DataType::kUInt8},    {"bool", DataType::kBool},       {"string", DataType::kString},
      {"variant", DataType::kVariant}, {"resource", DataType::kResource},
  };
  for (const Alias& a : kAliases) {
    if (n == a.name) return a.dt;
  }
  return errors::InvalidArgument("Unknown dtype '", name,
                                 "'; expected one of float32, float64, float16, bfloat16, int32, "
                                 "int64, uint8, bool, string, variant, resource");
}

size_t DataTypeSize(DataType dt) {
  switch (dt) {
    case DataType::kFloat: return 4;
    case DataType::kDouble: return 8;
    case DataType::kHalf: return 2;
    case DataType::kBFloat16: return 2;
    case DataType::kInt32: return 4;
    case DataType::kInt64: return 8;
    case DataType::kUInt8: return 1;
    case DataType::kBool: return 1;
    case DataType::kString:
    case DataType::kVariant:
    case DataType::kResource:
    case DataType::kInvalid: break;
  }
  return 0;
}

size_t DataTypeStorageSize(DataType dt) {
  if (DataTypeHoldsStrings(dt)) return sizeof(std::string);
  if (dt == DataType::kVariant) return sizeof(Variant);
  return DataTypeSize(dt);
}

bool DataTypeIsNumeric(DataType dt) {
  return !DataTypeHoldsStrings(dt) && dt != DataType::kVariant && dt != DataType::kBool &&
         dt != DataType::kInvalid;
}

}  // namespace tessera
