#include "graph/op_registry.h"

#include <mutex>

namespace tessera {

Status OpRegistry::Register(const OpDefBuilder& builder) {
  ASSIGN_OR_RETURN(OpDef def, builder.Finalize());
  std::unique_lock lock(mu_);
  if (ops_.count(def.name) != 0) {
    return errors::AlreadyExists("Op '", def.name, "' is already registered");
  }
  std::string name = def.name;
  ops_.emplace(std::move(name), std::make_unique<const OpDef>(std::move(def)));
  return Status::OK();
}

const OpDef* OpRegistry::Find(std::string_view name) const {
  std::shared_lock lock(mu_);
  auto it = ops_.find(name);
  return it == ops_.end() ? nullptr : it->second.get();
}

std::vector<std::string> OpRegistry::OpNames() const {
  std::shared_lock lock(mu_);
  std::vector<std::string> names;
  for (const auto& [name, def] : ops_) names.push_back(name);
  return names;
}

}  // namespace tessera
