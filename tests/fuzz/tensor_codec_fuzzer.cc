// Decodes arbitrary bytes as a wire tensor; what decodes must encode back to the same bytes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "graph/serialize/tensor_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tessera;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  StatusOr<Tensor> t = DecodeTensor(bytes);
  if (!t.ok()) return 0;
  StatusOr<std::string> again = EncodeTensor(*t);
  if (!again.ok() || *again != bytes) std::abort();
  return 0;
}
