#include "graph/builder/function_builder.h"

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
  RETURN_IF_ERROR(root.ToSpec(&fn.body));
  if (signature != nullptr) {
    *signature = {};
    for (const Output& r : rets) {
      signature->ret_types.push_back(r.type());
      signature->ret_shapes.push_back(r.node->output_shape(r.index));
    }
  }
  return fn;
}

}  // namespace tessera
