// Chrome trace export of a step: one process row per device, one thread row per OS thread,
// one complete event per node. Perfetto and chrome://tracing open the JSON.
#pragma once

#include <string>

#include "runtime/session_options.h"

namespace tessera {

std::string ChromeTraceJson(const RunMetadata& metadata);

}  // namespace tessera
