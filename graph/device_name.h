// DeviceName: a parsed device string, full or partial, as TensorFlow 1.x reads them.
//
//   "/job:localhost/replica:0/task:0/device:CPU:0"   full
//   "/cpu:1", "/device:GPU:1", "/gpu:*", "/job:ps", "CPU:0"   partial
//
// Device types are case-insensitive and kept upper-case ("cpu" -> "CPU"); "*" leaves a
// field unset. This lives in graph/ because scopes merge device strings as ops are created;
// the placer (placement/) matches them against real devices.
#pragma once

#include <string>
#include <string_view>

#include "graph/platform/status.h"

namespace tessera {

struct DeviceName {
  bool has_job = false;
  std::string job;
  bool has_replica = false;
  int replica = 0;
  bool has_task = false;
  int task = 0;
  bool has_type = false;
  std::string type;
  bool has_id = false;
  int id = 0;

  // "" parses to a name with nothing set.
  static StatusOr<DeviceName> Parse(std::string_view spec);
  static DeviceName Full(std::string job, int replica, int task, std::string type, int id);

  // The set fields in canonical form, e.g. "/job:ps/device:CPU:1"; "" when nothing is set.
  std::string ToString() const;
  bool IsFullySpecified() const {
    return has_job && has_replica && has_task && has_type && has_id;
  }
  bool empty() const { return !has_job && !has_replica && !has_task && !has_type && !has_id; }
  // True when every field set here has the same value in `device`.
  bool Matches(const DeviceName& device) const;
  // Fills the fields unset here from `outer` (an enclosing device scope): inner wins.
  void FillFrom(const DeviceName& outer);
  // Combines two requests that must both hold (colocated nodes): a field set in both with
  // different values is an InvalidArgument naming the two specs.
  static StatusOr<DeviceName> MergeStrict(const DeviceName& a, const DeviceName& b);
};

}  // namespace tessera
