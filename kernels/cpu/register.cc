#include "kernels/cpu/register.h"

namespace tessera {

namespace cpu {
std::string NodeSuffix(const OpKernel& k) {
  return StrCat("\n\t [[node ", k.name(), " (", k.type_string(), ") on ", k.device_name(), "]]");
}
}  // namespace cpu

void RegisterCpuKernels(KernelRegistry& r) {
  cpu::RegisterArrayKernels(r);
  cpu::RegisterVariableKernels(r);
  cpu::RegisterCwiseKernels(r);
  cpu::RegisterMatMulKernels(r);
  cpu::RegisterReductionKernels(r);
  cpu::RegisterNnKernels(r);
  cpu::RegisterCastKernels(r);
}

}  // namespace tessera
