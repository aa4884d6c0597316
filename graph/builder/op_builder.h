// What the op wrappers (ops.h, dataset_ops.h) share to add nodes.
#pragma once

#include <string_view>
#include <vector>

#include "graph/builder/scope.h"

namespace tessera::ops {

// Adds a node of `op` with the given inputs and attrs under `s`; returns its output 0, or an
// empty Output (the error kept in `s`) when an input failed or the node is invalid.
Output Build(const Scope& s, std::string_view op, std::vector<Input> inputs, AttrMap attrs = {});

// Every output of the node behind `first`; empty when it failed.
std::vector<Output> AllOutputs(Output first);

}  // namespace tessera::ops
