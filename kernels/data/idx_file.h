// Reading IDX files, the format of MNIST and Fashion-MNIST: a big-endian header (two zero
// bytes, a type code, the rank, one uint32 per dimension) and then the data, row-major.
// Files may be gzipped. Only unsigned bytes (type code 0x08) are read, which is what those
// datasets use.
//
//   StatusOr<Tensor> images = ReadIdxFile("train-images-idx3-ubyte.gz");  // uint8 [60000,28,28]
//
// Thread-safe.
#pragma once

#include <string>

#include "graph/tensor.h"

namespace tessera {

// The file's dimensions. NotFound for a missing file, InvalidArgument for a file that is not
// IDX or implausibly large, Unimplemented for another type code, DataLoss for a short header.
StatusOr<TensorShape> ReadIdxShape(const std::string& path);
// The whole file as a uint8 tensor; the errors above, and DataLoss when the data is short.
StatusOr<Tensor> ReadIdxFile(const std::string& path);

}  // namespace tessera
