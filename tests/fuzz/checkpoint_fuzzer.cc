// Feeds arbitrary bytes, as a file, to the checkpoint reader: every input must read or give
// a Status, never crash, trip a sanitizer or allocate more than the file holds.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "kernels/checkpoint_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = [] {
    char name[] = "/tmp/tessera_ckpt_fuzz_XXXXXX";
    int fd = mkstemp(name);
    if (fd < 0) std::abort();
    close(fd);
    return std::string(name);
  }();
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) std::abort();
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  tessera::StatusOr<std::vector<tessera::CheckpointEntry>> index = tessera::ReadCheckpointIndex(path);
  if (!index.ok()) return 0;
  std::vector<std::string> names;
  for (const auto& e : *index) names.push_back(e.name);
  tessera::StatusOr<std::vector<tessera::Tensor>> tensors = tessera::ReadCheckpoint(path, names);
  if (tensors.ok() && tensors->size() != names.size()) std::abort();
  return 0;
}
