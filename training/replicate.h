// Replicate: in-graph replication of a model over several devices ("towers"), kept in step
// in one of the two ways TensorFlow 1.x users know:
//
//  - kParameterDevice: each variable lives once, on the parameter device. Every tower
//    computes gradients on its part of the batch; they are averaged on the parameter device
//    (the `average_gradients` pattern of the multi-GPU CIFAR-10 example) and applied once.
//  - kMirrored (MirroredStrategy): every tower has its own copy of every variable on its
//    device. The towers' gradients are reduced by AllReduce groups, small ones fused into
//    buckets, and every copy applies the same reduced gradient, so the copies stay
//    bit-identical.
//
//   ReplicateOptions options{.mode = ReplicationMode::kMirrored, .devices = {"/cpu:0", "/cpu:1"}};
//   auto rep = Replicate(root, options, [](Tower& tower, TowerOutputs* out) {
//     auto x = ops::Placeholder(tower.scope().WithOpName("x"), DataType::kFloat, TensorShape({-1, 3}));
//     auto w = tower.Variable("w", Tensor::FromVector<float>({0, 0, 0}, TensorShape({3, 1})));
//     ... out->grads.push_back({grad_w, w});
//   }, GradientDescent(0.1f));
//   session->Run({}, {}, {rep->init.name()}, &out);          // once
//   session->Run(feeds, {}, {rep->train.name()}, &out);      // each step; feeds "tower_0/x", ...
//
// A model function gets its gradients from AddSymbolicGradients on its loss (or writes them
// with ops) and hands them over in TowerOutputs::grads.
// Replicate builds graph nodes only; like the Scope, it is not thread-safe.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "graph/builder/ops.h"
#include "training/optimizers.h"

namespace tessera {

enum class ReplicationMode { kParameterDevice, kMirrored };

struct GradAndVar {
  Output grad;
  Output var;  // as returned by Tower::Variable
};

class Replicator;

// What a model function sees of the tower it builds.
class Tower {
 public:
  int index() const { return index_; }
  const std::string& device() const { return device_; }
  // Name scope tower_<index>, on the tower's device.
  const Scope& scope() const { return scope_; }
  // The model's variable `name` (like tf.get_variable). Tower 0 creates it, initialised to
  // `initial_value` (a fully defined shape) by Replicated::init. Later towers get the same
  // variable (parameter-device mode) or their own copy, initialised from tower 0's copy so
  // that all start equal (mirrored mode). Errors go to the scope's status.
  Output Variable(const std::string& name, Input initial_value);

 private:
  friend class Replicator;
  Tower(Replicator* owner, int index, std::string device, Scope scope)
      : owner_(owner), index_(index), device_(std::move(device)), scope_(std::move(scope)) {}
  Replicator* owner_;
  int index_;
  std::string device_;
  Scope scope_;
};

struct TowerOutputs {
  std::vector<Output> outputs;  // anything the caller wants back (a loss, predictions)
  std::vector<GradAndVar> grads;
};

using ModelFn = std::function<void(Tower& tower, TowerOutputs* outputs)>;
// Builds the update of each variable from its gradient, on `scope`'s device; returns one
// operation that runs all of them.
using ApplyFn = std::function<Operation(const Scope& scope, const std::vector<GradAndVar>& grads)>;

// var -= learning_rate * grad, for every pair.
ApplyFn GradientDescent(double learning_rate);

struct ReplicateOptions {
  ReplicationMode mode = ReplicationMode::kMirrored;
  std::vector<std::string> devices{};  // one tower per device, in this order
  // kParameterDevice: where variables, the averaging and the update run; "" is devices[0].
  std::string parameter_device{};
  // How the towers' gradients combine: "mean" (each tower's loss is a mean over its part
  // of the batch, so this matches one device on the whole batch) or "sum".
  std::string gradient_reduction = "mean";
  // kMirrored: gradients fused per all-reduce; 0 gives every gradient its own.
  int64_t bucket_bytes = 4 << 20;
  bool wire_float16 = false;
  // kMirrored: the all-reduces' communication_hint: "auto" or "ring" (the engine's ring),
  // or "gloo".
  std::string communication_hint = "auto";
  // Distinct replications in one graph need distinct group keys.
  int64_t group_key = 1;
};

struct Replicated {
  std::vector<TowerOutputs> towers;
  Operation init;   // initialises every variable (every copy)
  Operation train;  // one step: reduce the gradients, update every variable (every copy)
  // Each variable's copies, by name: one in parameter-device mode, one per tower mirrored.
  std::map<std::string, std::vector<Output>> variables;
};

// InvalidArgument for no devices, an unknown reduction, towers that build different
// variables or gradients, a gradient of something that is not a tower variable, or any
// error a model function left in the scope.
StatusOr<Replicated> Replicate(const Scope& root, const ReplicateOptions& options, const ModelFn& model,
                               const ApplyFn& apply);
// Updates with a tf.train-style optimizer: in mirrored mode each copy gets its own slots
// (named after the copy), all initialised by Replicated::init.
StatusOr<Replicated> Replicate(const Scope& root, const ReplicateOptions& options, const ModelFn& model,
                               const Optimizer& optimizer);

}  // namespace tessera
