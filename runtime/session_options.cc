#include "runtime/session_options.h"

#include <algorithm>
#include <charconv>
#include <set>

#include <nlohmann/json.hpp>

#include "graph/allocator.h"
#include "graph/device_name.h"
#include "graph/platform/json_util.h"

namespace tessera {
namespace {

using json = nlohmann::json;

Status ParseGpuOptions(const json& j, GpuOptions* out) {
  if (!j.is_object()) return errors::InvalidArgument("Session config field 'gpu_options' must be an object");
  for (auto item = j.begin(); item != j.end(); ++item) {
    // Names, not structured bindings: clang 14 cannot capture those in the lambda.
    const std::string& key = item.key();
    const json& v = item.value();
    auto need = [&](bool ok, std::string_view type) -> Status {
      if (ok) return Status::OK();
      return errors::InvalidArgument("gpu_options.", key, " must be ", type);
    };
    if (key == "allow_growth" || key == "allow_tf32" || key == "capture_steps") {
      RETURN_IF_ERROR(need(v.is_boolean(), "a bool"));
      (key == "allow_growth" ? out->allow_growth : key == "allow_tf32" ? out->allow_tf32 : out->capture_steps) =
          v.get<bool>();
    } else if (key == "per_process_gpu_memory_fraction") {
      // TensorFlow takes more than 1 for unified memory, which Tessera does not use.
      RETURN_IF_ERROR(need(v.is_number() && v.get<double>() >= 0 && v.get<double>() <= 1, "a number in [0, 1]"));
      out->per_process_gpu_memory_fraction = v.get<double>();
    } else if (key == "visible_device_list") {
      RETURN_IF_ERROR(need(v.is_string(), "a string like \"1,0\""));
      out->visible_device_list = v.get<std::string>();
      if (!out->visible_device_list.empty()) RETURN_IF_ERROR(ParseVisibleDevices(out->visible_device_list).status());
    } else if (key == "experimental") {
      RETURN_IF_ERROR(need(v.is_object(), "an object"));
      for (const auto& [field, devices] : v.items()) {
        if (field != "virtual_devices") {
          return errors::InvalidArgument("Unknown session config field 'gpu_options.experimental.", field, "'");
        }
        const Status shape = errors::InvalidArgument(
            "gpu_options.experimental.virtual_devices must be a list of {\"memory_limit_mb\": [MB, ...]}, one per "
            "visible GPU, each MB > 0");
        if (!devices.is_array()) return shape;
        for (const json& gpu : devices) {
          if (!gpu.is_object() || gpu.size() != 1 || !gpu.contains("memory_limit_mb") ||
              !gpu["memory_limit_mb"].is_array()) {
            return shape;
          }
          std::vector<double> limits;
          for (const json& mb : gpu["memory_limit_mb"]) {
            if (!mb.is_number() || mb.get<double>() <= 0 || mb.get<double>() > double(int64_t{1} << 30)) return shape;
            limits.push_back(mb.get<double>());
          }
          out->virtual_device_memory_limit_mb.push_back(std::move(limits));
        }
      }
    } else {
      return errors::InvalidArgument("Unknown session config field 'gpu_options.", key, "'");
    }
  }
  return Status::OK();
}

// graph_options { rewrite_options { constant_folding, remapping, arithmetic_optimization }
// (RewriterConfig.Toggle's names), optimizer_options { do_constant_folding,
// do_common_subexpression_elimination } }.
Status ParseGraphOptions(const json& v, SessionConfig* c) {
  const auto bad = [](std::string_view what) {
    return errors::InvalidArgument("Session config field 'graph_options' ", what);
  };
  if (!v.is_object()) return bad("must be an object");
  for (const auto& [key, options] : v.items()) {
    if (key != "rewrite_options" && key != "optimizer_options") return bad(StrCat("has no field '", key, "'"));
    if (!options.is_object()) return bad(StrCat("'", key, "' must be an object"));
    for (const auto& [name, value] : options.items()) {
      if (key == "optimizer_options") {
        bool* flag = name == "do_common_subexpression_elimination" ? &c->common_subexpression_elimination
                     : name == "do_constant_folding"                 ? &c->constant_folding
                                                                     : nullptr;
        if (flag == nullptr) return bad(StrCat("'optimizer_options' has no field '", name, "' Tessera knows"));
        if (!value.is_boolean()) return bad(StrCat("'optimizer_options.", name, "' must be true or false"));
        *flag = value.get<bool>();
        continue;
      }
      bool* toggle = name == "remapping"                 ? &c->remapping
                     : name == "arithmetic_optimization" ? &c->arithmetic_optimization
                     : name == "constant_folding"        ? &c->constant_folding
                                                         : nullptr;
      if (toggle == nullptr) return bad(StrCat("'rewrite_options' has no field '", name, "' Tessera knows"));
      const std::string t = value.is_string() ? value.get<std::string>() : "";
      if (t != "DEFAULT" && t != "ON" && t != "OFF") {
        return bad(StrCat("'rewrite_options.", name, "' must be DEFAULT, ON or OFF"));
      }
      *toggle = t != "OFF";
    }
  }
  return Status::OK();
}

}  // namespace

StatusOr<SessionConfig> SessionConfig::FromJson(std::string_view text) {
  ASSIGN_OR_RETURN(json j, ParseJson(text, "session config"));
  if (!j.is_object()) return errors::InvalidArgument("Session config must be a JSON object");
  SessionConfig c;
  for (auto item = j.begin(); item != j.end(); ++item) {
    const std::string& key = item.key();
    const json& v = item.value();
    auto need = [&](bool ok, std::string_view type) -> Status {
      if (ok) return Status::OK();
      return errors::InvalidArgument("Session config field '", key, "' must be ", type);
    };
    if (key == "inter_op_parallelism_threads" || key == "intra_op_parallelism_threads") {
      RETURN_IF_ERROR(need(v.is_number_integer() && v.get<int64_t>() >= 0 && v.get<int64_t>() <= 1024,
                           "an integer in [0, 1024]"));
      (key == "inter_op_parallelism_threads" ? c.inter_op_parallelism_threads
                                             : c.intra_op_parallelism_threads) = v.get<int>();
    } else if (key == "use_per_session_threads" || key == "allow_soft_placement" ||
               key == "log_device_placement") {
      RETURN_IF_ERROR(need(v.is_boolean(), "a bool"));
      bool b = v.get<bool>();
      if (key == "use_per_session_threads") c.use_per_session_threads = b;
      if (key == "allow_soft_placement") c.allow_soft_placement = b;
      if (key == "log_device_placement") c.log_device_placement = b;
    } else if (key == "host_memory_limit_mb") {
      RETURN_IF_ERROR(need(v.is_number_integer() && v.get<int64_t>() >= 0 && v.get<int64_t>() <= (int64_t{1} << 40),
                           "an integer in [0, 2^40]"));
      c.host_memory_limit_mb = v.get<int64_t>();
    } else if (key == "operation_timeout_in_ms") {
      RETURN_IF_ERROR(need(v.is_number_integer() && v.get<int64_t>() >= 0, "an integer >= 0"));
      c.operation_timeout_in_ms = v.get<int64_t>();
    } else if (key == "device_count") {
      RETURN_IF_ERROR(need(v.is_object(), "an object like {\"CPU\": 4}"));
      for (const auto& [type, n] : v.items()) {
        if (!n.is_number_integer() || n.get<int64_t>() < 0 || n.get<int64_t>() > 1024) {
          return errors::InvalidArgument("device_count of ", type, " must be an integer in [0, 1024]");
        }
        c.device_count[type] = n.get<int>();
      }
    } else if (key == "device_filters") {
      RETURN_IF_ERROR(need(v.is_array(), "a list of device names like \"/job:ps\""));
      for (const json& f : v) {
        RETURN_IF_ERROR(need(f.is_string(), "a list of device names like \"/job:ps\""));
        RETURN_IF_ERROR(DeviceName::Parse(f.get<std::string>()).status());
        c.device_filters.push_back(f.get<std::string>());
      }
    } else if (key == "gpu_options") {
      RETURN_IF_ERROR(ParseGpuOptions(v, &c.gpu_options));
    } else if (key == "graph_options") {
      RETURN_IF_ERROR(ParseGraphOptions(v, &c));
    } else {
      return errors::InvalidArgument("Unknown session config field '", key, "'");
    }
  }
  return c;
}

int64_t SessionConfig::HostMemoryLimitBytes() const {
  return host_memory_limit_mb > 0 ? host_memory_limit_mb << 20 : HostMemoryBytes();
}

}  // namespace tessera
