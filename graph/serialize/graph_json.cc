#include "graph/serialize/graph_json.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

#include <nlohmann/json.hpp>

#include "graph/function.h"
#include "graph/platform/json_util.h"
#include "graph/variant.h"

namespace tessera {
namespace {

using json = nlohmann::json;

StatusOr<TensorShape> ShapeFromJson(const json& j, bool allow_unknown) {
  if (j.is_null() && allow_unknown) return TensorShape::UnknownRank();
  if (!j.is_array()) return errors::InvalidArgument("shape must be a list of dimensions");
  std::vector<int64_t> dims;
  for (const json& d : j) {
    if (d.is_null() || (d.is_number_integer() && d.get<int64_t>() == -1)) {
      if (!allow_unknown) return errors::InvalidArgument("a tensor's shape must be fully defined");
      dims.push_back(-1);
    } else if (d.is_number_integer() && d.get<int64_t>() >= 0) {
      dims.push_back(d.get<int64_t>());
    } else {
      return errors::InvalidArgument("bad dimension ", JsonExcerpt(d), " in shape ", JsonExcerpt(j));
    }
  }
  return TensorShape::Make(dims);
}

json ShapeToJson(const TensorShape& s) {
  if (s.unknown_rank()) return nullptr;
  json j = json::array();
  for (int64_t d : s.dims()) j.push_back(d < 0 ? json(nullptr) : json(d));
  return j;
}

template <typename T>
Status ReadElement(const json& v, T* out) {
  if constexpr (std::is_same_v<T, std::string>) {
    if (!v.is_string()) return errors::InvalidArgument("expected a string, got ", JsonExcerpt(v));
    *out = v.get<std::string>();
  } else if constexpr (std::is_same_v<T, bool>) {
    if (v.is_boolean()) {
      *out = v.get<bool>();
    } else if (v.is_number_integer() && (v.get<int64_t>() == 0 || v.get<int64_t>() == 1)) {
      *out = v.get<int64_t>() == 1;
    } else {
      return errors::InvalidArgument("expected a bool, got ", JsonExcerpt(v));
    }
  } else if constexpr (std::is_integral_v<T>) {
    if (!v.is_number_integer()) return errors::InvalidArgument("expected an integer, got ", JsonExcerpt(v));
    int64_t x = v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)
                    ? INT64_MAX
                    : v.get<int64_t>();
    if (x < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
        x > static_cast<int64_t>(std::numeric_limits<T>::max())) {
      return errors::InvalidArgument("value ", JsonExcerpt(v), " is out of range for ",
                                     DataTypeName(DataTypeToEnum<T>::value));
    }
    *out = static_cast<T>(x);
  } else {
    double x;
    if (v.is_number()) {
      x = v.get<double>();
    } else if (v.is_string() && (v == "nan" || v == "inf" || v == "-inf")) {
      x = v == "nan" ? std::numeric_limits<double>::quiet_NaN()
                     : (v == "inf" ? 1.0 : -1.0) * std::numeric_limits<double>::infinity();
    } else {
      return errors::InvalidArgument("expected a number, got ", JsonExcerpt(v));
    }
    if constexpr (std::is_same_v<T, Half>) {
      *out = FloatToHalf(static_cast<float>(x));
    } else if constexpr (std::is_same_v<T, BFloat16>) {
      *out = FloatToBFloat16(static_cast<float>(x));
    } else {
      *out = static_cast<T>(x);
    }
  }
  return Status::OK();
}

template <typename T>
json WriteElement(const T& v) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16> ||
                std::is_floating_point_v<T>) {
    double x;
    if constexpr (std::is_same_v<T, Half>) {
      x = HalfToFloat(v);
    } else if constexpr (std::is_same_v<T, BFloat16>) {
      x = BFloat16ToFloat(v);
    } else {
      x = v;
    }
    if (std::isnan(x)) return "nan";
    if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
    if constexpr (!std::is_same_v<T, double>) {
      // The shortest decimal that round-trips the narrow type: 0.1f prints as 0.1, not as
      // the double 0.10000000149011612.
      char buf[32];
      auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), static_cast<float>(x));
      return std::strtod(std::string(buf, end).c_str(), nullptr);
    }
    return x;
  } else {
    return v;
  }
}

// Function bodies nest (an interleave's function holding a map); past this depth a graph is
// refused rather than risk the stack.
constexpr int kMaxFunctionDepth = 16;

StatusOr<GraphSpec> GraphSpecFromJsonValue(const json& j, const OpRegistry* ops, int depth);
json GraphSpecToJsonValue(const GraphSpec& def);
Status CheckKeys(const json& obj, std::initializer_list<std::string_view> allowed, std::string_view what);
StatusOr<std::vector<std::string>> StringList(const json& obj, const char* key, std::string_view where);

// {"args": [...], "rets": [...], "nodes": [...]}
StatusOr<AttrValue> FunctionFromJson(const json& j, const OpRegistry* ops, int depth) {
  if (!j.is_object()) return errors::InvalidArgument("a function must be an object {args, rets, nodes}");
  if (depth >= kMaxFunctionDepth) {
    return errors::InvalidArgument("functions nest deeper than ", kMaxFunctionDepth, " levels");
  }
  RETURN_IF_ERROR(CheckKeys(j, {"args", "rets", "nodes"}, "function"));
  auto fn = std::make_shared<FunctionDef>();
  ASSIGN_OR_RETURN(fn->args, StringList(j, "args", "function"));
  ASSIGN_OR_RETURN(fn->rets, StringList(j, "rets", "function"));
  StatusOr<GraphSpec> body = GraphSpecFromJsonValue(j, ops, depth + 1);
  if (!body.ok()) return body.status().WithPrefix("in a function body: ");
  fn->body = std::move(*body);
  return AttrValue(std::shared_ptr<const FunctionDef>(std::move(fn)));
}

StatusOr<AttrValue> AttrFromJson(const json& j, const AttrDef* def, const OpRegistry* ops, int depth) {
  AttrType type;
  if (def != nullptr) {
    type = def->type;
  } else if (j.is_boolean()) {
    type = AttrType::kBool;
  } else if (j.is_number_integer()) {
    type = AttrType::kInt;
  } else if (j.is_number()) {
    type = AttrType::kFloat;
  } else if (j.is_string()) {
    type = AttrType::kString;
  } else {
    return errors::InvalidArgument("cannot tell the type of undeclared attr value ", JsonExcerpt(j));
  }
  switch (type) {
    case AttrType::kInt:
      if (j.is_number_integer()) return AttrValue(j.get<int64_t>());
      break;
    case AttrType::kFloat:
      if (j.is_number()) return AttrValue(j.get<double>());
      break;
    case AttrType::kBool:
      if (j.is_boolean()) return AttrValue(j.get<bool>());
      break;
    case AttrType::kString:
      if (j.is_string()) return AttrValue(j.get<std::string>());
      break;
    case AttrType::kType:
      if (j.is_string()) {
        ASSIGN_OR_RETURN(DataType dt, DataTypeFromName(j.get<std::string>()));
        return AttrValue(dt);
      }
      break;
    case AttrType::kShape: {
      ASSIGN_OR_RETURN(TensorShape s, ShapeFromJson(j, true));
      return AttrValue(s);
    }
    case AttrType::kTensor: {
      ASSIGN_OR_RETURN(Tensor t, TensorFromJson(j));
      return AttrValue(std::move(t));
    }
    case AttrType::kListInt:
      if (j.is_array()) {
        std::vector<int64_t> v;
        for (const json& x : j) {
          if (!x.is_number_integer()) return errors::InvalidArgument("expected a list of ints");
          v.push_back(x.get<int64_t>());
        }
        return AttrValue(std::move(v));
      }
      break;
    case AttrType::kListType:
      if (j.is_array()) {
        std::vector<DataType> v;
        for (const json& x : j) {
          if (!x.is_string()) return errors::InvalidArgument("expected a list of dtype names");
          ASSIGN_OR_RETURN(DataType dt, DataTypeFromName(x.get<std::string>()));
          v.push_back(dt);
        }
        return AttrValue(std::move(v));
      }
      break;
    case AttrType::kListShape:
      if (j.is_array()) {
        std::vector<TensorShape> v;
        for (const json& x : j) {
          ASSIGN_OR_RETURN(TensorShape s, ShapeFromJson(x, true));
          v.push_back(std::move(s));
        }
        return AttrValue(std::move(v));
      }
      break;
    case AttrType::kFunc:
      return FunctionFromJson(j, ops, depth);
  }
  return errors::InvalidArgument("expected ", AttrTypeName(type), ", got ", JsonExcerpt(j));
}

json AttrToJson(const AttrValue& v) {
  return std::visit(
      [](const auto& x) -> json {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, DataType>) {
          return std::string(DataTypeName(x));
        } else if constexpr (std::is_same_v<T, TensorShape>) {
          return ShapeToJson(x);
        } else if constexpr (std::is_same_v<T, Tensor>) {
          return TensorToJson(x);
        } else if constexpr (std::is_same_v<T, std::vector<DataType>>) {
          json j = json::array();
          for (DataType dt : x) j.push_back(std::string(DataTypeName(dt)));
          return j;
        } else if constexpr (std::is_same_v<T, std::vector<TensorShape>>) {
          json j = json::array();
          for (const TensorShape& s : x) j.push_back(ShapeToJson(s));
          return j;
        } else if constexpr (std::is_same_v<T, std::shared_ptr<const FunctionDef>>) {
          json j = GraphSpecToJsonValue(x->body);
          j["args"] = x->args;
          j["rets"] = x->rets;
          return j;
        } else {
          return x;
        }
      },
      v.value());
}

Status CheckKeys(const json& obj, std::initializer_list<std::string_view> allowed,
                 std::string_view what) {
  for (const auto& [key, value] : obj.items()) {
    bool ok = false;
    for (std::string_view a : allowed) ok = ok || key == a;
    if (!ok) return errors::InvalidArgument("Unknown key '", key, "' in ", what);
  }
  return Status::OK();
}

StatusOr<std::vector<std::string>> StringList(const json& obj, const char* key,
                                              std::string_view where) {
  std::vector<std::string> out;
  if (!obj.contains(key)) return out;
  const json& list = obj[key];
  if (!list.is_array()) return errors::InvalidArgument("'", key, "' of ", where, " must be a list");
  for (const json& s : list) {
    if (!s.is_string()) {
      return errors::InvalidArgument("'", key, "' of ", where, " must hold strings, got ", JsonExcerpt(s));
    }
    out.push_back(s.get<std::string>());
  }
  return out;
}

StatusOr<NodeSpec> NodeFromJson(const json& j, size_t index, const OpRegistry* ops, int depth) {
  if (!j.is_object()) return errors::InvalidArgument("nodes[", index, "] is not an object");
  std::string where = StrCat("nodes[", index, "]");
  RETURN_IF_ERROR(CheckKeys(j, {"name", "op", "inputs", "device", "colocate_with", "attrs"}, where));
  if (!j.contains("name") || !j["name"].is_string()) {
    return errors::InvalidArgument(where, " needs a string 'name'");
  }
  NodeSpec def;
  def.name = j["name"].get<std::string>();
  where = StrCat("node '", def.name, "'");
  if (!j.contains("op") || !j["op"].is_string()) {
    return errors::InvalidArgument(where, " needs a string 'op'");
  }
  def.op = j["op"].get<std::string>();
  where = StrCat("node '", def.name, "' (", def.op, ")");
  const OpDef* op = ops->Find(def.op);
  if (op == nullptr) {
    return errors::NotFound("Op type not registered '", def.op, "' (node '", def.name, "')");
  }
  ASSIGN_OR_RETURN(def.inputs, StringList(j, "inputs", where));
  ASSIGN_OR_RETURN(def.colocate_with, StringList(j, "colocate_with", where));
  if (j.contains("device")) {
    if (!j["device"].is_string()) return errors::InvalidArgument("'device' of ", where, " must be a string");
    def.device = j["device"].get<std::string>();
  }
  if (j.contains("attrs")) {
    if (!j["attrs"].is_object()) return errors::InvalidArgument("'attrs' of ", where, " must be an object");
    for (const auto& [key, value] : j["attrs"].items()) {
      const AttrDef* ad = op->FindAttr(key);
      if (ad == nullptr && !key.starts_with("_")) {
        return errors::InvalidArgument(where, " has attr '", key, "' which op ", def.op,
                                       " does not declare");
      }
      StatusOr<AttrValue> v = AttrFromJson(value, ad, ops, depth);
      if (!v.ok()) {
        return v.status().WithSuffix(StrCat(" (attr '", key, "' of ", where, ")"));
      }
      def.attrs.emplace(key, std::move(*v));
    }
  }
  return def;
}

StatusOr<GraphSpec> GraphSpecFromJsonValue(const json& j, const OpRegistry* ops, int depth) {
  if (!j.is_object() || !j.contains("nodes") || !j["nodes"].is_array()) {
    return errors::InvalidArgument("A JSON graph must be an object with a list 'nodes'");
  }
  GraphSpec def;
  for (size_t i = 0; i < j["nodes"].size(); ++i) {
    ASSIGN_OR_RETURN(NodeSpec n, NodeFromJson(j["nodes"][i], i, ops, depth));
    def.nodes.push_back(std::move(n));
  }
  return def;
}

json GraphSpecToJsonValue(const GraphSpec& def) {
  json nodes = json::array();
  for (const NodeSpec& n : def.nodes) {
    json node;
    node["name"] = n.name;
    node["op"] = n.op;
    if (!n.inputs.empty()) node["inputs"] = n.inputs;
    if (!n.device.empty()) node["device"] = n.device;
    if (!n.colocate_with.empty()) node["colocate_with"] = n.colocate_with;
    json attrs = json::object();
    for (const auto& [name, value] : n.attrs) attrs[name] = AttrToJson(value);
    if (!attrs.empty()) node["attrs"] = std::move(attrs);
    nodes.push_back(std::move(node));
  }
  json j;
  j["nodes"] = std::move(nodes);
  return j;
}

}  // namespace

StatusOr<Tensor> TensorFromJson(const json& j) {
  if (!j.is_object()) return errors::InvalidArgument("a tensor must be an object {dtype, shape, data}");
  RETURN_IF_ERROR(CheckKeys(j, {"dtype", "shape", "data"}, "tensor"));
  if (!j.contains("dtype") || !j["dtype"].is_string()) {
    return errors::InvalidArgument("tensor needs a string 'dtype'");
  }
  ASSIGN_OR_RETURN(DataType dtype, DataTypeFromName(j["dtype"].get<std::string>()));
  if (dtype == DataType::kVariant) return errors::InvalidArgument("a variant tensor cannot be read from JSON");
  TensorShape shape;
  if (j.contains("shape")) {
    ASSIGN_OR_RETURN(shape, ShapeFromJson(j["shape"], false));
  }
  if (!j.contains("data") || !j["data"].is_array()) {
    return errors::InvalidArgument("tensor needs a flat list 'data'");
  }
  const json& data = j["data"];
  if (static_cast<int64_t>(data.size()) != shape.num_elements()) {
    return errors::InvalidArgument("tensor of shape ", shape.DebugString(), " needs ",
                                   shape.num_elements(), " values, got ", data.size());
  }
  ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(CpuAllocator(), dtype, shape));
  Status s = VisitDataType(dtype, [&](auto zero) -> Status {
    using T = decltype(zero);
    T* out = t.data<T>();
    for (size_t i = 0; i < data.size(); ++i) {
      Status e = ReadElement<T>(data[i], out + i);
      if (!e.ok()) return e.WithSuffix(StrCat(" at data[", i, "]"));
    }
    return Status::OK();
  });
  RETURN_IF_ERROR(s);
  return t;
}

StatusOr<Tensor> TensorFromJsonText(std::string_view text) {
  ASSIGN_OR_RETURN(json j, ParseJson(text, "JSON tensor"));
  return TensorFromJson(j);
}

json TensorToJson(const Tensor& t) {
  json j;
  j["dtype"] = std::string(DataTypeName(t.dtype()));
  j["shape"] = ShapeToJson(t.shape());
  json data = json::array();
  if (t.dtype() == DataType::kVariant) {
    // Shown, not serialised: TensorFromJson refuses variants.
    for (const Variant& v : t.flat<Variant>()) data.push_back(v != nullptr ? v->DebugString() : "null");
  } else {
    VisitDataType(t.dtype(), [&](auto zero) {
      using T = decltype(zero);
      for (const T& v : t.flat<T>()) data.push_back(WriteElement(v));
    });
  }
  j["data"] = std::move(data);
  return j;
}

StatusOr<GraphSpec> GraphSpecFromJson(std::string_view text, const OpRegistry* ops) {
  ASSIGN_OR_RETURN(json j, ParseJson(text, "JSON graph"));
  if (j.is_object()) RETURN_IF_ERROR(CheckKeys(j, {"nodes"}, "the graph"));
  return GraphSpecFromJsonValue(j, ops, 0);
}

std::string GraphSpecToJson(const GraphSpec& def) {
  return GraphSpecToJsonValue(def).dump(1, ' ', false, json::error_handler_t::replace);
}

}  // namespace tessera
