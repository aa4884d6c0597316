// Graph, Node and Edge: a validated dataflow graph of ops.
//
//   auto g = Graph::FromSpec(def);           // validates ops, attrs, types, shapes, cycles
//   for (Node* n : (*g)->nodes()) ...            // creation order, which is topological
//
// Nodes are added only after all their inputs exist, so a Graph is acyclic by construction,
// but for the back edges of TensorFlow's while loops (NextIteration into Merge), which
// FromSpec connects after ordering the other NodeDefs; any other cycle is an error. Each node's input and output
// types and statically known output shapes are resolved when it is added.
//
// A Graph is not synchronised: build it from one thread; once built, any number of threads
// may read it concurrently. Nodes and edges live as long as their Graph.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "graph/graph_spec.h"
#include "graph/op_registry.h"

namespace tessera {

class Node;
namespace graph_internal {
struct ResolvedInputs;
}  // namespace graph_internal

inline constexpr int kControlSlot = -1;

struct Edge {
  Node* src = nullptr;
  int src_output = 0;  // kControlSlot for a control edge
  Node* dst = nullptr;
  int dst_input = 0;   // kControlSlot for a control edge
  bool IsControl() const { return src_output == kControlSlot; }
};

class Node {
 public:
  int id() const { return id_; }
  const std::string& name() const { return name_; }
  const std::string& op() const { return op_def_->name; }
  const OpDef& op_def() const { return *op_def_; }
  const AttrMap& attrs() const { return attrs_; }
  template <typename T>
  Status GetAttr(std::string_view attr_name, T* out) const {
    return tessera::GetAttr(attrs_, name_, attr_name, out);
  }
  bool is_stateful() const { return op_def_->is_stateful; }

  int num_inputs() const { return static_cast<int>(input_types_.size()); }
  DataType input_type(int i) const { return input_types_[i]; }
  bool input_is_ref(int i) const { return input_is_ref_[i]; }
  int num_outputs() const { return static_cast<int>(output_types_.size()); }
  DataType output_type(int i) const { return output_types_[i]; }
  bool output_is_ref(int i) const { return output_is_ref_[i]; }
  const TensorShape& output_shape(int i) const { return output_shapes_[i]; }

  // The data edge feeding input i.
  const Edge* input_edge(int i) const { return data_inputs_[i]; }
  const std::vector<const Edge*>& control_inputs() const { return control_inputs_; }
  // A Const's value; nullptr for any other node.
  const Tensor* constant_value() const;
  const std::vector<const Edge*>& out_edges() const { return out_edges_; }

  // As written in the graph: possibly partial ("/cpu:1") or empty.
  const std::string& requested_device() const { return requested_device_; }
  void set_requested_device(std::string device) { requested_device_ = std::move(device); }
  // True when a device function (rather than a device string) chose the request; the
  // placement log reports it. Not serialised.
  bool requested_by_function() const { return requested_by_function_; }
  void set_requested_by_function(bool v) { requested_by_function_ = v; }
  // Set by the placer: a full device name, or empty before placement.
  const std::string& assigned_device() const { return assigned_device_; }
  void set_assigned_device(std::string device) { assigned_device_ = std::move(device); }
  const std::vector<std::string>& colocate_with() const { return colocate_with_; }

  // The NodeSpec this node was built from, with every attr (defaults and inferred types
  // filled in).
  NodeSpec ToSpec() const;
  [[deprecated("ToNodeDef is ToSpec")]] NodeSpec ToNodeDef() const { return ToSpec(); }
  // "'name' (Op)", the way error messages name a node.
  std::string DebugName() const;

 private:
  friend class Graph;
  int id_ = 0;
  std::string name_;
  const OpDef* op_def_ = nullptr;
  AttrMap attrs_;
  std::vector<DataType> input_types_;
  std::vector<bool> input_is_ref_;
  std::vector<DataType> output_types_;
  std::vector<bool> output_is_ref_;
  std::vector<TensorShape> output_shapes_;
  std::vector<const Edge*> data_inputs_;
  std::vector<const Edge*> control_inputs_;
  std::vector<const Edge*> out_edges_;
  std::string requested_device_;
  bool requested_by_function_ = false;
  std::string assigned_device_;
  std::vector<std::string> colocate_with_;
};

// One node of a graph assembled from parts of others (Graph::Assemble): a new node, or a copy
// of a node of another graph under a name and inputs of its own.
struct NodePart {
  // A new node; for a copy, its name, inputs, requested device and colocation, and attrs to
  // set over its source's (ones that change no type, such as the runtime's own "_..." attrs).
  NodeSpec def;
  // The node a copy copies, of a graph with the same op registry; null for a new node. A copy
  // keeps its source's op and resolved types without checking them again, but for its inputs'
  // types; its shapes are inferred again from its new inputs, as a new node's are.
  const Node* copy_of = nullptr;
  std::string assigned_device;

  // A copy of `n` as it is: its name, op, inputs ("x:1", "^y"), requested and assigned device
  // and colocation.
  static NodePart Copy(const Node& n);
};

class Graph {
 public:
  // `ops` is borrowed and must outlive the graph.
  explicit Graph(const OpRegistry* ops = OpRegistry::Global());
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // Validates `def` against its op schema and the nodes already in the graph (every input
  // must exist) and adds it. On error the graph is unchanged.
  StatusOr<Node*> AddNode(const NodeSpec& def);
  // Orders `def` topologically, then adds every node.
  static StatusOr<std::unique_ptr<Graph>> FromSpec(const GraphSpec& def,
                                                       const OpRegistry* ops = OpRegistry::Global());
  // The same for parts that copy nodes of other graphs, without making a GraphSpec of them:
  // how the runtime's passes (pruning, rewrites, partitioning) make one graph from another.
  static StatusOr<std::unique_ptr<Graph>> Assemble(const std::vector<NodePart>& parts,
                                                   const OpRegistry* ops = OpRegistry::Global());
  GraphSpec ToSpec() const;

  // The names before the remodel; kept for one release.
  [[deprecated("FromGraphDef is FromSpec")]] static StatusOr<std::unique_ptr<Graph>> FromGraphDef(
      const GraphSpec& def, const OpRegistry* ops = OpRegistry::Global()) {
    return FromSpec(def, ops);
  }
  [[deprecated("ToGraphDef is ToSpec")]] GraphSpec ToGraphDef() const { return ToSpec(); }

  Node* FindNode(std::string_view name) const;
  // Makes data input `input` of `merge`, a Merge, come from output `port` of `source`: how a
  // loop's NextIteration, made after the Merge it feeds, closes the loop (TensorFlow's
  // Operation._update_input). InvalidArgument where `merge` is no Merge or the types differ;
  // static shapes already inferred downstream of `merge` stay as they were.
  Status ConnectBackEdge(Node* merge, int input, Node* source, int port);
  // Narrows the static shape of output `port` of `node` to what both it and `shape` say (a
  // Python script's Tensor.set_shape); nodes added after it infer their shapes from the new
  // one. InvalidArgument where the two are incompatible.
  Status RefineOutputShape(Node* node, int port, const TensorShape& shape);
  // In creation order, which is a topological order but for loops' back edges. Node::id()
  // indexes this vector.
  const std::vector<Node*>& nodes() const { return node_ptrs_; }
  int num_nodes() const { return static_cast<int>(node_ptrs_.size()); }
  const OpRegistry* op_registry() const { return ops_; }

 private:
  // Node i is defs[i], or a copy of sources[i] where that is set; assigned[i], where set, is
  // its assigned device. What FromSpec and Assemble share.
  static StatusOr<std::unique_ptr<Graph>> Build(const std::vector<const NodeSpec*>& defs,
                                                const std::vector<const Node*>& sources,
                                                const std::vector<const std::string*>& assigned,
                                                const OpRegistry* ops);
  StatusOr<Node*> AddCopy(const NodeSpec& def, const Node& source);
  // Names `n` after `def` and connects its inputs: the last step of adding a node.
  Node* Wire(Node& n, const NodeSpec& def, const graph_internal::ResolvedInputs& inputs);

  const OpRegistry* ops_;
  std::deque<Node> nodes_;
  std::deque<Edge> edges_;
  std::vector<Node*> node_ptrs_;
  std::map<std::string, Node*, std::less<>> by_name_;
};

// True for names TensorFlow accepts: [A-Za-z0-9.][A-Za-z0-9_./-]*
bool IsValidNodeName(std::string_view name);

}  // namespace tessera
