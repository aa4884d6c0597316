#include "graph/op_def.h"

#include <cctype>

namespace tessera {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool SplitOnce(std::string_view s, char sep, std::string_view* head, std::string_view* tail) {
  size_t pos = s.find(sep);
  if (pos == std::string_view::npos) return false;
  *head = Trim(s.substr(0, pos));
  *tail = Trim(s.substr(pos + 1));
  return true;
}

StatusOr<ArgDef> ParseArg(std::string_view spec) {
  std::string_view name, type;
  if (!SplitOnce(spec, ':', &name, &type) || name.empty() || type.empty()) {
    return errors::InvalidArgument("Malformed arg spec '", spec, "'");
  }
  ArgDef arg;
  arg.name = std::string(name);
  std::string_view count, elem;
  if (SplitOnce(type, '*', &count, &elem)) {
    arg.number_attr = std::string(count);
    type = elem;
  }
  if (type.starts_with("Ref(") && type.ends_with(")")) {
    arg.is_ref = true;
    type = Trim(type.substr(4, type.size() - 5));
  }
  StatusOr<DataType> fixed = DataTypeFromName(type);
  if (fixed.ok()) {
    arg.type = *fixed;
  } else {
    arg.type_attr = std::string(type);
  }
  return arg;
}

StatusOr<AttrType> ParseAttrType(std::string_view t) {
  static constexpr std::pair<const char*, AttrType> kTypes[] = {
      {"int", AttrType::kInt},       {"float", AttrType::kFloat},    {"bool", AttrType::kBool},
      {"string", AttrType::kString}, {"type", AttrType::kType},      {"shape", AttrType::kShape},
      {"tensor", AttrType::kTensor}, {"list(int)", AttrType::kListInt},
      {"list(type)", AttrType::kListType}, {"list(shape)", AttrType::kListShape},
      {"func", AttrType::kFunc}};
  for (const auto& [name, type] : kTypes) {
    if (t == name) return type;
  }
  return errors::InvalidArgument("Unknown attr type '", t, "'");
}

StatusOr<AttrValue> ParseDefault(AttrType type, std::string_view v) {
  switch (type) {
    case AttrType::kBool:
      if (v == "true") return AttrValue(true);
      if (v == "false") return AttrValue(false);
      break;
    case AttrType::kInt:
      return AttrValue(static_cast<int64_t>(std::stoll(std::string(v))));
    case AttrType::kFloat:
      return AttrValue(std::stod(std::string(v)));
    case AttrType::kString:
      if (v.size() >= 2 && v.front() == '"' && v.back() == '"') {
        return AttrValue(std::string(v.substr(1, v.size() - 2)));
      }
      break;
    case AttrType::kType: {
      ASSIGN_OR_RETURN(DataType dt, DataTypeFromName(v));
      return AttrValue(dt);
    }
    case AttrType::kShape:
      if (v == "unknown") return AttrValue(TensorShape::UnknownRank());
      if (v == "[]") return AttrValue(TensorShape());
      break;
    case AttrType::kListInt:
      if (v.size() >= 2 && v.front() == '[' && v.back() == ']') {
        std::vector<int64_t> list;
        std::string_view rest = Trim(v.substr(1, v.size() - 2));
        while (!rest.empty()) {
          std::string_view item = rest, tail;
          if (!SplitOnce(rest, ',', &item, &tail)) tail = {};
          list.push_back(std::stoll(std::string(Trim(item))));
          rest = Trim(tail);
        }
        return AttrValue(std::move(list));
      }
      break;
    case AttrType::kListShape:
      if (v == "[]") return AttrValue(std::vector<TensorShape>{});
      break;
    default:
      break;
  }
  return errors::InvalidArgument("Unsupported default '", v, "' for attr of type ",
                                 AttrTypeName(type));
}

StatusOr<AttrDef> ParseAttr(std::string_view spec) {
  std::string_view name, rest;
  if (!SplitOnce(spec, ':', &name, &rest) || name.empty()) {
    return errors::InvalidArgument("Malformed attr spec '", spec, "'");
  }
  AttrDef attr;
  attr.name = std::string(name);
  // The default follows the first '=' that is not part of ">=".
  std::string_view type_part = rest, default_part;
  bool has_default = false;
  for (size_t i = 0; i < rest.size(); ++i) {
    if (rest[i] == '=' && (i == 0 || rest[i - 1] != '>')) {
      type_part = Trim(rest.substr(0, i));
      default_part = Trim(rest.substr(i + 1));
      has_default = true;
      break;
    }
  }
  std::string_view min_part;
  if (size_t ge = type_part.find(">="); ge != std::string_view::npos) {
    min_part = Trim(type_part.substr(ge + 2));
    type_part = Trim(type_part.substr(0, ge));
  }
  if (type_part.starts_with("{")) {
    if (!type_part.ends_with("}")) return errors::InvalidArgument("Malformed attr spec '", spec, "'");
    attr.type = AttrType::kType;
    std::string_view list = type_part.substr(1, type_part.size() - 2);
    while (!list.empty()) {
      std::string_view item = list, tail;
      if (!SplitOnce(list, ',', &item, &tail)) tail = {};
      ASSIGN_OR_RETURN(DataType dt, DataTypeFromName(Trim(item)));
      attr.allowed_types.push_back(dt);
      list = tail;
    }
  } else {
    ASSIGN_OR_RETURN(attr.type, ParseAttrType(type_part));
  }
  if (!min_part.empty()) attr.minimum = std::stoll(std::string(min_part));
  if (has_default) {
    ASSIGN_OR_RETURN(AttrValue v, ParseDefault(attr.type, default_part));
    attr.default_value = std::move(v);
  }
  return attr;
}

}  // namespace

bool IsTypeListArg(const OpDef& op, const ArgDef& arg) {
  const AttrDef* ad = arg.type_attr.empty() ? nullptr : op.FindAttr(arg.type_attr);
  return ad != nullptr && ad->type == AttrType::kListType;
}

StatusOr<int64_t> ArgLength(const OpDef& op, const ArgDef& arg, const AttrMap& attrs, std::string_view node) {
  if (IsTypeListArg(op, arg)) {
    std::vector<DataType> types;
    RETURN_IF_ERROR(GetAttr(attrs, node, arg.type_attr, &types));
    return static_cast<int64_t>(types.size());
  }
  int64_t count = 1;
  if (!arg.number_attr.empty()) RETURN_IF_ERROR(GetAttr(attrs, node, arg.number_attr, &count));
  return count;
}

const AttrDef* OpDef::FindAttr(std::string_view attr_name) const {
  for (const AttrDef& a : attrs) {
    if (a.name == attr_name) return &a;
  }
  return nullptr;
}

OpDefBuilder::OpDefBuilder(std::string name) { def_.name = std::move(name); }

OpDefBuilder& OpDefBuilder::Input(std::string_view spec) {
  StatusOr<ArgDef> arg = ParseArg(spec);
  if (arg.ok()) {
    def_.inputs.push_back(std::move(*arg));
  } else if (status_.ok()) {
    status_ = arg.status();
  }
  return *this;
}

OpDefBuilder& OpDefBuilder::Output(std::string_view spec) {
  StatusOr<ArgDef> arg = ParseArg(spec);
  if (arg.ok()) {
    def_.outputs.push_back(std::move(*arg));
  } else if (status_.ok()) {
    status_ = arg.status();
  }
  return *this;
}

OpDefBuilder& OpDefBuilder::Attr(std::string_view spec) {
  StatusOr<AttrDef> attr = ParseAttr(spec);
  if (attr.ok()) {
    def_.attrs.push_back(std::move(*attr));
  } else if (status_.ok()) {
    status_ = attr.status();
  }
  return *this;
}

OpDefBuilder& OpDefBuilder::SetIsStateful() {
  def_.is_stateful = true;
  return *this;
}

OpDefBuilder& OpDefBuilder::SetShapeFn(ShapeFn fn) {
  def_.shape_fn = std::move(fn);
  return *this;
}

StatusOr<OpDef> OpDefBuilder::Finalize() const {
  if (!status_.ok()) return status_.WithSuffix(StrCat(" in op '", def_.name, "'"));
  auto check_arg = [&](const ArgDef& arg) -> Status {
    if (!arg.type_attr.empty()) {
      const AttrDef* a = def_.FindAttr(arg.type_attr);
      if (a == nullptr || (a->type != AttrType::kType && a->type != AttrType::kListType)) {
        return errors::InvalidArgument("Op '", def_.name, "': arg '", arg.name,
                                       "' names type attr '", arg.type_attr, "' which is not declared");
      }
      if (a->type == AttrType::kListType && !arg.number_attr.empty()) {
        return errors::InvalidArgument("Op '", def_.name, "': arg '", arg.name,
                                       "' cannot have both a count and a list of types");
      }
    }
    if (!arg.number_attr.empty()) {
      const AttrDef* a = def_.FindAttr(arg.number_attr);
      if (a == nullptr || a->type != AttrType::kInt) {
        return errors::InvalidArgument("Op '", def_.name, "': arg '", arg.name,
                                       "' names count attr '", arg.number_attr, "' which is not declared");
      }
    }
    return Status::OK();
  };
  for (const ArgDef& a : def_.inputs) RETURN_IF_ERROR(check_arg(a));
  for (const ArgDef& a : def_.outputs) RETURN_IF_ERROR(check_arg(a));
  OpDef def = def_;
  if (!def.shape_fn) def.shape_fn = UnknownShape;
  return def;
}

}  // namespace tessera
