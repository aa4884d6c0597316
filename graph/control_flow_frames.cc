#include "graph/control_flow_frames.h"

#include "graph/op_kinds.h"

namespace tessera {

StatusOr<ControlFlowFrames> FindControlFlowFrames(const Graph& graph) {
  const size_t num = graph.nodes().size();
  ControlFlowFrames f;
  f.input_frame.assign(num, "");
  f.output_frame.assign(num, "");
  std::vector<char> seen(num, 0);
  for (const Node* n : graph.nodes()) {
    if (n->num_inputs() == 0 && n->control_inputs().empty()) {
      seen[n->id()] = 1;
      f.order.push_back(n);
    }
  }
  for (size_t i = 0; i < f.order.size(); ++i) {
    const Node* n = f.order[i];
    const std::string& in = f.input_frame[n->id()];
    std::string& out = f.output_frame[n->id()];
    out = in;
    const std::string& op = n->op();
    if (IsEnter(op)) {
      RETURN_IF_ERROR(n->GetAttr("frame_name", &out));
      auto [it, inserted] = f.parent.emplace(out, in);
      if (!inserted && it->second != in) {
        return errors::InvalidArgument("Node ", n->DebugName(), " enters frame '", out, "' from frame '", in,
                                       "', which other Enters enter from '", it->second, "'");
      }
    } else if (IsExit(op)) {
      if (in.empty()) return errors::InvalidArgument("Node ", n->DebugName(), " is an Exit outside every loop");
      out = f.parent.at(in);
    }
    for (const Edge* e : n->out_edges()) {
      const int dst = e->dst->id();
      if (!seen[dst]) {
        seen[dst] = 1;
        f.input_frame[dst] = out;
        f.order.push_back(e->dst);
      } else if (f.input_frame[dst] != out) {
        return errors::InvalidArgument("Node ", e->dst->DebugName(), " has inputs from frame '", f.input_frame[dst],
                                       "' and from frame '", out, "'");
      }
    }
  }
  return f;
}

bool IsLoopSwitch(const Node& n) {
  return IsSwitch(n.op()) && n.num_inputs() == 2 && IsLoopCond(n.input_edge(1)->src->op());
}

}  // namespace tessera
