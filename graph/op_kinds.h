// Op kinds: the ops the runtime treats by what they are rather than by what they compute (the
// v1 control flow, the ends of cross-device edges, a step's arguments and results), asked by
// op name as TensorFlow asks a node (IsSwitch(), IsMerge(), ...), so that no pass spells an
// op's name out.
//
//   if (IsSwitch(node->op())) ...       // a Graph's Node
//   if (IsSend(node_def.op)) ...        // plain data
//
// A reference variant ("RefSwitch") is the same kind as its op. Pure functions; thread-safe.
#pragma once

#include <string_view>

namespace tessera {

// _SwitchN is the switch of a lowered Case: one live output of N.
inline bool IsSwitch(std::string_view op) { return op == "Switch" || op == "RefSwitch" || op == "_SwitchN"; }
inline bool IsMerge(std::string_view op) { return op == "Merge" || op == "RefMerge"; }
inline bool IsEnter(std::string_view op) { return op == "Enter" || op == "RefEnter"; }
inline bool IsExit(std::string_view op) { return op == "Exit" || op == "RefExit"; }
inline bool IsNextIteration(std::string_view op) { return op == "NextIteration" || op == "RefNextIteration"; }
inline bool IsLoopCond(std::string_view op) { return op == "LoopCond"; }
inline bool IsControlTrigger(std::string_view op) { return op == "ControlTrigger"; }
// Any of the above, as TensorFlow's IsControlFlow: the ops that choose which nodes run.
inline bool IsControlFlow(std::string_view op) {
  return IsSwitch(op) || IsMerge(op) || IsEnter(op) || IsExit(op) || IsNextIteration(op) || IsLoopCond(op) ||
         IsControlTrigger(op);
}

// The ends of a cross-device edge that partitioning adds (runtime/partition.h); the _Host
// variants keep the tensor in host memory.
inline bool IsSend(std::string_view op) { return op == "_Send" || op == "_HostSend"; }
inline bool IsRecv(std::string_view op) { return op == "_Recv" || op == "_HostRecv"; }
// A step's feed and fetch (runtime/subgraph.h).
inline bool IsArg(std::string_view op) { return op == "_Arg"; }
inline bool IsRetval(std::string_view op) { return op == "_Retval"; }

inline bool IsConstant(std::string_view op) { return op == "Const"; }
inline bool IsPlaceholder(std::string_view op) { return op == "Placeholder" || op == "PlaceholderWithDefault"; }
inline bool IsNoOp(std::string_view op) { return op == "NoOp"; }
inline bool IsIdentity(std::string_view op) { return op == "Identity"; }
// A member of an all-reduce group (runtime/collective_rings.h).
inline bool IsAllReduce(std::string_view op) { return op == "AllReduce"; }
// A TF1 variable (its buffer is its output reference).
inline bool IsVariable(std::string_view op) { return op == "VariableV2"; }

// The names before op_kinds.h; kept for one release.
inline bool IsSendOp(std::string_view op) { return IsSend(op); }
inline bool IsRecvOp(std::string_view op) { return IsRecv(op); }

}  // namespace tessera
