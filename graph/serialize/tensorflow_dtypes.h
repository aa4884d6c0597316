// Tessera's dtypes as TensorFlow's DataType enum numbers them (graph/protos/
// tensorflow_graph.proto), for the readers of TensorFlow's files. Thread-safe.
#pragma once

#include "graph/platform/status.h"
#include "graph/types.h"

namespace tessera {

// InvalidArgument naming TensorFlow's type ("DT_INT8 is not a type Tessera has").
StatusOr<DataType> DataTypeFromTensorFlow(int dt);
// DT_INVALID (0) for DataType::kInvalid.
int DataTypeToTensorFlow(DataType dt);

}  // namespace tessera
