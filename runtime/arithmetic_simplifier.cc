#include "runtime/arithmetic_simplifier.h"

#include <map>
#include <optional>
#include <string>

#include "graph/op_kinds.h"
#include "runtime/graph_rewrites.h"

namespace tessera {
namespace {

// Whether n is a Const every element of which is `value`.
bool IsConstantOf(const Node& n, double value) {
  const Tensor* t = n.constant_value();
  if (t == nullptr || !n.control_inputs().empty()) return false;
  const auto all = [&](const auto* data) {
    for (int64_t i = 0; i < t->NumElements(); ++i) {
      if (static_cast<double>(data[i]) != value) return false;
    }
    return true;
  };
  switch (t->dtype()) {
    case DataType::kFloat: return all(t->data<float>());
    case DataType::kDouble: return all(t->data<double>());
    case DataType::kInt32: return all(t->data<int32_t>());
    case DataType::kInt64: return all(t->data<int64_t>());
    default: return false;
  }
}

// The tensor a node hands on unchanged, if it is one of the patterns above.
std::optional<std::pair<const Node*, int>> PassedThrough(const Node& n) {
  if (!n.control_inputs().empty() || n.num_outputs() != 1 || n.output_is_ref(0)) return std::nullopt;
  const auto input = [&n](int i) { return std::make_pair(n.input_edge(i)->src, n.input_edge(i)->src_output); };
  const auto here = [&n](const Node* src) { return src->assigned_device() == n.assigned_device(); };
  const std::string& op = n.op();
  if (IsIdentity(op) && !n.input_is_ref(0)) {
    const auto [src, port] = input(0);
    // An Identity of a variable's reference is a read at the time it runs (TF1's
    // `<variable>/read`): without it, each consumer would read the variable when it runs,
    // perhaps after an update of the same step. TensorFlow's dependency optimizer keeps
    // these reads too.
    if (here(src) && !IsControlFlow(src->op()) && !src->output_is_ref(port)) return input(0);
  } else if (op == "Neg") {
    const Node* inner = n.input_edge(0)->src;
    if (inner->op() == "Neg" && here(inner) && inner->control_inputs().empty() && here(inner->input_edge(0)->src)) {
      return std::make_pair(inner->input_edge(0)->src, inner->input_edge(0)->src_output);
    }
  } else if (op == "Mul" || op == "Add" || op == "AddV2" || op == "Sub") {
    const double identity = op == "Mul" ? 1 : 0;
    for (int keep : {0, 1}) {
      if (op == "Sub" && keep == 1) break;  // 0 - x is not x
      const auto [src, port] = input(keep);
      const Node* other = n.input_edge(1 - keep)->src;
      const TensorShape& shape = n.output_shape(0);
      // The constant must not broadcast x to a larger shape: a scalar never does (Keras's
      // swish multiplies by one activations whose batch is unknown); another constant only
      // where x's shape is known in full.
      // Not of a variable's reference: x * 1 reads the variable when it runs, as Identity does.
      if (here(src) && !src->output_is_ref(port) && IsConstantOf(*other, identity) &&
          (other->constant_value()->rank() == 0 || (shape.IsFullyDefined() && src->output_shape(port) == shape))) {
        return input(keep);
      }
    }
  }
  return std::nullopt;
}

// An IdentityN of which one output alone is read hands on that input: a custom gradient's
// forward pass (Keras's swish hands on x * sigmoid(x), and x for its gradient) read by
// inference.
std::optional<std::pair<const Node*, int>> SoleOutputPassed(const Node& n) {
  if (n.op() != "IdentityN" || !n.control_inputs().empty()) return std::nullopt;
  int read = -1;
  for (const Edge* e : n.out_edges()) {
    if (e->IsControl()) continue;
    if (read >= 0 && e->src_output != read) return std::nullopt;
    read = e->src_output;
  }
  if (read < 0) return std::nullopt;
  const Edge* in = n.input_edge(read);
  if (in->src->assigned_device() != n.assigned_device() || IsControlFlow(in->src->op()) ||
      in->src->output_is_ref(in->src_output)) {
    return std::nullopt;
  }
  return std::make_pair(in->src, in->src_output);
}

}  // namespace

StatusOr<std::unique_ptr<Graph>> SimplifyArithmetic(std::unique_ptr<Graph> graph) {
  std::map<std::string, Replacement> dropped;
  for (const Node* n : graph->nodes()) {
    if (auto sole = SoleOutputPassed(*n)) {
      dropped.emplace(n->name(), Replacement{sole->first->name(), std::vector<int>(n->num_outputs(), sole->second)});
      continue;
    }
    auto passed = PassedThrough(*n);
    if (!passed) continue;
    dropped.emplace(n->name(), Replacement{passed->first->name(), {passed->second}});
    // The inner Neg of two, when the outer one was all that read it, goes too.
    const Node* inner = n->op() == "Neg" ? n->input_edge(0)->src : nullptr;
    if (inner != nullptr && inner->out_edges().size() == 1) dropped.emplace(inner->name(), Replacement{passed->first->name(), {passed->second}});
  }
  if (dropped.empty()) return graph;
  return DropNodes(*graph, dropped);
}

}  // namespace tessera
