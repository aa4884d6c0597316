// Opening a CUDA library (cuBLAS, NCCL) when it is first needed instead of linking it, so a
// process that never uses it does not carry it: by its soname, else where the CUDA toolkit
// keeps its own copy, beside the CUDA runtime the build links.
//
//   void* lib = OpenCudaLibrary("libcublas.so.13");
//   std::string missing;
//   if (lib == nullptr || !BindSymbol(lib, "cublasCreate_v2", &create, &missing)) ...
//
// Thread-safe (dlopen and dlsym are).
#pragma once

#include <dlfcn.h>

#include <string>

namespace tessera {

// The library's handle, or nullptr (dlerror() then says why).
void* OpenCudaLibrary(const std::string& soname);

// Sets *fn to `symbol` of `lib`; false, naming the symbol in *missing, if it has none.
template <typename Fn>
bool BindSymbol(void* lib, const char* symbol, Fn* fn, std::string* missing) {
  *fn = reinterpret_cast<Fn>(dlsym(lib, symbol));
  if (*fn == nullptr) *missing = symbol;
  return *fn != nullptr;
}

}  // namespace tessera
