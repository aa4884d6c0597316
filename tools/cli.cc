#include "tools/cli.h"

#include <charconv>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "graph/dot.h"
#include "graph/graph_json.h"
#include "graph/logging.h"
#include "runtime/partition.h"
#include "runtime/session.h"
#include "runtime/timeline.h"
#include "tools/train.h"

namespace tessera {
namespace {

constexpr const char* kUsage =
    "usage:\n"
    "  tessera run GRAPH.json --fetch y[,z:1] [--target t] [--feed x=FILE.json]...\n"
    "              [--config CONFIG.json] [--log-device-placement] [--allow-soft-placement]\n"
    "              [--trace OUT.json] [--show-partitions]\n"
    "  tessera place GRAPH.json [--config CONFIG.json] [--allow-soft-placement]\n"
    "  tessera dot GRAPH.json [--config CONFIG.json] [--allow-soft-placement]\n"
    "  tessera export GRAPH.json\n"
    "  tessera train [--epochs 2] [--devices 2] [--mode mirrored|parameter_device] [--batch 128]\n"
    "                [--threads N] [--learning-rate 0.001] [--seed 1] [--train-limit N]\n"
    "                [--test-limit N] [--data DIR] [--checkpoint OUT.ckpt] [--trace OUT.json]\n"
    "                [--inference-graph OUT.json] [--frozen-graph OUT.json] [--no-progress]\n";

struct Options {
  std::string command;
  std::string graph_path;
  std::vector<std::string> fetches;
  std::vector<std::string> targets;
  std::vector<std::pair<std::string, std::string>> feeds;  // name, file or inline JSON
  std::string config_path;
  std::string trace_path;
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

std::vector<std::string> SplitCommas(const std::string& s) {
  std::vector<std::string> parts;
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, ',')) {
    if (!part.empty()) parts.push_back(part);
  }
  return parts;
}

StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return errors::NotFound("Cannot open '", path, "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

StatusOr<Options> ParseArgs(const std::vector<std::string>& args) {
  Options o;
  if (args.empty()) return errors::InvalidArgument("missing command");
  o.command = args[0];
  if (o.command != "run" && o.command != "place" && o.command != "dot" && o.command != "export") {
    return errors::InvalidArgument("unknown command '", o.command, "'");
  }
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> StatusOr<std::string> {
      if (i + 1 >= args.size()) return errors::InvalidArgument(a, " needs a value");
      return args[++i];
    };
    if (a == "--fetch") {
      ASSIGN_OR_RETURN(std::string v, value());
      for (auto& f : SplitCommas(v)) o.fetches.push_back(f);
    } else if (a == "--target") {
      ASSIGN_OR_RETURN(std::string v, value());
      for (auto& t : SplitCommas(v)) o.targets.push_back(t);
    } else if (a == "--feed") {
      ASSIGN_OR_RETURN(std::string v, value());
      size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0) {
        return errors::InvalidArgument("--feed takes NAME=FILE.json, got '", v, "'");
      }
      o.feeds.emplace_back(v.substr(0, eq), v.substr(eq + 1));
    } else if (a == "--config") {
      ASSIGN_OR_RETURN(o.config_path, value());
    } else if (a == "--trace") {
      ASSIGN_OR_RETURN(o.trace_path, value());
    } else if (a == "--log-device-placement") {
      o.log_device_placement = true;
    } else if (a == "--allow-soft-placement") {
      o.allow_soft_placement = true;
    } else if (a == "--show-partitions") {
      o.show_partitions = true;
    } else if (!a.starts_with("--") && o.graph_path.empty()) {
      o.graph_path = a;
    } else {
      return errors::InvalidArgument("unexpected argument '", a, "'");
    }
  }
  if (o.graph_path.empty()) return errors::InvalidArgument("missing GRAPH.json");
  if (o.command == "run" && o.fetches.empty() && o.targets.empty()) {
    return errors::InvalidArgument("run needs --fetch or --target");
  }
  return o;
}

StatusOr<std::unique_ptr<Session>> MakeSession(const Options& o) {
  SessionConfig config;
  if (!o.config_path.empty()) {
    ASSIGN_OR_RETURN(std::string text, ReadFile(o.config_path));
    ASSIGN_OR_RETURN(config, SessionConfig::FromJson(text));
  }
  config.log_device_placement |= o.log_device_placement;
  config.allow_soft_placement |= o.allow_soft_placement;
  ASSIGN_OR_RETURN(std::string text, ReadFile(o.graph_path));
  ASSIGN_OR_RETURN(GraphDef def, GraphDefFromJson(text));
  return Session::Create(config, def);
}

// The whole placed graph split by device, every partition in one Graph, so that DOT draws
// the device clusters with the _Send/_Recv pairs between them.
StatusOr<std::unique_ptr<Graph>> PartitionedGraph(const Session& session) {
  PartitionOptions options;
  options.incarnation = [&session](const std::string& device) { return session.devices().IncarnationOf(device); };
  ASSIGN_OR_RETURN(auto parts, Partition(session.graph(), options));
  GraphDef all;
  for (auto& [device, def] : parts) {
    for (NodeDef& n : def.nodes) all.nodes.push_back(std::move(n));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<Graph> graph, Graph::FromGraphDef(all));
  for (Node* n : graph->nodes()) n->set_assigned_device(n->requested_device());
  return graph;
}

// One block per device: its nodes, then what it sends and receives.
//   Partition /job:localhost/replica:0/task:0/device:CPU:0: 3 nodes
//     nodes: x, w, xw
//     send xw:0 -> /job:localhost/replica:0/task:0/device:CPU:1
std::string PartitionSummary(const std::vector<GraphDef>& partitions) {
  std::string s;
  for (const GraphDef& def : partitions) {
    if (def.nodes.empty()) continue;
    std::string nodes, transfers;
    for (const NodeDef& n : def.nodes) {
      std::string tensor, peer;
      if (n.op == "_Send" || n.op == "_Recv") {
        (void)GetAttr(n.attrs, n.name, "tensor_name", &tensor);
        (void)GetAttr(n.attrs, n.name, n.op == "_Send" ? "recv_device" : "send_device", &peer);
        transfers += StrCat("    ", n.op == "_Send" ? "send " : "recv ", tensor, n.op == "_Send" ? " -> " : " <- ",
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
    ASSIGN_OR_RETURN(std::string text, ReadFile(o.graph_path));
    ASSIGN_OR_RETURN(GraphDef def, GraphDefFromJson(text));
    ASSIGN_OR_RETURN(std::unique_ptr<Graph> graph, Graph::FromGraphDef(def));
    out << GraphDefToJson(graph->ToGraphDef()) << "\n";
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
    std::string text = source;
    if (!source.starts_with("{")) {
      ASSIGN_OR_RETURN(text, ReadFile(source));
    }
    StatusOr<Tensor> t = TensorFromJsonText(text);
    if (!t.ok()) return t.status().WithSuffix(StrCat(" (feed '", name, "')"));
    feeds.emplace_back(name, std::move(*t));
  }
  RunOptions run_options;
  if (!o.trace_path.empty()) run_options.trace_level = RunOptions::TraceLevel::kFullTrace;
  run_options.output_partition_graphs = o.show_partitions;
  RunMetadata metadata;
  std::vector<Tensor> outputs;
  RETURN_IF_ERROR(session->Run(run_options, feeds, o.fetches, o.targets, &outputs, &metadata));
  if (o.show_partitions) err << PartitionSummary(metadata.partition_graphs);
  if (!o.trace_path.empty()) {
    std::ofstream trace(o.trace_path);
    trace << ChromeTraceJson(metadata);
    if (!trace) return errors::Unavailable("Cannot write trace to '", o.trace_path, "'");
  }
  nlohmann::json result = nlohmann::json::object();
  for (size_t i = 0; i < outputs.size(); ++i) result[o.fetches[i]] = TensorToJson(outputs[i]);
  out << result.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  return Status::OK();
}

StatusOr<int64_t> ParseInt(const std::string& flag, const std::string& text) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return errors::InvalidArgument(flag, " takes an integer, got '", text, "'");
  }
  return v;
}

StatusOr<TrainOptions> ParseTrainArgs(const std::vector<std::string>& args) {
  TrainOptions o;
  o.devices = 2;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--no-progress") {
      o.progress = false;
      continue;
    }
    if (i + 1 >= args.size()) return errors::InvalidArgument("unexpected argument '", a, "'");
    const std::string& v = args[++i];
    if (a == "--mode") {
      o.mode = v;
    } else if (a == "--data") {
      o.data_dir = v;
    } else if (a == "--trace") {
      o.trace_path = v;
    } else if (a == "--checkpoint") {
      o.checkpoint_path = v;
    } else if (a == "--inference-graph") {
      o.inference_graph_path = v;
    } else if (a == "--frozen-graph") {
      o.frozen_graph_path = v;
    } else if (a == "--learning-rate") {
      char* end = nullptr;
      o.learning_rate = std::strtod(v.c_str(), &end);
      if (end == v.c_str() || *end != '\0' || !(o.learning_rate > 0)) {
        return errors::InvalidArgument("--learning-rate takes a positive number, got '", v, "'");
      }
    } else {
      const std::map<std::string, int64_t*> ints = {{"--batch", &o.batch},
                                                    {"--seed", &o.seed},
                                                    {"--train-limit", &o.train_limit},
                                                    {"--test-limit", &o.test_limit}};
      const std::map<std::string, int*> small_ints = {
          {"--epochs", &o.epochs}, {"--devices", &o.devices}, {"--threads", &o.threads}};
      ASSIGN_OR_RETURN(int64_t n, ParseInt(a, v));
      if (auto it = ints.find(a); it != ints.end()) {
        *it->second = n;
      } else if (auto it2 = small_ints.find(a); it2 != small_ints.end() && n >= -1000 && n <= 1000) {
        *it2->second = static_cast<int>(n);
      } else {
        return errors::InvalidArgument("unexpected argument '", a, "'");
      }
    }
  }
  return o;
}

}  // namespace

int RunCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  if (!args.empty() && args[0] == "train") {
    StatusOr<TrainOptions> o = ParseTrainArgs(args);
    if (!o.ok()) {
      err << "tessera: " << o.status().message() << "\n" << kUsage;
      return 2;
    }
    StatusOr<TrainResult> result = Train(*o, out);
    if (!result.ok()) {
      err << result.status().ToString() << "\n";
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
