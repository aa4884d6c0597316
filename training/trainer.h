// Train: the seeds' CNN (training/fashion_cnn.h) trained on Fashion-MNIST with RMSProp, on one
// device or replicated over virtual CPU devices or GPUs, or over a cluster's workers, fed by
// a prefetching dataset pipeline: what `tessera train` runs (tools/train.h is only its
// command line). Prints the placement summary, a progress line per epoch (images/s, running
// loss) and the test accuracy after each epoch, and can save a checkpoint
// (training/saver.h) after each epoch and a Chrome trace of one step. GPUs are those of the
// providers the program registered (devices/linked/linked_providers.h).
//
//   TrainOptions options;
//   options.epochs = 2;
//   options.devices = 2;                       // mirrored over /cpu:0 and /cpu:1
//   StatusOr<TrainResult> r = Train(options, std::cout);
//
// Train builds its own graph and session; concurrent calls are independent.
#pragma once

#include <map>
#include <chrono>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "distributed/tls.h"
#include "graph/platform/status.h"
#include "graph/tensor.h"

namespace tessera {

// How progress within an epoch shows on the log.
enum class ProgressStyle {
  kLines,   // a plain line at most every few seconds, and one per epoch: for files and pipes
  kRedraw,  // one line redrawn in place ('\r') four times a second: for a terminal
};

struct TrainOptions {
  int epochs = 2;
  // "cpu": towers on virtual CPU devices; "gpu": towers on GPUs, with the input pipeline,
  // the loss report and the ops without a GPU kernel on the CPU.
  std::string device = "cpu";
  // Towers, one per device; the global batch is split evenly between them.
  int devices = 1;
  // K > 0 (with device "gpu"): split each GPU into K logical GPUs, so that mirrored training
  // over several towers runs on a one-GPU machine.
  int virtual_gpus = 0;
  // "mirrored" or "parameter_device" (also spelled "parameter-device"); on a cluster
  // "async", "sync" or "multi-worker".
  std::string mode = "mirrored";
  // parameter_device mode: where the variables live and are updated, e.g. "/cpu:0" (the
  // layout of TF's multi-GPU examples); "" is the first tower's device.
  std::string parameter_device;
  // Between-graph replication (modes "async" and "sync"): this process is task `task` of
  // job "worker" of `cluster` (ClusterSpec JSON) and serves it; the variables live on the
  // "ps" tasks, which `tessera server` runs. Each worker trains its own shard of the
  // training images with `batch` images a step; task 0, the chief, initializes the
  // variables (or restores --checkpoint when the ps have lost them) and saves the
  // checkpoint. A task restarted mid-training finds the variables on the ps and goes on.
  // "async": every worker updates the shared variables as it goes. "sync": each update
  // averages one step's gradients from every worker (SyncReplicas), applied by the chief;
  // the shards cycle, and an epoch is a shard's worth of global steps.
  // "multi-worker": in-graph replication over the workers (no ps): the chief (task 0) reads
  // the data and drives one mirrored tower on every worker, the gradients all-reduced in a
  // ring across the tasks; the other workers serve until the chief is done. The result
  // equals one process with as many devices and the same global batch.
  std::string cluster;  // "": this process alone
  // Mirrored and multi-worker: how the gradients are all-reduced: "auto" or "ring" (the
  // engine's ring), or "gloo".
  std::string all_reduce = "auto";
  int task = 0;
  // How long a worker that waits on the chief (sync and multi-worker) goes on when the chief
  // does not answer, before it fails naming the chief.
  std::chrono::milliseconds chief_timeout{60000};
  // On a cluster: mutual TLS for every call this worker makes and serves (tls.h); the ps
  // tasks and the other workers must use it too.
  std::optional<TlsFiles> tls;
  int64_t batch = 128;            // global
  int threads = 0;                // intra-op pool size (and inter-op on GPUs); 0: the number of cores
  double learning_rate = 1e-3;
  int64_t seed = 1;         // initial weights and the shuffle order
  int64_t train_limit = 0;  // train on the first N images only; 0: all 60,000
  int64_t test_limit = 0;   // test on the first N images only; 0: all 10,000
  std::string data_dir;     // "" is FashionMnistDir()
  std::string trace_path;   // when set, the Chrome trace of one step (the 10th) goes here
  std::string checkpoint_path;  // when set, every variable is saved here after each epoch
  // With checkpoint_path: after training, the inference graph (variables and a Saver, to
  // restore the checkpoint into) and the frozen graph (variables as constants), as JSON.
  std::string inference_graph_path;
  std::string frozen_graph_path;
  bool progress = true;     // show progress while an epoch runs; each epoch's own line comes anyway
  ProgressStyle progress_style = ProgressStyle::kLines;
};

struct EpochStats {
  int epoch = 0;
  double seconds = 0;
  double images_per_second = 0;
  double mean_loss = 0;  // of the global batch, over the epoch's steps
  double test_accuracy = 0;
};

struct TrainResult {
  std::vector<EpochStats> epochs;
  // The trained variables by name (conv2d/kernel, ...), tower 0's copy.
  std::map<std::string, Tensor> variables;
};

// FailedPrecondition when --device gpu finds fewer GPUs than towers, saying why;
// InvalidArgument for options out of range, for data files whose images and labels disagree
// or hold nothing, and for output paths that name the same file (or a data file); NotFound
// when the data files are missing. All of these are found before training starts. Outputs
// are written atomically (graph/platform/file_io.h).
StatusOr<TrainResult> Train(const TrainOptions& options, std::ostream& log);

}  // namespace tessera
