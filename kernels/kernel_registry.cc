#include "kernels/kernel_registry.h"

#include <algorithm>
#include <mutex>
#include <set>

namespace tessera {

KernelRegistry* KernelRegistry::Global() {
  static KernelRegistry* registry = [] {
    auto* r = new KernelRegistry;
    RegisterCpuKernels(*r);
    return r;
  }();
  return registry;
}

void KernelRegistry::Register(const KernelDefBuilder& builder, KernelFactory factory) {
  std::unique_lock lock(mu_);
  kernels_.emplace(builder.def().op, Entry{builder.def(), std::move(factory)});
}

const KernelRegistry::Entry* KernelRegistry::FindEntry(const Node& node,
                                                       std::string_view device_type) const {
  std::shared_lock lock(mu_);
  auto [begin, end] = kernels_.equal_range(node.op());
  for (auto it = begin; it != end; ++it) {
    const KernelDef& def = it->second.def;
    if (def.device_type != device_type) continue;
    bool match = true;
    for (const auto& [attr, types] : def.type_constraints) {
      DataType dt = DataType::kInvalid;
      if (!node.GetAttr(attr, &dt).ok() ||
          std::find(types.begin(), types.end(), dt) == types.end()) {
        match = false;
        break;
      }
    }
    if (match) return &it->second;
  }
  return nullptr;
}

const KernelDef* KernelRegistry::Find(const Node& node, std::string_view device_type) const {
  const Entry* e = FindEntry(node, device_type);
  return e == nullptr ? nullptr : &e->def;
}

std::string KernelRegistry::Describe(std::string_view op) const {
  std::shared_lock lock(mu_);
  std::map<std::string, std::set<std::string>> by_device;
  auto [begin, end] = kernels_.equal_range(op);
  for (auto it = begin; it != end; ++it) {
    auto& types = by_device[it->second.def.device_type];
    for (const auto& [attr, list] : it->second.def.type_constraints) {
      for (DataType dt : list) types.insert(std::string(DataTypeName(dt)));
    }
  }
  if (by_device.empty()) return "<no registered kernels>";
  std::string s;
  for (const auto& [device, types] : by_device) {
    if (!s.empty()) s += ", ";
    s += device;
    if (!types.empty()) {
      s += " {";
      bool first = true;
      for (const std::string& t : types) {
        s += (first ? "" : ", ") + t;
        first = false;
      }
      s += "}";
    }
  }
  return s;
}

StatusOr<std::unique_ptr<OpKernel>> KernelRegistry::CreateKernel(const Node& node,
                                                                  DeviceBase* device) const {
  const Entry* e = FindEntry(node, device->device_type());
  if (e == nullptr) {
    return errors::NotFound("No registered kernel for node ", node.DebugName(), " on device ",
                            device->name(), ". Registered kernels: ", Describe(node.op()));
  }
  OpKernelConstruction c(node, device);
  std::unique_ptr<OpKernel> kernel = e->factory(&c);
  if (!c.status().ok()) {
    return c.status().WithSuffix(
        StrCat("\n\t [[node ", node.name(), " (", node.op(), ") on ", device->name(), "]]"));
  }
  return kernel;
}

}  // namespace tessera
