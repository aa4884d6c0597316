#include "devices/gpu/cublas_library.h"

#include <string>

#include "devices/gpu/cuda_library.h"

namespace tessera {
namespace {

const std::string kSoname = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);

StatusOr<const CublasLibrary*> Open() {
  void* lib = OpenCudaLibrary(kSoname);
  if (lib == nullptr) {
    return errors::FailedPrecondition("Could not load ", kSoname, " (cuBLAS, for MatMul on a GPU): ", dlerror());
  }
  static CublasLibrary cublas;
  std::string missing;
  const bool bound = BindSymbol(lib, "cublasCreate_v2", &cublas.create, &missing) &&
                     BindSymbol(lib, "cublasDestroy_v2", &cublas.destroy, &missing) &&
                     BindSymbol(lib, "cublasSetStream_v2", &cublas.set_stream, &missing) &&
                     BindSymbol(lib, "cublasSetMathMode", &cublas.set_math_mode, &missing) &&
                     BindSymbol(lib, "cublasSgemm_v2", &cublas.sgemm, &missing) &&
                     BindSymbol(lib, "cublasDgemm_v2", &cublas.dgemm, &missing) &&
                     BindSymbol(lib, "cublasGetStatusName", &cublas.status_name, &missing) &&
                     BindSymbol(lib, "cublasGetStatusString", &cublas.status_string, &missing);
  if (!bound) return errors::FailedPrecondition(kSoname, " has no ", missing, ": a cuBLAS older than the headers");
  return &cublas;
}

}  // namespace

StatusOr<const CublasLibrary*> LoadCublas() {
  static const StatusOr<const CublasLibrary*> loaded = Open();
  return loaded;
}

}  // namespace tessera
