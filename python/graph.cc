// tessera._core.Graph: the graph a Python program builds, node by node, each checked
// against its op's schema as it is added (types resolved, shapes inferred), as
// tf.Graph.create_op does through TensorFlow's C API. Names, scopes and device stacks are
// the Python side's; this side holds the nodes.

#include "graph/builder/gradients.h"
#include "graph/function.h"
#include "graph/graph.h"
#include "graph/op_registry.h"
#include "graph/serialize/graph_json.h"
#include "graph/serialize/meta_graph.h"
#include "graph/serialize/tensorflow_graph.h"
#include "python/bindings.h"
#include "saved_model/saved_model.h"

namespace tessera::python {
namespace {

using namespace nb::literals;

StatusOr<TensorShape> ShapeOf(nb::handle v) {
  if (v.is_none()) return TensorShape::UnknownRank();
  std::vector<int64_t> dims;
  for (nb::handle d : v) dims.push_back(d.is_none() ? TensorShape::kUnknownDim : nb::cast<int64_t>(d));
  return TensorShape::Make(dims);
}

nb::object PythonShape(const TensorShape& s) {
  if (s.unknown_rank()) return nb::none();
  nb::list dims;
  for (int64_t d : s.dims()) dims.append(d < 0 ? nb::none() : nb::cast(d));
  return dims;
}

// A Python value as the attr type `type` wants it: an int for "int", a dtype's name for
// "type", a list of ints or Nones (or None) for "shape", an array for "tensor".
StatusOr<AttrValue> ToAttr(nb::handle v, AttrType type) {
  try {
    switch (type) {
      case AttrType::kInt: return AttrValue(nb::cast<int64_t>(v));
      case AttrType::kFloat: return AttrValue(nb::cast<double>(v));
      case AttrType::kBool: return AttrValue(nb::cast<bool>(v));
      case AttrType::kString:
        if (nb::isinstance<nb::bytes>(v)) {
          nb::bytes b = nb::borrow<nb::bytes>(v);
          return AttrValue(std::string(b.c_str(), b.size()));
        }
        return AttrValue(nb::cast<std::string>(v));
      case AttrType::kType: {
        ASSIGN_OR_RETURN(DataType dt, DataTypeFromName(nb::cast<std::string>(v)));
        return AttrValue(dt);
      }
      case AttrType::kShape: {
        ASSIGN_OR_RETURN(TensorShape s, ShapeOf(v));
        return AttrValue(s);
      }
      case AttrType::kTensor: {
        // The graph keeps its own copy: the array may change after the constant is made.
        ASSIGN_OR_RETURN(Tensor t, TensorFromArray(v));
        return AttrValue(t.DeepCopy());
      }
      case AttrType::kListInt: return AttrValue(nb::cast<std::vector<int64_t>>(v));
      case AttrType::kListType: {
        std::vector<DataType> types;
        for (nb::handle t : v) {
          ASSIGN_OR_RETURN(DataType dt, DataTypeFromName(nb::cast<std::string>(t)));
          types.push_back(dt);
        }
        return AttrValue(types);
      }
      case AttrType::kListShape: {
        std::vector<TensorShape> shapes;
        for (nb::handle s : v) {
          ASSIGN_OR_RETURN(TensorShape shape, ShapeOf(s));
          shapes.push_back(shape);
        }
        return AttrValue(shapes);
      }
      case AttrType::kFunc: {
        // A function the Python side traced into a graph of its own: (that graph, its
        // argument Placeholders, its result tensors).
        auto parts = nb::cast<nb::tuple>(v);
        if (parts.size() != 3) break;
        auto fn = std::make_shared<FunctionDef>();
        fn->body = nb::cast<const GraphHandle&>(parts[0]).graph->ToSpec();
        fn->args = nb::cast<std::vector<std::string>>(parts[1]);
        fn->rets = nb::cast<std::vector<std::string>>(parts[2]);
        RETURN_IF_ERROR(FunctionBodyGraph(*fn, nullptr).status());
        return AttrValue(std::shared_ptr<const FunctionDef>(std::move(fn)));
      }
    }
  } catch (const nb::cast_error&) {
    return errors::InvalidArgument("expected a value of attr type ", AttrTypeName(type), ", got ",
                                   nb::cast<std::string>(nb::repr(v)));
  }
  return errors::Unimplemented("function-valued attrs cannot be set from Python yet");
}

// The attr type a value that no op schema declares (the runtime's "_..." attrs) has.
AttrType TypeOfValue(nb::handle v) {
  if (nb::isinstance<nb::bool_>(v)) return AttrType::kBool;
  if (nb::isinstance<nb::int_>(v)) return AttrType::kInt;
  if (nb::isinstance<nb::float_>(v)) return AttrType::kFloat;
  if (nb::isinstance<nb::list>(v) || nb::isinstance<nb::tuple>(v)) return AttrType::kListInt;
  return AttrType::kString;
}

nb::object PythonAttr(const AttrValue& a) {
  return std::visit(
      [](const auto& v) -> nb::object {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, DataType>) {
          return nb::str(std::string(DataTypeName(v)).c_str());
        } else if constexpr (std::is_same_v<T, TensorShape>) {
          return PythonShape(v);
        } else if constexpr (std::is_same_v<T, Tensor>) {
          return ArrayFromTensor(v);
        } else if constexpr (std::is_same_v<T, std::vector<DataType>>) {
          nb::list out;
          for (DataType dt : v) out.append(nb::str(std::string(DataTypeName(dt)).c_str()));
          return out;
        } else if constexpr (std::is_same_v<T, std::vector<TensorShape>>) {
          nb::list out;
          for (const TensorShape& s : v) out.append(PythonShape(s));
          return out;
        } else if constexpr (std::is_same_v<T, std::shared_ptr<const FunctionDef>>) {
          return nb::none();
        } else {
          return nb::cast(v);
        }
      },
      a.value());
}

// One op's schema, for the Python side to make its function from.
nb::dict OpDefDict(const OpDef& op) {
  auto args = [&op](const std::vector<ArgDef>& defs) {
    nb::list out;
    for (const ArgDef& a : defs) {
      nb::dict arg;
      arg["name"] = a.name;
      arg["type"] = a.type == DataType::kInvalid ? std::string() : std::string(DataTypeName(a.type));
      arg["type_attr"] = a.type_attr;
      arg["number_attr"] = a.number_attr;
      arg["type_list"] = IsTypeListArg(op, a);
      arg["is_ref"] = a.is_ref;
      out.append(arg);
    }
    return out;
  };
  nb::list attrs;
  for (const AttrDef& a : op.attrs) {
    nb::list allowed;
    for (DataType dt : a.allowed_types) allowed.append(std::string(DataTypeName(dt)));
    nb::dict attr;
    attr["name"] = a.name;
    attr["type"] = std::string(AttrTypeName(a.type));
    attr["has_default"] = a.default_value.has_value();
    attr["default"] = a.default_value ? PythonAttr(*a.default_value) : nb::none();
    attr["allowed_types"] = allowed;
    attrs.append(attr);
  }
  nb::dict out;
  out["name"] = op.name;
  out["inputs"] = args(op.inputs);
  out["outputs"] = args(op.outputs);
  out["attrs"] = attrs;
  out["is_stateful"] = op.is_stateful;
  return out;
}

const Node& FindOrRaise(const GraphHandle& g, const std::string& name) {
  const Node* n = g.graph->FindNode(name);
  if (n == nullptr) Raise(errors::NotFound("No node named '", name, "' in the graph"));
  return *n;
}

// The output "node:i" names.
Output OutputOrRaise(const GraphHandle& g, const std::string& name) {
  const TensorId id = ValueOrRaise(ParseTensorName(name));
  const Node& n = FindOrRaise(g, std::string(id.node));
  if (id.is_control() || id.index >= n.num_outputs()) {
    Raise(errors::InvalidArgument("'", name, "' names no output of ", n.DebugName()));
  }
  return Output(const_cast<Node*>(&n), id.index);
}

// What the Python side keeps of a node it did not add itself (a gradient's).
nb::dict NodeDict(const Node& n) {
  nb::list inputs, control_inputs, types, shapes;
  for (int i = 0; i < n.num_inputs(); ++i) {
    const Edge* e = n.input_edge(i);
    inputs.append(e->src_output == 0 ? e->src->name() : StrCat(e->src->name(), ":", e->src_output));
  }
  for (const Edge* e : n.control_inputs()) control_inputs.append(e->src->name());
  for (int i = 0; i < n.num_outputs(); ++i) {
    types.append(std::string(DataTypeName(n.output_type(i))));
    shapes.append(PythonShape(n.output_shape(i)));
  }
  nb::dict d;
  d["name"] = n.name();
  d["op"] = n.op();
  d["inputs"] = inputs;
  d["control_inputs"] = control_inputs;
  d["device"] = n.requested_device();
  d["output_types"] = types;
  d["output_shapes"] = shapes;
  return d;
}

// "x" as "x:0"; "x:1" and "^x" as they are.
std::string CanonicalInput(const std::string& name) {
  return name.empty() || name[0] == '^' || name.find(':') != std::string::npos ? name : name + ":0";
}

// Adds `spec`'s nodes to `g`, each named `prefix` + its name, its inputs renamed alike but
// for those `input_map` sends to tensors of `g` ("x:0" -> "y:1"). On error the nodes added
// so far stay (the Python side makes Operations of them, as of any failed call).
Status ImportSpec(GraphHandle& g, const GraphSpec& spec, const std::string& prefix,
                  const std::map<std::string, std::string>& input_map) {
  // Ordered and checked as a graph of its own first.
  ASSIGN_OR_RETURN(std::unique_ptr<Graph> ordered, Graph::FromSpec(spec));
  for (const Node* n : ordered->nodes()) {
    for (int i = 0; i < n->num_inputs(); ++i) {
      if (n->input_edge(i)->src->id() > n->id()) {
        return errors::Unimplemented("The graph has a while loop (", n->DebugName(), " takes a back edge from '",
                                     n->input_edge(i)->src->name(), "'): Python graphs cannot import loops yet");
      }
    }
  }
  for (const Node* n : ordered->nodes()) {
    NodeSpec def = n->ToSpec();
    def.name = prefix + def.name;
    for (std::string& in : def.inputs) {
      auto mapped = input_map.find(CanonicalInput(in));
      if (mapped != input_map.end()) {
        in = mapped->second;
      } else {
        in = in[0] == '^' ? "^" + prefix + in.substr(1) : prefix + in;
      }
    }
    for (std::string& c : def.colocate_with) c = prefix + c;
    RETURN_IF_ERROR(g.graph->AddNode(def).status());
  }
  return Status::OK();
}

nb::list TensorsOf(const std::vector<SignatureTensor>& tensors) {
  nb::list out;
  for (const SignatureTensor& t : tensors) {
    nb::dict d;
    d["key"] = t.key;
    d["name"] = t.tensor;
    d["dtype"] = t.dtype == DataType::kInvalid ? t.tf_dtype : std::string(DataTypeName(t.dtype));
    d["shape"] = PythonShape(t.shape);
    out.append(d);
  }
  return out;
}

}  // namespace

void BindGraph(nb::module_& m) {
  nb::class_<GraphHandle>(m, "Graph")
      .def(nb::init<>())
      .def(
          "add_node",
          [](GraphHandle& g, const std::string& name, const std::string& op, const std::vector<std::string>& inputs,
             const std::string& device, const std::vector<std::string>& colocate_with, nb::dict attrs) {
            NodeSpec spec;
            spec.name = name;
            spec.op = op;
            spec.inputs = inputs;
            spec.device = device;
            spec.colocate_with = colocate_with;
            const OpDef* def = g.graph->op_registry()->Find(op);
            for (auto [key, value] : attrs) {
              const std::string attr = nb::cast<std::string>(key);
              const AttrDef* attr_def = def == nullptr ? nullptr : def->FindAttr(attr);
              StatusOr<AttrValue> v = ToAttr(value, attr_def != nullptr ? attr_def->type : TypeOfValue(value));
              if (!v.ok()) Raise(v.status().WithPrefix(StrCat("Node '", name, "' (", op, ") attr '", attr, "': ")));
              spec.attrs[attr] = std::move(*v);
            }
            const Node* n = ValueOrRaise(g.graph->AddNode(spec));
            nb::list types, shapes;
            for (int i = 0; i < n->num_outputs(); ++i) {
              types.append(std::string(DataTypeName(n->output_type(i))));
              shapes.append(PythonShape(n->output_shape(i)));
            }
            return nb::make_tuple(types, shapes);
          },
          "name"_a, "op"_a, "inputs"_a, "device"_a, "colocate_with"_a, "attrs"_a,
          "Adds a node; returns its outputs' dtype names and shapes (None: unknown rank; None "
          "in a list: an unknown dimension).")
      .def(
          "update_merge_input",
          [](GraphHandle& g, const std::string& merge, int input, const std::string& source, int port) {
            Node* m = g.graph->FindNode(merge);
            Node* s = g.graph->FindNode(source);
            if (m == nullptr || s == nullptr) {
              Raise(errors::NotFound("No node '", m == nullptr ? merge : source, "' in the graph"));
            }
            OkOrRaise(g.graph->ConnectBackEdge(m, input, s, port));
          },
          "merge"_a, "input"_a, "source"_a, "port"_a,
          "Makes input `input` of Merge node `merge` come from output `port` of `source` (a loop's back edge).")
      .def(
          "refine_output_shape",
          [](GraphHandle& g, const std::string& name, int port, nb::handle shape) {
            Node* n = g.graph->FindNode(name);
            if (n == nullptr) Raise(errors::NotFound("No node '", name, "' in the graph"));
            OkOrRaise(g.graph->RefineOutputShape(n, port, ValueOrRaise(ShapeOf(shape))));
          },
          "node"_a, "port"_a, "shape"_a, "Narrows an output's static shape (Tensor.set_shape).")
      .def("has_node", [](const GraphHandle& g, const std::string& name) { return g.graph->FindNode(name) != nullptr; })
      .def("num_nodes", [](const GraphHandle& g) { return g.graph->num_nodes(); })
      .def("attrs",
           [](const GraphHandle& g, const std::string& name) {
             nb::dict out;
             for (const auto& [key, value] : FindOrRaise(g, name).attrs()) out[key.c_str()] = PythonAttr(value);
             return out;
           })
      .def(
          "add_gradients",
          [](GraphHandle& g, const std::vector<std::string>& ys, const std::vector<std::string>& xs,
             const std::vector<std::string>& grad_ys, const std::string& prefix, bool colocate,
             const std::string& device) {
            std::vector<Output> outputs, inputs;
            GradientOptions options;
            options.colocate_gradients_with_ops = colocate;
            options.zeros_for_unreached = false;
            for (const std::string& y : ys) outputs.push_back(OutputOrRaise(g, y));
            for (const std::string& x : xs) inputs.push_back(OutputOrRaise(g, x));
            for (const std::string& dy : grad_ys) options.grad_outputs.push_back(OutputOrRaise(g, dy));
            Scope scope = Scope::ForGraph(g.graph.get(), prefix);
            if (!device.empty()) scope = scope.WithDevice(device);
            std::vector<Output> grads;
            OkOrRaise(AddSymbolicGradients(scope, outputs, inputs, &grads, options));
            std::vector<std::string> names;
            for (const Output& o : grads) names.push_back(o.node == nullptr ? "" : o.name());
            return names;
          },
          "ys"_a, "xs"_a, "grad_ys"_a, "prefix"_a, "colocate"_a, "device"_a,
          "Adds d(sum of ys)/d(xs) under the name scope `prefix` (\"gradients\" in it, made "
          "unique); returns the gradients' names, \"\" where none reached an x. "
          "The nodes it added, even when it fails, are nodes_from(the count before).")
      .def("nodes_from",
           [](const GraphHandle& g, int start) {
             nb::list out;
             for (int i = std::max(start, 0); i < g.graph->num_nodes(); ++i) out.append(NodeDict(*g.graph->nodes()[i]));
             return out;
           })
      .def(
          "import_graph_def",
          [](GraphHandle& g, nb::bytes data, const std::string& prefix,
             const std::map<std::string, std::string>& input_map) {
            const std::string_view bytes(data.c_str(), data.size());
            const GraphSpec spec = ValueOrRaise(GraphSpecFromTensorFlow(bytes, SniffTensorFlowFormat(bytes)));
            OkOrRaise(ImportSpec(g, spec, prefix, input_map));
          },
          "graph_def"_a, "prefix"_a, "input_map"_a,
          "Adds a TensorFlow GraphDef's nodes (binary or text) under `prefix`.")
      .def(
          "as_graph_def",
          [](const GraphHandle& g, bool text) {
            const std::string out = ValueOrRaise(
                GraphSpecToTensorFlow(g.graph->ToSpec(), text ? TensorFlowFormat::kText : TensorFlowFormat::kBinary));
            return nb::bytes(out.data(), out.size());
          },
          "text"_a = false, "The graph as TensorFlow's GraphDef, binary or text.")
      .def(
          "import_saved_model",
          [](GraphHandle& g, const std::string& dir, const std::set<std::string>& tags, const std::string& prefix) {
            SavedModelPlan plan = ValueOrRaise(PlanSavedModelLoad(dir, tags));
            OkOrRaise(ImportSpec(g, plan.graph, prefix, {}));
            nb::list assets, signatures;
            for (const auto& [tensor, path] : plan.asset_feeds) {
              assets.append(nb::make_tuple(tensor, path.flat<std::string>()[0]));
            }
            for (const SignatureInfo& sig : plan.info.signatures) {
              nb::dict d;
              d["key"] = sig.key;
              d["method_name"] = sig.method_name;
              d["inputs"] = TensorsOf(sig.inputs);
              d["outputs"] = TensorsOf(sig.outputs);
              signatures.append(d);
            }
            nb::dict out;
            out["restore_op"] = plan.restore_op;
            out["filename_tensor"] = plan.filename_tensor;
            out["checkpoint"] = plan.checkpoint;
            out["init_op"] = plan.init_op;
            out["asset_feeds"] = assets;
            out["signatures"] = signatures;
            return out;
          },
          "export_dir"_a, "tags"_a, "prefix"_a,
          "Adds the graph of the SavedModel's MetaGraph tagged `tags`; returns how to restore and "
          "initialize it, and its signatures.")
      .def(
          "to_json",
          [](const GraphHandle& g, int start) {
            GraphSpec spec;
            for (int i = std::max(start, 0); i < g.graph->num_nodes(); ++i) {
              spec.nodes.push_back(g.graph->nodes()[i]->ToSpec());
            }
            return GraphSpecToJson(spec);
          },
          "start"_a = 0, "The nodes from `start` on as Tessera's JSON graph.");
  m.def(
      "serialize_meta_graph",
      [](nb::bytes graph_def, std::optional<std::tuple<std::string, std::string, std::string, int>> saver,
         const std::vector<std::tuple<std::string, std::string, std::string, std::string, bool>>& variables) {
        MetaGraph meta;
        meta.graph_def.assign(graph_def.c_str(), graph_def.size());
        if (saver) {
          const auto& [filename, save, restore, max_to_keep] = *saver;
          meta.saver = SaverNames{filename, save, restore, max_to_keep};
        }
        for (const auto& [variable, initializer, snapshot, initial_value, trainable] : variables) {
          meta.variables.push_back({variable, initializer, snapshot, initial_value, trainable});
        }
        const std::string bytes = ValueOrRaise(SerializeMetaGraph(meta));
        return nb::bytes(bytes.data(), bytes.size());
      },
      "graph_def"_a, "saver"_a.none(), "variables"_a,
      "A MetaGraphDef (TF1's PREFIX.meta) of a GraphDef, a Saver's (filename tensor, save tensor, restore op, "
      "max_to_keep) and the variables' (variable, initializer, snapshot, initial value, trainable) node names.");
  m.def(
      "parse_meta_graph",
      [](nb::bytes data, const std::string& what, bool clear_devices) {
        const MetaGraph meta =
            ValueOrRaise(ParseMetaGraph(std::string_view(data.c_str(), data.size()), what, clear_devices));
        nb::dict out;
        out["graph_def"] = nb::bytes(meta.graph_def.data(), meta.graph_def.size());
        if (meta.saver) {
          nb::dict saver;
          saver["filename_tensor_name"] = meta.saver->filename_tensor_name;
          saver["save_tensor_name"] = meta.saver->save_tensor_name;
          saver["restore_op_name"] = meta.saver->restore_op_name;
          saver["max_to_keep"] = meta.saver->max_to_keep;
          out["saver"] = saver;
        } else {
          out["saver"] = nb::none();
        }
        nb::list variables;
        for (const MetaGraphVariable& v : meta.variables) {
          nb::dict d;
          d["variable_name"] = v.variable_name;
          d["initializer_name"] = v.initializer_name;
          d["snapshot_name"] = v.snapshot_name;
          d["initial_value_name"] = v.initial_value_name;
          d["trainable"] = v.trainable;
          variables.append(d);
        }
        out["variables"] = variables;
        return out;
      },
      "data"_a, "what"_a, "clear_devices"_a = false,
      "A MetaGraphDef's graph, saver and variables; DataLossError naming `what` where it is damaged.");
  m.def("op_defs", [] {
    nb::list out;
    for (const std::string& name : OpRegistry::Global()->OpNames()) {
      out.append(OpDefDict(*OpRegistry::Global()->Find(name)));
    }
    return out;
  });
}

}  // namespace tessera::python
