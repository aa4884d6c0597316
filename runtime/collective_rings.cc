#include "runtime/collective_rings.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "graph/device_name.h"
#include "graph/op_kinds.h"
#include "kernels/kernel_registry.h"

namespace tessera {
namespace {

// A placed node's device, parsed; the placer wrote it, so it parses.
DeviceName NameOf(const std::string& device) {
  StatusOr<DeviceName> parsed = DeviceName::Parse(device);
  return parsed.ok() ? *parsed : DeviceName();
}

// Device order: job, replica, task, type, then the index as a number (CPU:2 before CPU:10).
auto DeviceOrderKey(const std::string& device) {
  const DeviceName n = NameOf(device);
  return std::make_tuple(n.job, n.replica, n.task, n.type, n.id, device);
}

std::string MemberList(const std::vector<NodeSpec*>& members) {
  std::string s;
  for (const NodeSpec* m : members) s += StrCat(s.empty() ? "" : ", ", "'", m->name, "' on ", m->device);
  return s;
}

template <typename T>
T AttrOr(const NodeSpec& n, std::string_view name, T fallback) {
  T v = fallback;
  (void)GetAttr(n.attrs, n.name, name, &v);
  return v;
}

// CPU members reduce over the rendezvous, GPU members meet in their process and reduce in
// device memory (devices/gpu/all_reduce_op.cc): one group cannot mix the two.
Status CheckOneKindOfDevice(const std::string& what, const std::vector<NodeSpec*>& members) {
  const DeviceName first = NameOf(members.front()->device);
  for (const NodeSpec* m : members) {
    const DeviceName d = NameOf(m->device);
    if (d.type != first.type) {
      return errors::InvalidArgument(what, " has members on ", first.type, " and ", d.type, " devices (",
                                     MemberList(members), "); a group's members must all be of one device type");
    }
    if (d.type == kDeviceGpu && (d.job != first.job || d.replica != first.replica || d.task != first.task)) {
      return errors::InvalidArgument(what, " has members on GPUs of different tasks (", MemberList(members),
                                     "); GPUs all-reduce within one process: reduce on each task's GPUs, then "
                                     "between the tasks' CPUs");
    }
  }
  return Status::OK();
}

}  // namespace

Status AssignRingPlaces(const std::vector<NodeSpec*>& nodes, const PartitionOptions& options) {
  const auto& incarnation = options.incarnation;
  const auto& host = options.host;
  std::map<std::pair<int64_t, int64_t>, std::vector<NodeSpec*>> groups;
  for (NodeSpec* n : nodes) {
    if (!IsAllReduce(n->op)) continue;
    groups[{AttrOr<int64_t>(*n, "group_key", 0), AttrOr<int64_t>(*n, "instance_key", 0)}].push_back(n);
  }
  for (auto& [key, members] : groups) {
    std::sort(members.begin(), members.end(), [](const NodeSpec* a, const NodeSpec* b) {
      return DeviceOrderKey(a->device) < DeviceOrderKey(b->device);
    });
    const NodeSpec& first = *members.front();
    const std::string what = StrCat("AllReduce group_key=", key.first, " instance_key=", key.second);
    const int64_t size = AttrOr<int64_t>(first, "group_size", 0);
    if (static_cast<int64_t>(members.size()) != size) {
      return errors::InvalidArgument(what, " has group_size ", size, " but ", members.size(),
                                     " member(s) in this step: ", MemberList(members),
                                     ". Run every member of a group in the same step.");
    }
    RETURN_IF_ERROR(CheckOneKindOfDevice(what, members));
    const std::string hint = AttrOr<std::string>(first, "communication_hint", "auto");
    if (hint != "auto" && hint != "ring" && hint != "gloo") {
      return errors::InvalidArgument(what, ": '", first.name, "' has communication_hint '", hint,
                                     "'; it takes \"auto\", \"ring\" or \"gloo\"");
    }
    if (hint == "gloo" && NameOf(first.device).type != kDeviceCpu) {
      return errors::InvalidArgument(what, ": '", first.name, "' asks for Gloo, which reduces on CPUs only");
    }
    for (size_t i = 1; i < members.size(); ++i) {
      const NodeSpec& m = *members[i];
      if (m.device == members[i - 1]->device) {
        return errors::InvalidArgument(what, " has two members on ", m.device, ": '", members[i - 1]->name,
                                       "' and '", m.name, "'");
      }
      for (const char* attr : {"T", "N", "reduction", "wire_float16", "group_size", "communication_hint"}) {
        auto a = first.attrs.find(attr);
        auto b = m.attrs.find(attr);
        if (a == first.attrs.end() || b == m.attrs.end() || a->second.DebugString() != b->second.DebugString()) {
          return errors::InvalidArgument(what, ": members '", first.name, "' and '", m.name,
                                         "' disagree on attr '", attr, "'");
        }
      }
    }
    if (size == 1) continue;
    // Lists as comma-separated strings, which the graph's wire forms carry without a
    // declaration of their type (device names hold no commas).
    std::string devices, incarnations, hosts;
    for (const NodeSpec* m : members) {
      const bool first_member = devices.empty();
      devices += StrCat(first_member ? "" : ",", m->device);
      incarnations += StrCat(first_member ? "" : ",", incarnation(m->device));
      hosts += StrCat(first_member ? "" : ",", host ? host(m->device) : "");
    }
    const bool cpu = NameOf(first.device).type == kDeviceCpu;
    for (size_t r = 0; r < members.size(); ++r) {
      NodeSpec& m = *members[r];
      const NodeSpec& prev = *members[(r + members.size() - 1) % members.size()];
      const NodeSpec& next = *members[(r + 1) % members.size()];
      m.attrs["_ring_rank"] = static_cast<int64_t>(r);
      m.attrs["_ring_prev"] = prev.device;
      m.attrs["_ring_next"] = next.device;
      m.attrs["_ring_incarnation"] = static_cast<int64_t>(incarnation(m.device));
      m.attrs["_ring_prev_incarnation"] = static_cast<int64_t>(incarnation(prev.device));
      if (cpu) {
        m.attrs["_ring_members"] = devices;
        m.attrs["_ring_member_incarnations"] = incarnations;
        m.attrs["_ring_hosts"] = hosts;
        m.attrs["_ring_timeout_ms"] = static_cast<int64_t>(options.collective_timeout.count());
      }
    }
  }
  return Status::OK();
}

}  // namespace tessera
