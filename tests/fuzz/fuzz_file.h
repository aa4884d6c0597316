// For fuzzers of file readers: writes the input to one temporary file per process,
// reused for every input, and returns its path.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace tessera::fuzz {

inline const std::string& WriteInputFile(const uint8_t* data, size_t size) {
  static const std::string path = [] {
    char name[] = "/tmp/tessera_fuzz_XXXXXX";
    const int fd = mkstemp(name);
    if (fd < 0) std::abort();
    close(fd);
    return std::string(name);
  }();
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) std::abort();
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  return path;
}

}  // namespace tessera::fuzz
