// OpRegistry: the op schemas a graph may use, by op name.
//
// OpRegistry::Global() holds the core op library (graph/ops/core_ops.h), registered on first
// use by an explicit call, so static linking cannot lose it; it is defined with that library,
// a floor above this one. Find and Register may be called concurrently from any thread.
#pragma once

#include <map>
#include <memory>
#include <shared_mutex>
#include <string>
#include <vector>

#include "graph/op_def.h"

namespace tessera {

class OpRegistry {
 public:
  OpRegistry() = default;
  // The process's registry. Defined in graph/ops/core_ops.cc: a program that calls it links
  // the core op library.
  static OpRegistry* Global();

  // AlreadyExists if an op of that name is registered; InvalidArgument for a bad spec.
  Status Register(const OpDefBuilder& builder);
  // nullptr when unknown. The OpDef lives as long as the registry.
  const OpDef* Find(std::string_view name) const;
  std::vector<std::string> OpNames() const;

 private:
  mutable std::shared_mutex mu_;
  std::map<std::string, std::unique_ptr<const OpDef>, std::less<>> ops_;  // guarded by mu_
};

}  // namespace tessera
