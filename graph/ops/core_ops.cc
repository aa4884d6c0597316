#include "graph/ops/core_ops.h"

#include <cstdlib>
#include <iostream>

namespace tessera {

void RegisterCoreOp(OpRegistry& r, const OpDefBuilder& b) {
  Status s = r.Register(b);
  if (!s.ok()) {
    std::cerr << "tessera: bad core op schema: " << s << "\n";
    std::abort();
  }
}

OpRegistry* OpRegistry::Global() {
  static OpRegistry* registry = [] {
    auto* r = new OpRegistry;
    RegisterCoreOps(*r);
    return r;
  }();
  return registry;
}

void RegisterCoreOps(OpRegistry& r) {
  RegisterArrayOps(r);
  RegisterStateOps(r);
  RegisterMathOps(r);
  RegisterNnOps(r);
  RegisterRandomOps(r);
  RegisterTrainingOps(r);
  RegisterIoOps(r);
  RegisterSummaryOps(r);
  RegisterStringOps(r);
  RegisterListOps(r);
  RegisterDataFlowOps(r);
  RegisterSendrecvOps(r);
  RegisterCollectiveOps(r);
  RegisterControlFlowOps(r);
  RegisterDataOps(r);
  RegisterScriptOps(r);
}

}  // namespace tessera
