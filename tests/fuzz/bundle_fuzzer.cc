// Feeds arbitrary bytes to the tensor bundle reader as a checkpoint of two files: the first
// two bytes say how many of the rest are PREFIX.index (little-endian), the others are
// PREFIX.data-00000-of-00001. Every input must read or give a Status, never crash, trip a
// sanitizer or allocate more than the files hold.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "graph/serialize/tensor_bundle.h"
#include "tests/fuzz/fuzz_file.h"

namespace {

void Write(const std::string& path, const uint8_t* data, size_t size) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) std::abort();
  std::fwrite(data, 1, size, f);
  std::fclose(f);
}

const std::string& Prefix() {
  static const std::string prefix = std::string(tessera::fuzz::ProcessTempDir()) + "/ckpt";
  return prefix;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const size_t index_size = std::min<size_t>(data[0] | (size_t{data[1]} << 8), size - 2);
  Write(tessera::BundleIndexFile(Prefix()), data + 2, index_size);
  Write(tessera::BundleDataFile(Prefix(), 0, 1), data + 2 + index_size, size - 2 - index_size);
  tessera::StatusOr<std::unique_ptr<tessera::BundleReader>> reader = tessera::BundleReader::Open(Prefix());
  if (!reader.ok()) return 0;
  for (const tessera::BundleEntry& e : (*reader)->entries()) {
    tessera::StatusOr<tessera::Tensor> t = (*reader)->Read(e.name, tessera::CpuAllocator());
    if (t.ok() && t->shape() != e.shape) std::abort();
  }
  (void)tessera::ObjectGraphKeys(**reader);  // tf.train.Checkpoint's object graph, when there is one
  return 0;
}
