// cuBLAS, opened with dlopen when the first GPU device is made instead of linked: its
// libraries cost a process ~150 MiB of resident memory the moment they are loaded, which
// every embedder of a CUDA build would pay on a machine that never uses a GPU.
//
//   ASSIGN_OR_RETURN(const CublasLibrary* cublas, LoadCublas());
//   cublas->sgemm(handle, ...);
//
// Thread-safe; the library stays loaded for the life of the process.
#pragma once

#include <cublas_v2.h>

#include "graph/platform/status.h"

namespace tessera {

// The entry points Tessera calls, under cuBLAS's own signatures.
struct CublasLibrary {
  decltype(&cublasCreate_v2) create;
  decltype(&cublasDestroy_v2) destroy;
  decltype(&cublasSetStream_v2) set_stream;
  decltype(&cublasSetMathMode) set_math_mode;
  decltype(&cublasSgemm_v2) sgemm;
  decltype(&cublasDgemm_v2) dgemm;
  decltype(&cublasGetStatusName) status_name;
  decltype(&cublasGetStatusString) status_string;
};

// Loads libcublas.so.<major of the headers built against> on the first call, from the
// loader's search path or beside the CUDA runtime in use. FailedPrecondition naming what is
// missing when it cannot; the same answer after that.
StatusOr<const CublasLibrary*> LoadCublas();

}  // namespace tessera
