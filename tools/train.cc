#include "tools/train.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <map>

#include "distributed/cluster_resolver.h"
#include "tools/flags.h"
#include "tools/serve.h"

namespace tessera {

StatusOr<TrainOptions> ParseTrainArgs(const std::vector<std::string>& args) {
  TrainOptions o;
  std::string learning_rate, job;
  int64_t chief_timeout_s = 60;
  bool no_progress = false;
  TlsFlagValues tls_flags;
  ResolverFlagValues resolver_flags;
  Flags flags;
  flags.Int("--batch", &o.batch).Int("--seed", &o.seed).Int("--train-limit", &o.train_limit)
      .Int("--test-limit", &o.test_limit).Int("--epochs", &o.epochs).Int("--devices", &o.devices)
      .Int("--threads", &o.threads).Int("--task", &o.task).Int("--virtual-gpus", &o.virtual_gpus)
      .Int("--chief-timeout", &chief_timeout_s)
      .String("--mode", &o.mode).String("--cluster", &o.cluster).String("--device", &o.device)
      .String("--parameter-device", &o.parameter_device).String("--data", &o.data_dir).String("--trace", &o.trace_path)
      .String("--checkpoint", &o.checkpoint_path).String("--inference-graph", &o.inference_graph_path)
      .String("--frozen-graph", &o.frozen_graph_path).String("--learning-rate", &learning_rate).String("--job", &job)
      .String("--all-reduce", &o.all_reduce).Switch("--no-progress", &no_progress);
  AddTlsFlags(flags, &tls_flags);
  AddResolverFlags(flags, &resolver_flags);
  RETURN_IF_ERROR(flags.Parse(args));
  if (flags.Given("--job") && job != "worker") {
    return errors::InvalidArgument("tessera train runs the worker tasks, not '", job,
                                   "' (run a ps task with tessera server)");
  }
  if (flags.Given("--learning-rate")) {
    char* end = nullptr;
    o.learning_rate = std::strtod(learning_rate.c_str(), &end);
    if (end == learning_rate.c_str() || *end != '\0' || !(o.learning_rate > 0) || !std::isfinite(o.learning_rate)) {
      return errors::InvalidArgument("--learning-rate takes a positive number, got '", learning_rate, "'");
    }
  }
  o.progress = !no_progress;
  if (chief_timeout_s < 1 || chief_timeout_s > 86400) {
    return errors::InvalidArgument("--chief-timeout takes seconds from 1 to 86400, got ", chief_timeout_s);
  }
  o.chief_timeout = std::chrono::seconds(chief_timeout_s);
  if (o.mode == "parameter-device") o.mode = "parameter_device";
  if (o.all_reduce != "auto" && o.all_reduce != "ring" && o.all_reduce != "gloo") {
    return errors::InvalidArgument("--all-reduce takes auto, ring or gloo, got '", o.all_reduce, "'");
  }
  // Not given: two virtual CPUs (the seeds' two towers), or one GPU (each logical GPU of a
  // split one).
  if (!flags.Given("--devices")) o.devices = o.device != "gpu" ? 2 : std::max(1, o.virtual_gpus);
  // On a cluster each worker trains one tower on its CPU; the cluster and the task come from
  // the flags or from a resolver (TF_CONFIG, srun's variables).
  if (o.mode == "async" || o.mode == "sync" || o.mode == "multi-worker") {
    if (o.cluster.empty()) {
      StatusOr<ClusterTask> resolved = ResolveFromFlags(flags, resolver_flags);
      if (!resolved.ok()) {
        return resolved.status().WithPrefix(StrCat("--mode ", o.mode, " needs --cluster and --task, or a resolver's: "));
      }
      const ClusterTask& task = *resolved;
      if (task.job != "worker") {
        return errors::InvalidArgument("tessera train runs the worker tasks; the resolver names a '", task.job,
                                       "' task (run it with tessera server)");
      }
      o.cluster = task.cluster.ToJson();
      o.task = task.task;
    } else if (flags.Given("--resolver")) {
      return errors::InvalidArgument("--cluster and --resolver: give one");
    }
    o.devices = 1;
  } else if (flags.Given("--resolver") || flags.Given("--jobs") || flags.Given("--port-base")) {
    return errors::InvalidArgument("--resolver, --jobs and --port-base go with --mode async, sync or multi-worker");
  }
  ASSIGN_OR_RETURN(o.tls, TlsFromFlags(tls_flags));
  if (o.tls && o.cluster.empty()) {
    return errors::InvalidArgument("--tls-cert, --tls-key and --tls-ca go with --mode async, sync or multi-worker");
  }
  return o;
}

int RunTrainCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                    const std::string& usage) {
  StatusOr<TrainOptions> o = ParseTrainArgs(args);
  if (!o.ok()) {
    err << "tessera: " << o.status().message() << "\n" << usage;
    return 2;
  }
  // Redrawn in place only where someone watches: a log file or a pipe (CI) gets lines.
  if (&out == &std::cout && isatty(STDOUT_FILENO)) o->progress_style = ProgressStyle::kRedraw;
  StatusOr<TrainResult> result = Train(*o, out);
  if (!result.ok()) {
    err << result.status().ToString() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace tessera
