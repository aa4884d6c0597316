#include "tools/cli.h"

#include <charconv>
#include <filesystem>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>

#include <nlohmann/json.hpp>

#include "devices/device_factory.h"
#include "devices/linked/linked_providers.h"
#include "distributed/cluster_spec.h"
#include "distributed/grpc_session.h"
#include "graph/op_kinds.h"
#include "graph/platform/file_io.h"
#include "graph/platform/logging.h"
#include "graph/serialize/dot.h"
#include "graph/serialize/graph_file.h"
#include "graph/serialize/graph_json.h"
#include "kernels/kernel_registry.h"
#include "runtime/device_mgr.h"
#include "runtime/partition.h"
#include "runtime/session.h"
#include "runtime/timeline.h"
#include "tools/flags.h"
#include "tools/run_inputs.h"
#include "tools/saved_model_commands.h"
#include "tools/serve.h"
#include "tools/train.h"

namespace tessera {
namespace {

constexpr const char* kUsage =
    "usage:\n"
    "  GRAPH is Tessera's JSON (.json) or TensorFlow's GraphDef (.pb binary, .pbtxt text)\n"
    "  tessera run GRAPH --fetch y[,z:1] [--target t] [--feed x=FILE.json]...\n"
    "              [--config CONFIG.json] [--log-device-placement] [--allow-soft-placement]\n"
    "              [--trace OUT.json] [--show-partitions] [--master grpc://HOST:PORT]\n"
    "              [--tls-cert PEM --tls-key PEM --tls-ca PEM]\n"
    "  tessera run SAVED_MODEL_DIR [--tag serve] [--signature serving_default] [--feed KEY=JSON]...\n"
    "              [--fetch KEY[,KEY]] [--config CONFIG.json]   (a signature, by its input and output keys)\n"
    "  tessera inspect SAVED_MODEL_DIR     (every tag set and signature, as saved_model_cli show --all)\n"
    "  tessera place GRAPH [--config CONFIG.json] [--allow-soft-placement]\n"
    "  tessera dot GRAPH [--config CONFIG.json] [--allow-soft-placement]\n"
    "  tessera export GRAPH                (the graph as JSON, with every attr filled in)\n"
    "  tessera convert IN OUT              (between .json, .pb and .pbtxt, by extension)\n"
    "  tessera devices [--config CONFIG.json]\n"
    "  tessera server --cluster JSON --job NAME --task I [--config CONFIG.json] [--token-file FILE]\n"
    "                 [--tls-cert PEM --tls-key PEM --tls-ca PEM]\n"
    "  tessera server [--resolver auto|tf_config|slurm|mpi] [--jobs ps:1,worker:2] [--port-base 8888]\n"
    "                 [--coordinator HOST:PORT] [...]\n"
    "                 (the cluster and task from TF_CONFIG, or srun's or mpirun's variables filling the jobs\n"
    "                 by rank; mpirun's ranks report their addresses to rank 0 at the coordinator)\n"
    "  tessera train [--device cpu|gpu] [--devices 2 CPUs|1 GPU] [--virtual-gpus K] [--epochs 2]\n"
    "                [--mode mirrored|parameter-device] [--parameter-device /cpu:0] [--batch 128] [--threads N] [--learning-rate 0.001] [--seed 1] [--train-limit N]\n"
    "                [--test-limit N] [--data DIR] [--checkpoint OUT.ckpt] [--trace OUT.json]\n"
    "                [--inference-graph OUT.json] [--frozen-graph OUT.json] [--no-progress]\n"
    "  tessera train --mode async|sync|multi-worker --cluster JSON [--job worker] --task I [...]\n"
    "                (or [--resolver auto|tf_config|slurm|mpi] [--jobs ps:1,worker:2] [--port-base 8888]\n"
    "                 [--coordinator HOST:PORT])\n"
    "                [--tls-cert PEM --tls-key PEM --tls-ca PEM] [--chief-timeout 60] [--all-reduce auto|ring|gloo]\n"
    "                one worker of between-graph training; the ps tasks run tessera server; a worker that\n"
    "                waits on the chief (sync, multi-worker) fails after --chief-timeout s without it;\n"
    "                multi-worker's gradients go by the engine's ring (auto, ring) or by Gloo (gloo)\n";

struct Options {
  std::string command;
  std::string graph_path;
  std::vector<std::string> fetches;
  std::vector<std::string> targets;
  std::vector<std::pair<std::string, std::string>> feeds;  // name, file or inline JSON
  std::string config_path;
  std::string trace_path;
  std::string master;  // grpc://host:port; empty: this process
  TlsFlagValues tls_flags;
  bool log_device_placement = false;
  bool allow_soft_placement = false;
  bool show_partitions = false;
};

// Routes log lines to the command's error stream.
class StreamSink : public LogSink {
 public:
  explicit StreamSink(std::ostream& os) : os_(os) {}
  void Write(LogSeverity, std::string_view message) override {
    std::lock_guard<std::mutex> lock(mu_);
    os_ << message << "\n";
  }

 private:
  std::mutex mu_;
  std::ostream& os_;
};

StatusOr<Options> ParseArgs(const std::vector<std::string>& args) {
  Options o;
  if (args.empty()) return errors::InvalidArgument("missing command");
  o.command = args[0];
  if (o.command != "run" && o.command != "place" && o.command != "dot" && o.command != "export") {
    return errors::InvalidArgument("unknown command '", o.command, "'");
  }
  std::vector<std::string> feeds;
  Flags flags;
  flags.Positional("GRAPH", &o.graph_path).List("--fetch", &o.fetches).List("--target", &o.targets)
      .Repeated("--feed", &feeds).String("--config", &o.config_path).String("--trace", &o.trace_path)
      .String("--master", &o.master).Switch("--log-device-placement", &o.log_device_placement)
      .Switch("--allow-soft-placement", &o.allow_soft_placement).Switch("--show-partitions", &o.show_partitions);
  AddTlsFlags(flags, &o.tls_flags);
  RETURN_IF_ERROR(flags.Parse(args));
  for (const std::string& v : feeds) {
    const size_t eq = v.find('=');
    if (eq == std::string::npos || eq == 0) {
      return errors::InvalidArgument("--feed takes NAME=FILE.json, got '", v, "'");
    }
    o.feeds.emplace_back(v.substr(0, eq), v.substr(eq + 1));
  }
  if (flags.Given("--master") && !o.master.starts_with("grpc://")) {
    return errors::InvalidArgument("--master takes a grpc://host:port target, got '", o.master, "'");
  }
  if (o.command == "run" && o.fetches.empty() && o.targets.empty()) {
    return errors::InvalidArgument("run needs --fetch or --target");
  }
  return o;
}

StatusOr<std::unique_ptr<Session>> MakeSession(const Options& o) {
  SessionConfig config;
  if (!o.config_path.empty()) {
    ASSIGN_OR_RETURN(config, ReadSessionConfigFile(o.config_path));
  }
  config.log_device_placement |= o.log_device_placement;
  config.allow_soft_placement |= o.allow_soft_placement;
  ASSIGN_OR_RETURN(GraphSpec def, ReadGraphFile(o.graph_path));
  ASSIGN_OR_RETURN(std::optional<TlsFiles> tls, TlsFromFlags(o.tls_flags));
  if (tls && o.master.empty()) return errors::InvalidArgument("--tls-cert, --tls-key and --tls-ca go with --master");
  if (o.master.empty()) return Session::Create(config, def);
  if (tls) RETURN_IF_ERROR(UseTls(*tls));
  RegisterGrpcSessionFactory();
  return Session::Create(o.master, config, def);
}

// The whole placed graph split by device, every partition in one Graph, so that DOT draws
// the device clusters with the _Send/_Recv pairs between them.
StatusOr<std::unique_ptr<Graph>> PartitionedGraph(const Session& session) {
  PartitionOptions options;
  options.incarnation = [&session](const std::string& device) { return session.devices().IncarnationOf(device); };
  ASSIGN_OR_RETURN(auto parts, Partition(session.graph(), options));
  std::vector<NodePart> all;
  for (const auto& [device, part] : parts) {
    for (const Node* n : part.graph->nodes()) all.push_back(NodePart::Copy(*n));
  }
  return Graph::Assemble(all, session.graph().op_registry());
}

// One block per device: its nodes, then what it sends and receives.
//   Partition /job:localhost/replica:0/task:0/device:CPU:0: 3 nodes
//     nodes: x, w, xw
//     send xw:0 -> /job:localhost/replica:0/task:0/device:CPU:1
std::string PartitionSummary(const std::vector<GraphSpec>& partitions) {
  std::string s;
  for (const GraphSpec& def : partitions) {
    if (def.nodes.empty()) continue;
    std::string nodes, transfers;
    for (const NodeSpec& n : def.nodes) {
      std::string tensor, peer;
      if (IsSend(n.op) || IsRecv(n.op)) {
        (void)GetAttr(n.attrs, n.name, "tensor_name", &tensor);
        (void)GetAttr(n.attrs, n.name, IsSend(n.op) ? "recv_device" : "send_device", &peer);
        transfers += StrCat("    ", IsSend(n.op) ? "send " : "recv ", tensor, IsSend(n.op) ? " -> " : " <- ",
                            peer, " (", n.name, ")\n");
      } else {
        nodes += StrCat(nodes.empty() ? "" : ", ", n.name);
      }
    }
    s += StrCat("Partition ", def.nodes.front().device, ": ", def.nodes.size(), " nodes\n    nodes: ", nodes,
                "\n", transfers);
  }
  return s;
}

Status Execute(const Options& o, std::ostream& out, std::ostream& err) {
  if (o.command == "export") {
    ASSIGN_OR_RETURN(GraphSpec def, ReadGraphFile(o.graph_path));
    ASSIGN_OR_RETURN(std::unique_ptr<Graph> graph, Graph::FromSpec(def));
    out << GraphSpecToJson(graph->ToSpec()) << "\n";
    return Status::OK();
  }
  ASSIGN_OR_RETURN(std::unique_ptr<Session> session, MakeSession(o));
  if (o.command == "dot") {
    ASSIGN_OR_RETURN(std::unique_ptr<Graph> partitioned, PartitionedGraph(*session));
    out << GraphToDot(*partitioned);
    return Status::OK();
  }
  if (o.command == "place") {
    nlohmann::json records = nlohmann::json::array();
    for (const PlacementRecord& r : session->placement()) {
      records.push_back({{"node", r.node}, {"op", r.op}, {"device", r.device},
                         {"reason", PlacementReasonName(r.reason)}, {"detail", r.detail}});
    }
    out << records.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return Status::OK();
  }
  std::vector<std::pair<std::string, Tensor>> feeds;
  for (const auto& [name, source] : o.feeds) {
    ASSIGN_OR_RETURN(Tensor t, ReadFeedValue(name, source));
    feeds.emplace_back(name, std::move(t));
  }
  RunOptions run_options;
  if (!o.trace_path.empty()) run_options.trace_level = RunOptions::TraceLevel::kFullTrace;
  run_options.output_partition_graphs = o.show_partitions;
  RunMetadata metadata;
  std::vector<Tensor> outputs;
  RETURN_IF_ERROR(session->Run(run_options, feeds, o.fetches, o.targets, &outputs, &metadata));
  if (o.show_partitions) err << PartitionSummary(metadata.partition_graphs);
  if (!o.trace_path.empty()) {
    RETURN_IF_ERROR(WriteFileAtomically(o.trace_path, ChromeTraceJson(metadata), "trace"));
  }
  nlohmann::json result = nlohmann::json::object();
  for (size_t i = 0; i < outputs.size(); ++i) result[o.fetches[i]] = TensorToJson(outputs[i]);
  out << result.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  return Status::OK();
}

std::string MiB(int64_t bytes) { return StrCat(bytes >> 20, " MiB"); }

// `tessera devices`: the devices a session with this config would have, with their memory
// and hardware, and why there is no GPU when there is none.
Status ListDevices(const std::vector<std::string>& args, std::ostream& out) {
  std::string config_path;
  Flags flags;
  flags.String("--config", &config_path);
  RETURN_IF_ERROR(flags.Parse(args));
  SessionConfig config;
  if (flags.Given("--config")) {
    ASSIGN_OR_RETURN(config, ReadSessionConfigFile(config_path));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<ThreadPool> pool, ThreadPool::Create("devices", 1));
  ASSIGN_OR_RETURN(std::unique_ptr<DeviceMgr> devices, DeviceMgr::CreateLocal(config.device_count, pool.get(),
                                                                              config.HostMemoryLimitBytes(),
                                                                              config.gpu_options));
  bool any_gpu = false;
  for (const Device* d : devices->devices()) {
    const DeviceAttributes& a = d->attributes();
    out << d->name() << "  " << d->device_type() << "  memory: "
        << (a.memory_limit > 0 ? MiB(a.memory_limit) : MiB(config.HostMemoryLimitBytes()) + " (host, shared)");
    if (!a.physical_device_desc.empty()) out << "  " << a.physical_device_desc;
    out << "\n";
    any_gpu = any_gpu || d->device_type() == kDeviceGpu;
  }
  if (!any_gpu) {
    const std::string reason = NoGpuReason();
    out << "no GPU device: " << (reason.empty() ? "the config's device_count asks for none" : reason) << "\n";
  }
  return Status::OK();
}

// Validates IN as a graph before writing it, so that OUT is only ever a graph that loads.
Status Convert(const std::string& in, const std::string& out) {
  ASSIGN_OR_RETURN(GraphSpec def, ReadGraphFile(in));
  StatusOr<std::unique_ptr<Graph>> graph = Graph::FromSpec(def);
  if (!graph.ok()) return graph.status().WithSuffix(StrCat(" (in '", in, "')"));
  return WriteGraphFile(out, def);
}

}  // namespace

int RunCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  // The command line is a program's composition point: every provider this build links.
  RegisterLinkedProviders();
  if (!args.empty() && args[0] == "train") return RunTrainCommand(args, out, err, kUsage);
  if (!args.empty() && args[0] == "server") return ServeClusterTask(args, out, err);
  if (!args.empty() && args[0] == "inspect") return InspectSavedModelCommand(args, out, err);
  // `run` on a directory runs a SavedModel's signature.
  if (args.size() > 1 && args[0] == "run" && std::filesystem::is_directory(args[1])) {
    StreamSink sink(err);
    SetLogSink(&sink);
    const int code = RunSavedModelCommand(args, out, err);
    SetLogSink(nullptr);
    return code;
  }
  if (!args.empty() && args[0] == "convert") {
    std::string in, out_path;
    Flags flags;
    flags.Positional("IN", &in).Positional("OUT", &out_path);
    if (!flags.Parse(args).ok()) {
      err << "tessera: convert takes IN and OUT\n" << kUsage;
      return 2;
    }
    StreamSink sink(err);
    SetLogSink(&sink);
    Status s = Convert(in, out_path);
    SetLogSink(nullptr);
    if (!s.ok()) {
      err << s.ToString() << "\n";
      return 1;
    }
    return 0;
  }
  if (!args.empty() && args[0] == "devices") {
    Status s = ListDevices(args, out);
    if (!s.ok()) {
      err << "tessera: " << s.ToString() << "\n";
      return 1;
    }
    return 0;
  }
  StatusOr<Options> o = ParseArgs(args);
  if (!o.ok()) {
    err << "tessera: " << o.status().message() << "\n" << kUsage;
    return 2;
  }
  StreamSink sink(err);
  SetLogSink(&sink);
  Status s = Execute(*o, out, err);
  SetLogSink(nullptr);
  if (!s.ok()) {
    err << s.ToString() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace tessera
