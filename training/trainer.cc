#include "training/trainer.h"

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <mutex>
#include <filesystem>
#include <map>
#include <thread>

#include "devices/device_factory.h"
#include "devices/linked/linked_providers.h"
#include "distributed/cluster_server.h"
#include "distributed/grpc_session.h"
#include "distributed/worker_channels.h"
#include "graph/platform/file_io.h"
#include "graph/serialize/graph_json.h"
#include "kernels/data/idx_file.h"
#include "kernels/kernel_registry.h"
#include "runtime/device_mgr.h"
#include "runtime/session.h"
#include "runtime/timeline.h"
#include "training/fashion_cnn.h"
#include "runtime/freeze.h"
#include "training/optimizers.h"
#include "training/replica_device_setter.h"
#include "training/replicate.h"
#include "training/saver.h"
#include "training/sync_replicas.h"

namespace tessera {
namespace {

// The test batch bounds the memory evaluation needs (its activations).
constexpr int64_t kTestBatch = 200;

// The graph, and the names of what the loop runs (the Scope, and every Output, is gone).
struct TrainGraph {
  GraphSpec def;
  std::string init, train;
  std::vector<std::pair<std::string, std::string>> variables;  // name, tower 0's copy
  std::string train_init, test_init;  // the iterators' initializers
  // Training batches a pass over the data gives; 0 where the pass never ends (sync training).
  int64_t batches_per_epoch = 0;
  std::string loss;                   // the global batch's loss
  std::string correct, tested;        // correct predictions in a test batch, and its size
  Saver saver;                        // every variable, saved under its model name
  // On a cluster: whether the ps hold initialized variables, and the step count they keep.
  std::string ready, global_step;
  std::string init_variables;  // every variable but global_step, for a restore to follow
  // Synchronous training (SyncReplicas): `train` is then fetched, not run, for the global
  // step that released the worker; the chief runs `sync` on a runner of its own.
  bool sync = false;
  std::string sync_op, chief_init, init_tokens, local_init;
};

// The inference graph with the checkpoint restored, written as it is and frozen.
Status ExportInference(const TrainOptions& o, std::ostream& log) {
  ASSIGN_OR_RETURN(FashionCnnInference inference, BuildFashionCnnInference());
  if (!o.inference_graph_path.empty()) {
    RETURN_IF_ERROR(WriteFileAtomically(o.inference_graph_path, GraphSpecToJson(inference.graph), "inference graph"));
    log << "inference graph written to " << o.inference_graph_path << "\n";
  }
  if (!o.frozen_graph_path.empty()) {
    ASSIGN_OR_RETURN(std::unique_ptr<Session> session, Session::Create(SessionConfig(), inference.graph));
    RETURN_IF_ERROR(inference.saver.Restore(*session, o.checkpoint_path));
    ASSIGN_OR_RETURN(GraphSpec frozen, FreezeGraph(*session, {"probabilities", "classes"}));
    RETURN_IF_ERROR(WriteFileAtomically(o.frozen_graph_path, GraphSpecToJson(frozen), "frozen graph"));
    log << "frozen graph written to " << o.frozen_graph_path << "\n";
  }
  return Status::OK();
}

Status CheckOptions(const TrainOptions& o) {
  if (o.epochs < 1) return errors::InvalidArgument("--epochs must be at least 1, got ", o.epochs);
  if (o.devices < 1) return errors::InvalidArgument("--devices must be at least 1, got ", o.devices);
  if (o.device != "cpu" && o.device != "gpu") {
    return errors::InvalidArgument("--device must be cpu or gpu, got '", o.device, "'");
  }
  if (o.virtual_gpus < 0 || (o.virtual_gpus > 0 && o.device != "gpu")) {
    return errors::InvalidArgument("--virtual-gpus takes a positive count and goes with --device gpu, got ",
                                   o.virtual_gpus, o.device != "gpu" ? StrCat(" with --device ", o.device) : "");
  }
  if (!o.parameter_device.empty() && o.mode != "parameter_device") {
    return errors::InvalidArgument("--parameter-device goes with --mode parameter_device, not ", o.mode);
  }
  if (o.cluster.empty() && o.mode != "mirrored" && o.mode != "parameter_device") {
    return errors::InvalidArgument("--mode must be mirrored or parameter_device, got '", o.mode,
                                   "' (async, sync and multi-worker train on a cluster: --cluster or TF_CONFIG)");
  }
  if (!o.cluster.empty() && o.mode != "async" && o.mode != "sync" && o.mode != "multi-worker") {
    return errors::InvalidArgument("on a cluster --mode must be async, sync or multi-worker, got '", o.mode, "'");
  }
  if (!o.cluster.empty() && (o.devices != 1 || o.device != "cpu")) {
    return errors::InvalidArgument("on a cluster each worker trains one tower on its CPU: --devices 1 --device cpu");
  }
  if (o.batch < o.devices || o.batch % o.devices != 0) {
    return errors::InvalidArgument("--batch ", o.batch, " must be a positive multiple of --devices ", o.devices);
  }
  if (o.devices > 1024) return errors::InvalidArgument("--devices must be at most 1024, got ", o.devices);
  if (o.threads < 0 || o.threads > 1024) {
    return errors::InvalidArgument("--threads must be 0 (all cores) to 1024, got ", o.threads);
  }
  if (o.train_limit < 0 || o.test_limit < 0) return errors::InvalidArgument("limits must be 0 (all) or more");
  if ((!o.inference_graph_path.empty() || !o.frozen_graph_path.empty()) && o.checkpoint_path.empty()) {
    return errors::InvalidArgument("exporting the inference or frozen graph needs --checkpoint");
  }
  return Status::OK();
}

std::string DataFile(const std::string& dir, const std::string& split, const std::string& kind) {
  return StrCat(dir, "/", split, "-", kind, "-idx", kind == "images" ? 3 : 1, "-ubyte.gz");
}

// The number of examples in one split, from the files' headers. Images and labels must
// agree: the pipeline zips them, and a zip stops silently at the shorter.
StatusOr<int64_t> CountExamples(const std::string& dir, const std::string& split) {
  const std::string images = DataFile(dir, split, "images"), labels = DataFile(dir, split, "labels");
  StatusOr<TensorShape> image_shape = ReadIdxShape(images);
  if (image_shape.status().code() == Code::kNotFound) {
    return image_shape.status().WithSuffix(
        "; install Debian's dataset-fashion-mnist (scripts/setup.sh) or set FASHION_MNIST_DIR");
  }
  RETURN_IF_ERROR(image_shape.status());
  ASSIGN_OR_RETURN(TensorShape label_shape, ReadIdxShape(labels));
  if (image_shape->rank() != 3 || image_shape->dim(1) != 28 || image_shape->dim(2) != 28) {
    return errors::InvalidArgument("'", images, "' holds ", image_shape->DebugString(), ", not 28x28 images");
  }
  if (label_shape.rank() != 1) {
    return errors::InvalidArgument("'", labels, "' holds ", label_shape.DebugString(), ", not a list of labels");
  }
  if (image_shape->dim(0) != label_shape.dim(0)) {
    return errors::InvalidArgument("'", images, "' holds ", image_shape->dim(0), " images but '", labels, "' ",
                                   label_shape.dim(0), " labels");
  }
  if (image_shape->dim(0) == 0) return errors::InvalidArgument("'", images, "' holds no images");
  return image_shape->dim(0);
}

// Every output its own file and none of them an input, each one writable: found out before
// any training, not after the first epoch.
Status CheckOutputPaths(const TrainOptions& o, const std::string& dir) {
  const std::vector<std::pair<std::string, std::string>> outputs = {{"--checkpoint", o.checkpoint_path},
                                                                    {"--inference-graph", o.inference_graph_path},
                                                                    {"--frozen-graph", o.frozen_graph_path},
                                                                    {"--trace", o.trace_path}};
  std::map<std::string, std::string> used;  // resolved path -> what uses it
  for (const char* split : {"train", "t10k"}) {
    for (const char* kind : {"images", "labels"}) {
      const std::string file = DataFile(dir, split, kind);
      StatusOr<std::string> resolved = ResolveWriteTarget(file, "data file");
      if (resolved.ok()) used.emplace(*resolved, StrCat("the data file '", file, "'"));
    }
  }
  for (const auto& [flag, path] : outputs) {
    if (path.empty()) continue;
    ASSIGN_OR_RETURN(std::string resolved, ResolveWriteTarget(path, flag.substr(2)));
    auto [it, fresh] = used.emplace(resolved, flag);
    if (!fresh) {
      return errors::InvalidArgument(flag, " '", path, "' is the same file as ", it->second,
                                     "; each output needs a file of its own");
    }
    // Opening a writer checks the folder and the target without touching the target.
    RETURN_IF_ERROR(AtomicFileWriter::Open(path, flag.substr(2)).status());
  }
  return Status::OK();
}

// The two iterators a training graph reads: `train` in batches of --batch, prefetched, and
// (`with_test`) the test split in batches of kTestBatch. The training iterator is initialized once and
// repeats its batches for each of `epochs` (0 where `train` cycles already): re-initialized,
// it would make a new CacheDataset, as TensorFlow 1.x does, and decode the split again.
struct Pipelines {
  ops::Iterator train_it, test_it;
  std::vector<Output> batch, test_batch;  // images and labels each
};
StatusOr<Pipelines> MakePipelines(const Scope& data, const TrainOptions& o, const std::string& dir, ops::Dataset train,
                                  bool drop_remainder, int64_t epochs, bool with_test = true) {
  Pipelines p;
  train = FashionMnistBatches(data, train, o.batch, drop_remainder);
  if (epochs > 0) train = ops::Repeat(data, train, epochs);
  train = ops::Prefetch(data, train, 2);
  p.train_it = ops::InitializableIterator(data.WithOpName("train_iterator"), train);
  p.batch = ops::GetNext(data.WithOpName("train_batch"), p.train_it);
  if (!with_test) return p.batch.size() == 2 ? StatusOr<Pipelines>(p) : data.status();
  ops::Dataset test = FashionMnist(data, dir, "t10k");
  if (o.test_limit > 0) test = ops::Take(data, test, o.test_limit);
  test = ops::Prefetch(data, FashionMnistBatches(data, test, kTestBatch, /*drop_remainder=*/false), 2);
  p.test_it = ops::InitializableIterator(data.WithOpName("test_iterator"), test);
  p.test_batch = ops::GetNext(data.WithOpName("test_batch"), p.test_it);
  if (p.batch.size() != 2 || p.test_batch.size() != 2) return data.status();
  return p;
}

// The shuffled training split, as every reader of it makes it: the same seed, the same order.
ops::Dataset ShuffledTrain(const Scope& data, const TrainOptions& o, const std::string& dir) {
  ops::Dataset train = FashionMnist(data, dir, "train");
  if (o.train_limit > 0) train = ops::Take(data, train, o.train_limit);
  return ops::Shuffle(data, train, 10000, {.seed = o.seed, .seed2 = 0, .reshuffle_each_iteration = true});
}

// In-graph replication: one tower per device of `towers`, the input pipeline and the loss
// report on `host`. With `input_per_tower` (multi-worker training) each tower's device reads
// the global batch itself and keeps its part, as MultiWorkerMirroredStrategy's sharding by
// data does: no input crosses between the tasks.
StatusOr<TrainGraph> BuildGraph(const TrainOptions& o, const std::string& dir, int64_t train_images,
                                const std::vector<std::string>& towers, const std::string& host,
                                bool input_per_tower = false) {
  Scope root = Scope::NewRootScope();
  const Scope data = root.NewSubScope("data").WithDevice(host);
  // A last partial batch is kept (as Keras does) when it splits evenly between the towers.
  const bool drop = (train_images % o.batch) % o.devices != 0;
  ASSIGN_OR_RETURN(Pipelines in, MakePipelines(data, o, dir, ShuffledTrain(data, o, dir), drop, o.epochs));
  const std::vector<Output>& test_batch = in.test_batch;

  // The global batch cut into one part per tower, as tf.split does in TensorFlow 1.x's
  // multi-tower examples.
  std::vector<Output> images = ops::Split(data.WithOpName("split_images"), 0, in.batch[0], o.devices);
  std::vector<Output> labels = ops::Split(data.WithOpName("split_labels"), 0, in.batch[1], o.devices);
  std::vector<Operation> train_inits = {in.train_it.initializer};
  for (int i = 1; input_per_tower && i < o.devices; ++i) {
    const Scope here = root.NewSubScope(StrCat("data_", i)).WithDevice(towers[i]);
    ASSIGN_OR_RETURN(Pipelines own,
                     MakePipelines(here, o, dir, ShuffledTrain(here, o, dir), drop, o.epochs, /*with_test=*/false));
    images[i] = ops::Split(here.WithOpName("split_images"), 0, own.batch[0], o.devices)[i];
    labels[i] = ops::Split(here.WithOpName("split_labels"), 0, own.batch[1], o.devices)[i];
    train_inits.push_back(own.train_it.initializer);
  }
  RETURN_IF_ERROR(root.status());

  ReplicateOptions options;
  options.mode = o.mode == "mirrored" ? ReplicationMode::kMirrored : ReplicationMode::kParameterDevice;
  options.devices = towers;
  options.parameter_device = o.parameter_device;
  options.communication_hint = o.all_reduce;
  Output correct, tested;
  auto model = [&](Tower& tower, TowerOutputs* out) {
    const Scope& s = tower.scope();
    FashionCnn cnn = CreateFashionCnn(
        s, [&](const std::string& name, Input init) { return tower.Variable(name, init); }, o.seed,
        tower.index() == 0);
    Output logits = FashionCnnLogits(s, cnn, images[tower.index()]);
    auto xent = ops::SparseSoftmaxCrossEntropyWithLogits(s.WithOpName("xent"), logits, labels[tower.index()]);
    if (xent.empty()) return;
    Output loss = ops::Mean(s.WithOpName("loss"), xent[0], {0});
    std::vector<Output> grads;
    Status st = AddSymbolicGradients(s, {loss}, cnn.Variables(), &grads);
    if (!st.ok()) {
      s.UpdateStatus(st);
      return;
    }
    out->outputs.push_back(loss);
    for (size_t i = 0; i < grads.size(); ++i) out->grads.push_back({grads[i], cnn.variables[i].second});
    if (tower.index() == 0) {
      const Scope eval = s.NewSubScope("eval");
      Output predicted = ops::ArgMax(eval, FashionCnnLogits(eval, cnn, test_batch[0]), 1, DataType::kInt32);
      correct = ops::Sum(eval.WithOpName("correct"),
                         ops::Cast(eval, ops::Equal(eval, predicted, test_batch[1]), DataType::kInt32), {0});
      tested = ops::Size(eval.WithOpName("tested"), test_batch[1]);
    }
  };
  // Keras's RMSprop: rho 0.9, epsilon 1e-7, the mean square starting at zero.
  RMSPropOptimizer optimizer(
      {.learning_rate = o.learning_rate, .decay = 0.9, .momentum = 0.0, .epsilon = 1e-7, .initial_mean_square = 0});
  ASSIGN_OR_RETURN(Replicated replicated, Replicate(root, options, model, optimizer));
  TrainGraph g;
  g.train_init = ops::NoOp(root.WithOpName("train_init").WithControlDependencies(train_inits)).name();
  g.test_init = in.test_it.initializer.name();
  g.batches_per_epoch = drop ? train_images / o.batch : (train_images + o.batch - 1) / o.batch;
  // The global batch's loss: the mean of the towers' (equal parts).
  std::vector<Input> losses;
  for (const TowerOutputs& t : replicated.towers) losses.push_back(t.outputs[0]);
  const Scope report = root.WithDevice(host);
  Output loss = ops::Div(report.WithOpName("loss"), ops::AddN(report, losses), static_cast<float>(o.devices));
  RETURN_IF_ERROR(root.status());
  g.loss = loss.name();
  g.correct = correct.name();
  g.tested = tested.name();
  g.init = replicated.init.name();
  g.train = replicated.train.name();
  for (const auto& [name, copies] : replicated.variables) g.variables.emplace_back(name, copies[0].name());
  ASSIGN_OR_RETURN(g.saver, Saver::Create(root, replicated.variables));
  RETURN_IF_ERROR(root.ToSpec(&g.def));
  return g;
}

// Between-graph replication: this worker's graph, the same on every worker but for its
// device, its data shard and its shuffle. The variables go to the ps tasks
// (ReplicaDeviceSetter), each initialized beside its variable; everything else runs here.
StatusOr<TrainGraph> BuildClusterGraph(const TrainOptions& o, const std::string& dir, int64_t shard_begin,
                                       int64_t shard_size, int ps_tasks, int workers) {
  Scope root = Scope::NewRootScope();
  const std::string worker = StrCat("/job:worker/task:", o.task);
  const Scope data = root.NewSubScope("data").WithDevice(worker + "/device:CPU:0");
  ops::Dataset train = ops::Take(data, ops::Skip(data, FashionMnist(data, dir, "train"), shard_begin),
                                 shard_size);
  train = ops::Shuffle(data, train, 10000, {.seed = o.seed + o.task, .seed2 = 0, .reshuffle_each_iteration = true});
  // In sync training a worker whose shard ran out would hold the others back: the shards
  // cycle, and the global step says when an epoch is over.
  const bool sync = o.mode == "sync";
  if (sync) train = ops::Repeat(data, train);
  ASSIGN_OR_RETURN(Pipelines in, MakePipelines(data, o, dir, train, /*drop_remainder=*/false, sync ? 0 : o.epochs));
  const std::vector<Output>& batch = in.batch;
  const std::vector<Output>& test_batch = in.test_batch;

  ASSIGN_OR_RETURN(DeviceFunction setter, ReplicaDeviceSetter({.ps_tasks = ps_tasks, .worker_device = worker}));
  const Scope model = root.WithDeviceFunction(setter);
  TrainGraph g;
  std::vector<Operation> inits;
  std::map<std::string, std::vector<Output>> saved;
  auto make = [&](const std::string& name, Input initial) -> Output {
    Output value = initial.is_constant() ? ops::Const(model.WithOpName(name + "/initial_value"), initial.tensor())
                                         : model.AsOutput(initial);
    if (value.node == nullptr) return Output();
    Output var = ops::Variable(model.WithOpName(name), value.node->output_shape(value.index), value.type());
    Output assign = ops::Assign(model.WithOpName(name + "/Assign").ColocateWith(var), var, value);
    if (var.node == nullptr || assign.node == nullptr) return Output();
    inits.push_back(assign.op());
    saved[name] = {var};
    g.variables.emplace_back(name, var.name());
    return var;
  };
  FashionCnn cnn = CreateFashionCnn(model, make, o.seed);
  Output logits = FashionCnnLogits(model, cnn, batch[0]);
  auto xent = ops::SparseSoftmaxCrossEntropyWithLogits(model.WithOpName("xent"), logits, batch[1]);
  RETURN_IF_ERROR(root.status());
  Output loss = ops::Mean(model.WithOpName("loss"), xent[0], {0});
  GlobalStep step = CreateGlobalStep(model);
  RMSPropOptimizer optimizer(
      {.learning_rate = o.learning_rate, .decay = 0.9, .momentum = 0.0, .epsilon = 1e-7, .initial_mean_square = 0});
  Training training;
  if (sync) {
    std::vector<Output> grads;
    RETURN_IF_ERROR(AddSymbolicGradients(model, {loss}, cnn.Variables(), &grads));
    std::vector<std::pair<Output, Output>> grads_and_vars;
    for (size_t i = 0; i < grads.size(); ++i) grads_and_vars.emplace_back(grads[i], cnn.Variables()[i]);
    ASSIGN_OR_RETURN(SyncReplicasTraining synced,
                     SyncReplicas(model, root.WithDevice(worker + "/device:CPU:0"), optimizer,
                                  {.replicas_to_aggregate = workers, .total_num_replicas = workers}, grads_and_vars,
                                  step.var));
    training.init = synced.init;
    g.sync = true;
    g.train = synced.train.name();
    g.sync_op = synced.sync.name();
    g.chief_init = synced.chief_init.name();
    g.init_tokens = synced.init_tokens.name();
    g.local_init = synced.local_init.name();
  } else {
    ASSIGN_OR_RETURN(training, optimizer.Minimize(model, loss, cnn.Variables(), step.var));
    g.train = training.train.name();
  }
  const Scope eval = model.NewSubScope("eval");
  Output predicted = ops::ArgMax(eval, FashionCnnLogits(eval, cnn, test_batch[0]), 1, DataType::kInt32);
  Output correct = ops::Sum(eval.WithOpName("correct"),
                            ops::Cast(eval, ops::Equal(eval, predicted, test_batch[1]), DataType::kInt32), {0});
  Output tested = ops::Size(eval.WithOpName("tested"), test_batch[1]);
  // global_step is initialized last, after every other variable: the other workers start
  // once it is.
  inits.push_back(training.init);
  Operation init_variables = ops::NoOp(model.WithOpName("init_variables").WithControlDependencies(inits));
  Output init = ops::Assign(
      model.WithOpName("init").ColocateWith(step.var).WithControlDependencies({init_variables}), step.var,
      Tensor::Scalar<int64_t>(0));
  Output ready = ops::IsVariableInitialized(model.WithOpName("ready").ColocateWith(step.var), step.var);
  saved["global_step"] = {step.var};
  RETURN_IF_ERROR(root.status());
  g.train_init = in.train_it.initializer.name();
  g.test_init = in.test_it.initializer.name();
  if (!sync) g.batches_per_epoch = (shard_size + o.batch - 1) / o.batch;
  g.loss = loss.name();
  g.correct = correct.name();
  g.tested = tested.name();
  g.init = init.node->name();
  g.init_variables = init_variables.name();
  g.ready = ready.name();
  g.global_step = step.var.name();
  ASSIGN_OR_RETURN(g.saver, Saver::Create(root, saved));
  RETURN_IF_ERROR(root.ToSpec(&g.def));
  return g;
}

// The chief initializes the variables on the ps, or restores the checkpoint into them, unless
// the ps hold them already (a chief restarted mid-training goes on from there); the other
// workers wait until the ps hold them.
Status InitializeOrWait(Session& session, const TrainGraph& g, const TrainOptions& o, std::ostream& log) {
  std::vector<Tensor> out;
  auto ready = [&]() -> StatusOr<bool> {
    RETURN_IF_ERROR(session.Run({}, {g.ready}, {}, &out));
    return out[0].data<bool>()[0];
  };
  ASSIGN_OR_RETURN(bool is_ready, ready());
  if (is_ready || o.task != 0) {
    constexpr auto kPatience = std::chrono::minutes(5);
    const auto give_up = std::chrono::steady_clock::now() + kPatience;
    if (!is_ready) log << "waiting for the chief (worker 0) to initialize the variables on the ps\n";
    while (!is_ready) {
      if (std::chrono::steady_clock::now() > give_up) {
        return errors::DeadlineExceeded("the chief (worker 0) did not initialize the variables on the ps in 5 minutes");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      ASSIGN_OR_RETURN(is_ready, ready());
    }
    RETURN_IF_ERROR(session.Run({}, {g.global_step}, {}, &out));
    log << "the ps hold the variables at global step " << out[0].data<int64_t>()[0] << "\n";
    return Status::OK();
  }
  if (!o.checkpoint_path.empty() && Saver::CheckpointExists(o.checkpoint_path)) {
    RETURN_IF_ERROR(session.Run({}, {}, {g.init_variables}, &out));
    RETURN_IF_ERROR(g.saver.Restore(session, o.checkpoint_path));
    RETURN_IF_ERROR(session.Run({}, {g.global_step}, {}, &out));
    log << "restored " << o.checkpoint_path << " at global step " << out[0].data<int64_t>()[0] << "\n";
    return Status::OK();
  }
  return session.Run({}, {}, {g.init}, &out);
}

// InitializeOrWait, then in sync training the chief sets the accumulators' step and every
// worker takes the global step as its local step. Returns the global step.
StatusOr<int64_t> JoinCluster(Session& session, const TrainGraph& g, const TrainOptions& o, std::ostream& log) {
  RETURN_IF_ERROR(InitializeOrWait(session, g, o, log));
  std::vector<Tensor> out;
  if (g.sync) {
    if (o.task == 0) RETURN_IF_ERROR(session.Run({}, {}, {g.chief_init, g.init_tokens}, &out));
    RETURN_IF_ERROR(session.Run({}, {}, {g.local_init}, &out));
  }
  RETURN_IF_ERROR(session.Run({}, {g.global_step}, {}, &out));
  return out[0].data<int64_t>()[0];
}

// Soft placement would quietly move towers without a GPU to the CPU: refuse instead.
Status CheckGpus(const Session& session, int wanted) {
  int gpus = 0;
  for (const Device* d : session.devices().devices()) gpus += d->device_type() == kDeviceGpu ? 1 : 0;
  if (gpus >= wanted) return Status::OK();
  const std::string reason = NoGpuReason();
  return errors::FailedPrecondition("--device gpu --devices ", wanted, " needs ", wanted, " GPUs; this process has ",
                                    gpus, reason.empty() ? "" : StrCat(" (", reason, ")"));
}

// Nodes per device, and where the heavy ops went.
void PrintPlacement(const Session& session, std::ostream& log) {
  std::map<std::string, std::map<std::string, int>> by_device;
  for (const PlacementRecord& r : session.placement()) {
    ++by_device[r.device][""];
    if (r.op == "Conv2D" || r.op == "MatMul" || r.op == "AllReduce" || r.op == "ApplyRMSProp" ||
        r.op == "VariableV2" || r.op == "IteratorGetNext") {
      ++by_device[r.device][r.op];
    }
  }
  log << "Placement:\n";
  for (const auto& [device, counts] : by_device) {
    log << "  " << device << ": " << counts.at("") << " nodes";
    for (const auto& [op, n] : counts) {
      if (!op.empty()) log << ", " << n << " " << op;
    }
    log << "\n";
  }
}

// How often progress within an epoch is shown, by style.
std::chrono::milliseconds ProgressInterval(ProgressStyle style) {
  return style == ProgressStyle::kRedraw ? std::chrono::milliseconds(250) : std::chrono::milliseconds(5000);
}

void DrawProgress(std::ostream& log, ProgressStyle style, int epoch, int epochs, int64_t done, int64_t total,
                  double rate, double loss, bool final) {
  constexpr int kWidth = 30;
  const int filled = total > 0 ? static_cast<int>(kWidth * done / total) : kWidth;
  char line[160];
  std::snprintf(line, sizeof line, "%sepoch %d/%d [%s%s] %6lld/%lld  %7.0f images/s  loss %.4f",
                style == ProgressStyle::kRedraw ? "\r" : "", epoch, epochs, std::string(filled, '=').c_str(),
                std::string(kWidth - filled, ' ').c_str(), static_cast<long long>(done), static_cast<long long>(total),
                rate, loss);
  log << line;
  if (final || style == ProgressStyle::kLines) log << "\n";
  log.flush();
}

// `waiting`, where given, is told when a training step starts (true) and ends (false).
StatusOr<TrainResult> RunTraining(Session& session, const TrainGraph& g, const TrainOptions& o, int64_t train_images,
                                  bool chief, int64_t start_step, std::ostream& log,
                                  const std::function<void(bool)>& waiting = nullptr);

// The chief's runner in sync training, as TensorFlow's chief queue runner: runs the update
// (`sync_op`) in a loop, on a session of its own, until Stop closes that session. Any other
// error closes the training session too, so that the chief's step, which waits for the
// update, fails rather than waits forever.
class SyncRunner {
 public:
  static StatusOr<std::unique_ptr<SyncRunner>> Start(const std::string& target, const SessionConfig& config,
                                                     const TrainGraph& g, Session* training) {
    ASSIGN_OR_RETURN(std::unique_ptr<Session> session, Session::Create(target, config, g.def));
    std::unique_ptr<SyncRunner> runner(new SyncRunner(std::move(session)));
    runner->thread_ = std::thread([r = runner.get(), op = g.sync_op, training] {
      Status s;
      while (s.ok()) s = r->session_->Run({}, {}, {op}, nullptr);
      r->status_ = s;
      if (!r->stopping_.load()) training->Close();
    });
    return runner;
  }
  ~SyncRunner() { (void)Stop(); }

  // The runner's error, if it stopped for anything but Stop.
  Status Stop() {
    if (!thread_.joinable()) return Status::OK();
    stopping_ = true;
    session_->Close();
    thread_.join();
    return status_.code() == Code::kCancelled && stopping_ ? Status::OK() : status_;
  }

 private:
  explicit SyncRunner(std::unique_ptr<Session> session) : session_(std::move(session)) {}
  std::unique_ptr<Session> session_;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  Status status_;  // written by the thread before it ends
};
StatusOr<TrainResult> TrainOnCluster(const TrainOptions& o, const std::string& dir, int64_t train_images,
                                     std::ostream& log);
StatusOr<TrainResult> TrainMultiWorker(const TrainOptions& o, const std::string& dir, int64_t train_images,
                                       std::ostream& log);

}  // namespace

StatusOr<TrainResult> Train(const TrainOptions& o, std::ostream& log) {
  RETURN_IF_ERROR(CheckOptions(o));
  const std::string dir = o.data_dir.empty() ? FashionMnistDir() : o.data_dir;
  ASSIGN_OR_RETURN(int64_t train_images, CountExamples(dir, "train"));
  RETURN_IF_ERROR(CountExamples(dir, "t10k").status());
  RETURN_IF_ERROR(CheckOutputPaths(o, dir));
  if (o.train_limit > 0) train_images = std::min(o.train_limit, train_images);
  if (o.tls) RETURN_IF_ERROR(UseTls(*o.tls));
  if (o.mode == "multi-worker") return TrainMultiWorker(o, dir, train_images, log);
  if (!o.cluster.empty()) return TrainOnCluster(o, dir, train_images, log);
  std::vector<std::string> towers;
  for (int d = 0; d < o.devices; ++d) towers.push_back(StrCat("/", o.device, ":", d));
  ASSIGN_OR_RETURN(TrainGraph g, BuildGraph(o, dir, train_images, towers, "/cpu:0"));
  SessionConfig config;
  if (o.device == "gpu") {
    config.device_count = {{"CPU", 1}, {"GPU", o.devices}};
    config.gpu_options.virtual_devices_per_gpu = o.virtual_gpus;
    // The evaluation's int32 counting has no GPU kernels: it moves to the CPU, as in TF.
    config.allow_soft_placement = true;
  } else {
    config.device_count = {{"CPU", o.devices}};
  }
  // On CPUs one inter-op thread: a kernel already splits across the intra-op pool, so a
  // second kernel at once only puts two kernels' threads on the same cores (Intel's advice
  // for TensorFlow on CPUs too: one inter-op thread per socket). A second device's partition
  // still runs beside the first, on that thread. On 2 cores, epoch 2: one device 15.7-16.5k
  // images/s against 13.8-15.4k with two inter-op threads, two devices 15.1-15.3k against
  // 14.6-14.7k.
  config.inter_op_parallelism_threads = o.device == "cpu" ? 1 : o.threads;
  config.intra_op_parallelism_threads = o.threads;
  ASSIGN_OR_RETURN(std::unique_ptr<Session> session, Session::Create(config, g.def));
  if (o.device == "gpu") RETURN_IF_ERROR(CheckGpus(*session, o.devices));
  std::vector<Tensor> out;
  RETURN_IF_ERROR(session->Run({}, {}, {g.init}, &out));
  return RunTraining(*session, g, o, train_images, /*chief=*/true, /*start_step=*/0, log);
}

namespace {

// The epochs: a pass's training batches (in sync training: steps until the global step
// reaches the epoch's end, counted from `start_step`'s epoch on), then the test set; the
// chief saves the checkpoint after each epoch and exports the inference graphs at the end.
StatusOr<TrainResult> RunTraining(Session& session, const TrainGraph& g, const TrainOptions& o,
                                  int64_t train_images, bool chief, int64_t start_step, std::ostream& log,
                                  const std::function<void(bool)>& waiting) {
  std::vector<Tensor> out;
  PrintPlacement(session, log);

  TrainResult result;
  const int64_t steps_per_epoch = (train_images + o.batch - 1) / o.batch;
  using Clock = std::chrono::steady_clock;
  // Every worker of sync training ends an epoch at the same global step, so that none waits
  // for a gradient from one that stopped.
  const int first_epoch = g.sync ? static_cast<int>(std::min<int64_t>(o.epochs + 1, 1 + start_step / steps_per_epoch)) : 1;
  std::vector<std::string> step_fetches = {g.loss}, step_targets = {g.train};
  if (g.sync) {
    step_fetches.push_back(g.train);
    step_targets.clear();
  }
  RETURN_IF_ERROR(session.Run({}, {}, {g.train_init}, &out));
  for (int epoch = first_epoch; epoch <= o.epochs; ++epoch) {
    const auto start = Clock::now();
    auto last_draw = start;
    int64_t images = 0, steps = 0;
    double loss_sum = 0;
    for (;;) {
      // Step 10, past the first steps' one-time costs, or the last of a short epoch.
      const bool trace = epoch == 1 && steps == std::min<int64_t>(9, steps_per_epoch - 1) && !o.trace_path.empty();
      RunOptions run_options;
      if (trace) run_options.trace_level = RunOptions::TraceLevel::kFullTrace;
      RunMetadata metadata;
      if (waiting) waiting(true);
      Status st = session.Run(run_options, {}, step_fetches, step_targets, &out, &metadata);
      if (waiting) waiting(false);
      if (st.code() == Code::kOutOfRange) break;
      RETURN_IF_ERROR(st);
      if (trace) RETURN_IF_ERROR(WriteFileAtomically(o.trace_path, ChromeTraceJson(metadata), "trace"));
      ++steps;
      images = std::min(images + o.batch, train_images);
      loss_sum += out[0].data<float>()[0];
      const bool epoch_over = g.sync ? out[1].data<int64_t>()[0] >= epoch * steps_per_epoch
                                     : steps == g.batches_per_epoch;
      const auto now = Clock::now();
      if (o.progress && !epoch_over && now - last_draw > ProgressInterval(o.progress_style)) {
        const double secs = std::chrono::duration<double>(now - start).count();
        DrawProgress(log, o.progress_style, epoch, o.epochs, steps, steps_per_epoch, images / secs, loss_sum / steps,
                     false);
        last_draw = now;
      }
      if (epoch_over) break;
    }
    EpochStats stats;
    stats.epoch = epoch;
    stats.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    stats.images_per_second = images / stats.seconds;
    stats.mean_loss = steps > 0 ? loss_sum / steps : 0;
    DrawProgress(log, o.progress_style, epoch, o.epochs, steps, steps_per_epoch, stats.images_per_second,
                 stats.mean_loss, true);

    RETURN_IF_ERROR(session.Run({}, {}, {g.test_init}, &out));
    int64_t correct = 0, tested = 0;
    for (;;) {
      Status st = session.Run({}, {g.correct, g.tested}, {}, &out);
      if (st.code() == Code::kOutOfRange) break;
      RETURN_IF_ERROR(st);
      correct += out[0].data<int32_t>()[0];
      tested += out[1].data<int32_t>()[0];
    }
    stats.test_accuracy = static_cast<double>(correct) / static_cast<double>(tested);
    char line[80];
    std::snprintf(line, sizeof line, "  test accuracy %.4f\n", stats.test_accuracy);
    log << line;
    if (chief && !o.checkpoint_path.empty()) {
      RETURN_IF_ERROR(g.saver.Save(session, o.checkpoint_path));
      log << "  checkpoint written to " << o.checkpoint_path << "\n";
    }
    result.epochs.push_back(stats);
  }
  std::vector<std::string> fetches;
  for (const auto& [name, fetch] : g.variables) fetches.push_back(fetch);
  RETURN_IF_ERROR(session.Run({}, fetches, {}, &out));
  for (size_t i = 0; i < fetches.size(); ++i) result.variables[g.variables[i].first] = out[i];
  if (chief) RETURN_IF_ERROR(ExportInference(o, log));
  return result;
}

// This worker's task of the cluster, with the training's threads and the cluster token.
StatusOr<std::unique_ptr<ClusterServer>> ServeWorkerTask(const ClusterSpec& cluster, const TrainOptions& o) {
  ClusterServerOptions options;
  options.config.inter_op_parallelism_threads = o.threads;
  options.config.intra_op_parallelism_threads = o.threads;
  if (const char* token = std::getenv("TESSERA_CLUSTER_TOKEN"); token != nullptr) options.token = token;
  return ClusterServer::Create(cluster, "worker", o.task, std::move(options));
}

// A worker's watch on the chief, whose steps it waits on: when the chief's channel has not
// been ready for `patience`, it calls `on_lost` once (closing the session the worker waits
// in), and Lost() says so naming the chief.
class ChiefWatch {
 public:
  ChiefWatch(std::string address, std::chrono::milliseconds patience, std::function<void()> on_lost)
      : address_(std::move(address)), patience_(patience), channel_(NewWorkerChannel(address_)) {
    thread_ = std::thread([this, on_lost = std::move(on_lost)] {
      auto last_seen = std::chrono::steady_clock::now();
      std::unique_lock<std::mutex> lock(mu_);
      while (!stop_) {
        cv_.wait_for(lock, std::chrono::milliseconds(200));
        const auto now = std::chrono::steady_clock::now();
        // Only a wait on the chief counts: it may well be gone once the training is over.
        if (!armed_ || channel_->GetState(/*try_to_connect=*/true) == GRPC_CHANNEL_READY) last_seen = now;
        if (now - last_seen > patience_) {
          lost_ = true;
          lock.unlock();
          on_lost();
          return;
        }
      }
    });
  }
  ~ChiefWatch() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  ChiefWatch(const ChiefWatch&) = delete;
  ChiefWatch& operator=(const ChiefWatch&) = delete;

  // Whether the worker now waits on the chief (the watch starts armed).
  void Arm(bool armed) {
    std::lock_guard<std::mutex> lock(mu_);
    armed_ = armed;
  }

  Status Lost() const {
    std::lock_guard<std::mutex> lock(mu_);
    if (!lost_) return Status::OK();
    return errors::Unavailable("the chief (worker 0, ", address_, ") has not answered for ",
                               std::chrono::duration<double>(patience_).count(), " s");
  }

 private:
  const std::string address_;
  const std::chrono::milliseconds patience_;
  std::shared_ptr<grpc::Channel> channel_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // guarded by mu_
  bool lost_ = false;  // guarded by mu_
  bool armed_ = true;  // guarded by mu_
  std::thread thread_;
};

StatusOr<TrainResult> TrainOnCluster(const TrainOptions& o, const std::string& dir, int64_t train_images,
                                     std::ostream& log) {
  ASSIGN_OR_RETURN(ClusterSpec cluster, ClusterSpec::FromJson(o.cluster));
  const int workers = cluster.num_tasks("worker");
  const int ps_tasks = cluster.num_tasks("ps");
  if (workers == 0 || ps_tasks == 0) {
    return errors::InvalidArgument("training on a cluster needs a \"ps\" and a \"worker\" job");
  }
  if (o.task < 0 || o.task >= workers) {
    return errors::InvalidArgument("--task ", o.task, " is not a worker of the cluster, which has ", workers);
  }
  // Worker i trains on the i-th of `workers` equal shards; the last takes the remainder, but
  // in sync training, whose epochs count global steps, every shard is the same size.
  const int64_t shard = train_images / workers;
  const int64_t shard_size =
      o.task == workers - 1 && o.mode != "sync" ? train_images - shard * (workers - 1) : shard;
  if (shard_size < 1) return errors::InvalidArgument(train_images, " training images cannot be shared by ", workers, " workers");
  ASSIGN_OR_RETURN(TrainGraph g, BuildClusterGraph(o, dir, shard * o.task, shard_size, ps_tasks, workers));
  ASSIGN_OR_RETURN(std::unique_ptr<ClusterServer> server, ServeWorkerTask(cluster, o));
  log << "worker " << o.task << " of " << workers << " serves " << server->target() << ", trains on images "
      << shard * o.task << ".." << shard * o.task + shard_size << "\n";
  RegisterGrpcSessionFactory();
  SessionConfig config;
  config.device_filters = {"/job:ps", StrCat("/job:worker/task:", o.task)};
  ASSIGN_OR_RETURN(std::unique_ptr<Session> session, Session::Create(server->target(), config, g.def));
  ASSIGN_OR_RETURN(const int64_t start_step, JoinCluster(*session, g, o, log));
  std::unique_ptr<SyncRunner> runner;
  if (g.sync && o.task == 0) {
    ASSIGN_OR_RETURN(runner, SyncRunner::Start(server->target(), config, g, session.get()));
  }
  // In sync training the others wait on the chief's runner for every step: a chief gone for
  // good ends their training naming it, rather than a wait without end.
  std::unique_ptr<ChiefWatch> watch;
  if (g.sync && o.task != 0) {
    ASSIGN_OR_RETURN(std::string chief_address, cluster.TaskAddress("worker", 0));
    watch = std::make_unique<ChiefWatch>(chief_address, o.chief_timeout, [&session] { session->Close(); });
  }
  if (watch != nullptr) watch->Arm(false);
  StatusOr<TrainResult> result =
      RunTraining(*session, g, o, shard_size, /*chief=*/o.task == 0, start_step, log, [&watch](bool waiting) {
        if (watch != nullptr) watch->Arm(waiting);
      });
  if (watch != nullptr) RETURN_IF_ERROR(watch->Lost());
  // A runner's error is the cause of the Cancelled it made of the chief's step.
  if (runner != nullptr) RETURN_IF_ERROR(runner->Stop());
  return result;
}

// The non-chief workers of multi-worker training serve their towers until the chief says it
// is done, through a queue on each of them.
constexpr char kDoneQueue[] = "tessera_multi_worker_done";

// The chief's graph: one signal per other worker ("signal_<i>"); a worker's own: its wait
// ("wait").
StatusOr<GraphSpec> DoneGraph(int workers, int task) {
  Scope root = Scope::NewRootScope();
  for (int i = task == 0 ? 1 : task; i < (task == 0 ? workers : task + 1); ++i) {
    const Scope at = root.WithDevice(StrCat("/job:worker/task:", i, "/device:CPU:0"));
    Output q = ops::FIFOQueue(at.WithOpName(StrCat("done_", i)), {DataType::kBool}, {.shared_name = kDoneQueue});
    if (task == 0) {
      ops::QueueEnqueue(at.WithOpName(StrCat("signal_", i)), q, {ops::Const(at, Tensor::Scalar<bool>(true))});
    } else {
      ops::QueueDequeue(at.WithOpName("wait"), q, {DataType::kBool});
    }
  }
  GraphSpec def;
  RETURN_IF_ERROR(root.ToSpec(&def));
  return def;
}

// A worker other than the chief: serves until the chief signals, or until the chief has not
// answered for `chief_timeout`.
Status ServeUntilChiefIsDone(ClusterServer& server, const ClusterSpec& cluster, int task,
                             std::chrono::milliseconds chief_timeout, std::ostream& log) {
  log << "worker " << task << " serves " << server.target() << "; the chief (worker 0) drives the training\n";
  ASSIGN_OR_RETURN(GraphSpec def, DoneGraph(cluster.num_tasks("worker"), task));
  SessionConfig config;
  config.device_filters = {StrCat("/job:worker/task:", task)};
  ASSIGN_OR_RETURN(std::unique_ptr<Session> session, Session::Create(server.target(), config, def));
  ASSIGN_OR_RETURN(std::string chief_address, cluster.TaskAddress("worker", 0));
  std::vector<Tensor> out;
  {
    ChiefWatch watch(chief_address, chief_timeout, [&session] { session->Close(); });
    const Status s = session->Run({}, {"wait"}, {}, &out);
    RETURN_IF_ERROR(watch.Lost());
    RETURN_IF_ERROR(s);
  }
  log << "the chief is done\n";
  return Status::OK();
}

StatusOr<TrainResult> TrainMultiWorker(const TrainOptions& o, const std::string& dir, int64_t train_images,
                                       std::ostream& log) {
  ASSIGN_OR_RETURN(ClusterSpec cluster, ClusterSpec::FromJson(o.cluster));
  const int workers = cluster.num_tasks("worker");
  if (workers == 0) return errors::InvalidArgument("multi-worker training needs a \"worker\" job");
  if (o.task < 0 || o.task >= workers) {
    return errors::InvalidArgument("--task ", o.task, " is not a worker of the cluster, which has ", workers);
  }
  // Every worker shuffles alike, which a seed of 0 (a random one per pipeline) would not.
  if (o.seed == 0) return errors::InvalidArgument("multi-worker training needs a --seed other than 0");
  // The chief's options are the training's; the other workers only serve.
  if (o.task == 0 && (o.batch < workers || o.batch % workers != 0)) {
    return errors::InvalidArgument("--batch ", o.batch, " must be a positive multiple of the ", workers, " workers");
  }
  ASSIGN_OR_RETURN(std::unique_ptr<ClusterServer> server, ServeWorkerTask(cluster, o));
  RegisterGrpcSessionFactory();
  if (o.task != 0) {
    RETURN_IF_ERROR(ServeUntilChiefIsDone(*server, cluster, o.task, o.chief_timeout, log));
    return TrainResult();
  }

  // The chief: the graph of one process with a tower per worker, each reading its input.
  TrainOptions towers_options = o;
  towers_options.devices = workers;
  towers_options.mode = "mirrored";
  std::vector<std::string> towers;
  for (int i = 0; i < workers; ++i) towers.push_back(StrCat("/job:worker/task:", i, "/device:CPU:0"));
  ASSIGN_OR_RETURN(TrainGraph g,
                   BuildGraph(towers_options, dir, train_images, towers, towers[0], /*input_per_tower=*/true));
  log << "worker 0 of " << workers << " serves " << server->target()
      << " and drives a tower on every worker, each reading its own input\n";
  SessionConfig config;
  config.device_filters = {"/job:worker"};
  ASSIGN_OR_RETURN(std::unique_ptr<Session> session, Session::Create(server->target(), config, g.def));
  std::vector<Tensor> out;
  const Status init = session->Run({}, {}, {g.init}, &out);
  StatusOr<TrainResult> result =
      init.ok() ? RunTraining(*session, g, towers_options, train_images, /*chief=*/true, /*start_step=*/0, log)
                : StatusOr<TrainResult>(init);
  // The other workers stop either way. Each signal runs on its worker alone: a worker exits
  // as soon as it has it, so nothing may wait for an answer from it afterwards.
  ASSIGN_OR_RETURN(GraphSpec done, DoneGraph(workers, 0));
  if (workers > 1) {
    ASSIGN_OR_RETURN(std::unique_ptr<Session> signal, Session::Create(server->target(), config, done));
    for (int i = 1; i < workers; ++i) {
      Status s = signal->Run({}, {}, {StrCat("signal_", i)}, &out);
      if (!s.ok()) log << "worker " << i << " was not told the training is over: " << s << "\n";
    }
  }
  return result;
}

}  // namespace

}  // namespace tessera
