// KernelRegistry: which kernel implements an op on a device type for given attr types.
//
//   void RegisterMyKernels(KernelRegistry& r) {
//     r.Register<MatMulOp<float>>(KernelDefBuilder("MatMul").Device(kDeviceCpu)
//                                     .TypeConstraint<float>("T"));
//   }
//
// Registration is an explicit call, one per device type, so static linking cannot lose
// kernels: each provider (devices/) registers its kernels where it registers its device
// factory, and KernelRegistry::Global() holds the CPU provider's from its first use. The
// placer asks the registry which device types can run a node; the executor asks it for the
// kernel itself.
// Register and the lookups may be called concurrently from any thread.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <shared_mutex>
#include <string>
#include <vector>

#include "kernels/op_kernel.h"

namespace tessera {

inline constexpr char kDeviceCpu[] = "CPU";
inline constexpr char kDeviceGpu[] = "GPU";

struct KernelDef {
  std::string op;
  std::string device_type;
  // attr name -> the types this kernel accepts for it
  std::map<std::string, std::vector<DataType>> type_constraints;
  // Inputs or outputs (by arg name) kept in host memory on a device with memory of its own.
  std::vector<std::string> host_memory_args;
};

class KernelDefBuilder {
 public:
  explicit KernelDefBuilder(std::string op) { def_.op = std::move(op); }
  KernelDefBuilder& Device(std::string type) {
    def_.device_type = std::move(type);
    return *this;
  }
  KernelDefBuilder& TypeConstraint(std::string attr, std::vector<DataType> types) {
    auto& v = def_.type_constraints[std::move(attr)];
    v.insert(v.end(), types.begin(), types.end());
    return *this;
  }
  template <typename T>
  KernelDefBuilder& TypeConstraint(std::string attr) {
    return TypeConstraint(std::move(attr), {DataTypeToEnum<T>::value});
  }
  KernelDefBuilder& HostMemory(std::string arg) {
    def_.host_memory_args.push_back(std::move(arg));
    return *this;
  }
  const KernelDef& def() const { return def_; }

 private:
  KernelDef def_;
};

using KernelFactory = std::function<std::unique_ptr<OpKernel>(OpKernelConstruction*)>;

class KernelRegistry {
 public:
  KernelRegistry() = default;
  // The process's registry: the CPU provider's kernels from its first use, and those of every
  // provider registered since. Defined by the CPU provider (devices/cpu/cpu_provider.cc): a
  // program that calls it links a provider.
  static KernelRegistry* Global();

  void Register(const KernelDefBuilder& builder, KernelFactory factory);
  template <typename K>
  void Register(const KernelDefBuilder& builder) {
    Register(builder, [](OpKernelConstruction* c) -> std::unique_ptr<OpKernel> {
      return std::make_unique<K>(c);
    });
  }

  // The kernel for `node` on `device_type`, matching its type attrs; nullptr when none.
  const KernelDef* Find(const Node& node, std::string_view device_type) const;
  // The memory each input and output of `node` lives in on `device_type`: host memory for
  // the args its kernel declares HostMemory, device memory for the rest. NotFound when no
  // kernel matches.
  Status MemoryTypesForNode(const Node& node, std::string_view device_type, std::vector<MemoryType>* inputs,
                            std::vector<MemoryType>* outputs) const;
  // Whether any kernel of `device_type` keeps an argument in host memory.
  bool HasHostMemoryArgs(std::string_view device_type) const;
  // "CPU {float32, int32}, GPU {float32}": the registered kernels of an op, for errors.
  std::string Describe(std::string_view op) const;

  // Instantiates the kernel. NotFound when no kernel matches; the kernel constructor's
  // error (a bad attr value) otherwise. Messages name the node and device.
  StatusOr<std::unique_ptr<OpKernel>> CreateKernel(const Node& node, DeviceBase* device) const;

 private:
  struct Entry {
    KernelDef def;
    KernelFactory factory;
  };
  const Entry* FindEntry(const Node& node, std::string_view device_type) const;
  static Status MemoryTypes(const KernelDef& def, const Node& node, std::vector<MemoryType>* inputs,
                            std::vector<MemoryType>* outputs);

  mutable std::shared_mutex mu_;
  std::multimap<std::string, Entry, std::less<>> kernels_;  // by op; guarded by mu_
  std::set<std::string, std::less<>> types_with_host_args_;  // guarded by mu_
};

}  // namespace tessera
