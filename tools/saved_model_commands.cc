#include "tools/saved_model_commands.h"

#include <nlohmann/json.hpp>

#include "graph/serialize/graph_json.h"
#include "saved_model/saved_model.h"
#include "tools/flags.h"
#include "tools/run_inputs.h"

namespace tessera {
namespace {

// saved_model_cli's way: "(-1, 3)", "()" for a scalar.
std::string ShapeText(const TensorShape& s) {
  if (s.unknown_rank()) return "unknown_rank";
  std::string out = "(";
  for (int i = 0; i < s.rank(); ++i) out += StrCat(i == 0 ? "" : ", ", s.dim(i));
  return out + ")";
}

void PrintTensors(const char* kind, const std::vector<SignatureTensor>& tensors, std::ostream& out) {
  out << "  The given SavedModel SignatureDef contains the following " << kind << "(s):\n";
  for (const SignatureTensor& t : tensors) {
    out << "    " << kind << "s['" << t.key << "'] tensor_info:\n"
        << "        dtype: " << t.tf_dtype << "\n"
        << "        shape: " << ShapeText(t.shape) << "\n"
        << "        name: " << t.tensor << "\n";
  }
}

Status Inspect(const std::string& dir, std::ostream& out) {
  ASSIGN_OR_RETURN(std::vector<MetaGraphInfo> metas, InspectSavedModel(dir));
  for (const MetaGraphInfo& m : metas) {
    std::string tags;
    for (const std::string& t : m.tags) tags += (tags.empty() ? "" : ", ") + t;
    out << "\nMetaGraphDef with tag-set: '" << tags << "' contains the following SignatureDefs:\n";
    for (const SignatureInfo& s : m.signatures) {
      out << "\nsignature_def['" << s.key << "']:\n";
      PrintTensors("input", s.inputs, out);
      PrintTensors("output", s.outputs, out);
      out << "  Method name is: " << s.method_name << "\n";
    }
  }
  return Status::OK();
}

Status RunSignature(const std::vector<std::string>& args, std::ostream& out) {
  std::string dir, signature = "serving_default", config_path;
  std::vector<std::string> tags, fetches, feed_args;
  Flags flags;
  flags.Positional("DIR", &dir).List("--tag", &tags).String("--signature", &signature).List("--fetch", &fetches)
      .Repeated("--feed", &feed_args).String("--config", &config_path);
  RETURN_IF_ERROR(flags.Parse(args));
  if (tags.empty()) tags = {"serve"};
  SessionConfig config;
  if (!config_path.empty()) {
    ASSIGN_OR_RETURN(config, ReadSessionConfigFile(config_path));
  }
  std::vector<std::pair<std::string, Tensor>> feeds;
  for (const std::string& v : feed_args) {
    const size_t eq = v.find('=');
    if (eq == std::string::npos || eq == 0) return errors::InvalidArgument("--feed takes KEY=JSON, got '", v, "'");
    const std::string key = v.substr(0, eq);
    ASSIGN_OR_RETURN(Tensor t, ReadFeedValue(key, v.substr(eq + 1)));
    feeds.emplace_back(key, std::move(t));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<SavedModelBundle> model,
                   LoadSavedModel(dir, std::set<std::string>(tags.begin(), tags.end()), config));
  ASSIGN_OR_RETURN(const SignatureInfo* sig, model->Signature(signature));
  if (fetches.empty()) {
    for (const SignatureTensor& t : sig->outputs) fetches.push_back(t.key);
  }
  std::vector<Tensor> outputs;
  RETURN_IF_ERROR(model->Run(signature, feeds, fetches, &outputs));
  nlohmann::json result = nlohmann::json::object();
  for (size_t i = 0; i < outputs.size(); ++i) result[fetches[i]] = TensorToJson(outputs[i]);
  out << result.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  return Status::OK();
}

int Finish(const Status& s, std::ostream& err) {
  if (s.ok()) return 0;
  err << s.ToString() << "\n";
  return s.code() == Code::kInvalidArgument && s.message().starts_with("unknown flag") ? 2 : 1;
}

}  // namespace

int RunSavedModelCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  return Finish(RunSignature(args, out), err);
}

int InspectSavedModelCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::string dir;
  Flags flags;
  flags.Positional("DIR", &dir);
  Status s = flags.Parse(args);
  if (!s.ok()) {
    err << "tessera: " << s.message() << "\n";
    return 2;
  }
  return Finish(Inspect(dir, out), err);
}

}  // namespace tessera
