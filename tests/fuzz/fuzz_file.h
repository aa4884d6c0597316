// For fuzzers of file readers: a temporary directory per process, removed at exit, and
// one input file in it, rewritten for every input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

namespace tessera::fuzz {

inline const char* ProcessTempDir() {
  // A plain array, not a std::string: the atexit handler must outlive static destructors.
  static char dir[] = "/tmp/tessera_fuzz_XXXXXX";
  static const bool made = [] {
    if (mkdtemp(dir) == nullptr) std::abort();
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(dir, ignored);
    });
    return true;
  }();
  (void)made;
  return dir;
}

inline const std::string& WriteInputFile(const uint8_t* data, size_t size) {
  static const std::string path = std::string(ProcessTempDir()) + "/input";
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) std::abort();
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  return path;
}

}  // namespace tessera::fuzz
