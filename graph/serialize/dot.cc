#include "graph/serialize/dot.h"

#include <map>
#include <sstream>

#include "graph/op_kinds.h"

namespace tessera {
namespace {

std::string Escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

constexpr const char* kPalette[] = {"#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3",
                                    "#fdb462", "#b3de69", "#fccde5", "#d9d9d9", "#bc80bd"};

}  // namespace

std::string GraphToDot(const Graph& graph) {
  std::map<std::string, std::vector<const Node*>> by_device;
  for (const Node* n : graph.nodes()) {
    const std::string& d = n->assigned_device().empty() ? n->requested_device() : n->assigned_device();
    by_device[d].push_back(n);
  }
  std::ostringstream os;
  os << "digraph tessera {\n  rankdir=TB;\n  node [shape=box, style=\"rounded,filled\"];\n";
  int cluster = 0;
  for (const auto& [device, nodes] : by_device) {
    const char* colour = kPalette[cluster % std::size(kPalette)];
    os << "  subgraph cluster_" << cluster++ << " {\n    label=\""
       << Escape(device.empty() ? "(unplaced)" : device) << "\";\n    style=dashed;\n";
    for (const Node* n : nodes) {
      os << "    \"" << Escape(n->name()) << "\" [label=\"" << Escape(n->name()) << "\\n"
         << Escape(n->op()) << "\", fillcolor=\"" << colour << "\"];\n";
    }
    os << "  }\n";
  }
  for (const Node* n : graph.nodes()) {
    for (const Edge* e : n->out_edges()) {
      os << "  \"" << Escape(n->name()) << "\" -> \"" << Escape(e->dst->name()) << "\"";
      if (e->IsControl()) {
        os << " [style=dashed]";
      } else {
        os << " [label=\"" << DataTypeName(n->output_type(e->src_output)) << " "
           << n->output_shape(e->src_output).DebugString() << "\"]";
      }
      os << ";\n";
    }
  }
  // A _Send and its _Recv (same rendezvous attrs) are joined across their clusters.
  auto rendezvous_of = [](const Node& n) {
    std::string tensor, from, to;
    (void)n.GetAttr("tensor_name", &tensor);
    (void)n.GetAttr("send_device", &from);
    (void)n.GetAttr("recv_device", &to);
    return StrCat(from, ";", to, ";", tensor);
  };
  std::map<std::string, const Node*> recvs;
  for (const Node* n : graph.nodes()) {
    if (IsRecv(n->op())) recvs[rendezvous_of(*n)] = n;
  }
  for (const Node* n : graph.nodes()) {
    if (!IsSend(n->op())) continue;
    auto it = recvs.find(rendezvous_of(*n));
    if (it == recvs.end()) continue;
    std::string tensor;
    (void)n->GetAttr("tensor_name", &tensor);
    os << "  \"" << Escape(n->name()) << "\" -> \"" << Escape(it->second->name())
       << "\" [style=bold, color=\"#d62728\", label=\"" << Escape(tensor) << "\"];\n";
  }
  os << "}\n";
  return os.str();
}

}  // namespace tessera
