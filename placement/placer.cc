#include "placement/placer.h"

#include <algorithm>
#include <map>

#include "graph/op_kinds.h"
#include "graph/platform/logging.h"
#include "placement/colocation.h"

namespace tessera {
namespace {

bool IsGenerator(const Node& n) {
  return n.num_inputs() == 0 && n.num_outputs() == 1 && !n.output_is_ref(0);
}

bool IsMetadata(const Node& n) { return n.op() == "Shape"; }

// TensorFlow places an Identity that has no request, one input and one consumer with its
// input when the input and the consumer request the same device. Placement here happens
// once for the whole graph, before fetches exist as edges, so an Identity with no consumer
// (only ever fetched) counts as having one consumer with no request, as TF's _Retval.
bool IsPassThroughIdentity(const Node& n) {
  if (!IsIdentity(n.op()) || !n.requested_device().empty()) return false;
  if (n.num_inputs() != 1 || !n.control_inputs().empty() || n.out_edges().size() > 1) return false;
  const std::string& input_request = n.input_edge(0)->src->requested_device();
  const std::string consumer_request =
      n.out_edges().empty() ? std::string() : n.out_edges().front()->dst->requested_device();
  return input_request == consumer_request;
}

// The devices matching `spec` whose type is in `types`, in priority order.
std::vector<const DeviceDescription*> Candidates(const DeviceSet& devices, const DeviceName& spec,
                                                 const std::vector<std::string>& types) {
  std::vector<const DeviceDescription*> out;
  for (const DeviceDescription& d : devices.devices()) {
    if (spec.Matches(d.parsed) && std::find(types.begin(), types.end(), d.type) != types.end()) {
      out.push_back(&d);
    }
  }
  return out;
}

std::string GroupDescription(const ColocationGraph::Group& g) {
  std::string s;
  for (const Node* m : g.members) {
    DataType dt;
    std::string type;
    if (m->GetAttr("dtype", &dt).ok() || m->GetAttr("T", &dt).ok()) {
      type = StrCat(", dtype=", DataTypeName(dt));
    }
    s += StrCat(s.empty() ? "" : "; ", m->name(), " (", m->op(), type, ")",
                m->requested_device().empty() ? "" : " requested " + m->requested_device());
  }
  return s;
}

}  // namespace

Placer::Placer(Graph* graph, const DeviceSet& devices, PlacerOptions options,
               const KernelRegistry* kernels)
    : graph_(graph), devices_(devices), options_(options), kernels_(kernels) {}

StatusOr<std::vector<PlacementRecord>> Placer::Run() {
  if (devices_.devices().empty()) return errors::FailedPrecondition("No devices to place on");
  ColocationGraph colocation(*graph_, devices_, *kernels_, options_.allow_soft_placement);
  RETURN_IF_ERROR(colocation.Initialize());

  std::vector<PlacementRecord> records(graph_->num_nodes());
  // The device each group went to, with the member that decided it.
  std::map<int, std::pair<std::string, std::string>> group_device;

  // The devices a node's group may use, and why; errors name the node.
  struct Choice {
    std::vector<const DeviceDescription*> devices;
    PlacementReason reason;
    std::string detail;
  };
  auto choose = [&](const Node& node) -> StatusOr<Choice> {
    const ColocationGraph::Group& g = colocation.GroupOf(node);
    const DeviceName& spec = g.requested;
    std::string spec_str = spec.ToString();
    if (g.supported_types.empty()) {
      return errors::InvalidArgument(
          "Cannot assign a device for operation ", node.name(), ": no device type in this process (",
          JoinDeviceTypes(devices_.Types()), ") has a kernel for ", node.op(),
          ". Registered kernels: ", kernels_->Describe(node.op()));
    }
    Choice c;
    c.devices = Candidates(devices_, spec, g.supported_types);
    bool by_function = std::any_of(g.members.begin(), g.members.end(),
                                   [](const Node* m) { return m->requested_by_function(); });
    c.reason = spec.empty() ? PlacementReason::kDefault
                            : (by_function ? PlacementReason::kFunction : PlacementReason::kRequested);
    c.detail = spec.empty() ? "no device requested" : StrCat("requested '", spec_str, "'");
    if (!c.devices.empty()) return c;

    // Why nothing fits: no device matches the spec at all, or none of a supported type.
    bool any_match = std::any_of(devices_.devices().begin(), devices_.devices().end(),
                                 [&](const DeviceDescription& d) { return spec.Matches(d.parsed); });
    std::string why =
        any_match ? StrCat("no supported kernel for ", spec.has_type ? spec.type : "the requested",
                           " devices is available")
                  : StrCat("no devices matching that specification are registered in this process; "
                           "available devices: ",
                           devices_.NamesString());
    if (!options_.allow_soft_placement) {
      return errors::InvalidArgument(
          "Cannot assign a device for operation ", node.name(),
          ": Could not satisfy explicit device specification '", spec_str, "' because ", why,
          ".\nColocation group: ", GroupDescription(g),
          ".\nRegistered kernels: ", kernels_->Describe(node.op()));
    }
    // Soft placement keeps the job, replica and task and drops the type and id.
    DeviceName soft = spec;
    soft.has_type = soft.has_id = false;
    c.devices = Candidates(devices_, soft, g.supported_types);
    if (c.devices.empty()) c.devices = Candidates(devices_, DeviceName(), g.supported_types);
    c.reason = PlacementReason::kSoftFallback;
    c.detail = StrCat("requested '", spec_str, "' but ", why);
    return c;
  };

  auto record = [&](const Node& node, const std::string& device, PlacementReason reason,
                    std::string detail) {
    graph_->nodes()[node.id()]->set_assigned_device(device);
    records[node.id()] = {node.name(), node.op(), device, reason, std::move(detail)};
    int gid = colocation.GroupId(node);
    if (group_device.count(gid) == 0) group_device[gid] = {device, node.name()};
  };

  // A group placed through one member takes every other member with it.
  auto place_with_group = [&](const Node& node) -> bool {
    auto it = group_device.find(colocation.GroupId(node));
    if (it == group_device.end()) return false;
    record(node, it->second.first, PlacementReason::kColocated,
           StrCat("colocated with '", it->second.second, "'"));
    return true;
  };

  std::vector<const Node*> second_pass;
  for (const Node* node : graph_->nodes()) {
    const ColocationGraph::Group& g = colocation.GroupOf(*node);
    if (!node->assigned_device().empty()) {
      record(*node, node->assigned_device(), PlacementReason::kAssigned, "already assigned");
      continue;
    }
    if (place_with_group(*node)) continue;
    if (!g.assigned.empty()) {
      record(*node, g.assigned, PlacementReason::kColocated, "colocated with an assigned node");
      continue;
    }
    if (IsGenerator(*node) && g.members.size() == 1) {
      second_pass.push_back(node);
      continue;
    }
    ASSIGN_OR_RETURN(Choice c, choose(*node));
    if (IsMetadata(*node) || IsPassThroughIdentity(*node)) {
      const Node* input = node->input_edge(0)->src;
      auto same = std::find_if(c.devices.begin(), c.devices.end(), [&](const DeviceDescription* d) {
        return d->name == input->assigned_device();
      });
      if (same != c.devices.end()) {
        record(*node, (*same)->name, PlacementReason::kWithInput,
               StrCat("placed with its input '", input->name(), "'"));
        continue;
      }
    }
    record(*node, c.devices.front()->name, c.reason, std::move(c.detail));
  }
  for (const Node* node : second_pass) {
    ASSIGN_OR_RETURN(Choice c, choose(*node));
    const auto& outs = node->out_edges();
    if (!outs.empty()) {
      const std::string& first = outs.front()->dst->assigned_device();
      bool same = std::all_of(outs.begin(), outs.end(), [&](const Edge* e) {
        return e->dst->assigned_device() == first;
      });
      auto it = std::find_if(c.devices.begin(), c.devices.end(),
                             [&](const DeviceDescription* d) { return d->name == first; });
      if (same && it != c.devices.end()) {
        record(*node, first, PlacementReason::kWithConsumers,
               StrCat("generator placed with its consumer '", outs.front()->dst->name(), "'"));
        continue;
      }
    }
    record(*node, c.devices.front()->name, c.reason, std::move(c.detail));
  }
  if (options_.log_device_placement) Log(LogSeverity::kInfo, PlacementLog(devices_, records));
  return records;
}

std::string PlacementLog(const DeviceSet& devices, const std::vector<PlacementRecord>& records) {
  std::string s = "Device mapping:\n";
  for (const DeviceDescription& d : devices.devices()) {
    if (d.physical_device_desc.empty()) {
      s += StrCat(d.name, " -> device: ", d.parsed.id, ", name: ", d.type, "\n");
    } else {
      s += StrCat(d.name, " -> ", d.physical_device_desc, "\n");
    }
  }
  for (size_t i = 0; i < records.size(); ++i) {
    const PlacementRecord& r = records[i];
    s += StrCat(r.node, ": (", r.op, "): ", r.device, i + 1 < records.size() ? "\n" : "");
  }
  return s;
}

}  // namespace tessera
