#include "tools/train.h"

#include <unistd.h>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <map>

#include "distributed/cluster_spec.h"
#include "tools/serve.h"

namespace tessera {
namespace {

StatusOr<int64_t> ParseInt(const std::string& flag, const std::string& text) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return errors::InvalidArgument(flag, " takes an integer, got '", text, "'");
  }
  return v;
}

}  // namespace

StatusOr<TrainOptions> ParseTrainArgs(const std::vector<std::string>& args) {
  TrainOptions o;
  bool devices_given = false;
  const std::map<std::string, int64_t*> ints = {
      {"--batch", &o.batch}, {"--seed", &o.seed}, {"--train-limit", &o.train_limit}, {"--test-limit", &o.test_limit}};
  const std::map<std::string, int*> small_ints = {
      {"--epochs", &o.epochs}, {"--devices", &o.devices}, {"--threads", &o.threads}, {"--task", &o.task},
      {"--virtual-gpus", &o.virtual_gpus}};
  const std::map<std::string, std::string*> strings = {{"--mode", &o.mode},
                                                       {"--cluster", &o.cluster},
                                                       {"--device", &o.device},
                                                       {"--parameter-device", &o.parameter_device},
                                                       {"--data", &o.data_dir},
                                                       {"--trace", &o.trace_path},
                                                       {"--checkpoint", &o.checkpoint_path},
                                                       {"--inference-graph", &o.inference_graph_path},
                                                       {"--frozen-graph", &o.frozen_graph_path}};
  std::map<std::string, std::string> tls_flags;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--no-progress") {
      o.progress = false;
      continue;
    }
    const bool tls_flag = a == "--tls-cert" || a == "--tls-key" || a == "--tls-ca";
    if (!ints.contains(a) && !small_ints.contains(a) && !strings.contains(a) && a != "--learning-rate" && !tls_flag &&
        a != "--job") {
      return errors::InvalidArgument("unexpected argument '", a, "'");
    }
    if (i + 1 >= args.size()) return errors::InvalidArgument(a, " needs a value");
    devices_given |= a == "--devices";
    const std::string& v = args[++i];
    if (auto s = strings.find(a); s != strings.end()) {
      *s->second = v;
    } else if (tls_flag) {
      tls_flags[a] = v;
    } else if (a == "--job") {
      if (v != "worker") {
        return errors::InvalidArgument("tessera train runs the worker tasks, not '", v,
                                       "' (run a ps task with tessera server)");
      }
    } else if (a == "--learning-rate") {
      char* end = nullptr;
      o.learning_rate = std::strtod(v.c_str(), &end);
      if (end == v.c_str() || *end != '\0' || !(o.learning_rate > 0) || !std::isfinite(o.learning_rate)) {
        return errors::InvalidArgument("--learning-rate takes a positive number, got '", v, "'");
      }
    } else if (auto wide = ints.find(a); wide != ints.end()) {
      ASSIGN_OR_RETURN(*wide->second, ParseInt(a, v));
    } else {
      ASSIGN_OR_RETURN(int64_t n, ParseInt(a, v));
      if (n < std::numeric_limits<int>::min() || n > std::numeric_limits<int>::max()) {
        return errors::InvalidArgument(a, " takes a 32-bit integer, got '", v, "'");
      }
      *small_ints.at(a) = static_cast<int>(n);
    }
  }
  if (o.mode == "parameter-device") o.mode = "parameter_device";
  // Not given: two virtual CPUs (the seeds' two towers), or one GPU (each logical GPU of a
  // split one).
  if (!devices_given) o.devices = o.device != "gpu" ? 2 : std::max(1, o.virtual_gpus);
  // On a cluster each worker trains one tower on its CPU; the cluster and the task come from
  // the flags or, as in TensorFlow, from TF_CONFIG.
  if (o.mode == "async" || o.mode == "sync" || o.mode == "multi-worker") {
    if (o.cluster.empty()) {
      const char* tf_config = std::getenv("TF_CONFIG");
      if (tf_config == nullptr || *tf_config == '\0') {
        return errors::InvalidArgument("--mode ", o.mode, " needs --cluster and --task, or TF_CONFIG");
      }
      ASSIGN_OR_RETURN(TfConfig config, ParseTfConfig(tf_config));
      if (config.job != "worker") {
        return errors::InvalidArgument("tessera train runs the worker tasks; TF_CONFIG names a '", config.job,
                                       "' task (run it with tessera server)");
      }
      o.cluster = config.cluster.ToJson();
      o.task = config.task;
    }
    o.devices = 1;
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
