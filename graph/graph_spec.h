// NodeSpec and GraphSpec: a graph as plain data, the form that JSON files, the Scope builder,
// sessions and cluster tasks exchange. A Graph (graph.h) is the validated, linked form.
// TensorFlow's protobuf GraphDef and NodeDef play this part there; the importer reads those
// into these (graph/serialize/tensorflow_graph.h).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "graph/attr_value.h"
#include "graph/op_kinds.h"

namespace tessera {

struct NodeSpec {
  std::string name;
  std::string op;
  // "x" or "x:0" is output 0 of node x, "x:1" output 1, "^x" a control input. Data inputs
  // come before control inputs.
  std::vector<std::string> inputs;
  std::string device;                      // requested device, possibly partial or empty
  std::vector<std::string> colocate_with;  // names of nodes this one must share a device with
  AttrMap attrs;
  // A device function chose `device` (Scope::WithDeviceFunction); the placement log says
  // so. Not part of the JSON form.
  bool device_from_function = false;
};

struct GraphSpec {
  std::vector<NodeSpec> nodes;
};

// The names before the remodel, which TensorFlow's messages have too; kept for one release.
using NodeDef [[deprecated("NodeDef is NodeSpec")]] = NodeSpec;
using GraphDef [[deprecated("GraphDef is GraphSpec")]] = GraphSpec;

// One parsed input or fetch name: node "x", output `index`; index -1 for "^x".
struct TensorId {
  std::string_view node;
  int index = 0;
  bool is_control() const { return index < 0; }
};

// Parses "x", "x:3" and "^x". InvalidArgument for "", "x:", "x:-1", "x:abc".
StatusOr<TensorId> ParseTensorName(std::string_view name);

// A bool attr on a _Recv whose value may be dead (its graph has control flow): the
// executor then runs its partition with deadness even if it has no Switch of its own.
inline constexpr char kMaybeDeadAttr[] = "_maybe_dead";

}  // namespace tessera
