#include "kernels/kernel_registry.h"

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <set>

namespace tessera {

void KernelRegistry::Register(const KernelDefBuilder& builder, KernelFactory factory) {
  const KernelDef& def = builder.def();
  if (const OpDef* op = OpRegistry::Global()->Find(def.op)) {
    for (const std::string& arg : def.host_memory_args) {
      auto named = [&arg](const ArgDef& a) { return a.name == arg; };
      if (std::none_of(op->inputs.begin(), op->inputs.end(), named) &&
          std::none_of(op->outputs.begin(), op->outputs.end(), named)) {
        // A kernel registration is code, not user input: a wrong name is a bug to fix.
        std::cerr << "tessera: kernel for " << def.op << " on " << def.device_type << " keeps '" << arg
                  << "' in host memory, but the op has no argument of that name\n";
        std::abort();
      }
    }
  }
  std::unique_lock lock(mu_);
  if (!def.host_memory_args.empty()) types_with_host_args_.insert(def.device_type);
  kernels_.emplace(def.op, Entry{def, std::move(factory)});
}

bool KernelRegistry::HasHostMemoryArgs(std::string_view device_type) const {
  std::shared_lock lock(mu_);
  return types_with_host_args_.count(device_type) != 0;
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

namespace {

// Marks kHost the slots of every arg among `args` that `def` keeps in host memory.
Status MarkHostArgs(const KernelDef& def, const Node& node, const std::vector<ArgDef>& args,
                    std::vector<MemoryType>* types) {
  size_t slot = 0;
  for (const ArgDef& a : args) {
    ASSIGN_OR_RETURN(int64_t n, ArgLength(node.op_def(), a, node.attrs(), node.name()));
    const bool host = std::find(def.host_memory_args.begin(), def.host_memory_args.end(), a.name) !=
                      def.host_memory_args.end();
    for (int64_t j = 0; j < n && slot < types->size(); ++j, ++slot) {
      if (host) (*types)[slot] = MemoryType::kHost;
    }
  }
  return Status::OK();
}

}  // namespace

Status KernelRegistry::MemoryTypes(const KernelDef& def, const Node& node, std::vector<MemoryType>* inputs,
                                   std::vector<MemoryType>* outputs) {
  inputs->assign(node.num_inputs(), MemoryType::kDevice);
  outputs->assign(node.num_outputs(), MemoryType::kDevice);
  if (def.host_memory_args.empty()) return Status::OK();
  RETURN_IF_ERROR(MarkHostArgs(def, node, node.op_def().inputs, inputs));
  return MarkHostArgs(def, node, node.op_def().outputs, outputs);
}

Status KernelRegistry::MemoryTypesForNode(const Node& node, std::string_view device_type,
                                          std::vector<MemoryType>* inputs, std::vector<MemoryType>* outputs) const {
  const Entry* e = FindEntry(node, device_type);
  if (e == nullptr) {
    return errors::NotFound("No registered kernel for node ", node.DebugName(), " on ", device_type,
                            " devices. Registered kernels: ", Describe(node.op()));
  }
  return MemoryTypes(e->def, node, inputs, outputs);
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
  std::vector<MemoryType> input_types, output_types;
  if (!e->def.host_memory_args.empty()) {
    Status s = MemoryTypes(e->def, node, &input_types, &output_types);
    if (!s.ok()) return s.WithSuffix(StrCat(" (node ", node.DebugName(), " on ", device->name(), ")"));
  }
  OpKernelConstruction c(node, device, std::move(input_types), std::move(output_types));
  std::unique_ptr<OpKernel> kernel = e->factory(&c);
  if (!c.status().ok()) {
    return c.status().WithSuffix(
        StrCat("\n\t [[node ", node.name(), " (", node.op(), ") on ", device->name(), "]]"));
  }
  return kernel;
}

}  // namespace tessera
