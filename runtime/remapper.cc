#include "runtime/remapper.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "graph/device_name.h"
#include "graph/shape_inference.h"
#include "runtime/graph_rewrites.h"

namespace tessera {
namespace {

std::string DeviceType(const Node& n) {
  StatusOr<DeviceName> device = DeviceName::Parse(n.assigned_device());
  return device.ok() ? device->type : std::string();
}
// The device types with kernels for _FusedConv2D and _FusedMatMul; _FusedConv2DMaxPool is
// the CPU's alone.
bool OnCpuOrGpu(const Node& n) {
  const std::string type = DeviceType(n);
  return type == "CPU" || type == "GPU";
}

// The one consumer of `n`'s output 0 when it reads it as its input 0 on the same device, and
// nothing else (no other edge, control edges included) leaves `n`; else nullptr.
const Node* SoleConsumer(const Node& n, std::string_view op) {
  if (n.out_edges().size() != 1) return nullptr;
  const Edge* e = n.out_edges()[0];
  if (e->IsControl() || e->src_output != 0 || e->dst_input != 0) return nullptr;
  const Node* next = e->dst;
  if (next->op() != op || next->assigned_device() != n.assigned_device() || !IsFloat(*next)) return nullptr;
  return next;
}

struct Chain {
  const Node* conv;  // a Conv2D, a MatMul, or on a CPU a DepthwiseConv2dNative
  const Node* bias_add;
  const Node* relu;      // a Relu, or on a CPU a Relu6 (then never a max_pool); or nullptr
  const Node* max_pool;  // or nullptr
  // In training, the pool's MaxPoolGrad and (with a Relu) the ReluGrad that reads its
  // result, or nullptr.
  const Node* max_pool_grad = nullptr;
  const Node* relu_grad = nullptr;
  // The BiasAddGrad of the gradient they make, or nullptr.
  const Node* bias_add_grad = nullptr;
  // The Conv2DBackpropFilter of that gradient where nothing else (but the BiasAddGrad)
  // reads it, or nullptr.
  const Node* backprop_filter = nullptr;
};

// A MaxPool over rows and columns only, as the fused kernel pools.
bool PoolsRowsAndColumns(const Node& pool) {
  std::vector<int64_t> ksize, strides;
  return IsNhwc(pool) && pool.GetAttr("ksize", &ksize).ok() && pool.GetAttr("strides", &strides).ok() &&
         ksize.size() == 4 && strides.size() == 4 && ksize[0] == 1 && ksize[3] == 1 && strides[0] == 1 &&
         strides[3] == 1;
}

// The same window: ksize, strides, padding and data_format.
bool SameWindows(const Node& a, const Node& b) {
  std::vector<int64_t> ka, kb, sa, sb;
  std::string pa, pb, fa, fb;
  return a.GetAttr("ksize", &ka).ok() && b.GetAttr("ksize", &kb).ok() && a.GetAttr("strides", &sa).ok() &&
         b.GetAttr("strides", &sb).ok() && a.GetAttr("padding", &pa).ok() && b.GetAttr("padding", &pb).ok() &&
         a.GetAttr("data_format", &fa).ok() && b.GetAttr("data_format", &fb).ok() && ka == kb && sa == sb &&
         pa == pb && fa == fb;
}

// The same convolution: strides, padding, dilations and data_format, over the same input.
bool SameConvolution(const Node& a, const Node& b) {
  std::vector<int64_t> sa, sb, da, db;
  std::string pa, pb, fa, fb;
  const Edge* ia = a.input_edge(0);
  const Edge* ib = b.input_edge(0);
  return a.GetAttr("strides", &sa).ok() && b.GetAttr("strides", &sb).ok() && a.GetAttr("padding", &pa).ok() &&
         b.GetAttr("padding", &pb).ok() && a.GetAttr("dilations", &da).ok() && b.GetAttr("dilations", &db).ok() &&
         a.GetAttr("data_format", &fa).ok() && b.GetAttr("data_format", &fb).ok() && sa == sb && pa == pb &&
         da == db && fa == fb && ia != nullptr && ib != nullptr && ia->src == ib->src &&
         ia->src_output == ib->src_output;
}

// The Conv2DBackpropFilter of the chain's convolution that reads `grad`, the gradient of its
// output, where nothing else but the chain's BiasAddGrad does (no Conv2DBackpropInput: a
// first layer); else nullptr. The filter's gradient is then summed from the pooled gradient
// (_FusedConv2DMaxPoolBackpropFilter) and the convolution's output gradient never made.
const Node* SoleFilterGradient(const Node& grad, const Chain& chain) {
  const Node* filter_grad = nullptr;
  for (const Edge* e : grad.out_edges()) {
    if (e->dst == chain.bias_add_grad && !e->IsControl()) continue;
    if (filter_grad != nullptr || e->IsControl() || e->src_output != 0 || e->dst_input != 2) return nullptr;
    filter_grad = e->dst;
  }
  if (filter_grad == nullptr || filter_grad->op() != "Conv2DBackpropFilter" ||
      filter_grad->assigned_device() != grad.assigned_device() || !IsFloat(*filter_grad) ||
      !SameConvolution(*chain.conv, *filter_grad)) {
    return nullptr;
  }
  return filter_grad;
}

// In a training graph the chain's result `out` is read by its MaxPool, by that pool's
// MaxPoolGrad and, after a Relu, by the ReluGrad of the MaxPoolGrad's result, and by nothing
// else. Then the pool keeps its argmax and one node computes the gradient from it
// (_FusedConv2DMaxPoolGrad): the convolution's full-size output is never stored. That node
// also sums the bias's gradient, for a BiasAddGrad of its result. Fills in `chain`'s pool and
// gradients; false if `out` is read otherwise.
bool FindPoolWithGradient(const Node& out, Chain& chain) {
  const bool relu = chain.relu != nullptr;
  if (out.out_edges().size() != (relu ? 3u : 2u)) return false;
  const Node *pool = nullptr, *pool_grad = nullptr, *relu_grad = nullptr;
  for (const Edge* e : out.out_edges()) {
    const Node* next = e->dst;
    if (e->IsControl() || e->src_output != 0 || next->assigned_device() != out.assigned_device() || !IsFloat(*next)) {
      return false;
    }
    if (next->op() == "MaxPool" && e->dst_input == 0) pool = next;
    if (next->op() == "MaxPoolGrad" && e->dst_input == 0) pool_grad = next;
    if (next->op() == "ReluGrad" && e->dst_input == 1) relu_grad = next;
  }
  if (pool == nullptr || pool_grad == nullptr || (relu && relu_grad == nullptr) || !PoolsRowsAndColumns(*pool)) {
    return false;
  }
  // The argmax numbers a window's cells in a uint8, 255 meaning none (devices/cpu/pooling.h).
  std::vector<int64_t> ksize;
  if (!pool->GetAttr("ksize", &ksize).ok() || ksize[1] <= 0 || ksize[2] <= 0 || ksize[1] * ksize[2] > 255) return false;
  const Edge* orig_output = pool_grad->input_edge(1);
  if (orig_output == nullptr || orig_output->src != pool || orig_output->src_output != 0 ||
      !SameWindows(*pool, *pool_grad)) {
    return false;
  }
  if (relu) {
    const auto& reads = pool_grad->out_edges();
    if (reads.size() != 1 || reads[0]->dst != relu_grad || reads[0]->dst_input != 0 || reads[0]->src_output != 0) {
      return false;
    }
  }
  chain.max_pool = pool;
  chain.max_pool_grad = pool_grad;
  chain.relu_grad = relu_grad;
  const Node* grad = relu ? relu_grad : pool_grad;
  for (const Edge* e : grad->out_edges()) {
    const Node* next = e->dst;
    if (!e->IsControl() && e->src_output == 0 && e->dst_input == 0 && next->op() == "BiasAddGrad" &&
        next->assigned_device() == out.assigned_device() && IsFloat(*next) && IsNhwc(*next)) {
      chain.bias_add_grad = next;
    }
  }
  chain.backprop_filter = SoleFilterGradient(*grad, chain);
  return true;
}

std::vector<Chain> FindChains(const Graph& graph) {
  std::vector<Chain> chains;
  for (const Node* conv : graph.nodes()) {
    if (conv->op() == "MatMul" && OnCpuOrGpu(*conv) && IsFloat(*conv)) {
      const Node* bias_add = SoleConsumer(*conv, "BiasAdd");
      if (bias_add != nullptr && IsNhwc(*bias_add)) chains.push_back({conv, bias_add, SoleConsumer(*bias_add, "Relu"), nullptr});
      continue;
    }
    const bool depthwise = conv->op() == "DepthwiseConv2dNative";
    if (!(conv->op() == "Conv2D" || (depthwise && OnCpu(*conv))) || !OnCpuOrGpu(*conv) || !IsFloat(*conv) ||
        !IsNhwc(*conv)) {
      continue;
    }
    std::vector<int64_t> dilations;
    if (!conv->GetAttr("dilations", &dilations).ok() || dilations != std::vector<int64_t>{1, 1, 1, 1}) continue;
    if (depthwise) {
      const Node* bias_add = SoleConsumer(*conv, "BiasAdd");
      if (bias_add == nullptr || !IsNhwc(*bias_add)) continue;
      const Node* relu = SoleConsumer(*bias_add, "Relu");
      chains.push_back({conv, bias_add, relu != nullptr ? relu : SoleConsumer(*bias_add, "Relu6"), nullptr});
      continue;
    }
    const Node* bias_add = SoleConsumer(*conv, "BiasAdd");
    if (bias_add == nullptr || !IsNhwc(*bias_add)) continue;
    const Node* relu = SoleConsumer(*bias_add, "Relu");
    if (relu == nullptr && OnCpu(*conv)) {
      if (const Node* relu6 = SoleConsumer(*bias_add, "Relu6"); relu6 != nullptr) {
        chains.push_back({conv, bias_add, relu6, nullptr});
        continue;
      }
    }
    const Node* max_pool = OnCpu(*conv) ? SoleConsumer(relu != nullptr ? *relu : *bias_add, "MaxPool") : nullptr;
    if (max_pool != nullptr && !PoolsRowsAndColumns(*max_pool)) max_pool = nullptr;
    Chain chain{conv, bias_add, relu, max_pool};
    if (max_pool == nullptr && OnCpu(*conv)) FindPoolWithGradient(relu != nullptr ? *relu : *bias_add, chain);
    chains.push_back(chain);
  }
  return chains;
}

bool IsControlInput(const std::string& input) { return !input.empty() && input[0] == '^'; }

// Gives `node` the control inputs of the `parts` it replaces, once each, and marks those
// parts removed (but the one whose name it takes).
void TakeOver(NodeSpec& node, const std::vector<NodeSpec>& parts, std::set<std::string, std::less<>>& removed) {
  for (const NodeSpec& part : parts) {
    for (const std::string& input : part.inputs) {
      if (IsControlInput(input) && std::find(node.inputs.begin(), node.inputs.end(), input) == node.inputs.end()) {
        node.inputs.push_back(input);
      }
    }
    if (part.name != node.name) removed.insert(part.name);
  }
}

// The _FusedConv2DMaxPoolGrad that replaces chain `c`'s MaxPoolGrad (and ReluGrad), named
// as the last of them; `pooled` is the chain's fused node, which gives it the argmax.
NodeSpec PoolGradient(const Chain& c, const NodeSpec& conv, const NodeSpec& pooled) {
  const NodeSpec pool_grad = c.max_pool_grad->ToSpec();
  NodeSpec grad;
  grad.name = (c.relu_grad != nullptr ? c.relu_grad : c.max_pool_grad)->name();
  grad.op = "_FusedConv2DMaxPoolGrad";
  grad.device = pool_grad.device;
  for (const char* name : {"T", "strides", "padding", "data_format", "dilations"}) {
    if (auto it = conv.attrs.find(name); it != conv.attrs.end()) grad.attrs.emplace(name, it->second);
  }
  for (const char* name : {"ksize", "pool_strides", "pool_padding"}) grad.attrs.emplace(name, pooled.attrs.at(name));
  grad.inputs = {conv.inputs[0], conv.inputs[1], pooled.name + ":1", pool_grad.inputs[2]};
  return grad;
}

// Chain `c` as fused nodes by the names they take over (into `fused`), and the names of the
// nodes they replace (into `removed`).
void Fuse(const Chain& c, std::map<std::string, NodeSpec, std::less<>>& fused,
          std::set<std::string, std::less<>>& removed) {
  const Node* last = c.max_pool != nullptr ? c.max_pool : c.relu != nullptr ? c.relu : c.bias_add;
  NodeSpec conv = c.conv->ToSpec();
  NodeSpec bias_add = c.bias_add->ToSpec();
  NodeSpec node;
  node.name = last->name();
  node.op = c.conv->op() == "MatMul"                  ? "_FusedMatMul"
            : c.conv->op() == "DepthwiseConv2dNative" ? "_FusedDepthwiseConv2dNative"
            : c.max_pool != nullptr                   ? "_FusedConv2DMaxPool"
                                                      : "_FusedConv2D";
  node.device = conv.device;
  node.attrs = conv.attrs;
  node.attrs["num_args"] = int64_t{1};
  node.attrs["fused_ops"] = c.relu == nullptr ? std::string("BiasAdd") : StrCat("BiasAdd,", c.relu->op());
  node.inputs = {conv.inputs[0], conv.inputs[1], bias_add.inputs[1]};
  std::vector<NodeSpec> parts = {conv, bias_add};
  if (c.relu != nullptr) parts.push_back(c.relu->ToSpec());
  if (c.max_pool != nullptr) {
    NodeSpec pool = c.max_pool->ToSpec();
    node.attrs["ksize"] = pool.attrs.at("ksize");
    node.attrs["pool_strides"] = pool.attrs.at("strides");
    node.attrs["pool_padding"] = pool.attrs.at("padding");
    parts.push_back(std::move(pool));
  }
  TakeOver(node, parts, removed);
  if (c.max_pool_grad != nullptr) {
    node.op = "_FusedConv2DMaxPoolWithArgmax";
    NodeSpec grad = PoolGradient(c, conv, node);
    std::vector<NodeSpec> grad_parts = {c.max_pool_grad->ToSpec()};
    if (c.relu_grad != nullptr) grad_parts.push_back(c.relu_grad->ToSpec());
    if (c.backprop_filter != nullptr) {
      grad.op = "_FusedConv2DMaxPoolBackpropFilter";
      grad.name = c.backprop_filter->name();
      grad_parts.push_back(c.backprop_filter->ToSpec());
    }
    TakeOver(grad, grad_parts, removed);
    if (c.bias_add_grad != nullptr) {
      // The gradient node sums the bias's gradient too; the BiasAddGrad's name hands it on.
      NodeSpec bias_grad;
      bias_grad.name = c.bias_add_grad->name();
      bias_grad.op = "Identity";
      bias_grad.device = grad.device;
      bias_grad.attrs["T"] = DataType::kFloat;
      bias_grad.inputs = {grad.name + ":1"};
      TakeOver(bias_grad, {c.bias_add_grad->ToSpec()}, removed);
      fused.emplace(bias_grad.name, std::move(bias_grad));
    }
    fused.emplace(grad.name, std::move(grad));
  }
  fused.emplace(node.name, std::move(node));
}

}  // namespace

// A constant of one value per channel (the last dimension) of `x`'s `channels`: [C] or
// [1, ..., 1, C], no more dimensions than x, which is then x's shape broadcast with it.
bool PerChannelOf(const Node& constant, const TensorShape& x) {
  const Tensor* t = constant.control_inputs().empty() ? constant.constant_value() : nullptr;
  if (t == nullptr || t->dtype() != DataType::kFloat || t->rank() == 0 || x.unknown_rank() || t->rank() > x.rank()) {
    return false;
  }
  const int64_t channels = x.dim(x.rank() - 1);
  return channels > 0 && t->NumElements() == channels && t->dim(t->rank() - 1) == channels;
}

// On a CPU, a float Mul of x by a per-channel constant whose one reader is an Add or AddV2
// of a constant of the same shape, and the Relu or Relu6 that alone reads that: one
// _FusedScaleOffset named as the last. It is a frozen batch normalisation that no
// convolution before it absorbed (DenseNet's, before each of its convolutions).
void FuseScaleOffsets(const Graph& graph, std::map<std::string, NodeSpec, std::less<>>& fused,
                      std::set<std::string, std::less<>>& removed) {
  for (const Node* mul : graph.nodes()) {
    if (mul->op() != "Mul" || !OnCpu(*mul) || !IsFloat(*mul) || mul->out_edges().size() != 1 ||
        fused.count(mul->name()) != 0 || removed.count(mul->name()) != 0) {
      continue;
    }
    int x = -1;
    for (int i = 0; i < 2 && x < 0; ++i) {
      const Edge* in = mul->input_edge(i);
      const Edge* other = mul->input_edge(1 - i);
      if (PerChannelOf(*other->src, in->src->output_shape(in->src_output))) x = i;
    }
    const Edge* out = mul->out_edges()[0];
    const Node* add = out->dst;
    if (x < 0 || out->IsControl() || (add->op() != "Add" && add->op() != "AddV2") ||
        add->assigned_device() != mul->assigned_device() || !IsFloat(*add)) {
      continue;
    }
    const Node* scale = mul->input_edge(1 - x)->src;
    const Node* offset = add->input_edge(1 - out->dst_input)->src;
    const Tensor* offset_value = offset->control_inputs().empty() ? offset->constant_value() : nullptr;
    if (offset_value == nullptr || offset_value->dtype() != DataType::kFloat ||
        !InferenceContext::SameButLeadingOnes(offset_value->shape(), scale->constant_value()->shape())) {
      continue;
    }
    const Node* relu = SoleConsumer(*add, "Relu");
    if (relu == nullptr) relu = SoleConsumer(*add, "Relu6");
    const NodeSpec mul_spec = mul->ToSpec(), add_spec = add->ToSpec();
    NodeSpec node;
    node.name = (relu != nullptr ? relu : add)->name();
    node.op = "_FusedScaleOffset";
    node.device = mul_spec.device;
    node.attrs = {{"T", DataType::kFloat}, {"activation", relu != nullptr ? relu->op() : std::string()}};
    node.inputs = {mul_spec.inputs[x], mul_spec.inputs[1 - x], add_spec.inputs[1 - out->dst_input]};
    std::vector<NodeSpec> parts = {mul_spec, add_spec};
    if (relu != nullptr) parts.push_back(relu->ToSpec());
    TakeOver(node, parts, removed);
    fused[node.name] = std::move(node);
  }
}

// On a CPU, a Sigmoid whose one reader is a Mul of it by the Sigmoid's own input: one _Swish
// named as the Mul (Keras's swish activation; EfficientNet has one after most convolutions).
void FuseSwishes(const Graph& graph, std::map<std::string, NodeSpec, std::less<>>& fused,
                 std::set<std::string, std::less<>>& removed) {
  for (const Node* sigmoid : graph.nodes()) {
    if (sigmoid->op() != "Sigmoid" || !OnCpu(*sigmoid) || !IsFloat(*sigmoid) || sigmoid->out_edges().size() != 1) {
      continue;
    }
    const Edge* out = sigmoid->out_edges()[0];
    const Node* mul = out->dst;
    if (out->IsControl() || mul->op() != "Mul" || mul->assigned_device() != sigmoid->assigned_device() ||
        fused.count(mul->name()) != 0 || removed.count(mul->name()) != 0) {
      continue;
    }
    const Edge* x = sigmoid->input_edge(0);
    const Edge* other = mul->input_edge(1 - out->dst_input);
    if (other->src != x->src || other->src_output != x->src_output) continue;
    const NodeSpec sigmoid_spec = sigmoid->ToSpec(), mul_spec = mul->ToSpec();
    NodeSpec node;
    node.name = mul->name();
    node.op = "_Swish";
    node.device = mul_spec.device;
    node.attrs = mul_spec.attrs;
    node.inputs = {sigmoid_spec.inputs[0]};
    TakeOver(node, {sigmoid_spec, mul_spec}, removed);
    fused[node.name] = std::move(node);
  }
}

StatusOr<std::unique_ptr<Graph>> Remap(std::unique_ptr<Graph> graph) {
  const std::vector<Chain> chains = FindChains(*graph);
  std::map<std::string, NodeSpec, std::less<>> fused;  // by the name it takes over
  std::set<std::string, std::less<>> removed;
  for (const Chain& c : chains) Fuse(c, fused, removed);
  FuseScaleOffsets(*graph, fused, removed);
  FuseSwishes(*graph, fused, removed);
  if (fused.empty()) return graph;
  std::vector<NodePart> parts;
  parts.reserve(graph->nodes().size());
  for (const Node* n : graph->nodes()) {
    if (removed.count(n->name()) != 0) continue;
    auto it = fused.find(n->name());
    if (it == fused.end()) {
      parts.push_back(NodePart::Copy(*n));
    } else {
      parts.push_back({std::move(it->second), nullptr, n->assigned_device()});
    }
  }
  return Graph::Assemble(parts, graph->op_registry());
}

}  // namespace tessera
