#include "devices/gpu/cuda_library.h"

#include <cuda_runtime_api.h>

#include <filesystem>

namespace tessera {

void* OpenCudaLibrary(const std::string& soname) {
  if (void* lib = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL)) return lib;
  // The runtime is linked, so always found; the toolkit keeps its libraries in its directory
  // (cuBLAS) or in a lib directory beside it (NCCL in some layouts).
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&cudaGetDeviceCount), &info) == 0 || info.dli_fname == nullptr) return nullptr;
  const std::filesystem::path dir = std::filesystem::path(info.dli_fname).parent_path();
  for (const auto& beside : {dir / soname, dir.parent_path() / "lib" / soname}) {
    if (void* lib = dlopen(beside.c_str(), RTLD_NOW | RTLD_LOCAL)) return lib;
  }
  return nullptr;
}

}  // namespace tessera
