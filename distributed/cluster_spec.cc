#include "distributed/cluster_spec.h"

#include <charconv>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

#include "graph/platform/json_util.h"

namespace tessera {
namespace {

using json = nlohmann::json;

// "host:port", "[v6]:port": a host and a port in 1..65535.
Status CheckAddress(std::string_view what, std::string_view address, std::string_view job, size_t task) {
  const size_t colon = address.rfind(':');
  int port = 0;
  const std::string_view port_text = colon == std::string_view::npos ? "" : address.substr(colon + 1);
  const auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (colon == std::string_view::npos || colon == 0 || port_text.empty() || ec != std::errc() ||
      end != port_text.data() + port_text.size() || port < 1 || port > 65535) {
    return errors::InvalidArgument(what, ": job '", job, "' task ", task, ": '", address,
                                   "' is not an address of the form host:port with a port from 1 to 65535");
  }
  return Status::OK();
}

}  // namespace

StatusOr<ClusterSpec> ClusterSpec::FromJson(std::string_view text) {
  ASSIGN_OR_RETURN(json j, ParseJson(text, "cluster spec"));
  return FromJsonValue(j, "cluster spec");
}

StatusOr<ClusterSpec> ClusterSpec::FromJsonValue(const json& j, std::string_view what) {
  if (!j.is_object() || j.empty()) {
    return errors::InvalidArgument(what, " must be an object of jobs, {\"worker\": [\"host:port\", ...], ...}");
  }
  std::set<std::string> seen;
  ClusterSpec spec;
  for (const auto& [job, tasks] : j.items()) {
    if (!IsValidJobName(job)) {
      return errors::InvalidArgument(what, ": job name '", job, "' must match [a-z][a-z0-9_]*");
    }
    if (!tasks.is_array() || tasks.empty()) {
      return errors::InvalidArgument(what, ": job '", job, "' must be a non-empty list of \"host:port\" addresses");
    }
    for (size_t i = 0; i < tasks.size(); ++i) {
      if (!tasks[i].is_string()) {
        return errors::InvalidArgument(what, ": job '", job, "' task ", i, " must be a \"host:port\" string");
      }
      const std::string& address = tasks[i].get_ref<const std::string&>();
      RETURN_IF_ERROR(CheckAddress(what, address, job, i));
      if (!seen.insert(address).second) {
        return errors::InvalidArgument(what, ": address '", address, "' is used by two tasks");
      }
      spec.jobs_[job].push_back(address);
    }
  }
  return spec;
}

StatusOr<std::string> ClusterSpec::TaskAddress(std::string_view job, int task) const {
  auto it = jobs_.find(std::string(job));
  if (it == jobs_.end()) {
    std::string known;
    for (const auto& [name, tasks] : jobs_) known += (known.empty() ? "" : ", ") + name;
    return errors::InvalidArgument("the cluster has no job '", job, "'; its jobs are ", known);
  }
  if (task < 0 || task >= static_cast<int>(it->second.size())) {
    return errors::InvalidArgument("task index ", task, " is out of range: job '", job, "' has ", it->second.size(),
                                   it->second.size() == 1 ? " task" : " tasks");
  }
  return it->second[task];
}

std::string ClusterSpec::TaskHost(std::string_view job, int task) const {
  StatusOr<std::string> address = TaskAddress(job, task);
  if (!address.ok()) return "";
  // FromJson checked the form host:port.
  return address->substr(0, address->rfind(':'));
}

int ClusterSpec::num_tasks(std::string_view job) const {
  auto it = jobs_.find(std::string(job));
  return it == jobs_.end() ? 0 : static_cast<int>(it->second.size());
}

std::string ClusterSpec::ToJson() const { return json(jobs_).dump(); }

bool IsValidJobName(std::string_view name) {
  if (name.empty() || name[0] < 'a' || name[0] > 'z') return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

std::string TaskName(std::string_view job, int task) { return StrCat("/job:", job, "/replica:0/task:", task); }

}  // namespace tessera
