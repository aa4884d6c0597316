#include "runtime/blocked_layout.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "runtime/graph_rewrites.h"

namespace tessera {
namespace {

// The value of input `i` where a Const with no control inputs gives it, else nullptr.
const Tensor* ConstInput(const Node& n, int i) {
  const Edge* e = i < n.num_inputs() ? n.input_edge(i) : nullptr;
  if (e == nullptr || !e->src->control_inputs().empty()) return nullptr;
  return e->src->constant_value();
}

bool IsConv(const Node& n) {
  return n.op() == "Conv2D" || n.op() == "_FusedConv2D" || n.op() == "DepthwiseConv2dNative" ||
         n.op() == "_FusedDepthwiseConv2dNative";
}
bool IsDepthwise(const Node& n) { return n.op().find("Depthwise") != std::string::npos; }

const std::set<std::string, std::less<>>& UnaryOps() {
  static const auto* ops = new std::set<std::string, std::less<>>{
      "Abs", "Elu", "Erf", "Exp", "Identity", "Neg", "Relu", "Relu6", "Selu", "Sigmoid", "Softplus", "Square", "Tanh",
      "_Swish"};
  return *ops;
}
const std::set<std::string, std::less<>>& BinaryOps() {
  static const auto* ops = new std::set<std::string, std::less<>>{
      "Add", "AddV2", "BiasAdd", "Maximum", "Minimum", "Mul", "RealDiv", "SquaredDifference", "Sub"};
  return *ops;
}

int64_t WholeBlocks(int64_t channels, int64_t block) { return (channels + block - 1) / block * block; }

// The output channels of a convolution that can run blocked, else 0: float NHWC on a CPU,
// undilated, SAME or VALID, a constant filter (and bias, where its output channels are not
// whole blocks: both are padded with zeros), a depthwise one's multiplier 1 or its channels
// whole blocks, and fused_ops the blocked kernel applies.
int64_t BlockedConvChannels(const Node& n, int64_t block) {
  std::string padding, fused = "BiasAdd";
  std::vector<int64_t> dilations;
  if (!IsConv(n) || !OnCpu(n) || !IsFloat(n) || !IsNhwc(n) || !n.GetAttr("padding", &padding).ok() ||
      (padding != "SAME" && padding != "VALID") || !n.GetAttr("dilations", &dilations).ok() ||
      dilations != std::vector<int64_t>{1, 1, 1, 1}) {
    return 0;
  }
  if (n.op()[0] == '_' && (!n.GetAttr("fused_ops", &fused).ok() || n.num_inputs() != 3 ||
                           (fused != "BiasAdd" && fused != "BiasAdd,Relu" && fused != "BiasAdd,Relu6"))) {
    return 0;
  }
  const Tensor* filter = ConstInput(n, 1);
  if (filter == nullptr || filter->dtype() != DataType::kFloat || filter->rank() != 4) return 0;
  const int64_t c = filter->dim(2), o = IsDepthwise(n) ? c * filter->dim(3) : filter->dim(3);
  const TensorShape& in = n.input_edge(0)->src->output_shape(n.input_edge(0)->src_output);
  if (c == 0 || o == 0 || (IsDepthwise(n) && filter->dim(3) != 1 && c % block != 0) || in.unknown_rank() ||
      in.rank() != 4 || in.dim(3) != c) {
    return 0;
  }
  if (o % block != 0 && n.num_inputs() > 2) {
    const Tensor* bias = ConstInput(n, 2);
    if (bias == nullptr || bias->dtype() != DataType::kFloat || bias->shape() != TensorShape({o})) return 0;
  }
  return o;
}

// A constant operand of blocked arithmetic: one value (any shape of ones, up to 4-D), which
// broadcasts against a blocked tensor as it is, or one value per channel ([C], [1, 1, 1, C]),
// which must be blocked itself.
enum class ConstKind { kNone, kScalar, kPerChannel };
ConstKind ClassifyConst(const Tensor* t, int64_t channels) {
  if (t == nullptr || t->dtype() != DataType::kFloat || t->rank() > 4) return ConstKind::kNone;
  if (t->NumElements() == 1) return ConstKind::kScalar;
  if (t->rank() >= 1 && t->NumElements() == channels && t->dim(t->rank() - 1) == channels) {
    return ConstKind::kPerChannel;
  }
  return ConstKind::kNone;
}

// Per-channel values as a blocked [1, C/B, 1, 1, B] tensor (the same memory order), zeros
// past the last channel.
Tensor BlockedPerChannel(const Tensor& t, int64_t block) {
  const int64_t padded = WholeBlocks(t.NumElements(), block);
  Tensor blocked(DataType::kFloat, TensorShape({1, padded / block, 1, 1, block}));
  std::fill(std::copy_n(t.data<float>(), t.NumElements(), blocked.data<float>()), blocked.data<float>() + padded, 0.f);
  return blocked;
}

// `t` with dimension `axis` grown to `size`, zeros in what it gains: a filter's or a bias's
// channels padded to whole blocks.
Tensor ZeroPadded(const Tensor& t, int axis, int64_t size) {
  if (t.dim(axis) == size) return t;
  std::vector<int64_t> dims(t.shape().dims().begin(), t.shape().dims().end());
  int64_t inner = 1;
  for (size_t i = axis + 1; i < dims.size(); ++i) inner *= dims[i];
  const int64_t from = dims[axis], outer = t.NumElements() / (from * inner);
  dims[axis] = size;
  Tensor padded(DataType::kFloat, TensorShape(dims));
  float* out = padded.data<float>();
  for (int64_t i = 0; i < outer; ++i) {
    out = std::copy_n(t.data<float>() + i * from * inner, from * inner, out);
    out = std::fill_n(out, (size - from) * inner, 0.f);
  }
  return padded;
}

std::string InputName(const Edge& e) {
  return e.src_output == 0 ? e.src->name() : StrCat(e.src->name(), ":", e.src_output);
}

// An integer constant of `dtype` (an axis, axes or paddings input's): `values` as a vector,
// or in `shape`.
Tensor IntConstant(DataType dtype, const std::vector<int64_t>& values, std::optional<TensorShape> shape = {}) {
  Tensor t(dtype, shape.value_or(TensorShape({static_cast<int64_t>(values.size())})));
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == DataType::kInt64) t.data<int64_t>()[i] = values[i];
    else t.data<int32_t>()[i] = static_cast<int32_t>(values[i]);
  }
  return t;
}

bool IsIntConst(const Tensor* t) {
  return t != nullptr && (t->dtype() == DataType::kInt32 || t->dtype() == DataType::kInt64);
}

// Whether `n` is a float Mean on a CPU over the rows and columns of a 4-D NHWC tensor,
// keeping them as dimensions or not as `keep_dims` says.
bool IsMeanOverRowsAndColumns(const Node& n, bool keep_dims) {
  bool keeps = !keep_dims;
  const Tensor* axes = ConstInput(n, 1);
  if (n.op() != "Mean" || !OnCpu(n) || !IsFloat(n) || !n.GetAttr("keep_dims", &keeps).ok() || keeps != keep_dims ||
      !IsIntConst(axes)) {
    return false;
  }
  std::vector<int64_t> a = IntTensorValues(*axes);
  for (int64_t& x : a) x = x < 0 ? x + 4 : x;
  std::sort(a.begin(), a.end());
  return a == std::vector<int64_t>{1, 2};
}

class Rewriter {
 public:
  Rewriter(const Graph& graph, int64_t block)
      : graph_(graph), block_(block), channels_(graph.nodes().size(), 0), chain_reach_(graph.nodes().size(), 0) {
    for (const Node* n : graph.nodes()) names_.insert(n->name());
  }

  // Decides which nodes run blocked; false when none does.
  bool Plan() {
    const std::vector<const Node*> order = TopologicalOrder(graph_);
    // A convolution that enters the layout and leads to no other blocked convolution would
    // pay a reorder in and out for its gain: it stays out, and the plan is made again
    // without it (each round takes one out for good, so there are at most as many rounds as
    // convolutions).
    for (bool changed = true; changed;) {
      changed = false;
      for (const Node* n : order) channels_[n->id()] = lone_.count(n) != 0 ? 0 : BlockedChannels(*n);
      for (const Node* n : order) {
        if (IsConv(*n) && channels_[n->id()] > 0 && !Blocked(*n->input_edge(0)) && !LeadsToAConvolution(*n)) {
          lone_.insert(n);
          changed = true;
        }
      }
    }
    // Last to first, so that each link sees where the links after it reach.
    for (auto n = order.rbegin(); n != order.rend(); ++n) {
      if ((*n)->op() != "ConcatV2" || channels_[(*n)->id()] == 0) continue;
      int64_t& reach = chain_reach_[(*n)->id()] = channels_[(*n)->id()];
      for (const Edge* e : (*n)->out_edges()) {
        if (e->dst_input == 0 && e->src_output == 0 && e->dst->op() == "ConcatV2") {
          reach = std::max(reach, chain_reach_[e->dst->id()]);
        }
      }
    }
    return std::any_of(channels_.begin(), channels_.end(), [](int64_t c) { return c > 0; });
  }

  // A blocked convolution with its bias whose result alone an Add reads, with another blocked
  // tensor of its shape (a residual connection's), and the Relu that alone reads the sum: the
  // convolution adds the summand as it writes, and applies the Relu (_BlockedConv2D's
  // "BiasAdd,Add,Relu"), taking the name of the last.
  void FuseResidualSums() {
    for (const Node* conv : graph_.nodes()) {
      std::string fused;
      if (conv->op() != "_FusedConv2D" || channels_[conv->id()] == 0 || !conv->GetAttr("fused_ops", &fused).ok() ||
          fused != "BiasAdd" || conv->out_edges().size() != 1) {
        continue;
      }
      const Edge* out = conv->out_edges()[0];
      const Node* add = out->dst;
      if (!Blocked(*out) || (add->op() != "Add" && add->op() != "AddV2") || channels_[add->id()] == 0 ||
          absorbed_.count(add) != 0) {  // a projection shortcut's convolution may have claimed it
        continue;
      }
      const Edge* summand = add->input_edge(1 - out->dst_input);
      const TensorShape& shape = conv->output_shape(0);
      if (!Blocked(*summand) || summand->src == conv || shape.unknown_rank() || shape.rank() != 4 ||
          summand->src->output_shape(0) != shape || shape.dim(1) < 0 || shape.dim(2) < 0) {
        continue;
      }
      const Node* relu = nullptr;
      if (add->out_edges().size() == 1 && !add->out_edges()[0]->IsControl() && add->out_edges()[0]->dst->op() == "Relu" &&
          channels_[add->out_edges()[0]->dst->id()] > 0) {
        relu = add->out_edges()[0]->dst;
      }
      residuals_[conv] = {add, relu, summand};
      absorbed_.insert(add);
      if (relu != nullptr) absorbed_.insert(relu);
    }
  }

  StatusOr<std::unique_ptr<Graph>> Build() {
    std::vector<NodePart> nodes;
    for (const Node* n : graph_.nodes()) {
      if (absorbed_.count(n) != 0) continue;
      if (IsMeanOfBlocked(*n)) {
        AddMeanOfBlocked(*n);
        continue;
      }
      NodePart part = channels_[n->id()] > 0 ? BlockedNode(*n) : NodePart::Copy(*n);
      // Whatever reads a blocked value outside the layout reads it through a _FromBlocked.
      for (int i = 0; i < n->num_inputs() && channels_[n->id()] == 0; ++i) {
        const Edge* e = n->input_edge(i);
        if (e != nullptr && Blocked(*e)) part.def.inputs[i] = FromBlocked(*e->src);
      }
      nodes.push_back(std::move(part));
    }
    for (auto& added : added_) nodes.push_back(std::move(added));
    return Graph::Assemble(nodes, graph_.op_registry());
  }

 private:
  // Whether edge `e` carries a blocked value.
  bool Blocked(const Edge& e) const { return !e.IsControl() && e.src_output == 0 && channels_[e.src->id()] > 0; }
  int64_t InputChannels(const Node& n, int i) const {
    const Edge* e = i < n.num_inputs() ? n.input_edge(i) : nullptr;
    return e != nullptr && Blocked(*e) ? channels_[e->src->id()] : 0;
  }

  // Whether a blocked convolution reads, through blocked nodes only, what blocked `conv` makes.
  bool LeadsToAConvolution(const Node& conv) const {
    std::vector<const Node*> stack = {&conv};
    std::set<const Node*> seen = {&conv};
    while (!stack.empty()) {
      const Node* n = stack.back();
      stack.pop_back();
      for (const Edge* e : n->out_edges()) {
        const Node* next = e->dst;
        if (e->IsControl() || channels_[next->id()] == 0 || !seen.insert(next).second) continue;
        if (IsConv(*next)) return true;
        stack.push_back(next);
      }
    }
    return false;
  }

  // Whether n's input i, not blocked, is a 4-D tensor of `channels` channels: it enters the
  // layout through a _ToBlocked (a squeeze-and-excitation's [N, 1, 1, C] scale, whose rows
  // and columns shape inference may not know), which costs no more than taking the blocked
  // operand out would.
  bool EntersLayout(const Node& n, int i, int64_t channels) const {
    const Edge* e = i < n.num_inputs() ? n.input_edge(i) : nullptr;
    if (e == nullptr || e->src->constant_value() != nullptr) return false;
    const TensorShape& shape = e->src->output_shape(e->src_output);
    return !shape.unknown_rank() && shape.rank() == 4 && shape.dim(3) == channels;
  }

  // A Mean over rows and columns of a blocked tensor that drops them (Keras's
  // GlobalAveragePooling2D): [N, C/B, 1, 1, B] is [N, C] in memory, so the mean is taken
  // blocked and reshaped, and the activations never leave the layout.
  bool IsMeanOfBlocked(const Node& n) const {
    const int64_t c = InputChannels(n, 0);
    return c > 0 && c % block_ == 0 && IsMeanOverRowsAndColumns(n, /*keep_dims=*/false);
  }

  // The channels of n's result if it runs blocked, else 0. Its inputs are decided.
  int64_t BlockedChannels(const Node& n) const {
    if (IsConv(n)) return BlockedConvChannels(n, block_);
    if (!OnCpu(n) || !IsFloat(n)) return 0;
    const int64_t c = InputChannels(n, 0);
    if (UnaryOps().count(n.op()) != 0) return c;
    if (BinaryOps().count(n.op()) != 0) {
      if (n.op() == "BiasAdd" && (!IsNhwc(n) || c == 0)) return 0;
      const int64_t channels = std::max(c, InputChannels(n, 1));
      // Padding lanes hold zeros or what finite arithmetic made of them; 0 / 0 would be a NaN
      // that the next convolution's zero weights could not cancel.
      if (channels == 0 || (n.op() == "RealDiv" && channels % block_ != 0)) return 0;
      for (int i = 0; i < 2; ++i) {
        const int64_t ci = InputChannels(n, i);
        if (ci != 0 ? ci != channels
                    : ClassifyConst(ConstInput(n, i), channels) == ConstKind::kNone && !EntersLayout(n, i, channels)) {
          return 0;
        }
      }
      return channels;
    }
    if (n.op() == "_FusedScaleOffset") {
      for (int i = 1; i < 3; ++i) {
        if (ClassifyConst(ConstInput(n, i), c) == ConstKind::kNone) return 0;
      }
      return c;
    }
    if ((n.op() == "MaxPool" || n.op() == "AvgPool") && IsNhwc(n)) {
      std::vector<int64_t> ksize, strides;
      if (!n.GetAttr("ksize", &ksize).ok() || !n.GetAttr("strides", &strides).ok() || ksize.size() != 4 ||
          strides.size() != 4 || ksize[0] != 1 || ksize[3] != 1 || strides[0] != 1 || strides[3] != 1) {
        return 0;
      }
      return c;
    }
    if (n.op() == "Pad" || n.op() == "PadV2") {
      // Rows and columns only: the same padding of each block's planes.
      const Tensor* paddings = ConstInput(n, 1);
      if (c == 0 || !IsIntConst(paddings) || paddings->shape() != TensorShape({4, 2})) return 0;
      const std::vector<int64_t> p = IntTensorValues(*paddings);
      return p[0] == 0 && p[1] == 0 && p[6] == 0 && p[7] == 0 ? c : 0;
    }
    if (n.op() == "Mean") return IsMeanOverRowsAndColumns(n, /*keep_dims=*/true) ? c : 0;
    if (n.op() == "ConcatV2") {
      const Tensor* axis = ConstInput(n, n.num_inputs() - 1);
      if (!IsIntConst(axis) || axis->NumElements() != 1) return 0;
      const int64_t a = IntTensorValues(*axis)[0];
      if (a != 3 && a != -1) return 0;
      // Inputs not yet blocked enter through a _ToBlocked (DenseNet's first block
      // concatenates a pool's NHWC output with its convolutions').
      int64_t sum = 0, blocked = 0;
      for (int i = 0; i + 1 < n.num_inputs(); ++i) {
        int64_t ci = InputChannels(n, i);
        if (ci % block_ != 0) return 0;  // padding would land between the channels
        blocked += ci > 0;
        if (ci == 0) {
          const TensorShape& in = n.input_edge(i)->src->output_shape(n.input_edge(i)->src_output);
          if (in.unknown_rank() || in.rank() != 4 || in.dim(3) <= 0 || in.dim(3) % block_ != 0) return 0;
          ci = in.dim(3);
        }
        sum += ci;
      }
      return blocked > 0 ? sum : 0;
    }
    return 0;
  }

  std::string UniqueName(const std::string& base) {
    std::string name = base;
    for (int i = 1; !names_.insert(name).second; ++i) name = StrCat(base, "_", i);
    return name;
  }

  // The _FromBlocked of `n`'s result, made once.
  std::string FromBlocked(const Node& n) {
    auto [it, made] = from_blocked_.emplace(n.name(), std::string());
    if (!made) return it->second;
    NodeSpec to;
    to.name = it->second = UniqueName(n.name() + "/nhwc");
    to.op = "_FromBlocked";
    to.device = n.requested_device();
    to.attrs = {{"T", DataType::kFloat}};
    if (channels_[n.id()] % block_ != 0) to.attrs["channels"] = channels_[n.id()];
    to.inputs = {n.name()};
    added_.push_back({std::move(to), nullptr, n.assigned_device()});
    return it->second;
  }

  // The _ToBlocked of what `e` carries into `consumer`, made once per value.
  std::string ToBlocked(const Edge& e, const Node& consumer) {
    const std::string value = InputName(e);
    auto [it, made] = to_blocked_.emplace(value, std::string());
    if (!made) return it->second;
    NodeSpec to;
    to.name = it->second = UniqueName(e.src->name() + "/blocked");
    to.op = "_ToBlocked";
    to.device = consumer.requested_device();
    to.attrs = {{"T", DataType::kFloat}, {"block", block_}};
    to.inputs = {value};
    added_.push_back({std::move(to), nullptr, consumer.assigned_device()});
    return it->second;
  }

  // A new constant for node `n`'s input `i`, named after it.
  std::string AddConstant(const Node& n, int i, Tensor value) {
    NodeSpec c = ConstantLike(UniqueName(n.input_edge(i)->src->name() + "/blocked"), n, std::move(value));
    std::string name = c.name;
    added_.push_back({std::move(c), nullptr, n.assigned_device()});
    return name;
  }

  // IsMeanOfBlocked's mean, kept as [N, C/B, 1, 1, B], then a Reshape to [N, C] named as `n`.
  void AddMeanOfBlocked(const Node& n) {
    NodeSpec mean = n.ToSpec();
    mean.name = UniqueName(n.name() + "/blocked");
    mean.attrs["keep_dims"] = true;
    mean.inputs[1] = AddConstant(n, 1, IntConstant(ConstInput(n, 1)->dtype(), {2, 3}));
    NodeSpec reshape;
    reshape.name = n.name();
    reshape.op = "Reshape";
    reshape.device = n.requested_device();
    reshape.attrs = {{"T", DataType::kFloat}, {"Tshape", DataType::kInt32}};
    // The mean keeps the node's control inputs: it must not run before them.
    reshape.inputs = {mean.name, AddConstant(n, 1, IntConstant(DataType::kInt32, {-1, InputChannels(n, 0)}))};
    added_.push_back({std::move(mean), nullptr, n.assigned_device()});
    added_.push_back({std::move(reshape), nullptr, n.assigned_device()});
  }

  NodePart BlockedNode(const Node& n) {
    NodePart part = NodePart::Copy(n);
    NodeSpec& def = part.def;
    const int64_t channels = channels_[n.id()];
    // A node whose op changes is a new node, with every attr.
    const auto renamed_op = [&](const char* op) {
      def = n.ToSpec();
      def.op = op;
      part.copy_of = nullptr;
    };
    if (IsConv(n)) {
      const Tensor& filter = *ConstInput(n, 1);
      // A first layer's few channels are read as they are; a depthwise convolution's never.
      const bool nhwc_input = !IsDepthwise(n) && filter.dim(2) < block_ && !Blocked(*n.input_edge(0));
      renamed_op("_BlockedConv2D");
      // Channels that are not whole blocks: the filter's (and bias's) zero padding makes the
      // padding lanes zero where they are written and ignores them where they are read. A
      // depthwise filter's last dimension is its multiplier, 1 where it is padded.
      const int64_t rows = nhwc_input ? filter.dim(2) : WholeBlocks(filter.dim(2), block_);
      const int64_t columns = IsDepthwise(n) ? filter.dim(3) : WholeBlocks(filter.dim(3), block_);
      if (rows != filter.dim(2) || columns != filter.dim(3)) {
        def.inputs[1] = AddConstant(n, 1, ZeroPadded(ZeroPadded(filter, 2, rows), 3, columns));
      }
      if (channels % block_ != 0 && n.num_inputs() > 2) {
        def.inputs[2] = AddConstant(n, 2, ZeroPadded(*ConstInput(n, 2), 0, WholeBlocks(channels, block_)));
      }
      AttrMap attrs;
      for (const char* attr : {"strides", "padding", "data_format", "dilations", "fused_ops"}) {
        if (auto it = n.attrs().find(attr); it != n.attrs().end()) attrs[attr] = it->second;
      }
      def.attrs = std::move(attrs);
      def.attrs["T"] = DataType::kFloat;
      def.attrs["num_args"] = int64_t{n.num_inputs() - 2};
      def.attrs["depthwise"] = IsDepthwise(n) ? filter.dim(3) : int64_t{0};
      def.attrs["block"] = block_;
      if (nhwc_input) def.attrs["input_layout"] = std::string("NHWC");
      else if (!Blocked(*n.input_edge(0))) def.inputs[0] = ToBlocked(*n.input_edge(0), n);
      if (auto it = residuals_.find(&n); it != residuals_.end()) {
        const Residual& r = it->second;
        const Node& last = r.relu != nullptr ? *r.relu : *r.add;
        def.name = last.name();
        def.attrs["fused_ops"] = std::string(r.relu != nullptr ? "BiasAdd,Add,Relu" : "BiasAdd,Add");
        def.attrs["num_args"] = int64_t{2};
        // Data inputs first, then the control inputs of all three.
        std::vector<std::string> controls;
        for (const Node* part : {r.add, r.relu}) {
          if (part == nullptr) continue;
          for (const std::string& input : part->ToSpec().inputs) {
            if (!input.empty() && input[0] == '^') controls.push_back(input);
          }
        }
        auto first_control = std::find_if(def.inputs.begin(), def.inputs.end(),
                                           [](const std::string& input) { return !input.empty() && input[0] == '^'; });
        first_control = def.inputs.insert(first_control, InputName(*r.summand));
        for (const std::string& c : controls) {
          if (std::find(def.inputs.begin(), def.inputs.end(), c) == def.inputs.end()) def.inputs.push_back(c);
        }
      }
    } else if (BinaryOps().count(n.op()) != 0 || n.op() == "_FusedScaleOffset") {
      for (int i = 0; i < n.num_inputs(); ++i) {
        if (InputChannels(n, i) != 0) continue;
        const Tensor* t = ConstInput(n, i);
        if (ClassifyConst(t, channels) == ConstKind::kPerChannel) def.inputs[i] = AddConstant(n, i, BlockedPerChannel(*t, block_));
        if (EntersLayout(n, i, channels)) def.inputs[i] = ToBlocked(*n.input_edge(i), n);
      }
      if (n.op() == "BiasAdd") {
        const std::vector<std::string> inputs = def.inputs;
        renamed_op("AddV2");
        def.inputs = inputs;
        def.attrs = {{"T", DataType::kFloat}};
      }
    } else if (n.op() == "MaxPool" || n.op() == "AvgPool") {
      renamed_op("_BlockedPool");
      def.attrs["pooling"] = std::string(n.op() == "MaxPool" ? "MAX" : "AVG");
      def.attrs["block"] = block_;
    } else if (n.op() == "Pad" || n.op() == "PadV2") {
      const Tensor& paddings = *ConstInput(n, 1);
      const std::vector<int64_t> p = IntTensorValues(paddings);
      def.inputs[1] = AddConstant(
          n, 1, IntConstant(paddings.dtype(), {0, 0, 0, 0, p[2], p[3], p[4], p[5], 0, 0}, TensorShape({5, 2})));
    } else if (n.op() == "Mean") {
      const Tensor& axes = *ConstInput(n, 1);
      def.inputs[1] = AddConstant(n, 1, IntConstant(axes.dtype(), {2, 3}));
    } else if (n.op() == "ConcatV2") {
      const int last = n.num_inputs() - 1;
      const Tensor& axis = *ConstInput(n, last);
      def.inputs[last] = AddConstant(n, last, IntConstant(axis.dtype(), {1}, axis.shape()));
      for (int i = 0; i < last; ++i) {
        if (!Blocked(*n.input_edge(i))) def.inputs[i] = ToBlocked(*n.input_edge(i), n);
      }
      if (chain_reach_[n.id()] > channels_[n.id()]) def.attrs["_reserve_axis_size"] = chain_reach_[n.id()] / block_;
    }
    return part;
  }

  const Graph& graph_;
  const int64_t block_;
  std::vector<int64_t> channels_;  // by node id: the channels of its blocked result, or 0
  // By node id, for a blocked ConcatV2: the channels of the last link of the chain it starts,
  // each link concatenating onto the last one's result (ConcatV2's kernel says why).
  std::vector<int64_t> chain_reach_;
  std::set<const Node*> lone_;     // convolutions that stay out of the layout
  struct Residual {
    const Node* add;
    const Node* relu;  // or nullptr
    const Edge* summand;
  };
  std::map<const Node*, Residual> residuals_;  // by the convolution that absorbs them
  std::set<const Node*> absorbed_;             // the Adds and Relus they absorb
  std::set<std::string> names_;
  std::map<std::string, std::string> from_blocked_, to_blocked_;  // value -> its conversion
  std::vector<NodePart> added_;
};

}  // namespace

StatusOr<std::unique_ptr<Graph>> UseBlockedLayout(std::unique_ptr<Graph> graph, int64_t block) {
  if (block == 0) block = __builtin_cpu_supports("avx512f") ? 16 : 8;
  Rewriter rewriter(*graph, block);
  if (!rewriter.Plan()) return graph;
  rewriter.FuseResidualSums();
  return rewriter.Build();
}

}  // namespace tessera
