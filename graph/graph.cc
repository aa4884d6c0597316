#include "graph/graph.h"

#include <algorithm>
#include <cctype>
#include <queue>

#include "graph/op_kinds.h"

namespace tessera {
namespace {

std::string TypeListString(const std::vector<DataType>& types) {
  std::string s;
  for (size_t i = 0; i < types.size(); ++i) {
    if (i > 0) s += ", ";
    s += DataTypeName(types[i]);
  }
  return s;
}

bool AttrMatchesType(const AttrValue& v, AttrType t) {
  if (v.type() == t) return true;
  // An int literal is acceptable where a float is declared (JSON "1" for 1.0).
  return t == AttrType::kFloat && v.type() == AttrType::kInt;
}

// Resolved types of the node being added, from its op's ArgDefs and attrs.
struct ArgTypes {
  std::vector<DataType> types;
  std::vector<bool> is_ref;
};

// A node's list inputs and outputs hold at most this many tensors: each costs the graph,
// the placer and the executor memory, and a 300-byte graph asking for ten million outputs
// took 2.9 GB. No real model comes near it.
constexpr int64_t kMaxListLength = int64_t{1} << 16;

StatusOr<ArgTypes> ExpandArgs(const OpDef& op, const std::vector<ArgDef>& args, const AttrMap& attrs,
                              std::string_view node) {
  ArgTypes out;
  auto too_long = [&](std::string_view attr, int64_t n) {
    return errors::InvalidArgument("Node '", node, "' (", op.name, "): attr '", attr, "' asks for ", n,
                                   " tensors in one list; at most ", kMaxListLength, " are allowed");
  };
  for (const ArgDef& a : args) {
    if (IsTypeListArg(op, a)) {
      std::vector<DataType> list;
      RETURN_IF_ERROR(GetAttr(attrs, node, a.type_attr, &list));
      if (static_cast<int64_t>(list.size()) > kMaxListLength) return too_long(a.type_attr, list.size());
      out.types.insert(out.types.end(), list.begin(), list.end());
      out.is_ref.insert(out.is_ref.end(), list.size(), a.is_ref);
      continue;
    }
    DataType dt = a.type;
    if (!a.type_attr.empty()) RETURN_IF_ERROR(GetAttr(attrs, node, a.type_attr, &dt));
    ASSIGN_OR_RETURN(int64_t count, ArgLength(op, a, attrs, node));
    if (count > kMaxListLength) return too_long(a.number_attr, count);
    for (int64_t i = 0; i < count; ++i) {
      out.types.push_back(dt);
      out.is_ref.push_back(a.is_ref);
    }
  }
  return out;
}

std::string ShapesString(const std::vector<TensorShape>& shapes) {
  std::string s;
  for (size_t i = 0; i < shapes.size(); ++i) {
    if (i > 0) s += ", ";
    s += shapes[i].DebugString();
  }
  return s;
}

}  // namespace

bool IsValidNodeName(std::string_view name) {
  if (name.empty()) return false;
  auto ok_first = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '.'; };
  auto ok_rest = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '/' ||
           c == '-';
  };
  if (!ok_first(name[0])) return false;
  return std::all_of(name.begin() + 1, name.end(), ok_rest);
}

const Tensor* Node::constant_value() const {
  if (!IsConstant(op())) return nullptr;
  auto it = attrs_.find("value");
  return it == attrs_.end() ? nullptr : it->second.get_if<Tensor>();
}

std::string Node::DebugName() const { return StrCat("'", name_, "' (", op(), ")"); }

NodeSpec Node::ToSpec() const {
  NodeSpec def;
  def.name = name_;
  def.op = op();
  for (const Edge* e : data_inputs_) {
    def.inputs.push_back(e->src_output == 0 ? e->src->name()
                                            : StrCat(e->src->name(), ":", e->src_output));
  }
  for (const Edge* e : control_inputs_) def.inputs.push_back("^" + e->src->name());
  def.device = requested_device_;
  def.colocate_with = colocate_with_;
  def.attrs = attrs_;
  def.device_from_function = requested_by_function_;
  return def;
}

Graph::Graph(const OpRegistry* ops) : ops_(ops) {}

Node* Graph::FindNode(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

namespace graph_internal {

// One data or control input of the node being added.
struct InputSource {
  Node* node;
  int port;
};

struct ResolvedInputs {
  std::vector<InputSource> data;
  std::vector<InputSource> control;
};

}  // namespace graph_internal

namespace {

using graph_internal::InputSource;
using graph_internal::ResolvedInputs;

// The node's name is valid and unused, its op is registered and declares every attr given.
StatusOr<const OpDef*> ValidateNodeSpec(const NodeSpec& def, const Graph& graph, const OpRegistry& ops,
                                       const std::string& where) {
  // Names starting with '_' are reserved for the runtime's own ops (_Arg, _Retval, ...).
  bool internal = def.name.starts_with("_") && def.op.starts_with("_") &&
                  IsValidNodeName(std::string_view(def.name).substr(1));
  if (!internal && !IsValidNodeName(def.name)) {
    return errors::InvalidArgument("Node name '", def.name,
                                   "' is not valid: use letters, digits and _ . / -");
  }
  if (graph.FindNode(def.name) != nullptr) {
    return errors::InvalidArgument("Duplicate node name '", def.name, "'");
  }
  const OpDef* op = ops.Find(def.op);
  if (op == nullptr) {
    return errors::NotFound("Op type not registered '", def.op, "' (node '", def.name, "')");
  }
  for (const auto& [name, value] : def.attrs) {
    if (name.starts_with("_")) continue;
    const AttrDef* ad = op->FindAttr(name);
    if (ad == nullptr) {
      return errors::InvalidArgument("Node ", where, " has attr '", name,
                                     "' which op ", def.op, " does not declare");
    }
  }
  return op;
}

// Every input names an existing node and output; data inputs come before control inputs.
StatusOr<ResolvedInputs> ResolveInputs(const NodeSpec& def, const Graph& graph, const std::string& where) {
  ResolvedInputs in;
  for (const std::string& input : def.inputs) {
    StatusOr<TensorId> id = ParseTensorName(input);
    if (!id.ok()) return id.status().WithSuffix(StrCat(" in the inputs of node ", where));
    Node* src = graph.FindNode(id->node);
    if (src == nullptr) {
      return errors::InvalidArgument("Node ", where, " has input '", input,
                                     "' which names an unknown node '", id->node, "'");
    }
    if (id->is_control()) {
      in.control.push_back({src, kControlSlot});
      continue;
    }
    if (!in.control.empty()) {
      return errors::InvalidArgument("Node ", where, ": data input '", input,
                                     "' comes after a control input");
    }
    if (id->index >= src->num_outputs()) {
      return errors::InvalidArgument("Node ", where, " has input '", input, "' but node ",
                                     src->DebugName(), " has only ", src->num_outputs(),
                                     " outputs");
    }
    in.data.push_back({src, id->index});
  }
  return in;
}

// The number of tensors each input arg takes, given `have` data inputs. A list input
// ("N * T", or a list(type) attr) has the length its attr gives; at most one list whose attr
// is unset takes whatever the other inputs leave, and its number attr is set.
StatusOr<std::vector<int64_t>> InferListLengths(const OpDef& op, int64_t have, const std::string& where,
                                               AttrMap& attrs) {
  auto is_type_list = [&op](const ArgDef& a) { return IsTypeListArg(op, a); };
  auto is_list = [&](const ArgDef& a) { return !a.number_attr.empty() || is_type_list(a); };
  std::vector<int64_t> lengths(op.inputs.size(), 1);
  int open_list = -1;
  int64_t given = 0;
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    const ArgDef& a = op.inputs[i];
    if (!is_list(a)) {
      given += 1;
      continue;
    }
    auto it = attrs.find(is_type_list(a) ? a.type_attr : a.number_attr);
    if (it == attrs.end()) {
      if (open_list >= 0) {
        return errors::InvalidArgument("Node ", where, " has several list inputs; set the attrs of all but one");
      }
      open_list = static_cast<int>(i);
      continue;
    }
    if (is_type_list(a)) {
      const auto* list = it->second.get_if<std::vector<DataType>>();
      if (list == nullptr) {
        return errors::InvalidArgument("Node ", where, ": attr '", a.type_attr, "' must be a list of dtypes, got ",
                                       it->second.DebugString());
      }
      lengths[i] = static_cast<int64_t>(list->size());
    } else {
      const int64_t* n = it->second.get_if<int64_t>();
      if (n == nullptr || *n < 0) {
        return errors::InvalidArgument("Node ", where, ": attr '", a.number_attr,
                                       "' must be a non-negative int, got ", it->second.DebugString());
      }
      lengths[i] = *n;
    }
    given += lengths[i];
  }
  if (open_list >= 0) {
    lengths[open_list] = have - given;
    const ArgDef& a = op.inputs[open_list];
    if (lengths[open_list] >= 0 && !is_type_list(a)) attrs[a.number_attr] = AttrValue(lengths[open_list]);
  }
  if (open_list >= 0 ? have < given : have != given) {
    return errors::InvalidArgument("Node ", where, " expects ", given, open_list >= 0 ? " or more" : "",
                                   " data inputs, got ", have);
  }
  return lengths;
}

// Sets the type attrs the inputs determine, and checks every input's type and reference-ness.
Status InferTypeAttrs(const OpDef& op, const std::vector<int64_t>& lengths, const std::vector<InputSource>& data,
                      const std::string& where, AttrMap& attrs) {
  auto is_type_list = [&op](const ArgDef& a) { return IsTypeListArg(op, a); };
  size_t k = 0;
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    const ArgDef& a = op.inputs[i];
    const int64_t count = lengths[i];
    if (is_type_list(a) && attrs.find(a.type_attr) == attrs.end()) {
      std::vector<DataType> inferred;
      for (int64_t j = 0; j < count; ++j) inferred.push_back(data[k + j].node->output_type(data[k + j].port));
      attrs[a.type_attr] = AttrValue(std::move(inferred));
    }
    for (int64_t j = 0; j < count; ++j, ++k) {
      const InputSource& s = data[k];
      DataType got = s.node->output_type(s.port);
      bool got_ref = s.node->output_is_ref(s.port);
      std::string src_name = s.port == 0 ? s.node->name() : StrCat(s.node->name(), ":", s.port);
      if (a.is_ref && !got_ref) {
        return errors::InvalidArgument("Input ", k, " ('", a.name, "') of node ", where,
                                       " must be a reference (from a Variable), but '", src_name,
                                       "' from ", s.node->DebugName(), " is a value");
      }
      DataType want = a.type;
      if (is_type_list(a)) {
        want = (*attrs.find(a.type_attr)->second.get_if<std::vector<DataType>>())[j];
      } else if (!a.type_attr.empty()) {
        auto it = attrs.find(a.type_attr);
        if (it == attrs.end()) {
          attrs[a.type_attr] = AttrValue(got);
          want = got;
        } else if (const DataType* dt = it->second.get_if<DataType>()) {
          want = *dt;
        } else {
          return errors::InvalidArgument("Node ", where, ": attr '", a.type_attr,
                                         "' must be a dtype, got ", it->second.DebugString());
        }
      }
      if (got != want) {
        return errors::InvalidArgument("Input ", k, " ('", a.name, "') of node ", where,
                                       " expects ", DataTypeName(want), " but '", src_name,
                                       "' is ", DataTypeName(got));
      }
    }
  }
  return Status::OK();
}

// Adds the defaults of attrs not given, then checks every declared attr's type and range.
Status AddDefaultsAndCheckAttrs(const OpDef& op, const std::string& where, AttrMap& attrs) {
  for (const AttrDef& ad : op.attrs) {
    auto it = attrs.find(ad.name);
    if (it == attrs.end()) {
      if (!ad.default_value) {
        return errors::InvalidArgument("Node ", where, " is missing attr '", ad.name, "' (",
                                       AttrTypeName(ad.type), ")");
      }
      it = attrs.emplace(ad.name, *ad.default_value).first;
    }
    if (!AttrMatchesType(it->second, ad.type)) {
      return errors::InvalidArgument("Node ", where, ": attr '", ad.name, "' must be ",
                                     AttrTypeName(ad.type), ", got ",
                                     AttrTypeName(it->second.type()));
    }
    if (ad.type == AttrType::kFloat && it->second.type() == AttrType::kInt) {
      it->second = AttrValue(static_cast<double>(*it->second.get_if<int64_t>()));
    }
    if (!ad.allowed_types.empty()) {
      DataType dt = *it->second.get_if<DataType>();
      if (std::find(ad.allowed_types.begin(), ad.allowed_types.end(), dt) ==
          ad.allowed_types.end()) {
        return errors::InvalidArgument("Node ", where, ": value for attr '", ad.name, "' of ",
                                       DataTypeName(dt), " is not in the list of allowed values: ",
                                       TypeListString(ad.allowed_types));
      }
    }
    if (ad.minimum) {
      const AttrValue& v = it->second;
      // An int's value, or a list's length.
      const int64_t n = std::visit(
          [](const auto& x) -> int64_t {
            using T = std::decay_t<decltype(x)>;
            if constexpr (std::is_same_v<T, int64_t>) {
              return x;
            } else if constexpr (requires { x.size(); } && !std::is_same_v<T, std::string>) {
              return static_cast<int64_t>(x.size());
            } else {
              return 0;
            }
          },
          v.value());
      if (n < *ad.minimum) {
        return errors::InvalidArgument("Node ", where, ": attr '", ad.name, "' is ", v.DebugString(),
                                       ", must be at least ", *ad.minimum, v.get_if<int64_t>() ? "" : " long");
      }
    }
  }
  return Status::OK();
}

// The outputs' shapes from the op's shape function, which sees the values of Const inputs.
StatusOr<std::vector<TensorShape>> InferShapes(const std::string& name, const OpDef& op, const AttrMap& attrs,
                                               const std::vector<InputSource>& data, int num_outputs) {
  std::vector<TensorShape> in_shapes;
  std::vector<const Tensor*> in_values;
  for (const InputSource& s : data) {
    in_shapes.push_back(s.node->output_shape(s.port));
    in_values.push_back(s.node->constant_value());
  }
  InferenceContext ctx(name, attrs, in_shapes, in_values, num_outputs);
  Status shape_status = op.shape_fn(ctx);
  if (!shape_status.ok()) {
    return Status(shape_status.code(),
                  StrCat(shape_status.message(), " for '", name, "' (op: '", op.name,
                         "') with input shapes: ", ShapesString(in_shapes), "."));
  }
  return ctx.outputs();
}

}  // namespace

// The steps TensorFlow's graph construction takes: validate, resolve inputs, infer type
// attrs, add defaults, infer shapes, then wire the node into the graph.
StatusOr<Node*> Graph::AddNode(const NodeSpec& def) {
  const std::string where = StrCat("'", def.name, "' (", def.op, ")");
  ASSIGN_OR_RETURN(const OpDef* op, ValidateNodeSpec(def, *this, *ops_, where));
  ASSIGN_OR_RETURN(ResolvedInputs in, ResolveInputs(def, *this, where));
  AttrMap attrs = def.attrs;
  ASSIGN_OR_RETURN(std::vector<int64_t> lengths,
                   InferListLengths(*op, static_cast<int64_t>(in.data.size()), where, attrs));
  RETURN_IF_ERROR(InferTypeAttrs(*op, lengths, in.data, where, attrs));
  RETURN_IF_ERROR(AddDefaultsAndCheckAttrs(*op, where, attrs));
  ASSIGN_OR_RETURN(ArgTypes in_types, ExpandArgs(*op, op->inputs, attrs, def.name));
  ASSIGN_OR_RETURN(ArgTypes out_types, ExpandArgs(*op, op->outputs, attrs, def.name));
  ASSIGN_OR_RETURN(std::vector<TensorShape> output_shapes,
                   InferShapes(def.name, *op, attrs, in.data, static_cast<int>(out_types.types.size())));

  Node& n = nodes_.emplace_back();
  n.op_def_ = op;
  n.attrs_ = std::move(attrs);
  n.input_types_ = std::move(in_types.types);
  n.input_is_ref_ = std::move(in_types.is_ref);
  n.output_types_ = std::move(out_types.types);
  n.output_is_ref_ = std::move(out_types.is_ref);
  n.output_shapes_ = std::move(output_shapes);
  return Wire(n, def, in);
}

// A copy keeps what its source resolved; only its inputs are new, so only their types are
// checked, and its shapes follow from them.
StatusOr<Node*> Graph::AddCopy(const NodeSpec& def, const Node& source) {
  const std::string where = StrCat("'", def.name, "' (", source.op(), ")");
  if (FindNode(def.name) != nullptr) return errors::InvalidArgument("Duplicate node name '", def.name, "'");
  ASSIGN_OR_RETURN(ResolvedInputs in, ResolveInputs(def, *this, where));
  if (static_cast<int>(in.data.size()) != source.num_inputs()) {
    return errors::InvalidArgument("Node ", where, " copies ", source.DebugName(), ", which has ", source.num_inputs(),
                                   " data inputs, with ", in.data.size());
  }
  for (size_t i = 0; i < in.data.size(); ++i) {
    const InputSource& s = in.data[i];
    // A reference output may feed a value input, as in AddNode; not the other way round.
    if (s.node->output_type(s.port) != source.input_type(static_cast<int>(i)) ||
        (source.input_is_ref(static_cast<int>(i)) && !s.node->output_is_ref(s.port))) {
      return errors::InvalidArgument("Input ", i, " of node ", where, " expects ",
                                     DataTypeName(source.input_type(static_cast<int>(i))), " but '", def.inputs[i],
                                     "' is ", DataTypeName(s.node->output_type(s.port)));
    }
  }
  AttrMap attrs = source.attrs_;
  for (const auto& [name, value] : def.attrs) attrs[name] = value;
  ASSIGN_OR_RETURN(std::vector<TensorShape> output_shapes,
                   InferShapes(def.name, *source.op_def_, attrs, in.data, source.num_outputs()));
  Node& n = nodes_.emplace_back();
  n.op_def_ = source.op_def_;
  n.attrs_ = std::move(attrs);
  n.input_types_ = source.input_types_;
  n.input_is_ref_ = source.input_is_ref_;
  n.output_types_ = source.output_types_;
  n.output_is_ref_ = source.output_is_ref_;
  n.output_shapes_ = std::move(output_shapes);
  return Wire(n, def, in);
}

Node* Graph::Wire(Node& n, const NodeSpec& def, const ResolvedInputs& in) {
  n.id_ = static_cast<int>(node_ptrs_.size());
  n.name_ = def.name;
  n.requested_device_ = def.device;
  n.colocate_with_ = def.colocate_with;
  n.requested_by_function_ = def.device_from_function;
  for (size_t i = 0; i < in.data.size(); ++i) {
    Edge& e = edges_.emplace_back(Edge{in.data[i].node, in.data[i].port, &n, static_cast<int>(i)});
    n.data_inputs_.push_back(&e);
    in.data[i].node->out_edges_.push_back(&e);
  }
  for (const InputSource& s : in.control) {
    Edge& e = edges_.emplace_back(Edge{s.node, kControlSlot, &n, kControlSlot});
    n.control_inputs_.push_back(&e);
    s.node->out_edges_.push_back(&e);
  }
  node_ptrs_.push_back(&n);
  by_name_.emplace(n.name_, &n);
  return &n;
}

namespace {

// A loop's back edge: data input `input` of Merge `merge` comes from NextIteration `source`.
struct BackEdge {
  size_t merge;
  size_t input;
  size_t source;
  int port;
};

}  // namespace

Status Graph::RefineOutputShape(Node* node, int port, const TensorShape& shape) {
  if (port < 0 || port >= node->num_outputs()) {
    return errors::InvalidArgument(node->DebugName(), " has no output ", port);
  }
  const TensorShape& known = node->output_shapes_[port];
  if (!known.IsCompatibleWith(shape)) {
    return errors::InvalidArgument("Shapes ", known.DebugString(), " and ", shape.DebugString(), " of ",
                                   node->DebugName(), " output ", port, " are incompatible");
  }
  if (shape.unknown_rank()) return Status::OK();
  TensorShape merged = shape;
  for (int i = 0; i < merged.rank(); ++i) {
    if (merged.dim(i) < 0 && !known.unknown_rank()) merged.set_dim(i, known.dim(i));
  }
  node->output_shapes_[port] = merged;
  return Status::OK();
}

Status Graph::ConnectBackEdge(Node* merge, int input, Node* source, int port) {
  const std::string where = merge->DebugName();
  if (!IsMerge(merge->op()) || input < 0 || input >= merge->num_inputs()) {
    return errors::InvalidArgument("Node ", where, " is no Merge with an input ", input, " for a back edge");
  }
  if (port < 0 || port >= source->num_outputs()) {
    return errors::InvalidArgument("Node ", where, " has input '", source->name(), ":", port, "' but node ",
                                   source->DebugName(), " has only ", source->num_outputs(), " outputs");
  }
  if (source->output_type(port) != merge->input_type(input) || source->output_is_ref(port) != merge->input_is_ref(input)) {
    return errors::InvalidArgument("Input ", input, " of node ", where, " expects ", DataTypeName(merge->input_type(input)),
                                   " but '", source->name(), "' is ", DataTypeName(source->output_type(port)));
  }
  Edge* e = const_cast<Edge*>(merge->data_inputs_[input]);
  std::erase(e->src->out_edges_, e);
  e->src = source;
  e->src_output = port;
  source->out_edges_.push_back(e);
  return Status::OK();
}

StatusOr<std::unique_ptr<Graph>> Graph::FromSpec(const GraphSpec& def, const OpRegistry* ops) {
  std::vector<const NodeSpec*> defs;
  defs.reserve(def.nodes.size());
  for (const NodeSpec& n : def.nodes) defs.push_back(&n);
  return Build(defs, std::vector<const Node*>(defs.size()), std::vector<const std::string*>(defs.size()), ops);
}

StatusOr<std::unique_ptr<Graph>> Graph::Assemble(const std::vector<NodePart>& parts, const OpRegistry* ops) {
  std::vector<const NodeSpec*> defs;
  std::vector<const Node*> sources;
  std::vector<const std::string*> assigned;
  for (const NodePart& p : parts) {
    defs.push_back(&p.def);
    sources.push_back(p.copy_of);
    assigned.push_back(&p.assigned_device);
  }
  return Build(defs, sources, assigned, ops);
}

NodePart NodePart::Copy(const Node& n) {
  NodePart part;
  part.copy_of = &n;
  part.def.name = n.name();
  part.def.op = n.op();
  for (int i = 0; i < n.num_inputs(); ++i) {
    const Edge* e = n.input_edge(i);
    part.def.inputs.push_back(e->src_output == 0 ? e->src->name() : StrCat(e->src->name(), ":", e->src_output));
  }
  for (const Edge* e : n.control_inputs()) part.def.inputs.push_back("^" + e->src->name());
  part.def.device = n.requested_device();
  part.def.colocate_with = n.colocate_with();
  part.def.device_from_function = n.requested_by_function();
  part.assigned_device = n.assigned_device();
  return part;
}

StatusOr<std::unique_ptr<Graph>> Graph::Build(const std::vector<const NodeSpec*>& defs,
                                              const std::vector<const Node*>& sources,
                                              const std::vector<const std::string*>& assigned,
                                              const OpRegistry* ops) {
  const size_t num = defs.size();
  const auto op_of = [&](size_t i) -> const std::string& {
    return sources[i] != nullptr ? sources[i]->op() : defs[i]->op;
  };
  // Kahn's algorithm over names, keeping the given order among ready nodes. A while loop's
  // back edges (NextIteration into Merge) are left out of the order and connected last.
  std::map<std::string_view, size_t, std::less<>> index;
  for (size_t i = 0; i < num; ++i) {
    if (!index.emplace(defs[i]->name, i).second) {
      return errors::InvalidArgument("Duplicate node name '", defs[i]->name, "'");
    }
  }
  std::vector<int> pending(num, 0);
  std::vector<std::vector<size_t>> consumers(num);
  std::vector<BackEdge> back_edges;
  for (size_t i = 0; i < num; ++i) {
    size_t data_input = 0;
    for (const std::string& input : defs[i]->inputs) {
      StatusOr<TensorId> id = ParseTensorName(input);
      if (!id.ok()) {
        return id.status().WithSuffix(StrCat(" in the inputs of node '", defs[i]->name, "'"));
      }
      auto it = index.find(id->node);
      if (it == index.end()) {
        return errors::InvalidArgument("Node '", defs[i]->name, "' (", op_of(i), ") has input '", input,
                                       "' which names an unknown node '", id->node, "'");
      }
      if (!id->is_control() && IsMerge(op_of(i)) && IsNextIteration(op_of(it->second))) {
        back_edges.push_back({i, data_input++, it->second, id->index});
        continue;
      }
      if (!id->is_control()) ++data_input;
      ++pending[i];
      consumers[it->second].push_back(i);
    }
  }
  std::vector<size_t> order;
  std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
  for (size_t i = 0; i < num; ++i) {
    if (pending[i] == 0) ready.push(i);
  }
  while (!ready.empty()) {
    size_t i = ready.top();
    ready.pop();
    order.push_back(i);
    for (size_t c : consumers[i]) {
      if (--pending[c] == 0) ready.push(c);
    }
  }
  if (order.size() != num) {
    std::string cyclic;
    int listed = 0;
    for (size_t i = 0; i < num && listed < 5; ++i) {
      if (pending[i] > 0) {
        cyclic += StrCat(listed++ ? ", '" : "'", defs[i]->name, "'");
      }
    }
    return errors::InvalidArgument("Graph has a cycle: these nodes can never run: ", cyclic);
  }
  // A Merge is first added with its back edges standing in for its first other input,
  // which has the same type, then rewired once their sources exist.
  std::map<size_t, NodeSpec> with_stand_ins;
  for (const BackEdge& b : back_edges) {
    auto [it, inserted] = with_stand_ins.try_emplace(b.merge, *defs[b.merge]);
    NodeSpec& merge = it->second;
    std::string stand_in;
    for (size_t k = 0, data = 0; k < merge.inputs.size() && stand_in.empty(); ++k) {
      if (merge.inputs[k].starts_with("^")) continue;
      const bool is_back = std::any_of(back_edges.begin(), back_edges.end(),
                                       [&](const BackEdge& o) { return o.merge == b.merge && o.input == data; });
      if (!is_back) stand_in = merge.inputs[k];
      ++data;
    }
    if (stand_in.empty()) {
      return errors::InvalidArgument("Node '", merge.name, "' (", op_of(b.merge),
                                     ") has only NextIteration inputs: a loop needs a way in");
    }
    for (size_t k = 0, data = 0; k < merge.inputs.size(); ++k) {
      if (merge.inputs[k].starts_with("^")) continue;
      if (data++ == b.input) merge.inputs[k] = stand_in;
    }
  }
  auto g = std::make_unique<Graph>(ops);
  for (size_t i : order) {
    auto stand_in = with_stand_ins.find(i);
    const NodeSpec& def = stand_in == with_stand_ins.end() ? *defs[i] : stand_in->second;
    ASSIGN_OR_RETURN(Node* n, sources[i] != nullptr ? g->AddCopy(def, *sources[i]) : g->AddNode(def));
    if (assigned[i] != nullptr && !assigned[i]->empty()) n->set_assigned_device(*assigned[i]);
  }
  for (const BackEdge& b : back_edges) {
    RETURN_IF_ERROR(g->ConnectBackEdge(g->FindNode(defs[b.merge]->name), static_cast<int>(b.input),
                                       g->FindNode(defs[b.source]->name), b.port));
  }
  return g;
}

GraphSpec Graph::ToSpec() const {
  GraphSpec def;
  for (const Node* n : node_ptrs_) def.nodes.push_back(n->ToSpec());
  return def;
}

}  // namespace tessera
