// Feeds arbitrary bytes, as a file, to the IDX reader: every input must read or give a
// Status, never crash, trip a sanitizer or allocate more than the file holds.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "kernels/data/idx_file.h"
#include "tests/fuzz/fuzz_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = tessera::fuzz::WriteInputFile(data, size);
  tessera::StatusOr<tessera::Tensor> t = tessera::ReadIdxFile(path);
  if (t.ok() && t->dtype() != tessera::DataType::kUInt8) std::abort();
  return 0;
}
