#include "graph/serialize/tensorflow_dtypes.h"

#include "graph/protos/tensorflow_graph.pb.h"

namespace tessera {

namespace pb = tessera::tfgraph;

StatusOr<DataType> DataTypeFromTensorFlow(int dt) {
  switch (dt) {
    case pb::DT_FLOAT: return DataType::kFloat;
    case pb::DT_DOUBLE: return DataType::kDouble;
    case pb::DT_HALF: return DataType::kHalf;
    case pb::DT_BFLOAT16: return DataType::kBFloat16;
    case pb::DT_INT32: return DataType::kInt32;
    case pb::DT_INT64: return DataType::kInt64;
    case pb::DT_UINT8: return DataType::kUInt8;
    case pb::DT_BOOL: return DataType::kBool;
    case pb::DT_STRING: return DataType::kString;
    case pb::DT_VARIANT: return DataType::kVariant;
    case pb::DT_RESOURCE: return DataType::kResource;
    default: break;
  }
  std::string name = pb::DataType_IsValid(dt) ? pb::DataType_Name(static_cast<pb::DataType>(dt))
                                                : StrCat("DataType ", dt);
  return errors::InvalidArgument(name, " is not a type Tessera has");
}

int DataTypeToTensorFlow(DataType dt) {
  switch (dt) {
    case DataType::kFloat: return pb::DT_FLOAT;
    case DataType::kDouble: return pb::DT_DOUBLE;
    case DataType::kHalf: return pb::DT_HALF;
    case DataType::kBFloat16: return pb::DT_BFLOAT16;
    case DataType::kInt32: return pb::DT_INT32;
    case DataType::kInt64: return pb::DT_INT64;
    case DataType::kUInt8: return pb::DT_UINT8;
    case DataType::kBool: return pb::DT_BOOL;
    case DataType::kString: return pb::DT_STRING;
    case DataType::kVariant: return pb::DT_VARIANT;
    case DataType::kResource: return pb::DT_RESOURCE;
    case DataType::kInvalid: break;
  }
  return pb::DT_INVALID;
}

}  // namespace tessera
