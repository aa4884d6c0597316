#include "graph/function.h"

#include "graph/builder/ops.h"

namespace tessera {

StatusOr<FunctionDef> BuildFunction(const std::vector<DataType>& arg_types,
                                    const std::vector<TensorShape>& arg_shapes, const FunctionBody& body,
                                    FunctionSignature* signature) {
  if (arg_types.size() != arg_shapes.size()) {
    return errors::InvalidArgument("A function has ", arg_types.size(), " argument types but ",
                                   arg_shapes.size(), " shapes");
  }
  Scope root = Scope::NewRootScope();
  FunctionDef fn;
  std::vector<Output> args;
  for (size_t i = 0; i < arg_types.size(); ++i) {
    args.push_back(ops::Placeholder(root.WithOpName(StrCat("arg_", i)), arg_types[i], arg_shapes[i]));
  }
  RETURN_IF_ERROR(root.status());
  for (const Output& a : args) fn.args.push_back(a.node->name());
  std::vector<Output> rets = body(root, args);
  RETURN_IF_ERROR(root.status());
  for (const Output& r : rets) {
    if (r.node == nullptr) return errors::InvalidArgument("A function returned an empty Output");
    fn.rets.push_back(r.name());
  }
  RETURN_IF_ERROR(root.ToGraphDef(&fn.body));
  if (signature != nullptr) {
    *signature = {};
    for (const Output& r : rets) {
      signature->ret_types.push_back(r.type());
      signature->ret_shapes.push_back(r.node->output_shape(r.index));
    }
  }
  return fn;
}

StatusOr<std::unique_ptr<Graph>> FunctionBodyGraph(const FunctionDef& fn, FunctionSignature* signature) {
  ASSIGN_OR_RETURN(std::unique_ptr<Graph> graph, Graph::FromGraphDef(fn.body));
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
