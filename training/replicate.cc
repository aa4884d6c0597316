#include "training/replicate.h"

#include <algorithm>

#include "training/gradient_buckets.h"

namespace tessera {

class Replicator {
 public:
  Replicator(const Scope& root, const ReplicateOptions& options) : root_(root), options_(options) {}

  StatusOr<Replicated> Run(const ModelFn& model, const ApplyFn& apply) {
    const size_t n = options_.devices.size();
    if (n == 0) return errors::InvalidArgument("Replicate needs at least one device");
    if (options_.gradient_reduction != "mean" && options_.gradient_reduction != "sum") {
      return errors::InvalidArgument("Unknown gradient_reduction '", options_.gradient_reduction,
                                     "'; want mean or sum");
    }
    param_device_ = options_.parameter_device.empty() ? options_.devices[0] : options_.parameter_device;
    Replicated out;
    out.towers.resize(n);
    for (size_t i = 0; i < n; ++i) {
      towers_.push_back(Tower(this, static_cast<int>(i), options_.devices[i],
                              root_.NewSubScope(StrCat("tower_", i)).WithDevice(options_.devices[i])));
      model(towers_.back(), &out.towers[i]);
      RETURN_IF_ERROR(root_.status());
    }
    ASSIGN_OR_RETURN(auto grads, GradientsByVariable(out.towers));
    Scope scope = root_.NewSubScope("replicate");
    std::vector<Operation> updates = options_.mode == ReplicationMode::kMirrored
                                         ? MirroredUpdates(grads, apply)
                                         : ParameterDeviceUpdate(grads, apply);
    RETURN_IF_ERROR(root_.status());
    std::vector<Operation> init_ops;
    for (const Var& v : vars_) init_ops.insert(init_ops.end(), v.init.begin(), v.init.end());
    init_ops.insert(init_ops.end(), apply_inits_.begin(), apply_inits_.end());
    out.init = ops::NoOp(scope.WithOpName("init").WithControlDependencies(init_ops));
    out.train = ops::NoOp(scope.WithOpName("train").WithControlDependencies(updates));
    RETURN_IF_ERROR(root_.status());
    for (const Var& v : vars_) out.variables[v.name] = v.copies;
    return out;
  }

  // An initializer the update adds (an optimizer's slots), run by Replicated::init.
  void AddInit(const Operation& init) { apply_inits_.push_back(init); }

  Output Variable(Tower& tower, const std::string& name, Input initial_value) {
    auto it = std::find_if(vars_.begin(), vars_.end(), [&](const Var& v) { return v.name == name; });
    if (tower.index() > 0) {
      if (it == vars_.end()) {
        root_.UpdateStatus(errors::InvalidArgument("tower_", tower.index(), " asked for variable '", name,
                                                   "', which tower_0 did not create; every tower must build "
                                                   "the same model"));
        return Output();
      }
      if (options_.mode == ReplicationMode::kParameterDevice) return it->copies[0];
      return MirrorCopy(*it, tower);
    }
    if (it != vars_.end()) return it->copies[0];  // asked again by tower 0
    const std::string& device =
        options_.mode == ReplicationMode::kParameterDevice ? param_device_ : tower.device();
    Scope at = root_.WithDevice(device);
    Output init_value = initial_value.is_constant()
                            ? ops::Const(at.WithOpName(StrCat(name, "/initial_value")), initial_value.tensor())
                            : root_.AsOutput(initial_value);
    if (init_value.node == nullptr) return Output();
    const TensorShape& shape = init_value.node->output_shape(init_value.index);
    if (!shape.IsFullyDefined()) {
      root_.UpdateStatus(errors::InvalidArgument("The initial value of variable '", name, "' has shape ",
                                                 shape.DebugString(), "; a variable needs a fully defined shape"));
      return Output();
    }
    Var v{name, init_value.type(), shape, {}, {}};
    Output var = ops::Variable(at.WithOpName(name), shape, v.dtype);
    Output assign = ops::Assign(at.WithOpName(StrCat(name, "/Assign")), var, init_value);
    if (var.node == nullptr || assign.node == nullptr) return Output();
    v.copies.push_back(var);
    v.init.push_back(assign.op());
    vars_.push_back(std::move(v));
    return var;
  }

 private:
  struct Var {
    std::string name;
    DataType dtype;
    TensorShape shape;
    std::vector<Output> copies;   // by tower in mirrored mode
    std::vector<Operation> init;  // the Assign of each copy
  };

  // A mirrored copy starts as a copy of tower 0's initialised variable.
  Output MirrorCopy(Var& v, const Tower& tower) {
    if (static_cast<int>(v.copies.size()) > tower.index()) return v.copies[tower.index()];
    Scope at = root_.WithDevice(tower.device());
    std::string copy_name = StrCat(v.name, "/replica_", tower.index());
    Output var = ops::Variable(at.WithOpName(copy_name), v.shape, v.dtype);
    // Tower 0's Assign yields its variable once assigned: reading through it orders the
    // copy after the initialisation.
    Output initialised(v.init[0].node(), 0);
    Output assign = ops::Assign(at.WithOpName(StrCat(copy_name, "/Assign")), var, initialised);
    if (var.node == nullptr || assign.node == nullptr) return Output();
    v.copies.push_back(var);
    v.init.push_back(assign.op());
    return var;
  }

  // grads[var][tower]: every tower's gradient of each variable, in variable order; only
  // variables that have gradients.
  StatusOr<std::vector<std::pair<int, std::vector<Output>>>> GradientsByVariable(
      const std::vector<TowerOutputs>& towers) {
    std::vector<std::vector<Output>> by_var(vars_.size(), std::vector<Output>(towers.size()));
    for (size_t t = 0; t < towers.size(); ++t) {
      for (const GradAndVar& gv : towers[t].grads) {
        int var = -1;
        for (size_t v = 0; v < vars_.size() && var < 0; ++v) {
          const auto& copies = vars_[v].copies;
          const Output& mine = options_.mode == ReplicationMode::kMirrored && t < copies.size() ? copies[t] : copies[0];
          if (gv.var.node == mine.node && gv.var.index == mine.index) var = static_cast<int>(v);
        }
        if (var < 0 || gv.grad.node == nullptr) {
          return errors::InvalidArgument("tower_", t, " gave a gradient for ",
                                         gv.var.node == nullptr ? "a missing node" : gv.var.node->DebugName(),
                                         ", which is not one of its Tower::Variable results");
        }
        if (by_var[var][t].node != nullptr) {
          return errors::InvalidArgument("tower_", t, " gave two gradients for variable '", vars_[var].name, "'");
        }
        by_var[var][t] = gv.grad;
      }
    }
    std::vector<std::pair<int, std::vector<Output>>> grads;
    for (size_t v = 0; v < vars_.size(); ++v) {
      size_t have = std::count_if(by_var[v].begin(), by_var[v].end(), [](const Output& o) { return o.node != nullptr; });
      if (have == 0) continue;
      if (have != towers.size()) {
        return errors::InvalidArgument("Only ", have, " of ", towers.size(), " towers gave a gradient for variable '",
                                       vars_[v].name, "'; every tower must build the same model");
      }
      grads.emplace_back(static_cast<int>(v), std::move(by_var[v]));
    }
    return grads;
  }

  // Gradients reduced by all-reduce groups, one per bucket; each tower updates its copies.
  std::vector<Operation> MirroredUpdates(const std::vector<std::pair<int, std::vector<Output>>>& grads,
                                         const ApplyFn& apply) {
    std::vector<GradientSize> sizes;
    for (const auto& [var, g] : grads) {
      sizes.push_back({vars_[var].dtype, vars_[var].shape.num_elements() * static_cast<int64_t>(DataTypeSize(vars_[var].dtype))});
    }
    auto buckets = AssignGradientBuckets(sizes, options_.bucket_bytes);
    const int n = static_cast<int>(towers_.size());
    std::vector<std::vector<GradAndVar>> reduced(n);
    for (size_t b = 0; b < buckets.size(); ++b) {
      for (int t = 0; t < n; ++t) {
        std::vector<Input> inputs;
        for (int g : buckets[b]) inputs.push_back(grads[g].second[t]);
        auto outs = ops::AllReduce(towers_[t].scope().WithOpName(StrCat("allreduce_", b)), inputs,
                                   {.reduction = options_.gradient_reduction,
                                    .group_key = options_.group_key,
                                    .group_size = n,
                                    .instance_key = static_cast<int64_t>(b),
                                    .wire_float16 = options_.wire_float16,
                                    .communication_hint = options_.communication_hint});
        if (outs.size() != buckets[b].size()) return {};
        for (size_t k = 0; k < outs.size(); ++k) {
          reduced[t].push_back({outs[k], vars_[grads[buckets[b][k]].first].copies[t]});
        }
      }
    }
    std::vector<Operation> updates;
    for (int t = 0; t < n; ++t) updates.push_back(apply(towers_[t].scope().NewSubScope("update"), reduced[t]));
    return updates;
  }

  // The average_gradients pattern: one sum (or mean) per variable on the parameter device.
  std::vector<Operation> ParameterDeviceUpdate(const std::vector<std::pair<int, std::vector<Output>>>& grads,
                                               const ApplyFn& apply) {
    Scope at = root_.NewSubScope("average_gradients").WithDevice(param_device_);
    std::vector<GradAndVar> combined;
    for (const auto& [var, g] : grads) {
      const Var& v = vars_[var];
      std::vector<Input> inputs(g.begin(), g.end());
      Output sum = ops::AddN(at.WithOpName(v.name), inputs);
      if (options_.gradient_reduction == "mean" && g.size() > 1) {
        sum = ops::Div(at, sum, ops::Cast(at, static_cast<int32_t>(g.size()), v.dtype));
      }
      combined.push_back({sum, v.copies[0]});
    }
    return {apply(root_.NewSubScope("update").WithDevice(param_device_), combined)};
  }

  Scope root_;
  const ReplicateOptions& options_;
  std::string param_device_;
  std::vector<Tower> towers_;
  std::vector<Var> vars_;  // in creation order
  std::vector<Operation> apply_inits_;
};

Output Tower::Variable(const std::string& name, Input initial_value) {
  return owner_->Variable(*this, name, std::move(initial_value));
}

ApplyFn GradientDescent(double learning_rate) {
  return [learning_rate](const Scope& scope, const std::vector<GradAndVar>& grads) {
    std::vector<Operation> updates;
    for (const GradAndVar& gv : grads) {
      Output lr = ops::Cast(scope, learning_rate, gv.grad.node == nullptr ? DataType::kFloat : gv.grad.type());
      updates.push_back(ops::AssignSub(scope, gv.var, ops::Mul(scope, gv.grad, lr)).op());
    }
    return ops::NoOp(scope.WithControlDependencies(updates));
  };
}

StatusOr<Replicated> Replicate(const Scope& root, const ReplicateOptions& options, const ModelFn& model,
                               const ApplyFn& apply) {
  return Replicator(root, options).Run(model, apply);
}

StatusOr<Replicated> Replicate(const Scope& root, const ReplicateOptions& options, const ModelFn& model,
                               const Optimizer& optimizer) {
  Replicator replicator(root, options);
  return replicator.Run(model, [&](const Scope& scope, const std::vector<GradAndVar>& grads) {
    std::vector<std::pair<Output, Output>> grads_and_vars;
    for (const GradAndVar& gv : grads) grads_and_vars.emplace_back(gv.grad, gv.var);
    StatusOr<Training> training = optimizer.ApplyGradients(scope, grads_and_vars);
    if (!training.ok()) {
      scope.UpdateStatus(training.status());
      return ops::NoOp(scope);
    }
    replicator.AddInit(training->init);
    return training->train;
  });
}

}  // namespace tessera
