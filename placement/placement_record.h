// PlacementRecord: where the placer put one node and why; what a session reports in
// RunMetadata and the placement log prints. Plain data.
#pragma once

#include <string>
#include <string_view>

namespace tessera {

enum class PlacementReason {
  kAssigned,       // kept the device it already had
  kRequested,      // matched its requested device (scope string)
  kFunction,       // matched the device a device function requested
  kColocated,      // shares the device of its colocation group
  kWithConsumers,  // a generator placed with its consumers
  kWithInput,      // a metadata op or pass-through Identity placed with its input
  kDefault,        // no request: the first supported device
  kSoftFallback,   // its request could not be met; allow_soft_placement moved it
};

std::string_view PlacementReasonName(PlacementReason r);

struct PlacementRecord {
  std::string node;
  std::string op;
  std::string device;
  PlacementReason reason = PlacementReason::kDefault;
  std::string detail;  // human-readable: the request, the colocated node, why a fallback
};

}  // namespace tessera
