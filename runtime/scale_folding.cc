#include "runtime/scale_folding.h"

#include <map>
#include <set>
#include <string>
#include <vector>

#include "graph/op_kinds.h"

namespace tessera {
namespace {

// The value of a Const with no control inputs, else nullptr.
const Tensor* ConstValue(const Node& n) {
  if (!IsConstant(n.op()) || !n.control_inputs().empty()) return nullptr;
  auto it = n.attrs().find("value");
  return it == n.attrs().end() ? nullptr : it->second.get_if<Tensor>();
}

bool IsFloat(const Node& n) {
  DataType t = DataType::kInvalid;
  return n.GetAttr("T", &t).ok() && t == DataType::kFloat;
}

// How many output channels `conv` makes from its constant `filter`, 0 for a node this pass
// leaves alone.
int64_t OutputChannels(const Node& conv, const Tensor& filter) {
  if (!IsFloat(conv) || filter.dtype() != DataType::kFloat) return 0;
  if (conv.op() == "MatMul") {
    bool transpose_b = true;
    return conv.GetAttr("transpose_b", &transpose_b).ok() && !transpose_b && filter.rank() == 2 ? filter.dim(1) : 0;
  }
  std::string format;
  if (!conv.GetAttr("data_format", &format).ok() || format != "NHWC" || filter.rank() != 4) return 0;
  if (conv.op() == "Conv2D") return filter.dim(3);
  if (conv.op() == "DepthwiseConv2dNative") return filter.dim(2) * filter.dim(3);
  return 0;
}

// `n`'s one reader when it is a float `ops` on the same device that reads `n`'s output 0, and
// nothing else (control edges included) leaves `n`; with the reader's other input's node.
std::pair<const Node*, const Node*> SoleBinaryReader(const Node& n, std::initializer_list<std::string_view> ops) {
  if (n.out_edges().size() != 1) return {};
  const Edge* e = n.out_edges()[0];
  const Node* next = e->dst;
  if (e->IsControl() || e->src_output != 0 || next->assigned_device() != n.assigned_device() || !IsFloat(*next) ||
      std::find(ops.begin(), ops.end(), next->op()) == ops.end()) {
    return {};
  }
  const Edge* other = next->input_edge(1 - e->dst_input);
  return {next, other == nullptr ? nullptr : other->src};
}

// A constant of one value per output channel: `channels` elements, every dimension but the
// last 1, and no more dimensions than the product's output.
const Tensor* PerChannel(const Node* n, int64_t channels, int rank) {
  const Tensor* t = n == nullptr ? nullptr : ConstValue(*n);
  if (t == nullptr || t->dtype() != DataType::kFloat || t->rank() == 0 || t->rank() > rank ||
      t->dim(t->rank() - 1) != channels || t->NumElements() != channels) {
    return nullptr;
  }
  return t;
}

NodeSpec Constant(std::string name, const Node& like, Tensor value) {
  NodeSpec c;
  c.name = std::move(name);
  c.op = "Const";
  c.device = like.requested_device();
  c.attrs = {{"dtype", value.dtype()}, {"value", std::move(value)}};
  return c;
}

bool IsControlInput(const std::string& input) { return !input.empty() && input[0] == '^'; }

}  // namespace

StatusOr<std::unique_ptr<Graph>> FoldScalesIntoFilters(std::unique_ptr<Graph> graph) {
  std::map<std::string, std::pair<NodeSpec, std::string>, std::less<>> replaced;  // by name: node, device
  std::vector<std::pair<NodeSpec, std::string>> added;
  std::set<std::string, std::less<>> removed;
  std::set<std::string> names;
  for (const Node* n : graph->nodes()) names.insert(n->name());
  const auto unique_name = [&](const std::string& base) {
    std::string name = base;
    for (int i = 1; !names.insert(name).second; ++i) name = base + "_" + std::to_string(i);
    return name;
  };
  for (const Node* conv : graph->nodes()) {
    if (conv->op() != "Conv2D" && conv->op() != "DepthwiseConv2dNative" && conv->op() != "MatMul") continue;
    const Edge* filter_edge = conv->input_edge(1);
    const Tensor* filter = filter_edge == nullptr ? nullptr : ConstValue(*filter_edge->src);
    const int64_t channels = filter == nullptr ? 0 : OutputChannels(*conv, *filter);
    if (channels == 0) continue;
    const int rank = conv->op() == "MatMul" ? 2 : 4;
    auto [mul, scale_node] = SoleBinaryReader(*conv, {"Mul"});
    const Tensor* scale = PerChannel(scale_node, channels, rank);
    NodeSpec folded = conv->ToSpec();
    const Node* last = conv;
    std::vector<const Node*> parts = {conv};
    if (scale != nullptr) {
      // Output channel k of a depthwise convolution, c * multiplier + m, is filter[.., c, m]:
      // in every layout here the channels are the filter's innermost elements.
      Tensor scaled(DataType::kFloat, filter->shape());
      const float* f = filter->data<float>();
      const float* s = scale->data<float>();
      float* out = scaled.data<float>();
      for (int64_t i = 0; i < filter->NumElements(); ++i) out[i] = f[i] * s[i % channels];
      NodeSpec c = Constant(unique_name(mul->name() + "/folded_filter"), *filter_edge->src, std::move(scaled));
      folded.inputs[1] = c.name;
      added.emplace_back(std::move(c), filter_edge->src->assigned_device());
      last = mul;
      parts.push_back(mul);
    }
    auto [add, offset_node] = SoleBinaryReader(*last, {"Add", "AddV2"});
    const Tensor* offset = PerChannel(offset_node, channels, rank);
    if (scale == nullptr && offset == nullptr) continue;
    NodeSpec bias_add;
    if (offset != nullptr) {
      Tensor bias(DataType::kFloat, TensorShape({channels}));
      std::copy(offset->data<float>(), offset->data<float>() + channels, bias.data<float>());
      NodeSpec b = Constant(unique_name(add->name() + "/bias"), *offset_node, std::move(bias));
      bias_add.name = add->name();
      bias_add.op = "BiasAdd";
      bias_add.device = add->requested_device();
      bias_add.attrs = {{"T", DataType::kFloat}, {"data_format", std::string("NHWC")}};
      bias_add.inputs = {conv->name(), b.name};
      added.emplace_back(std::move(b), offset_node->assigned_device());
      parts.push_back(add);
    }
    // The product takes the name of the last node it absorbs, unless a BiasAdd follows it.
    folded.name = offset != nullptr ? conv->name() : last->name();
    for (const Node* part : parts) {
      for (const std::string& input : part->ToSpec().inputs) {
        if (IsControlInput(input) && std::find(folded.inputs.begin(), folded.inputs.end(), input) == folded.inputs.end()) {
          folded.inputs.push_back(input);
        }
      }
      removed.insert(part->name());
    }
    // Constants that only the absorbed nodes read go with them.
    for (const Node* c : std::initializer_list<const Node*>{filter_edge->src, scale != nullptr ? scale_node : nullptr, offset != nullptr ? offset_node : nullptr}) {
      if (c != nullptr && c->out_edges().size() == 1 && (scale != nullptr || c != filter_edge->src)) {
        removed.insert(c->name());
      }
    }
    removed.erase(folded.name);
    const std::string name = folded.name;
    replaced[name] = {std::move(folded), conv->assigned_device()};
    if (offset != nullptr) {
      removed.erase(bias_add.name);
      const std::string bias_name = bias_add.name;
      replaced[bias_name] = {std::move(bias_add), add->assigned_device()};
    }
  }
  if (replaced.empty()) return graph;
  std::vector<NodePart> nodes;
  for (const Node* n : graph->nodes()) {
    if (removed.count(n->name()) != 0) continue;
    auto it = replaced.find(n->name());
    nodes.push_back(it == replaced.end() ? NodePart::Copy(*n) : NodePart{it->second.first, nullptr, it->second.second});
  }
  for (auto& [spec, device] : added) nodes.push_back({std::move(spec), nullptr, device});
  return Graph::Assemble(nodes, graph->op_registry());
}

}  // namespace tessera
