#include "runtime/partition.h"

#include <set>
#include <tuple>

#include "graph/device_name.h"
#include "runtime/collective_rings.h"

namespace tessera {
namespace {

class Partitioner {
 public:
  Partitioner(const Graph& g, const PartitionOptions& options) : g_(g), options_(options) {
    for (const Node* n : g.nodes()) used_names_.insert(n->name());
  }

  StatusOr<std::map<std::string, DevicePartition>> Run() {
    for (const Node* n : g_.nodes()) {
      if (n->assigned_device().empty()) {
        return errors::InvalidArgument("Cannot partition: node ", n->DebugName(), " has no assigned device");
      }
      parts_[n->assigned_device()];
    }
    RETURN_IF_ERROR(FindMemoryTypes());
    for (const Node* n : g_.nodes()) {
      const std::string& dst = n->assigned_device();
      NodeDef def = n->ToNodeDef();
      def.device = dst;
      def.colocate_with.clear();
      def.inputs.clear();
      for (int i = 0; i < n->num_inputs(); ++i) {
        const Edge* e = n->input_edge(i);
        const MemoryType from = OutputMemory(*e->src, e->src_output);
        const MemoryType to = InputMemory(*n, i);
        if (e->src->assigned_device() == dst && from == to) {
          def.inputs.push_back(StrCat(e->src->name(), ":", e->src_output));
          continue;
        }
        if (n->input_is_ref(i)) {
          return errors::InvalidArgument("Reference input ", i, " of ", n->DebugName(), " on ", dst,
                                         " comes from ", e->src->DebugName(), " on ", e->src->assigned_device(),
                                         "; a variable and the ops that write it must share a device");
        }
        def.inputs.push_back(RecvFor(*e->src, e->src_output, dst, from, to));
      }
      for (const Edge* e : n->control_inputs()) {
        if (e->src->assigned_device() == dst) {
          def.inputs.push_back(StrCat("^", e->src->name()));
        } else {
          def.inputs.push_back(
              StrCat("^", RecvFor(*e->src, kControlSlot, dst, MemoryType::kDevice, MemoryType::kDevice)));
        }
      }
      parts_[dst].nodes.push_back(std::move(def));
    }
    std::vector<NodeDef*> all;
    for (auto& [device, def] : parts_) {
      for (NodeDef& n : def.nodes) all.push_back(&n);
    }
    RETURN_IF_ERROR(AssignRingPlaces(all, options_.incarnation));
    std::map<std::string, DevicePartition> result;
    for (auto& [device, def] : parts_) {
      ASSIGN_OR_RETURN(DeviceName name, DeviceName::Parse(device));
      result.emplace(device, DevicePartition{TaskOf(name), std::move(def)});
    }
    return result;
  }

 private:
  // Where each node's inputs and outputs live, for the nodes on device types that keep some
  // arguments in host memory; on the others (the CPU) everything is device memory.
  Status FindMemoryTypes() {
    struct DeviceInfo {
      std::string type;
      bool has_host_args;
    };
    std::map<std::string, DeviceInfo, std::less<>> devices;  // by full name
    for (const Node* n : g_.nodes()) {
      auto it = devices.find(n->assigned_device());
      if (it == devices.end()) {
        ASSIGN_OR_RETURN(DeviceName device, DeviceName::Parse(n->assigned_device()));
        const bool has_host_args = options_.kernels->HasHostMemoryArgs(device.type);
        it = devices.emplace(n->assigned_device(), DeviceInfo{device.type, has_host_args}).first;
      }
      if (!it->second.has_host_args) continue;
      MemoryTypes& types = memory_types_[n->id()];
      // A node without a kernel keeps device memory; the executor reports the missing kernel.
      if (!options_.kernels->MemoryTypesForNode(*n, it->second.type, &types.inputs, &types.outputs).ok()) {
        memory_types_.erase(n->id());
      }
    }
    return Status::OK();
  }
  MemoryType InputMemory(const Node& n, int i) const {
    auto it = memory_types_.find(n.id());
    return it == memory_types_.end() ? MemoryType::kDevice : it->second.inputs[i];
  }
  MemoryType OutputMemory(const Node& n, int i) const {
    auto it = memory_types_.find(n.id());
    return it == memory_types_.end() ? MemoryType::kDevice : it->second.outputs[i];
  }

  // A name no node of the graph or of this partitioning has taken yet.
  std::string Unique(std::string base) {
    std::string name = base;
    for (int i = 1; !used_names_.insert(name).second; ++i) name = StrCat(base, "_", i);
    return name;
  }

  // The _Recv on `dst` that delivers output `output` of `src` (kControlSlot: its
  // completion) from memory `from` into memory `to`, creating the pair on first use. `dst`
  // may be the source's own device when the two memories differ.
  std::string RecvFor(const Node& src, int output, const std::string& dst, MemoryType from, MemoryType to) {
    auto key = std::make_tuple(src.id(), output, dst, to);
    auto it = recv_names_.find(key);
    if (it != recv_names_.end()) return it->second;

    const std::string& src_device = src.assigned_device();
    const bool control = output == kControlSlot;
    std::string suffix = control ? "control" : std::to_string(output);
    if (dst == src_device) suffix += to == MemoryType::kHost ? "_to_host" : "_to_device";
    std::string tensor_name = control ? StrCat("^", src.name()) : StrCat(src.name(), ":", output);
    DataType dtype = control ? DataType::kFloat : src.output_type(output);
    std::string sent = tensor_name;
    // A tensor may go to one device's host and device memory both: two pairs, two keys.
    if (to == MemoryType::kHost) tensor_name += "/host";
    if (control) {
      // An empty tensor made only after `src` has run.
      NodeDef trigger;
      trigger.name = Unique(StrCat(src.name(), "/_control_trigger"));
      trigger.op = "Const";
      trigger.device = src_device;
      trigger.inputs = {StrCat("^", src.name())};
      trigger.attrs = {{"dtype", DataType::kFloat}, {"value", Tensor(DataType::kFloat, TensorShape({0}))}};
      sent = trigger.name + ":0";
      parts_[src_device].nodes.push_back(std::move(trigger));
    }
    const int64_t incarnation = static_cast<int64_t>(options_.incarnation(src_device));
    AttrMap common = {{"tensor_name", tensor_name},
                      {"send_device", src_device},
                      {"send_device_incarnation", incarnation},
                      {"recv_device", dst},
                      {"client_terminated", false}};

    NodeDef send;
    send.name = Unique(StrCat("_send_", src.name(), "_", suffix));
    send.op = from == MemoryType::kHost ? "_HostSend" : "_Send";
    send.device = src_device;
    send.inputs = {sent};
    send.attrs = common;
    send.attrs["T"] = dtype;
    parts_[src_device].nodes.push_back(std::move(send));

    NodeDef recv;
    recv.name = Unique(StrCat("_recv_", src.name(), "_", suffix));
    recv.op = to == MemoryType::kHost ? "_HostRecv" : "_Recv";
    recv.device = dst;
    recv.attrs = std::move(common);
    recv.attrs["tensor_type"] = dtype;
    recv.attrs["shape"] = control ? TensorShape({0}) : src.output_shape(output);
    std::string name = recv.name;
    parts_[dst].nodes.push_back(std::move(recv));
    recv_names_.emplace(key, name);
    return name;
  }

  const Graph& g_;
  const PartitionOptions& options_;
  std::map<std::string, GraphDef> parts_;
  std::set<std::string> used_names_;
  std::map<std::tuple<int, int, std::string, MemoryType>, std::string> recv_names_;
  struct MemoryTypes {
    std::vector<MemoryType> inputs, outputs;
  };
  std::map<int, MemoryTypes> memory_types_;  // by node id; absent: all device memory
};

}  // namespace

StatusOr<std::map<std::string, DevicePartition>> Partition(const Graph& placed, const PartitionOptions& options) {
  return Partitioner(placed, options).Run();
}

std::string TaskOf(const DeviceName& device) {
  return StrCat("/job:", device.job, "/replica:", device.replica, "/task:", device.task);
}

}  // namespace tessera
