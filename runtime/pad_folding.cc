#include "runtime/pad_folding.h"

#include <map>
#include <set>
#include <string>
#include <vector>

#include "graph/shape_inference.h"

namespace tessera {
namespace {

const Tensor* ConstValue(const Node& n) { return n.control_inputs().empty() ? n.constant_value() : nullptr; }

// The paddings [[0, 0], [top, bottom], [left, right], [0, 0]] of a zero Pad, or empty.
std::vector<int64_t> ZeroPaddings(const Node& pad) {
  if (pad.op() != "Pad" && pad.op() != "PadV2") return {};
  const Edge* p = pad.input_edge(1);
  const Tensor* paddings = p == nullptr ? nullptr : ConstValue(*p->src);
  if (paddings == nullptr || paddings->shape() != TensorShape({4, 2}) ||
      (paddings->dtype() != DataType::kInt32 && paddings->dtype() != DataType::kInt64)) {
    return {};
  }
  if (pad.op() == "PadV2") {
    const Edge* v = pad.input_edge(2);
    const Tensor* value = v == nullptr ? nullptr : ConstValue(*v->src);
    if (value == nullptr || value->dtype() != DataType::kFloat || value->NumElements() != 1 ||
        value->data<float>()[0] != 0.f) {
      return {};
    }
  }
  std::vector<int64_t> p8 = IntTensorValues(*paddings);
  if (p8[0] != 0 || p8[1] != 0 || p8[6] != 0 || p8[7] != 0) return {};
  return {p8[2], p8[3], p8[4], p8[5]};
}

// Whether a VALID window of `k` with `stride` over `in` padded by `before` and `after` reads
// what SAME's windows over `in` read: as many windows, starting at the same place.
bool SameAsSame(int64_t in, int64_t k, int64_t stride, int64_t before, int64_t after) {
  int64_t valid_out = 0, same_out = 0, same_before = 0, unused = 0;
  return WindowedOutputSize(in + before + after, k, stride, "VALID", &valid_out, &unused).ok() &&
         WindowedOutputSize(in, k, stride, "SAME", &same_out, &same_before).ok() && valid_out == same_out &&
         before == same_before;
}

}  // namespace

StatusOr<std::unique_ptr<Graph>> FoldPadsIntoConvolutions(std::unique_ptr<Graph> graph) {
  std::map<std::string, NodeSpec, std::less<>> replaced;
  std::set<std::string, std::less<>> removed;
  for (const Node* conv : graph->nodes()) {
    if (conv->op() != "Conv2D" && conv->op() != "DepthwiseConv2dNative") continue;
    std::string padding, format;
    std::vector<int64_t> strides, dilations;
    const Edge* in = conv->input_edge(0);
    const Edge* filter = conv->input_edge(1);
    if (!conv->GetAttr("padding", &padding).ok() || padding != "VALID" || !conv->GetAttr("data_format", &format).ok() ||
        format != "NHWC" || !conv->GetAttr("strides", &strides).ok() || strides.size() != 4 ||
        !conv->GetAttr("dilations", &dilations).ok() || dilations != std::vector<int64_t>{1, 1, 1, 1} || in == nullptr ||
        filter == nullptr || in->src_output != 0) {
      continue;
    }
    const Node& pad = *in->src;
    const std::vector<int64_t> p = ZeroPaddings(pad);
    if (p.empty() || pad.out_edges().size() != 1 || pad.assigned_device() != conv->assigned_device()) continue;
    const Edge* x = pad.input_edge(0);
    const TensorShape& x_shape = x->src->output_shape(x->src_output);
    const TensorShape& f_shape = filter->src->output_shape(filter->src_output);
    if (x_shape.unknown_rank() || x_shape.rank() != 4 || x_shape.dim(1) < 0 || x_shape.dim(2) < 0 ||
        f_shape.unknown_rank() || f_shape.rank() != 4 || f_shape.dim(0) < 1 || f_shape.dim(1) < 1 ||
        !SameAsSame(x_shape.dim(1), f_shape.dim(0), strides[1], p[0], p[1]) ||
        !SameAsSame(x_shape.dim(2), f_shape.dim(1), strides[2], p[2], p[3])) {
      continue;
    }
    NodeSpec folded = conv->ToSpec();
    folded.attrs["padding"] = std::string("SAME");
    folded.inputs[0] = x->src_output == 0 ? x->src->name() : StrCat(x->src->name(), ":", x->src_output);
    for (const std::string& control : pad.ToSpec().inputs) {
      if (!control.empty() && control[0] == '^') folded.inputs.push_back(control);
    }
    removed.insert(pad.name());
    replaced.emplace(conv->name(), std::move(folded));
  }
  if (replaced.empty()) return graph;
  std::vector<NodePart> nodes;
  for (const Node* n : graph->nodes()) {
    if (removed.count(n->name()) != 0) continue;
    auto it = replaced.find(n->name());
    nodes.push_back(it == replaced.end() ? NodePart::Copy(*n) : NodePart{it->second, nullptr, n->assigned_device()});
  }
  return Graph::Assemble(nodes, graph->op_registry());
}

}  // namespace tessera
