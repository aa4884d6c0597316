// SyncReplicas: synchronous between-graph training, as TensorFlow 1.x's
// SyncReplicasOptimizer does it. Every worker builds the same graph and runs `train` each
// step: its gradients go into one ConditionalAccumulator per variable (beside the variable,
// on a ps), then it waits for a token from the token queue (beside global_step) and takes
// the token's global step as its local step. The chief also runs `sync` in a loop on a
// thread of its own: it takes the average of `replicas_to_aggregate` gradients from every
// accumulator, applies them with the wrapped optimizer (global_step += 1) and hands out one
// token per replica. A gradient computed at a local step older than the accumulator's
// global step is stale and dropped.
//
//   auto sync = SyncReplicas(model, worker, RMSPropOptimizer(...),
//                            {.replicas_to_aggregate = 2, .total_num_replicas = 2}, grads_and_vars, step.var);
//   // chief, once: variables' init, sync->init, sync->chief_init, sync->init_tokens;
//   //   then a thread: loop { run sync->sync } until its session is closed
//   // every worker: sync->local_init once the variables are ready, then sync->train per step
//
// Chosen where TensorFlow differs: init_tokens enqueues replicas_to_aggregate -
// total_num_replicas tokens (none when they are equal), not TensorFlow's default of
// replicas_to_aggregate, which lets every worker run one step ahead on gradients that are
// then dropped as stale. Building follows Scope's rule: one thread per graph.
#pragma once

#include <utility>
#include <vector>

#include "training/optimizers.h"

namespace tessera {

struct SyncReplicasOptions {
  int replicas_to_aggregate = 1;  // gradients averaged per update
  int total_num_replicas = 1;     // workers
};

struct SyncReplicasTraining {
  // A worker's step. Its output (int64) is the global step of the update that let it go.
  Output train;
  Operation local_init;   // a worker, before its first step: local step = global step
  Operation chief_init;   // the chief, after initializing or restoring: accumulators' step = global step
  Operation init_tokens;  // the chief, once, after chief_init
  Operation sync;         // the chief's runner, in a loop
  Operation init;         // the wrapped optimizer's own variables (slots)
  Output local_step;      // a variable on `local`'s device
};

// `scope` places the accumulators and updates (beside each variable, whatever its device);
// `local` is this worker's device, where the local step lives. InvalidArgument for counts
// below 1 and whatever the wrapped optimizer refuses.
StatusOr<SyncReplicasTraining> SyncReplicas(const Scope& scope, const Scope& local, const Optimizer& optimizer,
                                            const SyncReplicasOptions& options,
                                            const std::vector<std::pair<Output, Output>>& grads_and_vars,
                                            Output global_step);

}  // namespace tessera
