#include "kernels/data/data_kernels.h"

namespace tessera {

void RegisterDatasetKernels(KernelRegistry& r) {
  data::RegisterSourceDatasetKernels(r);
  data::RegisterTransformDatasetKernels(r);
  data::RegisterPrefetchDatasetKernels(r);
  data::RegisterFunctionDatasetKernels(r);
  data::RegisterIteratorKernels(r);
}

}  // namespace tessera
