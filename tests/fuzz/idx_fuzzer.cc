// Feeds arbitrary bytes, as a file, to the IDX reader: every input must read or give a
// Status, never crash, trip a sanitizer or allocate more than the file holds.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "kernels/data/idx_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = [] {
    char name[] = "/tmp/tessera_idx_fuzz_XXXXXX";
    int fd = mkstemp(name);
    if (fd < 0) std::abort();
    close(fd);
    return std::string(name);
  }();
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) std::abort();
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  tessera::StatusOr<tessera::Tensor> t = tessera::ReadIdxFile(path);
  if (t.ok() && t->dtype() != tessera::DataType::kUInt8) std::abort();
  return 0;
}
