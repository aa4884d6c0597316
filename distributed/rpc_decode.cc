#include "distributed/rpc_decode.h"

#include <set>

#include "graph/serialize/graph_json.h"
#include "graph/serialize/tensor_codec.h"

namespace tessera {

StatusOr<std::vector<std::pair<std::string, std::unique_ptr<Graph>>>> DecodePartitions(
    const rpc::RegisterGraphRequest& request) {
  std::vector<std::pair<std::string, std::unique_ptr<Graph>>> partitions;
  std::set<std::string> devices;
  for (const rpc::PartitionGraph& p : request.partitions()) {
    if (!devices.insert(p.device()).second) {
      return errors::InvalidArgument("two partitions for device '", p.device(), "'");
    }
    StatusOr<GraphSpec> def = GraphSpecFromJson(p.graph_json());
    StatusOr<std::unique_ptr<Graph>> graph = def.ok() ? Graph::FromSpec(*def) : def.status();
    if (!graph.ok()) {
      return Status(graph.status().code(), StrCat("the partition for ", p.device(), ": ", graph.status().message()));
    }
    partitions.emplace_back(p.device(), std::move(*graph));
  }
  return partitions;
}

StatusOr<std::map<int, Tensor>> DecodeArgs(const rpc::RunGraphRequest& request) {
  std::map<int, Tensor> args;
  for (const rpc::IndexedTensor& a : request.args()) {
    if (a.index() < 0) return errors::InvalidArgument("argument index ", a.index(), " is negative");
    StatusOr<Tensor> t = DecodeTensor(a.tensor());
    if (!t.ok()) return Status(t.status().code(), StrCat("argument ", a.index(), ": ", t.status().message()));
    if (!args.emplace(a.index(), *std::move(t)).second) {
      return errors::InvalidArgument("argument ", a.index(), " is given twice");
    }
  }
  return args;
}

RemoteDevice DecodeDevice(const rpc::DeviceAttributes& a) {
  return {a.name(), a.device_type(), a.memory_limit(), a.physical_device_desc(), a.incarnation()};
}

void EncodeDevice(const RemoteDevice& device, rpc::DeviceAttributes* out) {
  out->set_name(device.name);
  out->set_device_type(device.device_type);
  out->set_memory_limit(device.memory_limit);
  out->set_physical_device_desc(device.physical_device_desc);
  out->set_incarnation(device.incarnation);
}

}  // namespace tessera
