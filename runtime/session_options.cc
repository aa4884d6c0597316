#include "runtime/session_options.h"

#include <nlohmann/json.hpp>

#include "graph/allocator.h"
#include "graph/serialize/json_util.h"

namespace tessera {

StatusOr<SessionConfig> SessionConfig::FromJson(std::string_view text) {
  using json = nlohmann::json;
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
