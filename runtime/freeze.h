// FreezeGraph: what `outputs` need of a session's graph, with every variable replaced by a
// constant holding its value in that session (TensorFlow's convert_variables_to_constants):
// a reference variable (VariableV2) becomes a Const; a resource variable's handle
// (VarHandleOp) becomes a Const of its value, the Identity and Enter nodes it passes through
// carry that value, and its reads (ReadVariableOp) become Identity, inside loops too.
// The result needs no initialisation and no checkpoint: it is what `tessera run` and an
// embedding program load for inference.
//
//   StatusOr<GraphSpec> frozen = FreezeGraph(*session, {"probabilities", "classes"});
//   Status s = WriteFileAtomically("model.json", GraphSpecToJson(*frozen), "frozen graph");
//
// May run concurrently with other Session::Run calls on the session; variables updated
// meanwhile are read at some point during the call.
#pragma once

#include <string>
#include <vector>

#include "runtime/session.h"

namespace tessera {

// NotFound for an output the graph lacks; FailedPrecondition for an uninitialised
// variable; InvalidArgument when an output depends on an op that updates a variable
// (an Assign, an optimizer's Apply, AssignVariableOp), which a constant cannot stand in
// for; Unimplemented for a resource variable the outputs read only inside a loop.
StatusOr<GraphSpec> FreezeGraph(Session& session, const std::vector<std::string>& outputs);

}  // namespace tessera
