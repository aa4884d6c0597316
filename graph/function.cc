#include "graph/function.h"

namespace tessera {

StatusOr<std::unique_ptr<Graph>> FunctionBodyGraph(const FunctionDef& fn, FunctionSignature* signature,
                                                   const OpRegistry* ops) {
  ASSIGN_OR_RETURN(std::unique_ptr<Graph> graph, Graph::FromSpec(fn.body, ops));
  for (const std::string& a : fn.args) {
    const Node* n = graph->FindNode(a);
    if (n == nullptr || n->op() != "Placeholder") {
      return errors::InvalidArgument("Function argument '", a, "' is not a Placeholder of its body");
    }
  }
  if (signature != nullptr) *signature = {};
  for (const std::string& r : fn.rets) {
    ASSIGN_OR_RETURN(TensorId id, ParseTensorName(r));
    const Node* n = graph->FindNode(id.node);
    if (n == nullptr || id.is_control() || id.index >= n->num_outputs()) {
      return errors::InvalidArgument("Function result '", r, "' names no tensor of its body");
    }
    if (signature != nullptr) {
      signature->ret_types.push_back(n->output_type(id.index));
      signature->ret_shapes.push_back(n->output_shape(id.index));
    }
  }
  return graph;
}

}  // namespace tessera
