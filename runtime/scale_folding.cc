#include "runtime/scale_folding.h"

#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "runtime/graph_rewrites.h"

namespace tessera {
namespace {

// The value of a Const with no control inputs, else nullptr.
const Tensor* ConstValue(const Node& n) { return n.control_inputs().empty() ? n.constant_value() : nullptr; }

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

// Where `conv`'s one reader is a float NHWC FusedBatchNorm (any version) with given
// statistics, constant ones, and nothing reads its outputs but y: that normalisation as a
// scale and an offset per channel, with the constants it reads.
bool InferenceBatchNorm(const Node& conv, int64_t channels, Tensor* scale, Tensor* offset,
                        std::vector<const Node*>* constants) {
  if (conv.out_edges().size() != 1) return false;
  const Edge* e = conv.out_edges()[0];
  const Node& bn = *e->dst;
  bool training = true;
  float epsilon = 0;
  std::string format;
  if (e->IsControl() || e->src_output != 0 || e->dst_input != 0 || bn.op().rfind("FusedBatchNorm", 0) != 0 ||
      bn.assigned_device() != conv.assigned_device() || !bn.GetAttr("is_training", &training).ok() || training ||
      !bn.GetAttr("epsilon", &epsilon).ok() || !bn.GetAttr("data_format", &format).ok() || format != "NHWC") {
    return false;
  }
  for (const Edge* out : bn.out_edges()) {
    if (!out->IsControl() && out->src_output != 0) return false;
  }
  const Tensor* params[4];
  std::vector<const Node*> read;
  for (int i = 0; i < 4; ++i) {
    const Edge* in = bn.input_edge(i + 1);
    params[i] = in == nullptr ? nullptr : ConstValue(*in->src);
    if (params[i] == nullptr || params[i]->dtype() != DataType::kFloat || params[i]->shape() != TensorShape({channels})) {
      return false;
    }
    read.push_back(in->src);
  }
  constants->insert(constants->end(), read.begin(), read.end());
  *scale = Tensor(DataType::kFloat, TensorShape({channels}));
  *offset = Tensor(DataType::kFloat, TensorShape({channels}));
  for (int64_t c = 0; c < channels; ++c) {
    const float s = params[0]->data<float>()[c] / std::sqrt(params[3]->data<float>()[c] + epsilon);
    scale->data<float>()[c] = s;
    offset->data<float>()[c] = params[1]->data<float>()[c] - params[2]->data<float>()[c] * s;
  }
  return true;
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
    // What the convolution absorbs: a scale, an offset (each [channels], or empty), the nodes
    // that applied them and their constant inputs.
    Tensor scale, offset;
    std::vector<const Node*> absorbed, constants;
    if (conv->op() != "MatMul" && InferenceBatchNorm(*conv, channels, &scale, &offset, &constants)) {
      absorbed.push_back(conv->out_edges()[0]->dst);
    } else {
      const int rank = conv->op() == "MatMul" ? 2 : 4;
      const Node* last = conv;
      // A bias the product already adds (Keras's use_bias before its BatchNormalization) is
      // scaled with it: (x + b) * s + o = x * s + (b * s + o).
      Tensor bias;
      if (auto [bias_add, bias_node] = SoleBinaryReader(*conv, {"BiasAdd"});
          bias_add != nullptr && bias_add->input_edge(0)->src == conv && IsNhwc(*bias_add)) {
        if (const Tensor* b = PerChannel(bias_node, channels, 1); b != nullptr) {
          auto [next, unused] = SoleBinaryReader(*bias_add, {"Mul", "Add", "AddV2"});
          if (next != nullptr) {
            bias = *b;
            absorbed.push_back(bias_add);
            constants.push_back(bias_node);
            last = bias_add;
          }
        }
      }
      auto [mul, scale_node] = SoleBinaryReader(*last, {"Mul"});
      if (const Tensor* s = PerChannel(scale_node, channels, rank); s != nullptr) {
        scale = *s;
        absorbed.push_back(mul);
        constants.push_back(scale_node);
        last = mul;
      }
      auto [add, offset_node] = SoleBinaryReader(*last, {"Add", "AddV2"});
      if (const Tensor* o = PerChannel(offset_node, channels, rank); o != nullptr) {
        offset = *o;
        absorbed.push_back(add);
        constants.push_back(offset_node);
        last = add;
      }
      if (bias.NumElements() > 0) {
        if (last == absorbed.front()) continue;  // the bias alone: the remapper fuses it as it is
        // The bias goes into the offset, scaled as the product is.
        if (offset.NumElements() == 0) offset = Tensor(DataType::kFloat, TensorShape({channels}));
        else offset = offset.DeepCopy();
        for (int64_t c = 0; c < channels; ++c) {
          offset.data<float>()[c] += bias.data<float>()[c] * (scale.NumElements() > 0 ? scale.data<float>()[c] : 1.f);
        }
      }
    }
    if (absorbed.empty()) continue;
    NodeSpec folded = conv->ToSpec();
    if (scale.NumElements() > 0) {
      // Output channel k of a depthwise convolution, c * multiplier + m, is filter[.., c, m]:
      // in every layout here the channels are the filter's innermost elements.
      Tensor scaled(DataType::kFloat, filter->shape());
      const float* f = filter->data<float>();
      const float* by = scale.data<float>();
      float* out = scaled.data<float>();
      for (int64_t i = 0; i < filter->NumElements(); ++i) out[i] = f[i] * by[i % channels];
      NodeSpec c = ConstantLike(unique_name(absorbed[0]->name() + "/folded_filter"), *filter_edge->src, std::move(scaled));
      folded.inputs[1] = c.name;
      added.emplace_back(std::move(c), filter_edge->src->assigned_device());
      constants.push_back(filter_edge->src);
    }
    const Node& last = *absorbed.back();
    // The product takes the name of the last node it absorbs, unless a BiasAdd follows it.
    folded.name = offset.NumElements() > 0 ? conv->name() : last.name();
    std::vector<const Node*> parts = absorbed;
    parts.push_back(conv);
    for (const Node* part : parts) {
      for (const std::string& input : part->ToSpec().inputs) {
        if (IsControlInput(input) && std::find(folded.inputs.begin(), folded.inputs.end(), input) == folded.inputs.end()) {
          folded.inputs.push_back(input);
        }
      }
      removed.insert(part->name());
    }
    // Constants that only the absorbed nodes read go with them.
    for (const Node* c : constants) {
      if (c->out_edges().size() == 1) removed.insert(c->name());
    }
    if (offset.NumElements() > 0) {
      Tensor bias(DataType::kFloat, TensorShape({channels}));
      std::copy(offset.data<float>(), offset.data<float>() + channels, bias.data<float>());
      NodeSpec b = ConstantLike(unique_name(last.name() + "/bias"), last, std::move(bias));
      NodeSpec bias_add;
      bias_add.name = last.name();
      bias_add.op = "BiasAdd";
      bias_add.device = last.requested_device();
      bias_add.attrs = {{"T", DataType::kFloat}, {"data_format", std::string("NHWC")}};
      bias_add.inputs = {conv->name(), b.name};
      added.emplace_back(std::move(b), last.assigned_device());
      removed.erase(last.name());
      replaced[last.name()] = {std::move(bias_add), last.assigned_device()};
    }
    removed.erase(folded.name);
    const std::string name = folded.name;
    replaced[name] = {std::move(folded), conv->assigned_device()};
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
