#include "placement/placement_record.h"

namespace tessera {

std::string_view PlacementReasonName(PlacementReason r) {
  switch (r) {
    case PlacementReason::kAssigned: return "assigned";
    case PlacementReason::kRequested: return "requested";
    case PlacementReason::kFunction: return "device_function";
    case PlacementReason::kColocated: return "colocated";
    case PlacementReason::kWithConsumers: return "with_consumers";
    case PlacementReason::kWithInput: return "with_input";
    case PlacementReason::kDefault: return "default";
    case PlacementReason::kSoftFallback: return "soft_fallback";
  }
  return "unknown";
}

}  // namespace tessera
