#include "kernels/gpu/nccl_library.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <filesystem>
#include <string>

namespace tessera {
namespace {

const std::string kSoname = "libnccl.so." + std::to_string(NCCL_MAJOR);

// The CUDA toolkit's own copy, when it has one, sits beside its runtime.
void* OpenBesideCudaRuntime() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&cudaGetDeviceCount), &info) == 0 || info.dli_fname == nullptr) return nullptr;
  const std::filesystem::path dir = std::filesystem::path(info.dli_fname).parent_path();
  for (const auto& beside : {dir / kSoname, dir.parent_path() / "lib" / kSoname}) {
    if (void* lib = dlopen(beside.c_str(), RTLD_NOW | RTLD_LOCAL)) return lib;
  }
  return nullptr;
}

template <typename Fn>
bool Bind(void* lib, const char* symbol, Fn* fn, std::string* missing) {
  *fn = reinterpret_cast<Fn>(dlsym(lib, symbol));
  if (*fn == nullptr) *missing = symbol;
  return *fn != nullptr;
}

StatusOr<const NcclLibrary*> Open() {
  void* lib = dlopen(kSoname.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) lib = OpenBesideCudaRuntime();
  if (lib == nullptr) {
    return errors::FailedPrecondition("Could not load ", kSoname, " (NCCL, for all-reduce between GPUs): ", dlerror());
  }
  static NcclLibrary nccl;
  std::string missing;
  const bool bound = Bind(lib, "ncclCommInitAll", &nccl.comm_init_all, &missing) &&
                     Bind(lib, "ncclAllReduce", &nccl.all_reduce, &missing) &&
                     Bind(lib, "ncclGroupStart", &nccl.group_start, &missing) &&
                     Bind(lib, "ncclGroupEnd", &nccl.group_end, &missing) &&
                     Bind(lib, "ncclGetErrorString", &nccl.error_string, &missing);
  if (!bound) return errors::FailedPrecondition(kSoname, " has no ", missing, ": an NCCL older than the headers");
  return &nccl;
}

}  // namespace

StatusOr<const NcclLibrary*> LoadNccl() {
  static const StatusOr<const NcclLibrary*> loaded = Open();
  return loaded;
}

}  // namespace tessera
