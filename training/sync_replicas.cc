#include "training/sync_replicas.h"

#include <algorithm>

#include "graph/builder/ops.h"

namespace tessera {

StatusOr<SyncReplicasTraining> SyncReplicas(const Scope& scope, const Scope& local, const Optimizer& optimizer,
                                            const SyncReplicasOptions& options,
                                            const std::vector<std::pair<Output, Output>>& grads_and_vars,
                                            Output global_step) {
  RETURN_IF_ERROR(scope.status());
  if (options.replicas_to_aggregate < 1 || options.total_num_replicas < 1) {
    return errors::InvalidArgument("SyncReplicas needs replicas_to_aggregate and total_num_replicas of at least 1, got ",
                                   options.replicas_to_aggregate, " and ", options.total_num_replicas);
  }
  if (global_step.node == nullptr) return errors::InvalidArgument("SyncReplicas needs a global step");
  if (grads_and_vars.empty()) return errors::InvalidArgument("No variables to optimize");
  const Scope s = scope.NewSubScope("sync_replicas");
  SyncReplicasTraining t;
  t.local_step = ops::Variable(local.WithOpName("sync_rep_local_step"), TensorShape(), DataType::kInt64);
  t.local_init = ops::Assign(local.WithOpName("sync_rep_local_step/init").ColocateWith(t.local_step), t.local_step,
                             global_step)
                     .op();

  std::vector<Operation> applied, chief_inits;
  std::vector<std::pair<Output, Output>> averaged;
  for (const auto& [grad, var] : grads_and_vars) {
    if (grad.node == nullptr || var.node == nullptr) {
      return errors::InvalidArgument("SyncReplicas got an empty gradient or variable");
    }
    const Scope at_var = s.NewSubScope(var.node->name()).ColocateWith(var);
    const DataType dtype = var.node->output_type(var.index);
    // Shared by name, so that every worker's graph finds the same accumulator on the ps.
    Output acc = ops::ConditionalAccumulator(at_var.WithOpName("grad_accum"), dtype,
                                             {.shape = var.node->output_shape(var.index),
                                              .shared_name = StrCat(var.node->name(), "/grad_accum")});
    applied.push_back(ops::AccumulatorApplyGradient(at_var.WithOpName("apply"), acc, t.local_step, grad));
    averaged.emplace_back(
        ops::AccumulatorTakeGradient(at_var.WithOpName("take"), acc, options.replicas_to_aggregate, dtype), var);
    chief_inits.push_back(ops::AccumulatorSetGlobalStep(at_var.WithOpName("set_global_step"), acc, global_step));
  }
  RETURN_IF_ERROR(scope.status());
  ASSIGN_OR_RETURN(Training update, optimizer.ApplyGradients(s, averaged, global_step));
  t.init = update.init;

  const Scope at_step = s.ColocateWith(global_step);
  Output tokens = ops::FIFOQueue(at_step.WithOpName("sync_token_q"), {DataType::kInt64},
                                 {.shapes = {TensorShape()}, .shared_name = "sync_token_q"});
  std::vector<Output> token =
      ops::QueueDequeue(at_step.WithOpName("token").WithControlDependencies(applied), tokens, {DataType::kInt64});
  if (token.empty()) return scope.status();
  t.train = ops::Assign(local.WithOpName("sync_rep_local_step/update").ColocateWith(t.local_step), t.local_step,
                        token[0]);

  // After the update, one token per replica (more when fewer replicas than gradients to
  // aggregate), each carrying the new global step.
  const int64_t per_step = std::max(options.total_num_replicas, options.replicas_to_aggregate);
  Output stepped = ops::Identity(at_step.WithOpName("updated_step").WithControlDependencies({update.train}),
                                 global_step);
  Output fill = ops::Fill(at_step.WithOpName("tokens"), Tensor::FromVector<int32_t>({static_cast<int32_t>(per_step)}),
                          stepped);
  t.sync = ops::QueueEnqueueMany(at_step.WithOpName("sync_op"), tokens, {fill});
  t.chief_init = ops::NoOp(s.WithOpName("chief_init").WithControlDependencies(chief_inits));
  const int64_t initial = options.replicas_to_aggregate - options.total_num_replicas;
  if (initial > 0) {
    Output first = ops::Fill(at_step.WithOpName("initial_tokens"),
                             Tensor::FromVector<int32_t>({static_cast<int32_t>(initial)}), global_step);
    t.init_tokens = ops::QueueEnqueueMany(at_step.WithOpName("init_tokens"), tokens, {first});
  } else {
    t.init_tokens = ops::NoOp(s.WithOpName("init_tokens"));
  }
  RETURN_IF_ERROR(scope.status());
  return t;
}

}  // namespace tessera
