#include "runtime/partition.h"

#include <set>
#include <tuple>

#include "runtime/collective_rings.h"

namespace tessera {
namespace {

class Partitioner {
 public:
  Partitioner(const Graph& g, const PartitionOptions& options) : g_(g), options_(options) {
    for (const Node* n : g.nodes()) used_names_.insert(n->name());
  }

  StatusOr<std::map<std::string, GraphDef>> Run() {
    for (const Node* n : g_.nodes()) {
      if (n->assigned_device().empty()) {
        return errors::InvalidArgument("Cannot partition: node ", n->DebugName(), " has no assigned device");
      }
      parts_[n->assigned_device()];
    }
    for (const Node* n : g_.nodes()) {
      const std::string& dst = n->assigned_device();
      NodeDef def = n->ToNodeDef();
      def.device = dst;
      def.colocate_with.clear();
      def.inputs.clear();
      for (int i = 0; i < n->num_inputs(); ++i) {
        const Edge* e = n->input_edge(i);
        if (e->src->assigned_device() == dst) {
          def.inputs.push_back(StrCat(e->src->name(), ":", e->src_output));
          continue;
        }
        if (n->input_is_ref(i)) {
          return errors::InvalidArgument("Reference input ", i, " of ", n->DebugName(), " on ", dst,
                                         " comes from ", e->src->DebugName(), " on ", e->src->assigned_device(),
                                         "; a variable and the ops that write it must share a device");
        }
        def.inputs.push_back(RecvFor(*e->src, e->src_output, dst));
      }
      for (const Edge* e : n->control_inputs()) {
        if (e->src->assigned_device() == dst) {
          def.inputs.push_back(StrCat("^", e->src->name()));
        } else {
          def.inputs.push_back(StrCat("^", RecvFor(*e->src, kControlSlot, dst)));
        }
      }
      parts_[dst].nodes.push_back(std::move(def));
    }
    std::vector<NodeDef*> all;
    for (auto& [device, def] : parts_) {
      for (NodeDef& n : def.nodes) all.push_back(&n);
    }
    RETURN_IF_ERROR(AssignRingPlaces(all, options_.incarnation));
    return std::move(parts_);
  }

 private:
  // A name no node of the graph or of this partitioning has taken yet.
  std::string Unique(std::string base) {
    std::string name = base;
    for (int i = 1; !used_names_.insert(name).second; ++i) name = StrCat(base, "_", i);
    return name;
  }

  // The _Recv on `dst` that delivers output `output` of `src` (kControlSlot: its
  // completion), creating the pair on first use.
  std::string RecvFor(const Node& src, int output, const std::string& dst) {
    auto key = std::make_tuple(src.id(), output, dst);
    auto it = recv_names_.find(key);
    if (it != recv_names_.end()) return it->second;

    const std::string& src_device = src.assigned_device();
    const bool control = output == kControlSlot;
    std::string suffix = control ? "control" : std::to_string(output);
    std::string tensor_name = control ? StrCat("^", src.name()) : StrCat(src.name(), ":", output);
    DataType dtype = control ? DataType::kFloat : src.output_type(output);
    std::string sent = tensor_name;
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
    send.op = "_Send";
    send.device = src_device;
    send.inputs = {sent};
    send.attrs = common;
    send.attrs["T"] = dtype;
    parts_[src_device].nodes.push_back(std::move(send));

    NodeDef recv;
    recv.name = Unique(StrCat("_recv_", src.name(), "_", suffix));
    recv.op = "_Recv";
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
  std::map<std::tuple<int, int, std::string>, std::string> recv_names_;
};

}  // namespace

StatusOr<std::map<std::string, GraphDef>> Partition(const Graph& placed, const PartitionOptions& options) {
  return Partitioner(placed, options).Run();
}

}  // namespace tessera
