#include "graph/serialize/tensorflow_functions.h"

#include <deque>
#include <map>
#include <set>

#include "graph/platform/str_split.h"

namespace tessera {
namespace {

namespace pb = tessera::tfgraph;
using Attrs = std::map<std::string, pb::AttrValue>;

// Inlining copies each body once per call: a bound on what a few kilobytes of nested calls
// may grow to.
constexpr size_t kMaxNodes = size_t{1} << 20;

const pb::AttrValue* Find(const google::protobuf::RepeatedPtrField<pb::AttrEntry>& attrs, std::string_view key) {
  const pb::AttrValue* found = nullptr;
  for (const pb::AttrEntry& e : attrs) {
    if (e.key() == key) found = &e.value();  // the last of a repeated key, as protobuf's maps
  }
  return found;
}

Attrs ToMap(const google::protobuf::RepeatedPtrField<pb::AttrEntry>& attrs) {
  Attrs out;
  for (const pb::AttrEntry& e : attrs) out[e.key()] = e.value();
  return out;
}

void SetAttr(pb::NodeDef* n, const std::string& key, const pb::AttrValue& v) {
  pb::AttrEntry* e = n->add_attr();
  e->set_key(key);
  *e->mutable_value() = v;
}

pb::AttrValue TypeValue(int dt) {
  pb::AttrValue v;
  v.set_type(static_cast<pb::DataType>(dt));
  return v;
}

pb::AttrValue TypeListValue(const std::vector<int>& types) {
  pb::AttrValue v;
  for (int t : types) v.mutable_list()->add_type(static_cast<pb::DataType>(t));
  return v;
}

pb::AttrValue IntValue(int64_t i) {
  pb::AttrValue v;
  v.set_i(i);
  return v;
}

pb::NodeDef Node(const std::string& name, const std::string& op, std::vector<std::string> inputs,
                 const std::string& device = "") {
  pb::NodeDef n;
  n.set_name(name);
  n.set_op(op);
  for (std::string& in : inputs) n.add_input(std::move(in));
  n.set_device(device);
  return n;
}

// "name:k" for output k, "name" for output 0, as a GraphDef writes them.
std::string Output(const std::string& node, int64_t k) { return k == 0 ? node : StrCat(node, ":", k); }

bool IsControl(const std::string& input) { return !input.empty() && input[0] == '^'; }

struct FlatArg {
  std::string arg;  // the signature arg it is (an element of, for a list arg)
  int dtype = 0;
};

// A function signature's args, one per tensor, their types from `attrs`.
StatusOr<std::vector<FlatArg>> Flatten(const google::protobuf::RepeatedPtrField<pb::ArgDef>& args, const Attrs& attrs,
                                       const std::string& where) {
  std::vector<FlatArg> out;
  auto attr = [&](const std::string& name) -> StatusOr<const pb::AttrValue*> {
    auto it = attrs.find(name);
    if (it == attrs.end()) return errors::InvalidArgument(where, " lacks attr '", name, "' of its function");
    return &it->second;
  };
  for (const pb::ArgDef& a : args) {
    if (!a.type_list_attr().empty()) {
      ASSIGN_OR_RETURN(const pb::AttrValue* list, attr(a.type_list_attr()));
      for (int k = 0; k < list->list().type_size(); ++k) out.push_back({a.name(), list->list().type(k)});
      continue;
    }
    int dtype = a.type();
    if (dtype == 0) {
      ASSIGN_OR_RETURN(const pb::AttrValue* t, attr(a.type_attr()));
      dtype = t->type();
    }
    if (a.number_attr().empty()) {
      out.push_back({a.name(), dtype});
      continue;
    }
    ASSIGN_OR_RETURN(const pb::AttrValue* n, attr(a.number_attr()));
    if (n->i() < 0 || n->i() > 1 << 20) return errors::InvalidArgument(where, ": list arg '", a.name(), "' of ", n->i());
    for (int64_t k = 0; k < n->i(); ++k) out.push_back({a.name(), dtype});
  }
  return out;
}

std::vector<int> Types(const std::vector<FlatArg>& args) {
  std::vector<int> out;
  for (const FlatArg& a : args) out.push_back(a.dtype);
  return out;
}

class Inliner {
 public:
  Inliner(const pb::GraphDef& graph, const OpRegistry& ops) : ops_(ops) {
    for (const pb::FunctionDef& f : graph.library().function()) library_.emplace(f.signature().name(), &f);
    for (const pb::NodeDef& n : graph.node()) queue_.push_back({n, {}});
    *out_.mutable_versions() = graph.versions();
  }

  StatusOr<pb::GraphDef> Run() {
    while (!queue_.empty()) {
      Pending p = std::move(queue_.front());
      queue_.pop_front();
      if (out_.node_size() + queue_.size() > kMaxNodes) {
        return errors::InvalidArgument("inlining the GraphDef's functions makes more than ", kMaxNodes, " nodes");
      }
      RETURN_IF_ERROR(Expand(std::move(p)));
    }
    return std::move(out_);
  }

 private:
  // A node to expand, and the functions whose bodies it came from (outermost first).
  struct Pending {
    pb::NodeDef node;
    std::vector<std::string> stack;
  };

  static std::string Where(const pb::NodeDef& n) { return StrCat("node '", n.name(), "' (", n.op(), ")"); }

  Status Expand(Pending p) {
    const pb::NodeDef& n = p.node;
    if (n.op() == "PartitionedCall" || n.op() == "StatefulPartitionedCall") {
      const pb::AttrValue* f = Find(n.attr(), "f");
      if (f == nullptr || !f->has_func()) return errors::InvalidArgument(Where(n), " has no function attr 'f'");
      return Inline(p, f->func().name(), ToMap(f->func().attr()));
    }
    if (library_.count(n.op()) != 0) return Inline(p, n.op(), ToMap(n.attr()));
    if (n.op() == "If" || n.op() == "StatelessIf") return LowerIf(p);
    if (n.op() == "While" || n.op() == "StatelessWhile") return LowerWhile(p);
    if (n.op() == "Case" || n.op() == "StatelessCase") return LowerCase(p);
    *out_.add_node() = std::move(p.node);
    return Status::OK();
  }

  void Push(pb::NodeDef n, const std::vector<std::string>& stack) { queue_.push_back({std::move(n), stack}); }

  StatusOr<const pb::FunctionDef*> Function(const std::string& name, const pb::NodeDef& caller) const {
    auto it = library_.find(name);
    if (it == library_.end()) {
      return errors::NotFound(Where(caller), " calls function '", name, "', which the GraphDef's library lacks");
    }
    return it->second;
  }

  // The instantiation's attrs: the call's, then the signature's defaults.
  static Attrs Instantiation(const pb::FunctionDef& f, Attrs attrs) {
    for (const pb::OpDefAttr& a : f.signature().attr()) {
      if (attrs.count(a.name()) == 0 && a.has_default_value()) attrs[a.name()] = a.default_value();
    }
    return attrs;
  }

  // Where each output arg of a body node starts among its flat outputs, and how many it has.
  StatusOr<std::map<std::string, std::pair<int64_t, int64_t>>> OutputArgs(const pb::NodeDef& n,
                                                                         const std::string& function) const {
    std::map<std::string, std::pair<int64_t, int64_t>> out;
    const std::string where = StrCat("node '", n.name(), "' (", n.op(), ") of function '", function, "'");
    if (auto f = library_.find(n.op()); f != library_.end()) {
      ASSIGN_OR_RETURN(std::vector<FlatArg> flat, Flatten(f->second->signature().output_arg(),
                                                          Instantiation(*f->second, ToMap(n.attr())), where));
      for (int64_t k = 0; k < static_cast<int64_t>(flat.size()); ++k) {
        ++out.emplace(flat[k].arg, std::pair<int64_t, int64_t>{k, 0}).first->second.second;
      }
      return out;
    }
    // The functional ops, lowered or inlined before the registry sees them: one list output.
    for (const auto& [op_name, types] : {std::pair{"PartitionedCall", "Tout"}, {"StatefulPartitionedCall", "Tout"},
                                         {"If", "Tout"}, {"StatelessIf", "Tout"}, {"Case", "Tout"},
                                         {"StatelessCase", "Tout"}, {"While", "T"}, {"StatelessWhile", "T"}}) {
      if (n.op() != op_name) continue;
      const pb::AttrValue* v = Find(n.attr(), types);
      out["output"] = {0, v == nullptr ? 0 : v->list().type_size()};
      return out;
    }
    const OpDef* op = ops_.Find(n.op());
    if (op == nullptr) return errors::NotFound("Op type not registered '", n.op(), "' (", where, ")");
    int64_t start = 0;
    for (const ArgDef& a : op->outputs) {
      int64_t size = 1;
      const std::string& count_attr = IsTypeListArg(*op, a) ? a.type_attr : a.number_attr;
      if (!count_attr.empty()) {
        const pb::AttrValue* v = Find(n.attr(), count_attr);
        if (v != nullptr) {
          size = IsTypeListArg(*op, a) ? v->list().type_size() : v->i();
        } else if (const AttrDef* d = op->FindAttr(count_attr); d != nullptr && d->default_value) {
          const int64_t* i = d->default_value->get_if<int64_t>();
          const auto* types = d->default_value->get_if<std::vector<DataType>>();
          size = i != nullptr ? *i : types != nullptr ? static_cast<int64_t>(types->size()) : 1;
        } else {
          return errors::InvalidArgument(where, " lacks attr '", count_attr, "'");
        }
      }
      out[a.name] = {start, size};
      start += size;
    }
    return out;
  }

  // Substitutes the instantiation's attrs for a body attr's placeholder ("$T").
  static Status Substitute(pb::NodeDef* n, const Attrs& attrs, const std::string& function) {
    for (pb::AttrEntry& e : *n->mutable_attr()) {
      if (e.value().value_case() != pb::AttrValue::kPlaceholder) continue;
      auto it = attrs.find(e.value().placeholder());
      if (it == attrs.end()) {
        return errors::InvalidArgument("node '", n->name(), "' of function '", function, "': attr '", e.key(),
                                       "' names '$", e.value().placeholder(), "', which the call does not set");
      }
      *e.mutable_value() = it->second;
    }
    return Status::OK();
  }

  Status Inline(const Pending& call, const std::string& name, const Attrs& call_attrs) {
    const pb::NodeDef& c = call.node;
    for (const std::string& s : call.stack) {
      if (s == name) {
        std::string chain;
        for (const std::string& f : call.stack) chain += f + " -> ";
        return errors::InvalidArgument(Where(c), " calls function '", name, "', which calls itself: ", chain, name);
      }
    }
    ASSIGN_OR_RETURN(const pb::FunctionDef* f, Function(name, c));
    const Attrs attrs = Instantiation(*f, call_attrs);
    const std::string where = StrCat(Where(c), " calling function '", name, "'");
    ASSIGN_OR_RETURN(std::vector<FlatArg> args, Flatten(f->signature().input_arg(), attrs, where));
    ASSIGN_OR_RETURN(std::vector<FlatArg> results, Flatten(f->signature().output_arg(), attrs, where));
    std::vector<std::string> data, controls;
    for (const std::string& in : c.input()) (IsControl(in) ? controls : data).push_back(in);
    if (data.size() != args.size()) {
      return errors::InvalidArgument(where, " passes ", data.size(), " inputs to a function of ", args.size());
    }
    std::vector<std::string> stack = call.stack;
    stack.push_back(name);
    const std::string prefix = c.name() + "/";
    const std::string helpers = "Func/" + c.name() + "/";
    std::string gate;
    if (!controls.empty()) {
      gate = helpers + "input_control_node/_0";
      Push(Node(gate, "NoOp", controls, c.device()), stack);
    }
    // The args, by name: an Identity each, which the body's references name.
    std::map<std::string, std::vector<std::string>> arg_tensors;
    for (const pb::ArgDef& a : f->signature().input_arg()) arg_tensors[a.name()];  // an empty list too
    for (size_t i = 0; i < args.size(); ++i) {
      pb::NodeDef id = Node(StrCat(helpers, "input/_", i), "Identity", {data[i]});
      if (!gate.empty()) id.add_input("^" + gate);
      SetAttr(&id, "T", TypeValue(args[i].dtype));
      arg_tensors[args[i].arg].push_back(id.name());
      Push(std::move(id), stack);
    }
    std::map<std::string, const pb::NodeDef*> body;
    for (const pb::NodeDef& n : f->node_def()) body[n.name()] = &n;
    // Each body node's output args, worked out once however often the body names them.
    std::map<std::string, std::map<std::string, std::pair<int64_t, int64_t>>> output_args;
    // A reference inside the body, as GraphDef inputs: "arg", "arg:k", "node:out_arg:k",
    // or a whole list "node:out_arg".
    auto translate = [&](const std::string& ref) -> StatusOr<std::vector<std::string>> {
      if (IsControl(ref)) return std::vector<std::string>{"^" + prefix + ref.substr(1)};
      std::vector<std::string> parts;
      for (std::string_view part : StrSplit(ref, ':')) parts.emplace_back(part);
      if (auto a = arg_tensors.find(parts[0]); a != arg_tensors.end() && parts.size() <= 2) {
        if (parts.size() == 1) return a->second;
        const int64_t k = std::atoll(parts[1].c_str());
        if (k < 0 || k >= static_cast<int64_t>(a->second.size())) {
          return errors::InvalidArgument(where, ": '", ref, "' is past the arg's ", a->second.size(), " tensors");
        }
        return std::vector<std::string>{a->second[k]};
      }
      auto n = body.find(parts[0]);
      if (n == body.end() || parts.size() > 3) {
        return errors::InvalidArgument(where, ": its body refers to '", ref, "', which is no node or arg of it");
      }
      if (parts.size() == 1) return std::vector<std::string>{prefix + parts[0]};
      auto known = output_args.find(parts[0]);
      if (known == output_args.end()) {
        pb::NodeDef substituted = *n->second;
        RETURN_IF_ERROR(Substitute(&substituted, attrs, name));
        ASSIGN_OR_RETURN(auto args_of_node, OutputArgs(substituted, name));
        known = output_args.emplace(parts[0], std::move(args_of_node)).first;
      }
      const auto& outputs = known->second;
      auto arg = outputs.find(parts[1]);
      if (arg == outputs.end() && outputs.size() == 1) arg = outputs.begin();  // an op we name differently
      if (arg == outputs.end()) {
        return errors::InvalidArgument(where, ": its body refers to output '", parts[1], "' of node '", parts[0],
                                       "', which its op (", n->second->op(), ") does not have");
      }
      const auto [start, size] = arg->second;
      if (parts.size() == 2) {
        std::vector<std::string> all;
        for (int64_t k = 0; k < size; ++k) all.push_back(Output(prefix + parts[0], start + k));
        return all;
      }
      const int64_t k = std::atoll(parts[2].c_str());
      if (k < 0 || k >= size) return errors::InvalidArgument(where, ": '", ref, "' is past the output's ", size);
      return std::vector<std::string>{Output(prefix + parts[0], start + k)};
    };
    for (const pb::NodeDef& b : f->node_def()) {
      pb::NodeDef n = b;
      n.set_name(prefix + b.name());
      if (n.device().empty()) n.set_device(c.device());
      RETURN_IF_ERROR(Substitute(&n, attrs, name));
      n.clear_input();
      for (const std::string& in : b.input()) {
        ASSIGN_OR_RETURN(std::vector<std::string> tensors, translate(in));
        for (std::string& t : tensors) n.add_input(std::move(t));
      }
      // A body node with no inputs waits for the call's control inputs (inside a lowered If,
      // for its branch to be taken; inside a While, for the iteration).
      if (n.input_size() == 0 && !gate.empty()) n.add_input("^" + gate);
      Push(std::move(n), stack);
    }
    // The call's outputs, then its control outputs: "C:k" and "^C" keep their meaning.
    std::vector<std::string> outputs;
    for (const pb::ArgDef& a : f->signature().output_arg()) {
      const pb::StringEntry* ret = nullptr;
      for (const pb::StringEntry& e : f->ret()) {
        if (e.key() == a.name()) ret = &e;
      }
      if (ret == nullptr) return errors::InvalidArgument(where, ": the function returns nothing for '", a.name(), "'");
      ASSIGN_OR_RETURN(std::vector<std::string> tensors, translate(ret->value()));
      outputs.insert(outputs.end(), tensors.begin(), tensors.end());
    }
    if (outputs.size() != results.size()) {
      return errors::InvalidArgument(where, ": the function returns ", outputs.size(), " tensors for its ",
                                     results.size(), " results");
    }
    for (const pb::StringEntry& e : f->control_ret()) {
      if (body.count(e.value()) == 0) {
        return errors::InvalidArgument(where, ": control output '", e.key(), "' names no node of it");
      }
      outputs.push_back("^" + prefix + e.value());
    }
    if (results.empty()) {
      if (outputs.empty()) {
        for (const auto& [unused, tensors] : arg_tensors) {
          for (const std::string& t : tensors) outputs.push_back("^" + t);
        }
        if (!gate.empty()) outputs.push_back("^" + gate);
      }
      Push(Node(c.name(), "NoOp", outputs, c.device()), call.stack);
      return Status::OK();
    }
    pb::NodeDef result = Node(c.name(), "IdentityN", outputs);
    SetAttr(&result, "T", TypeListValue(Types(results)));
    Push(std::move(result), call.stack);
    return Status::OK();
  }

  // The func attr `key` of a control-flow node: its function's name and attrs.
  static StatusOr<const pb::NameAttrList*> FuncAttr(const pb::NodeDef& n, const std::string& key) {
    const pb::AttrValue* v = Find(n.attr(), key);
    if (v == nullptr || !v->has_func()) return errors::InvalidArgument(Where(n), " has no function attr '", key, "'");
    return &v->func();
  }

  static std::vector<int> TypeList(const pb::NodeDef& n, const std::string& key) {
    std::vector<int> out;
    if (const pb::AttrValue* v = Find(n.attr(), key); v != nullptr) {
      for (int t : v->list().type()) out.push_back(t);
    }
    return out;
  }

  // A direct call of `f`, which Expand inlines.
  static pb::NodeDef Call(const std::string& name, const pb::NameAttrList& f, std::vector<std::string> inputs,
                          const std::string& device) {
    pb::NodeDef call = Node(name, f.name(), std::move(inputs), device);
    for (const pb::AttrEntry& e : f.attr()) *call.add_attr() = e;
    return call;
  }

  Status LowerIf(const Pending& p) {
    const pb::NodeDef& x = p.node;
    const std::string& X = x.name();
    std::vector<std::string> data, controls;
    for (const std::string& in : x.input()) (IsControl(in) ? controls : data).push_back(in);
    if (data.empty()) return errors::InvalidArgument(Where(x), " has no predicate");
    if (const pb::AttrValue* t = Find(x.attr(), "Tcond"); t != nullptr && t->type() != pb::DT_BOOL) {
      return errors::Unimplemented(Where(x), ": a predicate of type ", pb::DataType_Name(t->type()),
                                   "; Tessera lowers If on bool predicates");
    }
    ASSIGN_OR_RETURN(const pb::NameAttrList* then_f, FuncAttr(x, "then_branch"));
    ASSIGN_OR_RETURN(const pb::NameAttrList* else_f, FuncAttr(x, "else_branch"));
    const std::vector<int> tin = TypeList(x, "Tin"), tout = TypeList(x, "Tout");
    if (tin.size() != data.size() - 1) {
      return errors::InvalidArgument(Where(x), " has ", data.size() - 1, " inputs and ", tin.size(), " Tin");
    }
    const std::string& pred = data[0];
    std::vector<std::string> switch_inputs = {pred, pred};
    switch_inputs.insert(switch_inputs.end(), controls.begin(), controls.end());
    pb::NodeDef sw = Node(X + "/switch_pred", "Switch", switch_inputs, x.device());
    SetAttr(&sw, "T", TypeValue(pb::DT_BOOL));
    Push(std::move(sw), p.stack);
    for (const auto& [pivot, branch] : {std::pair{"/pivot_f", 0}, {"/pivot_t", 1}}) {
      pb::NodeDef id = Node(X + pivot, "Identity", {Output(X + "/switch_pred", branch)}, x.device());
      SetAttr(&id, "T", TypeValue(pb::DT_BOOL));
      Push(std::move(id), p.stack);
    }
    std::vector<std::string> then_in, else_in;
    for (size_t k = 0; k < tin.size(); ++k) {
      pb::NodeDef s = Node(StrCat(X, "/input_", k), "Switch", {data[k + 1], pred});
      SetAttr(&s, "T", TypeValue(tin[k]));
      else_in.push_back(Output(s.name(), 0));
      then_in.push_back(Output(s.name(), 1));
      Push(std::move(s), p.stack);
    }
    then_in.push_back("^" + X + "/pivot_t");
    else_in.push_back("^" + X + "/pivot_f");
    Push(Call(X + "/then", *then_f, then_in, x.device()), p.stack);
    Push(Call(X + "/else", *else_f, else_in, x.device()), p.stack);
    std::vector<std::string> outputs;
    for (size_t i = 0; i < tout.size(); ++i) {
      pb::NodeDef m = Node(StrCat(X, "/output_", i), "Merge",
                           {Output(X + "/then", static_cast<int64_t>(i)), Output(X + "/else", static_cast<int64_t>(i))});
      SetAttr(&m, "T", TypeValue(tout[i]));
      SetAttr(&m, "N", IntValue(2));
      outputs.push_back(m.name());
      Push(std::move(m), p.stack);
    }
    pb::NodeDef executed = Node(X + "/branch_executed", "Merge",
                                {X + "/pivot_t", X + "/pivot_f", "^" + X + "/then", "^" + X + "/else"}, x.device());
    SetAttr(&executed, "T", TypeValue(pb::DT_BOOL));
    SetAttr(&executed, "N", IntValue(2));
    Push(std::move(executed), p.stack);
    outputs.push_back("^" + X + "/branch_executed");
    Push(Result(X, outputs, tout, x.device()), p.stack);
    return Status::OK();
  }

  // Case X: as If, with _SwitchN routing each input to the branch the index names (the last
  // for an index out of range).
  Status LowerCase(const Pending& p) {
    const pb::NodeDef& x = p.node;
    const std::string& X = x.name();
    std::vector<std::string> data, controls;
    for (const std::string& in : x.input()) (IsControl(in) ? controls : data).push_back(in);
    const pb::AttrValue* branches = Find(x.attr(), "branches");
    if (data.empty() || branches == nullptr || branches->list().func_size() == 0) {
      return errors::InvalidArgument(Where(x), " has no branch index or no branches");
    }
    const int n = branches->list().func_size();
    const std::vector<int> tin = TypeList(x, "Tin"), tout = TypeList(x, "Tout");
    if (tin.size() != data.size() - 1) {
      return errors::InvalidArgument(Where(x), " has ", data.size() - 1, " inputs and ", tin.size(), " Tin");
    }
    const std::string& index = data[0];
    std::vector<std::string> switch_inputs = {index, index};
    switch_inputs.insert(switch_inputs.end(), controls.begin(), controls.end());
    pb::NodeDef sw = Node(X + "/branch_index", "_SwitchN", switch_inputs, x.device());
    SetAttr(&sw, "T", TypeValue(pb::DT_INT32));
    SetAttr(&sw, "num_outs", IntValue(n));
    Push(std::move(sw), p.stack);
    std::vector<std::vector<std::string>> branch_in(n);
    std::vector<std::string> pivots;
    for (int b = 0; b < n; ++b) {
      pb::NodeDef pivot = Node(StrCat(X, "/pivot_", b), "Identity", {Output(X + "/branch_index", b)}, x.device());
      SetAttr(&pivot, "T", TypeValue(pb::DT_INT32));
      pivots.push_back(pivot.name());
      Push(std::move(pivot), p.stack);
    }
    for (size_t k = 0; k < tin.size(); ++k) {
      pb::NodeDef s = Node(StrCat(X, "/input_", k), "_SwitchN", {data[k + 1], index});
      SetAttr(&s, "T", TypeValue(tin[k]));
      SetAttr(&s, "num_outs", IntValue(n));
      for (int b = 0; b < n; ++b) branch_in[b].push_back(Output(s.name(), b));
      Push(std::move(s), p.stack);
    }
    std::vector<std::string> executed = pivots;
    for (int b = 0; b < n; ++b) {
      branch_in[b].push_back("^" + pivots[b]);
      Push(Call(StrCat(X, "/branch", b), branches->list().func(b), branch_in[b], x.device()), p.stack);
      executed.push_back(StrCat("^", X, "/branch", b));
    }
    std::vector<std::string> outputs;
    for (size_t i = 0; i < tout.size(); ++i) {
      std::vector<std::string> ins;
      for (int b = 0; b < n; ++b) ins.push_back(Output(StrCat(X, "/branch", b), static_cast<int64_t>(i)));
      pb::NodeDef m = Node(StrCat(X, "/merge_", i), "Merge", ins);
      SetAttr(&m, "T", TypeValue(tout[i]));
      SetAttr(&m, "N", IntValue(n));
      outputs.push_back(m.name());
      Push(std::move(m), p.stack);
    }
    pb::NodeDef done = Node(X + "/branch_executed", "Merge", executed, x.device());
    SetAttr(&done, "T", TypeValue(pb::DT_INT32));
    SetAttr(&done, "N", IntValue(n));
    Push(std::move(done), p.stack);
    outputs.push_back("^" + X + "/branch_executed");
    Push(Result(X, outputs, tout, x.device()), p.stack);
    return Status::OK();
  }

  // The node a lowered construct leaves under its own name: IdentityN of its outputs, or a
  // NoOp when it has none.
  static pb::NodeDef Result(const std::string& name, const std::vector<std::string>& inputs,
                            const std::vector<int>& types, const std::string& device) {
    if (types.empty()) return Node(name, "NoOp", inputs, device);
    pb::NodeDef n = Node(name, "IdentityN", inputs);
    SetAttr(&n, "T", TypeListValue(types));
    return n;
  }

  Status LowerWhile(const Pending& p) {
    const pb::NodeDef& w = p.node;
    const std::string& W = w.name();
    std::vector<std::string> data, controls;
    for (const std::string& in : w.input()) (IsControl(in) ? controls : data).push_back(in);
    const std::vector<int> types = TypeList(w, "T");
    if (types.size() != data.size()) {
      return errors::InvalidArgument(Where(w), " has ", data.size(), " loop variables and ", types.size(), " T");
    }
    ASSIGN_OR_RETURN(const pb::NameAttrList* cond_f, FuncAttr(w, "cond"));
    ASSIGN_OR_RETURN(const pb::NameAttrList* body_f, FuncAttr(w, "body"));
    // The body must give back what it takes: a loop variable cannot change its type.
    ASSIGN_OR_RETURN(const pb::FunctionDef* body, Function(body_f->name(), w));
    const Attrs body_attrs = Instantiation(*body, ToMap(body_f->attr()));
    ASSIGN_OR_RETURN(std::vector<FlatArg> body_out, Flatten(body->signature().output_arg(), body_attrs, Where(w)));
    if (Types(body_out) != types) {
      std::string have, want;
      for (const FlatArg& a : body_out) have += StrCat(have.empty() ? "" : ", ", pb::DataType_Name(a.dtype));
      for (int t : types) want += StrCat(want.empty() ? "" : ", ", pb::DataType_Name(t));
      return errors::InvalidArgument(Where(w), ": body '", body_f->name(), "' returns [", have,
                                     "] for loop variables of types [", want, "]");
    }
    const pb::AttrValue* parallel = Find(w.attr(), "parallel_iterations");
    const int64_t parallel_iterations = parallel != nullptr && parallel->i() > 0 ? parallel->i() : 10;
    std::string gate;
    if (!controls.empty()) {
      gate = W + "/LoopControlInputs";
      Push(Node(gate, "NoOp", controls, w.device()), p.stack);
    }
    int first = -1;  // the first loop variable that is not a resource: the loop's pivot
    std::vector<std::string> cond_in, body_in, exits, result;
    for (size_t i = 0; i < types.size(); ++i) {
      const bool resource = types[i] == pb::DT_RESOURCE;
      pb::NodeDef enter = Node(StrCat(W, "/enter_", i), "Enter", {data[i]});
      if (!gate.empty()) enter.add_input("^" + gate);
      SetAttr(&enter, "T", TypeValue(types[i]));
      pb::AttrValue frame;
      frame.set_s(W);
      SetAttr(&enter, "frame_name", frame);
      pb::AttrValue constant;
      constant.set_b(resource);
      SetAttr(&enter, "is_constant", constant);
      SetAttr(&enter, "parallel_iterations", IntValue(parallel_iterations));
      Push(std::move(enter), p.stack);
      if (resource) {  // loop-invariant: every iteration sees the Enter's value
        cond_in.push_back(StrCat(W, "/enter_", i));
        body_in.push_back(StrCat(W, "/enter_", i));
        result.push_back(data[i]);
        continue;
      }
      if (first < 0) first = static_cast<int>(i);
      pb::NodeDef merge =
          Node(StrCat(W, "/merge_", i), "Merge", {StrCat(W, "/enter_", i), StrCat(W, "/next_iteration_", i)});
      SetAttr(&merge, "T", TypeValue(types[i]));
      SetAttr(&merge, "N", IntValue(2));
      Push(std::move(merge), p.stack);
      pb::NodeDef sw = Node(StrCat(W, "/switch_", i), "Switch", {StrCat(W, "/merge_", i), W + "/LoopCond"});
      SetAttr(&sw, "T", TypeValue(types[i]));
      Push(std::move(sw), p.stack);
      pb::NodeDef exit = Node(StrCat(W, "/exit_", i), "Exit", {StrCat(W, "/switch_", i)});
      SetAttr(&exit, "T", TypeValue(types[i]));
      Push(std::move(exit), p.stack);
      pb::NodeDef next = Node(StrCat(W, "/next_iteration_", i), "NextIteration",
                              {Output(W + "/body", static_cast<int64_t>(i))});
      SetAttr(&next, "T", TypeValue(types[i]));
      Push(std::move(next), p.stack);
      cond_in.push_back(StrCat(W, "/merge_", i));
      body_in.push_back(Output(StrCat(W, "/switch_", i), 1));
      exits.push_back("^" + StrCat(W, "/exit_", i));
      result.push_back(StrCat(W, "/exit_", i));
    }
    if (first < 0) return errors::Unimplemented(Where(w), ": a loop whose every variable is a resource");
    cond_in.push_back(StrCat("^", W, "/merge_", first));
    Push(Call(W + "/cond", *cond_f, cond_in, w.device()), p.stack);
    pb::NodeDef loop_cond = Node(W + "/LoopCond", "LoopCond", {W + "/cond"}, w.device());
    Push(std::move(loop_cond), p.stack);
    pb::NodeDef pivot = Node(W + "/loop_body_control", "Identity", {Output(StrCat(W, "/switch_", first), 1)});
    SetAttr(&pivot, "T", TypeValue(types[first]));
    Push(std::move(pivot), p.stack);
    body_in.push_back("^" + W + "/loop_body_control");
    Push(Call(W + "/body", *body_f, body_in, w.device()), p.stack);
    Push(Node(W + "/LoopExecuted", "NoOp", exits, w.device()), p.stack);
    result.push_back("^" + W + "/LoopExecuted");
    Push(Result(W, result, types, w.device()), p.stack);
    return Status::OK();
  }

  const OpRegistry& ops_;
  std::map<std::string, const pb::FunctionDef*> library_;
  std::deque<Pending> queue_;
  pb::GraphDef out_;
};

}  // namespace

StatusOr<tfgraph::GraphDef> InlineTensorFlowFunctions(const tfgraph::GraphDef& graph, const OpRegistry& ops) {
  return Inliner(graph, ops).Run();
}

}  // namespace tessera
