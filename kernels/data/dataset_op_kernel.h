// DatasetOpKernel: the base of every dataset op's kernel. It makes the op's Dataset, checks
// it against the element the node declares (output_types or Toutput_types, and
// output_shapes) and outputs it as a scalar variant. Internal to kernels/.
#pragma once

#include "kernels/data/dataset.h"
#include "kernels/op_kernel.h"

namespace tessera {

class DatasetOpKernel : public OpKernel {
 public:
  explicit DatasetOpKernel(OpKernelConstruction* c);
  void Compute(OpKernelContext* ctx) final;
  bool IsExpensive() const override { return false; }

  // Prepares `fn` (the node's function attr `attr`) to run on the kernel's device.
  static StatusOr<std::shared_ptr<const InstantiatedFunction>> Instantiate(OpKernelContext* ctx, const FunctionDef& fn,
                                                                           std::string_view attr);
  // What iterators made in this step may use.
  static IteratorEnv EnvOf(OpKernelContext* ctx);

 protected:
  virtual StatusOr<DatasetPtr> MakeDataset(OpKernelContext* ctx) = 0;

  // Input i as a dataset.
  static StatusOr<DatasetPtr> InputDataset(OpKernelContext* ctx, int i);
  // Input i as a scalar; InvalidArgument naming `what` otherwise.
  static StatusOr<int64_t> ScalarInt64(OpKernelContext* ctx, int i, std::string_view what);
  static StatusOr<bool> ScalarBool(OpKernelContext* ctx, int i, std::string_view what);

  // The declared element; empty for sources whose element is fixed (TextLineDataset).
  const std::vector<DataType>& declared_dtypes() const { return dtypes_; }
  const std::vector<TensorShape>& declared_shapes() const { return shapes_; }

 private:
  std::vector<DataType> dtypes_;
  std::vector<TensorShape> shapes_;
};

}  // namespace tessera
