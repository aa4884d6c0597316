#include "kernels/gpu/cublas_library.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <filesystem>
#include <string>

namespace tessera {
namespace {

const std::string kSoname = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);

// The toolkit keeps cuBLAS beside the CUDA runtime, which is linked and so always found.
void* OpenBesideCudaRuntime() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&cudaGetDeviceCount), &info) == 0 || info.dli_fname == nullptr) return nullptr;
  const std::filesystem::path beside = std::filesystem::path(info.dli_fname).parent_path() / kSoname;
  return dlopen(beside.c_str(), RTLD_NOW | RTLD_LOCAL);
}

template <typename Fn>
bool Bind(void* lib, const char* symbol, Fn* fn, std::string* missing) {
  *fn = reinterpret_cast<Fn>(dlsym(lib, symbol));
  if (*fn == nullptr) *missing = symbol;
  return *fn != nullptr;
}

StatusOr<const CublasLibrary*> Open() {
  void* lib = dlopen(kSoname.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) lib = OpenBesideCudaRuntime();
  if (lib == nullptr) {
    return errors::FailedPrecondition("Could not load ", kSoname, " (cuBLAS, for MatMul on a GPU): ", dlerror());
  }
  static CublasLibrary cublas;
  std::string missing;
  const bool bound = Bind(lib, "cublasCreate_v2", &cublas.create, &missing) &&
                     Bind(lib, "cublasDestroy_v2", &cublas.destroy, &missing) &&
                     Bind(lib, "cublasSetStream_v2", &cublas.set_stream, &missing) &&
                     Bind(lib, "cublasSetMathMode", &cublas.set_math_mode, &missing) &&
                     Bind(lib, "cublasSgemm_v2", &cublas.sgemm, &missing) &&
                     Bind(lib, "cublasDgemm_v2", &cublas.dgemm, &missing) &&
                     Bind(lib, "cublasGetStatusName", &cublas.status_name, &missing) &&
                     Bind(lib, "cublasGetStatusString", &cublas.status_string, &missing);
  if (!bound) return errors::FailedPrecondition(kSoname, " has no ", missing, ": a cuBLAS older than the headers");
  return &cublas;
}

}  // namespace

StatusOr<const CublasLibrary*> LoadCublas() {
  static const StatusOr<const CublasLibrary*> loaded = Open();
  return loaded;
}

}  // namespace tessera
