// Scope: the C++ graph builder. A Scope names the graph being built and the context new ops
// get: a name prefix, a device (string or function), control dependencies, colocation and a
// resource container. Scopes are cheap values; every With*/NewSubScope returns a new one.
//
//   Scope root = Scope::NewRootScope();
//   auto v = ops::Variable(root.WithOpName("v").WithDevice("/cpu:0"), {2}, DataType::kFloat);
//   auto tower = root.NewSubScope("tower_0").WithDevice("/cpu:1");
//   auto y = ops::Add(tower.WithOpName("y"), v, 1.0f);          // "tower_0/y" on /cpu:1
//   GraphSpec def;
//   Status s = root.ToSpec(&def);    // the first error of any op built, if one failed
//
// Device scopes compose as tf.device does: from the innermost scope outwards, a device
// string fills only the fields still unset ("/job:ps" outside "/cpu:1" gives
// "/job:ps/device:CPU:1"), and a device function is called with the node (whose requested
// device so far it can read) and its result replaces the request.
//
// All scopes derived from one root share its graph and error state and are not
// synchronised: build a graph from one thread.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace tessera {

class Operation {
 public:
  Operation() = default;
  explicit Operation(Node* node) : node_(node) {}
  Node* node() const { return node_; }
  const std::string& name() const { return node_->name(); }

 private:
  Node* node_ = nullptr;
};

// A cheap handle on one output of a node.
struct Output {
  Output() = default;
  Output(Node* n, int i = 0) : node(n), index(i) {}  // NOLINT: implicit by design
  Node* node = nullptr;
  int index = 0;
  Operation op() const { return Operation(node); }
  DataType type() const { return node->output_type(index); }
  // "name" for output 0, "name:i" otherwise: the form fetches and inputs use.
  std::string name() const;
};

// An op input: an Output, or a constant that the wrapper turns into a Const node.
class Input {
 public:
  Input(Output o) : output_(o) {}  // NOLINT: implicit by design
  Input(const Tensor& t) : tensor_(t) {}                         // NOLINT
  Input(float v) : tensor_(Tensor::Scalar(v)) {}                 // NOLINT
  Input(double v) : tensor_(Tensor::Scalar(v)) {}                // NOLINT
  Input(int32_t v) : tensor_(Tensor::Scalar(v)) {}               // NOLINT
  Input(int64_t v) : tensor_(Tensor::Scalar(v)) {}               // NOLINT
  Input(bool v) : tensor_(Tensor::Scalar(v)) {}                  // NOLINT
  Input(const char* v) : tensor_(Tensor::Scalar(std::string(v))) {}  // NOLINT
  Input(const std::string& v) : tensor_(Tensor::Scalar(v)) {}        // NOLINT
  Input(std::initializer_list<float> v) : tensor_(Tensor::FromVector(std::vector<float>(v))) {}  // NOLINT
  Input(std::initializer_list<int32_t> v)                                                          // NOLINT
      : tensor_(Tensor::FromVector(std::vector<int32_t>(v))) {}

  bool is_constant() const { return tensor_.IsInitialized(); }
  const Output& output() const { return output_; }
  const Tensor& tensor() const { return tensor_; }

 private:
  Output output_;
  Tensor tensor_;
};

using DeviceFunction = std::function<std::string(const Node&)>;

// How ops built in one loop frame take values made in others, as TensorFlow's WhileContext
// does for a while loop's gradient: `capture` gives the value to use for an input (the input
// itself, an Enter of it, or its copy saved by the forward loop), and an op with no data
// inputs waits on `pivot`, so that it runs in every iteration of the frame.
struct FrameCapture {
  std::function<Output(const Output&)> capture;
  Operation pivot;
};

class Scope {
 public:
  // A scope over a new, empty graph using the global op registry.
  static Scope NewRootScope();
  // `ops` is borrowed and must outlive the graph.
  static Scope NewRootScope(const OpRegistry* ops);
  // A scope adding to `graph`, which it borrows (the graph must outlive every scope derived
  // from it), under `name_scope` as it is ("" or "a/b": the caller's, taken already); the
  // names of the nodes already there are taken, and so are the scopes they are in ("a" and
  // "a/b" of "a/b/c"). How a graph built elsewhere (the Python package's) gets gradients.
  static Scope ForGraph(Graph* graph, std::string name_scope = "");

  // The next op created gets exactly this name (under the scope's prefix).
  Scope WithOpName(std::string name) const;
  // Ops get names under "<prefix>/<name>/"; a taken sub-scope name gets a "_1" suffix.
  Scope NewSubScope(std::string name) const;
  Scope WithDevice(std::string device) const;
  Scope WithDeviceFunction(DeviceFunction fn) const;
  Scope WithControlDependencies(const std::vector<Operation>& deps) const;
  Scope WithNoControlDependencies() const;
  // Ops created under it share op's device. As tf.colocate_with, it clears the device
  // scopes and functions in force, so they cannot contradict the colocation.
  Scope ColocateWith(const Operation& op) const;
  Scope ColocateWith(const Output& out) const { return ColocateWith(out.op()); }
  // Stateful ops (VariableV2) created under it live in this resource container.
  Scope WithContainer(std::string container) const;
  // Ops created under it are in the frame `frame` describes; its capture is called for each
  // input, and may build ops itself (under scopes of its own).
  Scope WithFrameCapture(std::shared_ptr<const FrameCapture> frame) const;

  bool ok() const { return status().ok(); }
  // The first error of any op built from this root.
  Status status() const;
  Graph* graph() const;
  Status ToSpec(GraphSpec* def) const;
  // The name before the remodel; kept for one release.
  [[deprecated("ToGraphDef is ToSpec")]] Status ToGraphDef(GraphSpec* def) const { return ToSpec(def); }

  // For op wrappers: completes `def` (name, device, control deps, colocation, container)
  // and adds it. Returns nullptr and records the error when the scope already failed or the
  // node is invalid.
  Node* AddNode(NodeSpec def) const;
  // Turns an Input into an Output, creating a Const for a constant; records errors.
  Output AsOutput(const Input& in) const;
  void UpdateStatus(const Status& s) const;

 private:
  struct Shared;
  struct DeviceSpec {
    std::string device;
    DeviceFunction fn;
  };
  explicit Scope(std::shared_ptr<Shared> shared);
  std::string UniqueName(std::string_view base) const;

  std::shared_ptr<Shared> shared_;
  std::string prefix_;  // "" or "a/b/"
  std::string op_name_;
  std::vector<DeviceSpec> devices_;  // outermost first
  std::vector<Operation> control_deps_;
  std::vector<std::string> colocate_with_;
  std::string container_;
  std::shared_ptr<const FrameCapture> frame_;
};

}  // namespace tessera
