#include "devices/gpu/nccl_library.h"

#include <string>

#include "devices/gpu/cuda_library.h"

namespace tessera {
namespace {

const std::string kSoname = "libnccl.so." + std::to_string(NCCL_MAJOR);

StatusOr<const NcclLibrary*> Open() {
  void* lib = OpenCudaLibrary(kSoname);
  if (lib == nullptr) {
    return errors::FailedPrecondition("Could not load ", kSoname, " (NCCL, for all-reduce between GPUs): ", dlerror());
  }
  static NcclLibrary nccl;
  std::string missing;
  const bool bound = BindSymbol(lib, "ncclCommInitAll", &nccl.comm_init_all, &missing) &&
                     BindSymbol(lib, "ncclAllReduce", &nccl.all_reduce, &missing) &&
                     BindSymbol(lib, "ncclGroupStart", &nccl.group_start, &missing) &&
                     BindSymbol(lib, "ncclGroupEnd", &nccl.group_end, &missing) &&
                     BindSymbol(lib, "ncclGetErrorString", &nccl.error_string, &missing);
  if (!bound) return errors::FailedPrecondition(kSoname, " has no ", missing, ": an NCCL older than the headers");
  return &nccl;
}

}  // namespace

StatusOr<const NcclLibrary*> LoadNccl() {
  static const StatusOr<const NcclLibrary*> loaded = Open();
  return loaded;
}

}  // namespace tessera
