#include "training/saver.h"

#include "graph/builder/op_builder.h"

namespace tessera {

StatusOr<Saver> Saver::Create(const Scope& scope, const std::map<std::string, std::vector<Output>>& variables) {
  if (variables.empty()) return errors::InvalidArgument("A Saver needs at least one variable");
  const Scope s = scope.NewSubScope("save");
  std::vector<std::string> names;
  std::vector<Input> saved;
  std::vector<DataType> dtypes;
  std::vector<TensorShape> shapes;
  for (const auto& [name, copies] : variables) {
    if (copies.empty() || copies[0].node == nullptr) {
      return errors::InvalidArgument("Variable '", name, "' has no copies to save");
    }
    for (const Output& c : copies) {
      if (c.node == nullptr || c.type() != copies[0].type()) {
        return errors::InvalidArgument("The copies of variable '", name, "' differ in dtype");
      }
    }
    names.push_back(name);
    saved.push_back(copies[0]);
    dtypes.push_back(copies[0].type());
    shapes.push_back(copies[0].node->output_shape(copies[0].index));
  }
  Saver saver;
  Output filename = ops::Placeholder(s.WithOpName("filename"), DataType::kString, TensorShape());
  Output tensor_names = ops::Const(s.WithOpName("tensor_names"), Tensor::FromVector(names));
  std::vector<Input> save_inputs = {filename, tensor_names};
  save_inputs.insert(save_inputs.end(), saved.begin(), saved.end());
  Output save = ops::Build(s.WithOpName("save_tensors"), "SaveTensors", save_inputs);
  std::vector<Output> restored =
      ops::AllOutputs(ops::Build(s.WithOpName("restore_tensors"), "RestoreTensors", {filename, tensor_names},
                                 {{"dtypes", dtypes}, {"shapes", shapes}}));
  std::vector<Operation> assigns;
  size_t i = 0;
  for (const auto& [name, copies] : variables) {
    for (size_t k = 0; k < copies.size() && i < restored.size(); ++k) {
      const Scope at = s.WithOpName(k == 0 ? name : StrCat(name, "_", k));
      assigns.push_back(ops::Assign(at, copies[k], restored[i]).op());
    }
    ++i;
  }
  Operation restore_all = ops::NoOp(s.WithOpName("restore_all").WithControlDependencies(assigns));
  RETURN_IF_ERROR(scope.status());
  saver.filename_ = filename.name();
  saver.save_ = save.node->name();
  saver.restore_ = restore_all.name();
  return saver;
}

Status Saver::Save(Session& session, const std::string& path) const {
  std::vector<Tensor> out;
  return session.Run({{filename_, Tensor::Scalar(path)}}, {}, {save_}, &out);
}

Status Saver::Restore(Session& session, const std::string& path) const {
  std::vector<Tensor> out;
  return session.Run({{filename_, Tensor::Scalar(path)}}, {}, {restore_}, &out);
}

}  // namespace tessera
