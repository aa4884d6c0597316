// NCCL, opened with dlopen the first time an all-reduce spans distinct physical GPUs rather
// than linked: like cuBLAS (cublas_library.h) it is large, and most processes never need it.
//
//   ASSIGN_OR_RETURN(const NcclLibrary* nccl, LoadNccl());
//   nccl->group_start(); ... nccl->all_reduce(...); ... nccl->group_end();
//
// Thread-safe; the library stays loaded for the life of the process.
#pragma once

#include <nccl.h>

#include "graph/platform/status.h"

namespace tessera {

// The entry points Tessera calls, under NCCL's own signatures.
struct NcclLibrary {
  decltype(&ncclCommInitAll) comm_init_all;
  decltype(&ncclAllReduce) all_reduce;
  decltype(&ncclGroupStart) group_start;
  decltype(&ncclGroupEnd) group_end;
  decltype(&ncclGetErrorString) error_string;
};

// Loads libnccl.so.<major of the headers built against> on the first call, from the
// loader's search path or beside the CUDA runtime in use. FailedPrecondition naming what is
// missing when it cannot; the same answer after that.
StatusOr<const NcclLibrary*> LoadNccl();

}  // namespace tessera
