#include "graph/device_name.h"

#include <cctype>
#include <charconv>
#include <vector>

#include "graph/platform/str_split.h"

namespace tessera {
namespace {

bool ParseInt(std::string_view s, int* out) {
  if (s.empty()) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && ptr == s.data() + s.size() && *out >= 0;
}

bool IsTypeName(std::string_view s) {
  if (s.empty() || !std::isalpha(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

std::string Upper(std::string_view s) {
  std::string u(s);
  for (char& c : u) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return u;
}


}  // namespace

StatusOr<DeviceName> DeviceName::Parse(std::string_view spec) {
  DeviceName d;
  auto bad = [&](std::string_view why) {
    return errors::InvalidArgument("Malformed device specification '", spec, "': ", why,
                                   ". Expected e.g. '/cpu:0', '/device:GPU:1' or "
                                   "'/job:localhost/replica:0/task:0/device:CPU:0'");
  };
  std::string_view rest = spec;
  if (rest.starts_with("/")) rest.remove_prefix(1);
  if (rest.empty()) return d;
  for (std::string_view part : StrSplit(rest, '/')) {
    std::vector<std::string_view> f = StrSplit(part, ':');
    std::string key = f.empty() ? std::string() : Upper(f[0]);
    if (key == "JOB" && f.size() == 2) {
      if (f[1].empty() || !IsTypeName(f[1])) return bad("bad job name");
      d.has_job = true;
      d.job = std::string(f[1]);
    } else if ((key == "REPLICA" || key == "TASK") && f.size() == 2) {
      int v;
      if (f[1] == "*") continue;
      if (!ParseInt(f[1], &v)) return bad(StrCat("bad ", f[0], " index"));
      if (key == "REPLICA") {
        d.has_replica = true;
        d.replica = v;
      } else {
        d.has_task = true;
        d.task = v;
      }
    } else if (key == "DEVICE" && (f.size() == 2 || f.size() == 3)) {
      if (f[1] == "*") continue;
      if (!IsTypeName(f[1])) return bad("bad device type");
      d.has_type = true;
      d.type = Upper(f[1]);
      if (f.size() == 3 && f[2] != "*") {
        if (!ParseInt(f[2], &d.id)) return bad("bad device index");
        d.has_id = true;
      }
    } else if (f.size() == 2 && IsTypeName(f[0]) && key != "JOB" && key != "REPLICA" &&
               key != "TASK" && key != "DEVICE") {
      // Legacy "cpu:0", "gpu:*".
      d.has_type = true;
      d.type = key;
      if (f[1] != "*") {
        if (!ParseInt(f[1], &d.id)) return bad("bad device index");
        d.has_id = true;
      }
    } else {
      return bad(StrCat("unrecognised part '", part, "'"));
    }
  }
  return d;
}

DeviceName DeviceName::Full(std::string job, int replica, int task, std::string type, int id) {
  DeviceName d;
  d.has_job = d.has_replica = d.has_task = d.has_type = d.has_id = true;
  d.job = std::move(job);
  d.replica = replica;
  d.task = task;
  d.type = std::move(type);
  d.id = id;
  return d;
}

std::string DeviceName::ToString() const {
  std::string s;
  if (has_job) s += "/job:" + job;
  if (has_replica) s += StrCat("/replica:", replica);
  if (has_task) s += StrCat("/task:", task);
  if (has_type) s += "/device:" + type + ":" + (has_id ? std::to_string(id) : "*");
  return s;
}

bool DeviceName::Matches(const DeviceName& device) const {
  if (has_job && (!device.has_job || job != device.job)) return false;
  if (has_replica && (!device.has_replica || replica != device.replica)) return false;
  if (has_task && (!device.has_task || task != device.task)) return false;
  if (has_type && (!device.has_type || type != device.type)) return false;
  if (has_id && (!device.has_id || id != device.id)) return false;
  return true;
}

void DeviceName::FillFrom(const DeviceName& outer) {
  if (!has_job && outer.has_job) {
    has_job = true;
    job = outer.job;
  }
  if (!has_replica && outer.has_replica) {
    has_replica = true;
    replica = outer.replica;
  }
  if (!has_task && outer.has_task) {
    has_task = true;
    task = outer.task;
  }
  // Field by field, as TensorFlow's DeviceSpec.merge_from.
  if (!has_type && outer.has_type) {
    has_type = true;
    type = outer.type;
  }
  if (!has_id && outer.has_id) {
    has_id = true;
    id = outer.id;
  }
}

StatusOr<DeviceName> DeviceName::MergeStrict(const DeviceName& a, const DeviceName& b) {
  auto conflict = [&](std::string_view what) {
    return errors::InvalidArgument("Cannot merge devices with incompatible ", what, ": '",
                                   a.ToString(), "' and '", b.ToString(), "'");
  };
  DeviceName m = a;
  if (a.has_job && b.has_job && a.job != b.job) return conflict("jobs");
  if (a.has_replica && b.has_replica && a.replica != b.replica) return conflict("replicas");
  if (a.has_task && b.has_task && a.task != b.task) return conflict("tasks");
  if (a.has_type && b.has_type && a.type != b.type) return conflict("types");
  if (a.has_id && b.has_id && a.id != b.id) return conflict("ids");
  if (!m.has_job && b.has_job) { m.has_job = true; m.job = b.job; }
  if (!m.has_replica && b.has_replica) { m.has_replica = true; m.replica = b.replica; }
  if (!m.has_task && b.has_task) { m.has_task = true; m.task = b.task; }
  if (!m.has_type && b.has_type) { m.has_type = true; m.type = b.type; }
  if (!m.has_id && b.has_id) { m.has_id = true; m.id = b.id; }
  return m;
}

}  // namespace tessera
