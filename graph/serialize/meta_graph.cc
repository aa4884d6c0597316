#include "graph/serialize/meta_graph.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

#include <set>

#include "graph/protos/saved_model.pb.h"

namespace tessera {
namespace {

namespace pb = tfgraph;
using google::protobuf::internal::WireFormatLite;

constexpr const char* kVariables = "variables";
constexpr const char* kTrainableVariables = "trainable_variables";

template <typename Message>
bool Parses(std::string_view bytes) {
  Message m;
  return m.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
}

void AddVariables(pb::MetaGraphDef& out, const char* key, const std::vector<MetaGraphVariable>& variables,
                  bool trainable_only) {
  pb::CollectionDef collection;
  for (const MetaGraphVariable& v : variables) {
    if (trainable_only && !v.trainable) continue;
    pb::VariableDef def;
    def.set_variable_name(v.variable_name);
    def.set_initializer_name(v.initializer_name);
    def.set_snapshot_name(v.snapshot_name);
    def.set_initial_value_name(v.initial_value_name);
    def.set_trainable(v.trainable);
    collection.mutable_bytes_list()->add_value(def.SerializeAsString());
  }
  if (collection.bytes_list().value_size() == 0) return;
  pb::CollectionEntry* entry = out.add_collection_def();
  entry->set_key(key);
  *entry->mutable_value() = std::move(collection);
}

}  // namespace

std::string MetaGraphDamage(std::string_view bytes, size_t base) {
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                                            static_cast<int>(bytes.size()));
  while (true) {
    const size_t offset = base + static_cast<size_t>(in.CurrentPosition());
    const uint32_t tag = in.ReadTag();
    if (tag == 0) return "";
    const int field = WireFormatLite::GetTagFieldNumber(tag);
    if (WireFormatLite::GetTagWireType(tag) != WireFormatLite::WIRETYPE_LENGTH_DELIMITED) {
      if (!WireFormatLite::SkipField(&in, tag)) return StrCat("field ", field, " at byte offset ", offset, " is truncated");
      continue;
    }
    uint32_t length;
    if (!in.ReadVarint32(&length) || length > bytes.size() - static_cast<size_t>(in.CurrentPosition())) {
      return StrCat("field ", field, " at byte offset ", offset, " is truncated");
    }
    const std::string_view part = bytes.substr(static_cast<size_t>(in.CurrentPosition()), length);
    const bool ok = field == 1   ? Parses<pb::MetaGraphDef::MetaInfoDef>(part)
                    : field == 2 ? Parses<pb::GraphDef>(part)
                    : field == 3 ? Parses<pb::SaverDef>(part)
                    : field == 4 ? Parses<pb::CollectionEntry>(part)
                    : field == 5 ? Parses<pb::SignatureEntry>(part)
                    : field == 6 ? Parses<pb::AssetFileDef>(part)
                                 : true;
    if (!ok) {
      static const char* const kNames[] = {"", "meta_info_def", "graph_def", "saver_def", "collection_def",
                                            "signature_def", "asset_file_def"};
      return StrCat("its ", kNames[field], " at byte offset ", offset, " does not parse");
    }
    in.Skip(static_cast<int>(length));
  }
}

StatusOr<std::string> SerializeMetaGraph(const MetaGraph& meta) {
  pb::MetaGraphDef out;
  out.mutable_meta_info_def()->set_tensorflow_version("tessera");
  if (!out.mutable_graph_def()->ParseFromString(meta.graph_def)) {
    return errors::InvalidArgument("the graph of a meta graph must be a serialized GraphDef");
  }
  if (meta.saver) {
    pb::SaverDef* saver = out.mutable_saver_def();
    saver->set_filename_tensor_name(meta.saver->filename_tensor_name);
    saver->set_save_tensor_name(meta.saver->save_tensor_name);
    saver->set_restore_op_name(meta.saver->restore_op_name);
    saver->set_max_to_keep(meta.saver->max_to_keep);
    saver->set_keep_checkpoint_every_n_hours(10000.0f);
    saver->set_version(2);  // V2: the tensor bundle
  }
  AddVariables(out, kVariables, meta.variables, false);
  AddVariables(out, kTrainableVariables, meta.variables, true);
  return out.SerializeAsString();
}

StatusOr<MetaGraph> ParseMetaGraph(std::string_view data, std::string_view what, bool clear_devices) {
  if (data.size() > static_cast<size_t>(INT32_MAX)) {
    return errors::InvalidArgument("meta graph '", what, "' is ", data.size(), " bytes: more than protobuf reads");
  }
  pb::MetaGraphDef def;
  if (!def.ParseFromArray(data.data(), static_cast<int>(data.size()))) {
    const std::string why = MetaGraphDamage(data);
    return errors::DataLoss("meta graph '", what, "': ", why.empty() ? "it does not parse as a MetaGraphDef" : why);
  }
  if (clear_devices) {
    for (pb::NodeDef& node : *def.mutable_graph_def()->mutable_node()) node.clear_device();
  }
  MetaGraph out;
  out.graph_def = def.graph_def().SerializeAsString();
  if (def.has_saver_def() && !def.saver_def().restore_op_name().empty()) {
    const pb::SaverDef& s = def.saver_def();
    out.saver = SaverNames{s.filename_tensor_name(), s.save_tensor_name(), s.restore_op_name(),
                           s.max_to_keep()};
  }
  std::set<std::string> trainable;
  for (const pb::CollectionEntry& entry : def.collection_def()) {
    if (entry.key() != kVariables && entry.key() != kTrainableVariables) continue;
    for (const std::string& bytes : entry.value().bytes_list().value()) {
      pb::VariableDef v;
      if (!v.ParseFromString(bytes)) {
        return errors::DataLoss("meta graph '", what, "': an entry of its ", entry.key(),
                                " collection is not a VariableDef");
      }
      if (entry.key() == kTrainableVariables) {
        trainable.insert(v.variable_name());
      } else {
        out.variables.push_back({v.variable_name(), v.initializer_name(), v.snapshot_name(), v.initial_value_name(),
                                 false});
      }
    }
  }
  for (MetaGraphVariable& v : out.variables) v.trainable = trainable.erase(v.variable_name) > 0;
  if (!trainable.empty()) {
    return errors::InvalidArgument("meta graph '", what, "': trainable variable '", *trainable.begin(),
                                   "' is not among its variables");
  }
  return out;
}

}  // namespace tessera
