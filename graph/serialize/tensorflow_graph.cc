#include "graph/serialize/tensorflow_graph.h"

#include <cstring>
#include <map>
#include <set>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>
#include <google/protobuf/wire_format_lite.h>

#include "graph/function.h"
#include "graph/platform/file_io.h"
#include "graph/platform/logging.h"
#include "graph/protos/tensorflow_graph.pb.h"
#include "graph/serialize/tensorflow_dtypes.h"
#include "graph/serialize/tensorflow_functions.h"

namespace tessera {
namespace {

namespace pb = tessera::tfgraph;
using google::protobuf::internal::WireFormatLite;

// Protobuf's own limit on nesting; a deeper message is refused rather than risk the stack.
constexpr int kMaxProtoDepth = 64;

StatusOr<DataType> DataTypeFromProto(int dt) { return DataTypeFromTensorFlow(dt); }

pb::DataType DataTypeToProto(DataType dt) { return static_cast<pb::DataType>(DataTypeToTensorFlow(dt)); }

StatusOr<TensorShape> ShapeFromProto(const pb::TensorShapeProto& p, bool allow_unknown) {
  if (p.unknown_rank()) {
    if (!allow_unknown) return errors::InvalidArgument("a tensor's shape must have a known rank");
    return TensorShape::UnknownRank();
  }
  if (p.dim_size() > TensorShape::kMaxRank) {
    return errors::InvalidArgument("shape of rank ", p.dim_size(), " exceeds Tessera's maximum rank ",
                                   TensorShape::kMaxRank);
  }
  std::vector<int64_t> dims;
  for (const auto& d : p.dim()) {
    if (d.size() < -1 || (d.size() == -1 && !allow_unknown)) {
      return errors::InvalidArgument("bad dimension ", d.size(), " in a shape");
    }
    dims.push_back(d.size());
  }
  return TensorShape::Make(dims);
}

void ShapeToProto(const TensorShape& s, pb::TensorShapeProto* p) {
  if (s.unknown_rank()) {
    p->set_unknown_rank(true);
    return;
  }
  for (int64_t d : s.dims()) p->add_dim()->set_size(d);
}

// The values a TensorProto lists for element type T, in its typed field.
template <typename T>
struct ProtoValues;
template <> struct ProtoValues<float> { static const auto& Of(const pb::TensorProto& p) { return p.float_val(); } };
template <> struct ProtoValues<double> { static const auto& Of(const pb::TensorProto& p) { return p.double_val(); } };
template <> struct ProtoValues<int32_t> { static const auto& Of(const pb::TensorProto& p) { return p.int_val(); } };
template <> struct ProtoValues<uint8_t> { static const auto& Of(const pb::TensorProto& p) { return p.int_val(); } };
template <> struct ProtoValues<int64_t> { static const auto& Of(const pb::TensorProto& p) { return p.int64_val(); } };
template <> struct ProtoValues<bool> { static const auto& Of(const pb::TensorProto& p) { return p.bool_val(); } };
template <> struct ProtoValues<Half> { static const auto& Of(const pb::TensorProto& p) { return p.half_val(); } };
template <> struct ProtoValues<BFloat16> { static const auto& Of(const pb::TensorProto& p) { return p.half_val(); } };
template <> struct ProtoValues<std::string> { static const auto& Of(const pb::TensorProto& p) { return p.string_val(); } };

template <typename T, typename V>
T FromProtoValue(const V& v) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    return T{static_cast<uint16_t>(v)};
  } else {
    return static_cast<T>(v);
  }
}

StatusOr<Tensor> TensorFromProto(const pb::TensorProto& p, const GraphDefImportOptions& options) {
  ASSIGN_OR_RETURN(DataType dtype, DataTypeFromProto(p.dtype()));
  if (dtype == DataType::kVariant || dtype == DataType::kResource) {
    return errors::InvalidArgument("a ", DataTypeName(dtype), " tensor cannot be read from a GraphDef");
  }
  ASSIGN_OR_RETURN(TensorShape shape, ShapeFromProto(p.tensor_shape(), false));
  const int64_t n = shape.num_elements();
  const size_t element_bytes = DataTypeStorageSize(dtype);
  if (n > options.max_expanded_tensor_bytes / static_cast<int64_t>(element_bytes)) {
    // Raw contents are as big as the file that holds them; only repeated values can ask for
    // more than the bytes they came in.
    const bool raw_and_whole = !p.tensor_content().empty() &&
                               p.tensor_content().size() == static_cast<size_t>(n) * DataTypeSize(dtype);
    if (!raw_and_whole) {
      return errors::InvalidArgument("tensor of shape ", shape.DebugString(), " would take more than ",
                                     options.max_expanded_tensor_bytes, " bytes");
    }
  }
  ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(CpuAllocator(), dtype, shape));
  if (!p.tensor_content().empty()) {
    if (dtype == DataType::kString) {
      return errors::InvalidArgument("a string tensor's values must be in string_val, not tensor_content");
    }
    if (p.tensor_content().size() != t.TotalBytes()) {
      return errors::InvalidArgument("tensor of shape ", shape.DebugString(), " and type ", DataTypeName(dtype),
                                     " needs ", t.TotalBytes(), " bytes of tensor_content, got ",
                                     p.tensor_content().size());
    }
    std::memcpy(t.raw_data(), p.tensor_content().data(), t.TotalBytes());
    return t;
  }
  Status s = VisitDataType(dtype, [&](auto zero) -> Status {
    using T = decltype(zero);
    const auto& values = ProtoValues<T>::Of(p);
    const int64_t given = values.size();
    if (given > n) {
      return errors::InvalidArgument("tensor of shape ", shape.DebugString(), " holds ", n, " values, the proto lists ",
                                     given);
    }
    T* out = t.data<T>();
    for (int64_t i = 0; i < given; ++i) out[i] = FromProtoValue<T>(values.Get(static_cast<int>(i)));
    // TensorFlow repeats the last value listed; with none listed the tensor is zeros.
    const T fill = given > 0 ? out[given - 1] : T{};
    for (int64_t i = given; i < n; ++i) out[i] = fill;
    return Status::OK();
  });
  RETURN_IF_ERROR(s);
  return t;
}

void TensorToProto(const Tensor& t, pb::TensorProto* p) {
  p->set_dtype(DataTypeToProto(t.dtype()));
  ShapeToProto(t.shape(), p->mutable_tensor_shape());
  if (t.dtype() == DataType::kString) {
    for (const std::string& s : t.flat<std::string>()) p->add_string_val(s);
  } else {
    p->set_tensor_content(static_cast<const char*>(t.raw_data()), t.TotalBytes());
  }
}

const char* ValueCaseName(const pb::AttrValue& v) {
  switch (v.value_case()) {
    case pb::AttrValue::kS: return "string";
    case pb::AttrValue::kI: return "int";
    case pb::AttrValue::kF: return "float";
    case pb::AttrValue::kB: return "bool";
    case pb::AttrValue::kType: return "type";
    case pb::AttrValue::kShape: return "shape";
    case pb::AttrValue::kTensor: return "tensor";
    case pb::AttrValue::kList: return "list";
    case pb::AttrValue::kFunc: return "func";
    case pb::AttrValue::kPlaceholder: return "placeholder";
    case pb::AttrValue::VALUE_NOT_SET: break;
  }
  return "no value";
}

StatusOr<AttrValue> AttrFromProto(const pb::AttrValue& v, AttrType type, const GraphDefImportOptions& options) {
  using Case = pb::AttrValue::ValueCase;
  auto want = [&](Case c) { return v.value_case() == c; };
  switch (type) {
    case AttrType::kInt:
      if (want(Case::kI)) return AttrValue(static_cast<int64_t>(v.i()));
      break;
    case AttrType::kFloat:
      if (want(Case::kF)) return AttrValue(static_cast<double>(v.f()));
      break;
    case AttrType::kBool:
      if (want(Case::kB)) return AttrValue(v.b());
      break;
    case AttrType::kString:
      if (want(Case::kS)) return AttrValue(v.s());
      break;
    case AttrType::kType:
      if (want(Case::kType)) {
        ASSIGN_OR_RETURN(DataType dt, DataTypeFromProto(v.type()));
        return AttrValue(dt);
      }
      break;
    case AttrType::kShape:
      if (want(Case::kShape)) {
        ASSIGN_OR_RETURN(TensorShape s, ShapeFromProto(v.shape(), true));
        return AttrValue(s);
      }
      break;
    case AttrType::kTensor:
      if (want(Case::kTensor)) {
        ASSIGN_OR_RETURN(Tensor t, TensorFromProto(v.tensor(), options));
        return AttrValue(std::move(t));
      }
      break;
    case AttrType::kListInt:
      if (want(Case::kList)) return AttrValue(std::vector<int64_t>(v.list().i().begin(), v.list().i().end()));
      break;
    case AttrType::kListType:
      if (want(Case::kList)) {
        std::vector<DataType> types;
        for (int dt : v.list().type()) {
          ASSIGN_OR_RETURN(DataType t, DataTypeFromProto(dt));
          types.push_back(t);
        }
        return AttrValue(std::move(types));
      }
      break;
    case AttrType::kListShape:
      if (want(Case::kList)) {
        std::vector<TensorShape> shapes;
        for (const auto& s : v.list().shape()) {
          ASSIGN_OR_RETURN(TensorShape shape, ShapeFromProto(s, true));
          shapes.push_back(std::move(shape));
        }
        return AttrValue(std::move(shapes));
      }
      break;
    case AttrType::kFunc:
      return errors::Unimplemented("function attrs from a GraphDef are not supported; Tessera reads them from JSON");
  }
  return errors::InvalidArgument("the GraphDef gives a ", ValueCaseName(v), ", the op declares ", AttrTypeName(type));
}

Status AttrToProto(const AttrValue& value, const std::string& node, pb::AttrValue* p) {
  return std::visit(
      [&](const auto& x) -> Status {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, int64_t>) {
          p->set_i(x);
        } else if constexpr (std::is_same_v<T, double>) {
          p->set_f(static_cast<float>(x));
        } else if constexpr (std::is_same_v<T, bool>) {
          p->set_b(x);
        } else if constexpr (std::is_same_v<T, std::string>) {
          p->set_s(x);
        } else if constexpr (std::is_same_v<T, DataType>) {
          p->set_type(DataTypeToProto(x));
        } else if constexpr (std::is_same_v<T, TensorShape>) {
          ShapeToProto(x, p->mutable_shape());
        } else if constexpr (std::is_same_v<T, Tensor>) {
          if (x.dtype() == DataType::kVariant || x.dtype() == DataType::kResource) {
            return errors::InvalidArgument("node '", node, "' holds a ", DataTypeName(x.dtype()),
                                           " tensor, which a GraphDef cannot");
          }
          TensorToProto(x, p->mutable_tensor());
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          auto* list = p->mutable_list();
          for (int64_t i : x) list->add_i(i);
        } else if constexpr (std::is_same_v<T, std::vector<DataType>>) {
          auto* list = p->mutable_list();
          for (DataType dt : x) list->add_type(DataTypeToProto(dt));
        } else if constexpr (std::is_same_v<T, std::vector<TensorShape>>) {
          auto* list = p->mutable_list();
          for (const TensorShape& s : x) ShapeToProto(s, list->add_shape());
        } else {
          return errors::Unimplemented("node '", node,
                                       "' holds a function, which Tessera writes only to JSON graphs");
        }
        return Status::OK();
      },
      value.value());
}

// TensorFlow attrs Tessera's ops leave out because they only ever hold one value: the
// import accepts them at that value and refuses any other.
Status CheckAttrAtNeutralValue(const std::string& name, const pb::AttrValue& v) {
  if (name == "dilations") {
    for (int64_t d : v.list().i()) {
      if (d != 1) return errors::Unimplemented("dilations other than 1 are not supported");
    }
  } else if (name == "explicit_paddings") {
    if (v.list().i_size() != 0) return errors::Unimplemented("explicit paddings are not supported");
  }
  return Status::OK();
}

// Attrs dropped during one import, reported once per attr name.
class DroppedAttrs {
 public:
  void Add(const std::string& op, const std::string& attr, const std::string& node) {
    Entry& e = seen_[attr];
    if (e.count++ == 0) e.first_node = node;
    e.ops.insert(op);
  }
  void Log() const {
    for (const auto& [attr, e] : seen_) {
      std::string ops;
      for (const std::string& op : e.ops) ops += StrCat(ops.empty() ? "" : ", ", op);
      tessera::Log(LogSeverity::kInfo, StrCat("GraphDef import: ignoring attr '", attr, "' on ", e.count,
                                              e.count == 1 ? " node" : " nodes", " (", ops, "; first '",
                                              e.first_node, "'): Tessera's ops do not use it"));
    }
  }

 private:
  struct Entry {
    std::string first_node;
    int count = 0;
    std::set<std::string> ops;
  };
  std::map<std::string, Entry> seen_;
};

StatusOr<NodeSpec> NodeFromProto(const pb::NodeDef& p, const GraphDefImportOptions& options, DroppedAttrs* dropped) {
  NodeSpec def;
  def.name = p.name();
  def.op = p.op();
  def.device = p.device();
  def.inputs.assign(p.input().begin(), p.input().end());
  const std::string where = StrCat("node '", def.name, "' (", def.op, ")");
  const OpDef* op = options.ops->Find(def.op);
  if (op == nullptr) return errors::NotFound("Op type not registered '", def.op, "' (node '", def.name, "')");
  // Sorted, so that the log and any error are the same from run to run; a key given twice
  // keeps its last value, as protobuf's maps do.
  std::map<std::string, const pb::AttrValue*> attrs;
  for (const pb::AttrEntry& e : p.attr()) attrs.insert_or_assign(e.key(), &e.value());
  for (const auto& [name, value] : attrs) {
    if (name == "_class") {
      for (const std::string& s : value->list().s()) {
        if (!s.starts_with("loc:@") || s.size() == 5) {
          return errors::InvalidArgument(where, ": _class entry '", s, "' is not 'loc:@NODE'");
        }
        def.colocate_with.push_back(s.substr(5));
      }
      continue;
    }
    const AttrDef* ad = op->FindAttr(name);
    if (ad == nullptr) {
      Status neutral = CheckAttrAtNeutralValue(name, *value);
      if (!neutral.ok()) return neutral.WithSuffix(StrCat(" (attr '", name, "' of ", where, ")"));
      dropped->Add(def.op, name, def.name);
      continue;
    }
    StatusOr<AttrValue> v = AttrFromProto(*value, ad->type, options);
    if (!v.ok()) return v.status().WithSuffix(StrCat(" (attr '", name, "' of ", where, ")"));
    def.attrs.emplace(name, std::move(*v));
  }
  return def;
}

// Text-format errors as "line L column C: message" (1-based, as editors count).
class FirstTextError : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column, const std::string& message) override {
    if (error_.empty()) error_ = StrCat("line ", line + 1, " column ", column + 1, ": ", message);
  }
  void AddWarning(int, google::protobuf::io::ColumnNumber, const std::string&) override {}
  const std::string& error() const { return error_; }

 private:
  std::string error_;
};

// Protobuf says only that binary bytes did not parse; walking the top-level fields finds
// where: the first node that does not parse on its own, or the offset where the framing
// breaks.
Status LocateBinaryError(std::string_view bytes) {
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                                            static_cast<int>(bytes.size()));
  in.SetRecursionLimit(kMaxProtoDepth);
  int node_index = 0;
  while (true) {
    const int offset = in.CurrentPosition();
    const uint32_t tag = in.ReadTag();
    if (tag == 0) {
      if (in.CurrentPosition() == static_cast<int>(bytes.size())) break;
      return errors::InvalidArgument("malformed GraphDef: bad field tag at byte offset ", offset);
    }
    if (WireFormatLite::GetTagFieldNumber(tag) == pb::GraphDef::kNodeFieldNumber &&
        WireFormatLite::GetTagWireType(tag) == WireFormatLite::WIRETYPE_LENGTH_DELIMITED) {
      uint32_t length;
      if (!in.ReadVarint32(&length) || length > bytes.size() - static_cast<size_t>(in.CurrentPosition())) {
        return errors::InvalidArgument("malformed GraphDef: node #", node_index, " at byte offset ", offset,
                                       " is truncated");
      }
      pb::NodeDef node;
      const size_t body = static_cast<size_t>(in.CurrentPosition());
      if (!node.ParseFromArray(bytes.data() + body, static_cast<int>(length))) {
        return errors::InvalidArgument("malformed GraphDef: node #", node_index, " at byte offset ", offset,
                                       " does not parse", node.name().empty() ? "" : StrCat(" (node '", node.name(), "')"));
      }
      in.Skip(static_cast<int>(length));
      ++node_index;
    } else if (!WireFormatLite::SkipField(&in, tag)) {
      return errors::InvalidArgument("malformed GraphDef: field ", WireFormatLite::GetTagFieldNumber(tag),
                                     " at byte offset ", offset, " is truncated or malformed");
    }
  }
  return errors::InvalidArgument("malformed GraphDef: it does not parse as TensorFlow's GraphDef");
}

StatusOr<pb::GraphDef> ParseProto(std::string_view bytes, TensorFlowFormat format) {
  pb::GraphDef proto;
  if (format == TensorFlowFormat::kText) {
    google::protobuf::TextFormat::Parser parser;
    FirstTextError errors;
    parser.RecordErrorsTo(&errors);
    // Fields of newer TensorFlow versions (debug info, full types) are skipped, not errors.
    parser.AllowUnknownField(true);
    parser.SetRecursionLimit(kMaxProtoDepth);
    if (!parser.ParseFromString(std::string(bytes), &proto)) {
      return errors::InvalidArgument("malformed GraphDef text: ",
                                     errors.error().empty() ? "it does not parse" : errors.error());
    }
    return proto;
  }
  if (bytes.size() > static_cast<size_t>(INT32_MAX)) {
    return errors::InvalidArgument("a binary GraphDef is limited to 2 GiB, this one has ", bytes.size(), " bytes");
  }
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                                            static_cast<int>(bytes.size()));
  in.SetRecursionLimit(kMaxProtoDepth);
  if (!proto.ParseFromCodedStream(&in) || !in.ConsumedEntireMessage()) return LocateBinaryError(bytes);
  return proto;
}

}  // namespace

TensorFlowFormat SniffTensorFlowFormat(std::string_view bytes) {
  // Every binary node starts with tags 0x0a and 0x12; text never holds control characters
  // other than whitespace.
  for (unsigned char c : bytes.substr(0, 256)) {
    if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') return TensorFlowFormat::kBinary;
  }
  return bytes.empty() ? TensorFlowFormat::kBinary : TensorFlowFormat::kText;
}

StatusOr<GraphSpec> GraphSpecFromTensorFlow(std::string_view bytes, TensorFlowFormat format,
                                          const GraphDefImportOptions& options) {
  ASSIGN_OR_RETURN(pb::GraphDef parsed, ParseProto(bytes, format));
  return GraphSpecFromTensorFlow(parsed, options);
}

StatusOr<GraphSpec> GraphSpecFromTensorFlow(const pb::GraphDef& graph, const GraphDefImportOptions& options) {
  ASSIGN_OR_RETURN(pb::GraphDef proto, InlineTensorFlowFunctions(graph, *options.ops));
  GraphSpec def;
  DroppedAttrs dropped;
  for (const pb::NodeDef& n : proto.node()) {
    ASSIGN_OR_RETURN(NodeSpec node, NodeFromProto(n, options, &dropped));
    def.nodes.push_back(std::move(node));
  }
  dropped.Log();
  return def;
}

StatusOr<std::string> GraphSpecToTensorFlow(const GraphSpec& def, TensorFlowFormat format) {
  pb::GraphDef proto;
  for (const NodeSpec& n : def.nodes) {
    pb::NodeDef* p = proto.add_node();
    p->set_name(n.name);
    p->set_op(n.op);
    p->set_device(n.device);
    for (const std::string& in : n.inputs) p->add_input(in);
    for (const auto& [name, value] : n.attrs) {
      pb::AttrEntry* e = p->add_attr();
      e->set_key(name);
      RETURN_IF_ERROR(AttrToProto(value, n.name, e->mutable_value()));
    }
    if (!n.colocate_with.empty()) {
      pb::AttrEntry* e = p->add_attr();
      e->set_key("_class");
      for (const std::string& c : n.colocate_with) e->mutable_value()->mutable_list()->add_s("loc:@" + c);
    }
  }
  std::string out;
  if (format == TensorFlowFormat::kText) {
    google::protobuf::TextFormat::Printer printer;
    if (!printer.PrintToString(proto, &out)) return errors::Internal("could not print the GraphDef as text");
  } else if (!proto.SerializeToString(&out)) {
    return errors::InvalidArgument("the GraphDef is over protobuf's 2 GiB limit");
  }
  return out;
}

StatusOr<std::unique_ptr<Graph>> ImportGraphDef(std::string_view bytes, const GraphDefImportOptions& options) {
  ASSIGN_OR_RETURN(GraphSpec def, GraphSpecFromTensorFlow(bytes, SniffTensorFlowFormat(bytes), options));
  return Graph::FromSpec(def, options.ops);
}

StatusOr<std::unique_ptr<Graph>> ImportGraphDefFile(const std::string& path, const GraphDefImportOptions& options) {
  ASSIGN_OR_RETURN(std::string bytes, ReadFileToString(path, "GraphDef"));
  StatusOr<std::unique_ptr<Graph>> graph = ImportGraphDef(bytes, options);
  if (!graph.ok()) return graph.status().WithSuffix(StrCat(" (in '", path, "')"));
  return graph;
}

}  // namespace tessera
