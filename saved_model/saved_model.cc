#include "saved_model/saved_model.h"

#include <sys/stat.h>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/text_format.h>
#include <google/protobuf/wire_format_lite.h>

#include "graph/platform/file_io.h"
#include "graph/protos/saved_model.pb.h"
#include "graph/serialize/meta_graph.h"
#include "graph/serialize/tensorflow_dtypes.h"
#include "graph/serialize/tensorflow_graph.h"
#include "runtime/freeze.h"

namespace tessera {
namespace {

namespace pb = tessera::tfgraph;
using google::protobuf::internal::WireFormatLite;

constexpr uint64_t kMaxSavedModelBytes = uint64_t{INT32_MAX};
constexpr char kInitOpKey[] = "__saved_model_init_op";

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// Protobuf says only that the bytes do not parse: walks the fields down to the MetaGraph's
// part that does not, for an error that names where.
Status Locate(std::string_view bytes, const std::string& file) {
  auto damaged = [&](auto&&... what) { return errors::DataLoss("SavedModel file '", file, "': ", what...); };
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                                            static_cast<int>(bytes.size()));
  int meta_graph = 0;
  while (true) {
    const int offset = in.CurrentPosition();
    const uint32_t tag = in.ReadTag();
    if (tag == 0) break;
    const int field = WireFormatLite::GetTagFieldNumber(tag);
    if (field != pb::SavedModel::kMetaGraphsFieldNumber ||
        WireFormatLite::GetTagWireType(tag) != WireFormatLite::WIRETYPE_LENGTH_DELIMITED) {
      if (!WireFormatLite::SkipField(&in, tag)) {
        return damaged("field ", field, " at byte offset ", offset, " is truncated");
      }
      continue;
    }
    uint32_t length;
    if (!in.ReadVarint32(&length) || length > bytes.size() - static_cast<size_t>(in.CurrentPosition())) {
      return damaged("meta graph #", meta_graph, " at byte offset ", offset, " is truncated");
    }
    const size_t body = static_cast<size_t>(in.CurrentPosition());
    const std::string_view meta = bytes.substr(body, length);
    if (pb::MetaGraphDef m; !m.ParseFromArray(meta.data(), static_cast<int>(meta.size()))) {
      const std::string why = MetaGraphDamage(meta, body);
      if (!why.empty()) return damaged("meta graph #", meta_graph, ": ", why);
      return damaged("meta graph #", meta_graph, " at byte offset ", offset, " does not parse");
    }
    in.Skip(static_cast<int>(length));
    ++meta_graph;
  }
  return damaged("it does not parse as a SavedModel (byte offset ", in.CurrentPosition(), ")");
}

StatusOr<pb::SavedModel> ReadSavedModel(const std::string& dir) {
  pb::SavedModel model;
  const std::string binary = dir + "/saved_model.pb", text = dir + "/saved_model.pbtxt";
  if (Exists(binary) || !Exists(text)) {
    StatusOr<std::string> bytes = ReadFileToString(binary, "SavedModel", kMaxSavedModelBytes);
    if (!bytes.ok() && bytes.status().code() == Code::kNotFound) {
      return errors::NotFound("'", dir, "' holds no SavedModel: it has no saved_model.pb or saved_model.pbtxt");
    }
    RETURN_IF_ERROR(bytes.status());
    google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes->data()),
                                              static_cast<int>(bytes->size()));
    if (!model.ParseFromCodedStream(&in) || !in.ConsumedEntireMessage()) return Locate(*bytes, binary);
    return model;
  }
  ASSIGN_OR_RETURN(std::string bytes, ReadFileToString(text, "SavedModel", kMaxSavedModelBytes));
  google::protobuf::TextFormat::Parser parser;
  parser.AllowUnknownField(true);
  if (!parser.ParseFromString(bytes, &model)) return errors::DataLoss("SavedModel file '", text, "' does not parse");
  return model;
}

std::set<std::string> Tags(const pb::MetaGraphDef& m) {
  return std::set<std::string>(m.meta_info_def().tags().begin(), m.meta_info_def().tags().end());
}

std::string TagSet(const std::set<std::string>& tags) {
  std::string out = "{";
  for (const std::string& t : tags) out += (out.size() > 1 ? ", " : "") + t;
  return out + "}";
}

StatusOr<SignatureTensor> TensorFromInfo(const std::string& key, const pb::TensorInfo& info) {
  SignatureTensor t;
  t.key = key;
  t.tensor = info.name();
  t.tf_dtype = pb::DataType_IsValid(info.dtype()) ? pb::DataType_Name(info.dtype()) : StrCat("DataType ", info.dtype());
  StatusOr<DataType> dtype = DataTypeFromTensorFlow(info.dtype());
  if (dtype.ok()) t.dtype = *dtype;
  if (!info.has_tensor_shape() || info.tensor_shape().unknown_rank()) {
    t.shape = TensorShape::UnknownRank();
    return t;
  }
  std::vector<int64_t> dims;
  for (const auto& d : info.tensor_shape().dim()) dims.push_back(d.size() < 0 ? -1 : d.size());
  ASSIGN_OR_RETURN(t.shape, TensorShape::Make(dims));
  return t;
}

StatusOr<MetaGraphInfo> Info(const pb::MetaGraphDef& m, const std::string& dir) {
  MetaGraphInfo info;
  info.tags = Tags(m);
  std::map<std::string, const pb::SignatureDef*> signatures;
  for (const pb::SignatureEntry& e : m.signature_def()) signatures[e.key()] = &e.value();
  for (const auto& [key, def] : signatures) {
    if (key == kInitOpKey) continue;
    SignatureInfo s;
    s.key = key;
    s.method_name = def->method_name();
    for (auto [entries, out] : {std::pair{&def->inputs(), &s.inputs}, {&def->outputs(), &s.outputs}}) {
      std::map<std::string, const pb::TensorInfo*> sorted;
      for (const pb::TensorInfoEntry& e : *entries) sorted[e.key()] = &e.value();
      for (const auto& [k, t] : sorted) {
        StatusOr<SignatureTensor> tensor = TensorFromInfo(k, *t);
        if (!tensor.ok()) {
          return errors::DataLoss("SavedModel '", dir, "': signature '", key, "', tensor '", k, "': ",
                                  tensor.status().message());
        }
        out->push_back(std::move(*tensor));
      }
    }
    info.signatures.push_back(std::move(s));
  }
  return info;
}

std::string Keys(const std::vector<SignatureTensor>& tensors) {
  std::string out;
  for (const SignatureTensor& t : tensors) out += (out.empty() ? "'" : ", '") + t.key + "'";
  return out.empty() ? "none" : out;
}

// The init op: the init signature's, else the main_op or legacy_init_op collection's.
StatusOr<std::string> InitOp(const pb::MetaGraphDef& m, const std::string& dir) {
  for (const pb::SignatureEntry& e : m.signature_def()) {
    if (e.key() != kInitOpKey) continue;
    for (const pb::TensorInfoEntry& o : e.value().outputs()) {
      if (o.key() == kInitOpKey) return std::string(o.value().name());
    }
    return errors::FailedPrecondition("SavedModel '", dir, "': its init op signature has no output '", kInitOpKey, "'");
  }
  for (const char* collection : {"saved_model_main_op", "legacy_init_op"}) {
    for (const pb::CollectionEntry& c : m.collection_def()) {
      if (c.key() != collection) continue;
      if (c.value().node_list().value_size() != 1) {
        return errors::FailedPrecondition("SavedModel '", dir, "': collection '", collection, "' holds ",
                                          c.value().node_list().value_size(), " ops, not one");
      }
      return std::string(c.value().node_list().value(0));
    }
  }
  return std::string();
}

// Each asset's path, fed to the tensor that holds it.
std::vector<std::pair<std::string, Tensor>> AssetFeeds(const pb::MetaGraphDef& m, const std::string& dir) {
  std::vector<pb::AssetFileDef> assets(m.asset_file_def().begin(), m.asset_file_def().end());
  if (assets.empty()) {
    for (const pb::CollectionEntry& c : m.collection_def()) {
      if (c.key() != "saved_model_assets") continue;
      for (const pb::Any& any : c.value().any_list().value()) {
        pb::AssetFileDef a;
        if (a.ParseFromString(any.value())) assets.push_back(a);
      }
    }
  }
  std::vector<std::pair<std::string, Tensor>> feeds;
  for (const pb::AssetFileDef& a : assets) {
    feeds.emplace_back(a.tensor_info().name(), Tensor::Scalar<std::string>(dir + "/assets/" + a.filename()));
  }
  return feeds;
}

// The tensor or op name with its output index dropped: targets are ops.
std::string OpName(const std::string& tensor) {
  const size_t colon = tensor.rfind(':');
  return colon == std::string::npos ? tensor : tensor.substr(0, colon);
}

}  // namespace

StatusOr<std::vector<MetaGraphInfo>> InspectSavedModel(const std::string& dir) {
  ASSIGN_OR_RETURN(pb::SavedModel model, ReadSavedModel(dir));
  std::vector<MetaGraphInfo> out;
  for (const pb::MetaGraphDef& m : model.meta_graphs()) {
    ASSIGN_OR_RETURN(MetaGraphInfo info, Info(m, dir));
    out.push_back(std::move(info));
  }
  return out;
}

StatusOr<SavedModelPlan> PlanSavedModelLoad(const std::string& dir, const std::set<std::string>& tags) {
  ASSIGN_OR_RETURN(pb::SavedModel model, ReadSavedModel(dir));
  const pb::MetaGraphDef* meta = nullptr;
  std::string available;
  for (const pb::MetaGraphDef& m : model.meta_graphs()) {
    if (Tags(m) == tags && meta == nullptr) meta = &m;
    available += (available.empty() ? "" : ", ") + TagSet(Tags(m));
  }
  if (meta == nullptr) {
    return errors::NotFound("SavedModel '", dir, "' has no MetaGraph tagged ", TagSet(tags), "; it has ",
                            available.empty() ? "none" : available);
  }
  SavedModelPlan plan;
  ASSIGN_OR_RETURN(plan.info, Info(*meta, dir));
  StatusOr<GraphSpec> graph = GraphSpecFromTensorFlow(meta->graph_def());
  if (!graph.ok()) return graph.status().WithPrefix(StrCat("SavedModel '", dir, "': "));
  plan.graph = std::move(*graph);
  plan.asset_feeds = AssetFeeds(*meta, dir);
  const pb::SaverDef& saver = meta->saver_def();
  plan.checkpoint = dir + "/variables/variables";
  if (!saver.restore_op_name().empty() && Exists(plan.checkpoint + ".index")) {
    plan.restore_op = OpName(saver.restore_op_name());
    plan.filename_tensor = saver.filename_tensor_name();
  }
  ASSIGN_OR_RETURN(std::string init, InitOp(*meta, dir));
  plan.init_op = OpName(init);
  return plan;
}

StatusOr<std::unique_ptr<SavedModelBundle>> LoadSavedModel(const std::string& dir, const std::set<std::string>& tags,
                                                           const SessionConfig& config, const LoadOptions& options) {
  ASSIGN_OR_RETURN(SavedModelPlan plan, PlanSavedModelLoad(dir, tags));
  auto bundle = std::unique_ptr<SavedModelBundle>(new SavedModelBundle);
  bundle->dir_ = dir;
  bundle->info_ = std::move(plan.info);
  StatusOr<std::unique_ptr<Session>> session = Session::Create(config, plan.graph);
  if (!session.ok()) return session.status().WithPrefix(StrCat("SavedModel '", dir, "': "));
  bundle->session_ = std::move(*session);
  std::vector<Tensor> unused;
  if (!plan.restore_op.empty()) {
    std::vector<std::pair<std::string, Tensor>> feeds = plan.asset_feeds;
    feeds.emplace_back(plan.filename_tensor, Tensor::Scalar<std::string>(plan.checkpoint));
    Status s = bundle->session_->Run(feeds, {}, {plan.restore_op}, &unused);
    if (!s.ok()) return s.WithPrefix(StrCat("SavedModel '", dir, "': restoring its variables: "));
  }
  if (!plan.init_op.empty()) {
    Status s = bundle->session_->Run(plan.asset_feeds, {}, {plan.init_op}, &unused);
    if (!s.ok()) return s.WithPrefix(StrCat("SavedModel '", dir, "': its init op: "));
  }
  if (options.freeze_variables) {
    std::vector<std::string> kept;
    for (const SignatureInfo& signature : bundle->info_.signatures) {
      for (const SignatureTensor& t : signature.inputs) kept.push_back(t.tensor);
      for (const SignatureTensor& t : signature.outputs) kept.push_back(t.tensor);
    }
    // A model that updates a variable, or hands a variable's handle on where a constant
    // cannot stand in for it (into a loop, through an IdentityN), stays as it is.
    StatusOr<GraphSpec> frozen = FreezeGraph(*bundle->session_, kept);
    if (frozen.ok()) session = Session::Create(config, *frozen);
    if (frozen.ok() && session.ok()) bundle->session_ = std::move(*session);
  }
  return bundle;
}

StatusOr<const SignatureInfo*> SavedModelBundle::Signature(const std::string& key) const {
  std::string keys;
  for (const SignatureInfo& s : info_.signatures) {
    if (s.key == key) return &s;
    keys += (keys.empty() ? "'" : ", '") + s.key + "'";
  }
  return errors::NotFound("SavedModel '", dir_, "' has no signature '", key, "'; it has ",
                          keys.empty() ? "none" : keys);
}

Status SavedModelBundle::Run(const std::string& signature, const std::vector<std::pair<std::string, Tensor>>& inputs,
                             const std::vector<std::string>& output_keys, std::vector<Tensor>* outputs) const {
  ASSIGN_OR_RETURN(const SignatureInfo* sig, Signature(signature));
  std::vector<std::pair<std::string, Tensor>> feeds;
  std::set<std::string> fed;
  for (const auto& input : inputs) {
    const std::string& key = input.first;
    const Tensor& tensor = input.second;
    auto it = std::find_if(sig->inputs.begin(), sig->inputs.end(),
                           [&](const SignatureTensor& t) { return t.key == key; });
    if (it == sig->inputs.end()) {
      return errors::InvalidArgument("Signature '", signature, "' has no input '", key, "'; its inputs are ",
                                     Keys(sig->inputs));
    }
    if (!fed.insert(key).second) return errors::InvalidArgument("Input '", key, "' is fed twice");
    if (tensor.dtype() != it->dtype) {
      return errors::InvalidArgument("Input '", key, "' of signature '", signature, "' is ", it->tf_dtype, ", fed ",
                                     DataTypeName(tensor.dtype()));
    }
    if (!it->shape.IsCompatibleWith(tensor.shape())) {
      return errors::InvalidArgument("Input '", key, "' of signature '", signature, "' has shape ",
                                     it->shape.DebugString(), ", fed ", tensor.shape().DebugString());
    }
    feeds.emplace_back(it->tensor, tensor);
  }
  for (const SignatureTensor& t : sig->inputs) {
    if (fed.count(t.key) == 0) {
      return errors::InvalidArgument("Input '", t.key, "' of signature '", signature, "' is not fed");
    }
  }
  std::vector<std::string> fetches;
  if (output_keys.empty()) {
    for (const SignatureTensor& t : sig->outputs) fetches.push_back(t.tensor);
  }
  for (const std::string& key : output_keys) {
    auto it = std::find_if(sig->outputs.begin(), sig->outputs.end(),
                           [&](const SignatureTensor& t) { return t.key == key; });
    if (it == sig->outputs.end()) {
      return errors::InvalidArgument("Signature '", signature, "' has no output '", key, "'; its outputs are ",
                                     Keys(sig->outputs));
    }
    fetches.push_back(it->tensor);
  }
  return session_->Run(feeds, fetches, {}, outputs);
}

}  // namespace tessera
