#include "runtime/common_subexpression.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <tuple>
#include <type_traits>
#include <variant>
#include <vector>

#include "graph/op_kinds.h"
#include "runtime/graph_rewrites.h"

namespace tessera {
namespace {

bool Mergeable(const Node& n) {
  const std::string& op = n.op();
  if (n.is_stateful() || IsArg(op) || IsRetval(op) || IsControlFlow(op) || IsPlaceholder(op)) return false;
  for (int i = 0; i < n.num_inputs(); ++i) {
    if (n.input_is_ref(i)) return false;
  }
  for (int i = 0; i < n.num_outputs(); ++i) {
    if (n.output_is_ref(i)) return false;
  }
  return true;
}

bool SameTensor(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  if (DataTypeHoldsStrings(a.dtype())) {
    for (int64_t i = 0; i < a.NumElements(); ++i) {
      if (a.data<std::string>()[i] != b.data<std::string>()[i]) return false;
    }
    return true;
  }
  return std::memcmp(a.raw_data(), b.raw_data(), a.TotalBytes()) == 0;
}

bool SameAttrs(const AttrMap& a, const AttrMap& b) {
  if (a.size() != b.size()) return false;
  for (auto x = a.begin(), y = b.begin(); x != a.end(); ++x, ++y) {
    if (x->first != y->first || x->second.type() != y->second.type()) return false;
    const AttrValue& other = y->second;
    const bool same = std::visit(
        [&other](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, Tensor>) {
            return SameTensor(v, *other.get_if<Tensor>());
          } else {
            return v == *other.get_if<T>();
          }
        },
        x->second.value());
    if (!same) return false;
  }
  return true;
}

}  // namespace

StatusOr<std::unique_ptr<Graph>> EliminateCommonSubexpressions(std::unique_ptr<Graph> graph) {
  const std::vector<const Node*> order = TopologicalOrder(*graph);  // a loop's back edge: none
  // Each node's representative: itself, or the first equal node before it.
  std::vector<const Node*> rep(graph->nodes().size(), nullptr);
  // By op, device and the representatives of its inputs: the representatives seen so far.
  using Key = std::tuple<std::string, std::string, std::vector<std::pair<int, int>>, std::vector<int>>;
  std::map<Key, std::vector<const Node*>> seen;
  std::map<std::string, Replacement> dropped;
  for (const Node* n : order) {
    rep[n->id()] = n;
    if (!Mergeable(*n)) continue;
    std::vector<std::pair<int, int>> inputs;
    for (int i = 0; i < n->num_inputs(); ++i) {
      const Edge* e = n->input_edge(i);
      inputs.emplace_back(rep[e->src->id()]->id(), e->src_output);
    }
    std::vector<int> controls;
    for (const Edge* e : n->control_inputs()) controls.push_back(rep[e->src->id()]->id());
    std::sort(controls.begin(), controls.end());
    controls.erase(std::unique(controls.begin(), controls.end()), controls.end());
    std::vector<const Node*>& same_key = seen[Key{n->op(), n->assigned_device(), inputs, controls}];
    for (const Node* other : same_key) {
      if (SameAttrs(other->attrs(), n->attrs())) {
        rep[n->id()] = other;
        break;
      }
    }
    if (rep[n->id()] == n) {
      same_key.push_back(n);
      continue;
    }
    Replacement r{rep[n->id()]->name(), {}};
    for (int i = 0; i < n->num_outputs(); ++i) r.outputs.push_back(i);
    dropped.emplace(n->name(), std::move(r));
  }
  if (dropped.empty()) return graph;
  return DropNodes(*graph, dropped);
}

}  // namespace tessera
