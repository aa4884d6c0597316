// A GraphDef's function library, made ordinary nodes as it is imported: every call into the
// library is inlined and TF2's functional control flow lowered to the v1 control flow the
// executor runs, as TensorFlow's function inlining and LowerFunctionalOpsPass do. Placement
// and partitioning then see a body's nodes as any others: a body may span devices.
//
//   call C of function f (a PartitionedCall, StatefulPartitionedCall or an op named f):
//     C/ARG           Identity of each input, gated by C/input_control_node when C has
//                     control inputs (so are the body's nodes that have no inputs)
//     C/NODE          each node of f's body, on C's device unless it names its own
//     C               IdentityN of f's results, after f's control outputs (so "C:1" and
//                     "^C" mean what they meant)
//   If / StatelessIf X:        Switch, a call of each branch, Merge per output (X/...)
//   Case / StatelessCase X:    _SwitchN to the indexed branch (the last when out of range)
//   While / StatelessWhile W:  Enter, Merge, a call of cond, LoopCond, Switch, a call of
//                              body, NextIteration, Exit (frame "W", parallel_iterations kept)
//
// A function that calls itself, a call whose inputs do not match its function, a While whose
// body changes its loop variables' types and a function the library lacks are
// InvalidArgument (NotFound for the last) naming the node and the function. Thread-safe.
#pragma once

#include "graph/op_registry.h"
#include "graph/platform/status.h"
#include "graph/protos/tensorflow_graph.pb.h"

namespace tessera {

// `graph` with its calls inlined and its control flow lowered; the result has no library.
StatusOr<tfgraph::GraphDef> InlineTensorFlowFunctions(const tfgraph::GraphDef& graph, const OpRegistry& ops);

}  // namespace tessera
