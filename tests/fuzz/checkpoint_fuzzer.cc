// Feeds arbitrary bytes, as a file, to the checkpoint reader: every input must read or give
// a Status, never crash, trip a sanitizer or allocate more than the file holds.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "kernels/util/checkpoint_file.h"
#include "tests/fuzz/fuzz_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = tessera::fuzz::WriteInputFile(data, size);
  tessera::StatusOr<std::vector<tessera::CheckpointEntry>> index = tessera::ReadCheckpointIndex(path);
  if (!index.ok()) return 0;
  std::vector<std::string> names;
  for (const auto& e : *index) names.push_back(e.name);
  tessera::StatusOr<std::vector<tessera::Tensor>> tensors = tessera::ReadCheckpoint(path, names);
  if (tensors.ok() && tensors->size() != names.size()) std::abort();
  return 0;
}
