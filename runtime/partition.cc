#include "runtime/partition.h"

#include <cctype>
#include <set>
#include <tuple>

#include "graph/control_flow_frames.h"
#include "graph/device_name.h"
#include "graph/op_kinds.h"
#include "runtime/collective_rings.h"

namespace tessera {
namespace {

class Partitioner {
 public:
  Partitioner(const Graph& g, const PartitionOptions& options) : g_(g), options_(options) {
    for (const Node* n : g.nodes()) used_names_.insert(n->name());
  }

  StatusOr<std::map<std::string, DevicePartition>> Run() {
    device_.resize(g_.nodes().size());
    for (const Node* n : g_.nodes()) {
      if (n->assigned_device().empty()) {
        return errors::InvalidArgument("Cannot partition: node ", n->DebugName(), " has no assigned device");
      }
      device_[n->id()] = n->assigned_device();
    }
    RETURN_IF_ERROR(FindFrames());
    for (const Node* n : g_.nodes()) parts_[Device(*n)];
    RETURN_IF_ERROR(FindMemoryTypes());
    for (const Node* n : g_.nodes()) {
      ASSIGN_OR_RETURN(NodePart part, CopyToItsDevice(*n));
      parts_[Device(*n)].push_back(std::move(part));
    }
    std::vector<NodeSpec*> all;
    for (auto& [device, parts] : parts_) {
      for (NodePart& n : parts) all.push_back(&n.def);
    }
    RETURN_IF_ERROR(AssignRingPlaces(all, options_));
    std::map<std::string, DevicePartition> result;
    for (auto& [device, parts] : parts_) {
      ASSIGN_OR_RETURN(DeviceName name, DeviceName::Parse(device));
      ASSIGN_OR_RETURN(std::unique_ptr<Graph> graph, Graph::Assemble(parts, g_.op_registry()));
      parts.clear();
      result.emplace(device, DevicePartition{TaskOf(name), std::move(graph)});
    }
    return result;
  }

 private:
  // `n` in its device's partition: each input from another device or memory a _Recv there.
  StatusOr<NodePart> CopyToItsDevice(const Node& n) {
    const std::string& dst = Device(n);
    NodePart part = NodePart::Copy(n);
    part.assigned_device = dst;
    NodeSpec& def = part.def;
    def.device = dst;
    def.colocate_with.clear();
    def.inputs.clear();
    // The ring places of an AllReduce's group are its own attrs (AssignRingPlaces).
    if (IsAllReduce(n.op())) def.attrs = n.attrs();
    for (int i = 0; i < n.num_inputs(); ++i) {
      const Edge* e = n.input_edge(i);
      const MemoryType from = OutputMemory(*e->src, e->src_output);
      const MemoryType to = InputMemory(n, i);
      if (Device(*e->src) == dst && from == to) {
        def.inputs.push_back(StrCat(e->src->name(), ":", e->src_output));
        continue;
      }
      if (n.input_is_ref(i)) {
        return errors::InvalidArgument("Reference input ", i, " of ", n.DebugName(), " on ", dst, " comes from ",
                                       e->src->DebugName(), " on ", Device(*e->src),
                                       "; a variable and the ops that write it must share a device");
      }
      ASSIGN_OR_RETURN(std::string recv, RecvFor(*e->src, e->src_output, dst, from, to));
      def.inputs.push_back(std::move(recv));
    }
    for (const Edge* e : n.control_inputs()) {
      if (Device(*e->src) == dst) {
        def.inputs.push_back(StrCat("^", e->src->name()));
      } else {
        ASSIGN_OR_RETURN(std::string recv, RecvFor(*e->src, kControlSlot, dst, MemoryType::kDevice, MemoryType::kDevice));
        def.inputs.push_back(StrCat("^", recv));
      }
    }
    return part;
  }

  // Where each node's inputs and outputs live, for the nodes on device types that keep some
  // arguments in host memory; on the others (the CPU) everything is device memory.
  Status FindMemoryTypes() {
    struct DeviceInfo {
      std::string type;
      bool has_host_args;
    };
    std::map<std::string, DeviceInfo, std::less<>> devices;  // by full name
    for (const Node* n : g_.nodes()) {
      auto it = devices.find(Device(*n));
      if (it == devices.end()) {
        ASSIGN_OR_RETURN(DeviceName device, DeviceName::Parse(Device(*n)));
        const bool has_host_args = options_.kernels->HasHostMemoryArgs(device.type);
        it = devices.emplace(Device(*n), DeviceInfo{device.type, has_host_args}).first;
      }
      if (!it->second.has_host_args) continue;
      host_arg_devices_.insert(Device(*n));
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

  // TensorFlow 1.x's control flow across devices (as its graph_partition does): a frame's
  // nodes on a device other than its LoopCond's need that frame and its iterations there
  // too, so that each _Recv inside the loop runs once per iteration under the key of that
  // iteration. Each such device gets a control loop for the frame, Enter -> Merge ->
  // Switch(LoopCond) -> NextIteration -> Merge, whose Merge fires once per iteration and
  // triggers the frame's _Recvs there; the LoopCond's value comes over like any other.
  //
  // Finds the frame each node's inputs arrive in (an Enter's: its parent's; an Exit's: the
  // loop's), walking from the roots as TensorFlow's BuildControlFlowInfo does.
  Status FindFrames() {
    for (const Node* n : g_.nodes()) has_control_flow_ = has_control_flow_ || IsControlFlow(n->op());
    if (!has_control_flow_) return Status::OK();
    ASSIGN_OR_RETURN(ControlFlowFrames found, FindControlFlowFrames(g_));
    input_frame_ = std::move(found.input_frame);
    output_frame_ = std::move(found.output_frame);
    for (const auto& [frame, parent] : found.parent) frames_[frame].parent = parent;
    for (const Node* n : found.order) {
      const std::string& in = input_frame_[n->id()];
      if (IsEnter(n->op())) {
        RETURN_IF_ERROR(n->GetAttr("parallel_iterations", &frames_.at(output_frame_[n->id()]).parallel_iterations));
      } else if (IsLoopCond(n->op()) && !in.empty()) {
        frames_.at(in).loop_cond = n;
      }
    }
    ColocateControlFlow(found.order);
    return Status::OK();
  }

  // Moves the loops' plumbing next to what it serves, as TensorFlow's partitioner does: a
  // Switch to its data input, an Exit to its input, a (value) Enter and a NextIteration to
  // their first data consumer. Above all a NextIteration then shares its Merge's device: a
  // value between iterations never crosses devices, where no control loop could key it.
  // `order` is the graph from its roots, so an Exit follows its Switch's move.
  void ColocateControlFlow(const std::vector<const Node*>& order) {
    for (const Node* n : order) {
      const std::string& op = n->op();
      if ((IsSwitch(op) || IsExit(op)) && n->num_inputs() > 0) {
        device_[n->id()] = Device(*n->input_edge(0)->src);
      }
    }
    for (const Node* n : order) {
      const std::string& op = n->op();
      const bool moves = op == "Enter" || IsNextIteration(op);
      if (!moves) continue;
      for (const Edge* e : n->out_edges()) {
        if (e->IsControl()) continue;
        device_[n->id()] = Device(*e->dst);
        break;
      }
    }
  }

  const std::string& Device(const Node& n) const { return device_[n.id()]; }

  // The Merge of `frame`'s control loop on `device`, made with the loops of its outer
  // frames on first use.
  StatusOr<std::string> ControlLoopMerge(const std::string& frame, const std::string& device) {
    auto key = std::make_pair(frame, device);
    if (auto it = control_loops_.find(key); it != control_loops_.end()) return it->second;
    const FrameInfo& info = frames_.at(frame);
    if (info.loop_cond == nullptr) {
      return errors::InvalidArgument("The loop of frame '", frame, "' spans devices (", device,
                                     ") but has no LoopCond to tell them when it ends");
    }
    std::string base;
    for (char c : frame) base += std::isalnum(static_cast<unsigned char>(c)) || c == '/' || c == '-' ? c : '_';
    base = StrCat(base.empty() || !std::isalnum(static_cast<unsigned char>(base[0])) ? "frame" : "", base,
                  "/_control_loop");
    NodeSpec enter, merge, sw, next;
    enter.name = Unique(base + "/enter");
    merge.name = Unique(base + "/merge");
    sw.name = Unique(base + "/switch");
    next.name = Unique(base + "/next_iteration");
    control_loops_.emplace(key, merge.name);  // before the LoopCond's _Recv below asks for it

    std::string start;
    if (info.parent.empty()) {
      NodeSpec constant;
      constant.name = Unique(base + "/start");
      constant.op = "Const";
      constant.device = device;
      constant.attrs = {{"dtype", DataType::kFloat}, {"value", Tensor(DataType::kFloat, TensorShape({0}))}};
      start = constant.name;
      parts_[device].push_back(NewNode(std::move(constant)));
    } else {
      ASSIGN_OR_RETURN(start, ControlLoopMerge(info.parent, device));
    }
    const Node& cond = *info.loop_cond;
    const MemoryType pred_memory = host_arg_devices_.count(device) > 0 ? MemoryType::kHost : MemoryType::kDevice;
    std::string pred = StrCat(cond.name(), ":0");
    if (Device(cond) != device || OutputMemory(cond, 0) != pred_memory) {
      ASSIGN_OR_RETURN(pred, RecvFor(cond, 0, device, OutputMemory(cond, 0), pred_memory));
    }
    for (NodeSpec* def : {&enter, &merge, &sw, &next}) {
      def->device = device;
      def->attrs["T"] = DataType::kFloat;
    }
    enter.op = "Enter";
    enter.inputs = {start};
    enter.attrs["frame_name"] = frame;
    enter.attrs["is_constant"] = false;
    enter.attrs["parallel_iterations"] = info.parallel_iterations;
    merge.op = "Merge";
    merge.inputs = {enter.name, next.name};
    merge.attrs["N"] = int64_t{2};
    sw.op = "Switch";
    sw.inputs = {merge.name, pred};
    next.op = "NextIteration";
    next.inputs = {StrCat(sw.name, ":1")};
    std::string merge_name = merge.name;
    for (NodeSpec* def : {&enter, &merge, &sw, &next}) parts_[device].push_back(NewNode(std::move(*def)));
    return merge_name;
  }

  // A node partitioning adds, on the device `def` names.
  static NodePart NewNode(NodeSpec def) {
    NodePart part;
    part.assigned_device = def.device;
    part.def = std::move(def);
    return part;
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
  StatusOr<std::string> RecvFor(const Node& src, int output, const std::string& dst, MemoryType from,
                                MemoryType to) {
    // Inside a loop: once per iteration, triggered by this device's control loop (made
    // first: making it may ask for this very pair, for the loop's LoopCond).
    std::string trigger;
    if (has_control_flow_) {
      if (const std::string& frame = output_frame_[src.id()]; !frame.empty()) {
        ASSIGN_OR_RETURN(trigger, ControlLoopMerge(frame, dst));
      }
    }
    auto key = std::make_tuple(src.id(), output, dst, to);
    auto it = recv_names_.find(key);
    if (it != recv_names_.end()) return it->second;

    const std::string& src_device = Device(src);
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
      NodeSpec trigger;
      trigger.name = Unique(StrCat(src.name(), "/_control_trigger"));
      trigger.op = "Const";
      trigger.device = src_device;
      trigger.inputs = {StrCat("^", src.name())};
      trigger.attrs = {{"dtype", DataType::kFloat}, {"value", Tensor(DataType::kFloat, TensorShape({0}))}};
      sent = trigger.name + ":0";
      parts_[src_device].push_back(NewNode(std::move(trigger)));
    }
    const int64_t incarnation = static_cast<int64_t>(options_.incarnation(src_device));
    AttrMap common = {{"tensor_name", tensor_name},
                      {"send_device", src_device},
                      {"send_device_incarnation", incarnation},
                      {"recv_device", dst},
                      {"client_terminated", false}};

    NodeSpec send;
    send.name = Unique(StrCat("_send_", src.name(), "_", suffix));
    send.op = from == MemoryType::kHost ? "_HostSend" : "_Send";
    send.device = src_device;
    send.inputs = {sent};
    send.attrs = common;
    send.attrs["T"] = dtype;
    parts_[src_device].push_back(NewNode(std::move(send)));

    NodeSpec recv;
    recv.name = Unique(StrCat("_recv_", src.name(), "_", suffix));
    recv.op = to == MemoryType::kHost ? "_HostRecv" : "_Recv";
    recv.device = dst;
    recv.attrs = std::move(common);
    recv.attrs["tensor_type"] = dtype;
    recv.attrs["shape"] = control ? TensorShape({0}) : src.output_shape(output);
    if (has_control_flow_) recv.attrs[kMaybeDeadAttr] = true;
    if (!trigger.empty()) recv.inputs = {StrCat("^", trigger)};
    std::string name = recv.name;
    parts_[dst].push_back(NewNode(std::move(recv)));
    recv_names_.emplace(key, name);
    return name;
  }

  const Graph& g_;
  const PartitionOptions& options_;
  std::map<std::string, std::vector<NodePart>> parts_;  // by device
  std::set<std::string> used_names_;
  std::map<std::tuple<int, int, std::string, MemoryType>, std::string> recv_names_;
  struct MemoryTypes {
    std::vector<MemoryType> inputs, outputs;
  };
  std::map<int, MemoryTypes> memory_types_;  // by node id; absent: all device memory
  std::set<std::string> host_arg_devices_;   // devices whose kernels keep some arguments in host memory

  struct FrameInfo {
    std::string parent;  // "": the root
    const Node* loop_cond = nullptr;
    int64_t parallel_iterations = 10;
  };
  bool has_control_flow_ = false;
  // By node id, where the graph has control flow: the frame of a node's inputs and of its
  // outputs ("": the root); they differ for Enter and Exit.
  std::vector<std::string> input_frame_, output_frame_;
  std::map<std::string, FrameInfo> frames_;  // by frame name
  std::map<std::pair<std::string, std::string>, std::string> control_loops_;  // (frame, device) -> its Merge
  // By node id: where it runs, its assigned device unless ColocateControlFlow moved it.
  std::vector<std::string> device_;
};

}  // namespace

StatusOr<std::map<std::string, DevicePartition>> Partition(const Graph& placed, const PartitionOptions& options) {
  return Partitioner(placed, options).Run();
}

std::string TaskOf(const DeviceName& device) {
  return StrCat("/job:", device.job, "/replica:", device.replica, "/task:", device.task);
}

}  // namespace tessera
