// A program outside the tree that finds the installed package and runs a graph.
#include <iostream>

#include "graph/builder/ops.h"
#include "runtime/session.h"

int main() {
  using namespace tessera;
  Scope root = Scope::NewRootScope();
  ops::Add(root.WithOpName("y"), 40.0f, 2.0f);
  GraphSpec def;
  if (!root.ToSpec(&def).ok()) return 1;
  auto session = Session::Create(SessionConfig(), def);
  if (!session.ok()) return 1;
  std::vector<Tensor> out;
  Status s = (*session)->Run({}, {"y"}, {}, &out);
  if (!s.ok()) return 1;
  std::cout << out[0].data<float>()[0] << "\n";
  return out[0].data<float>()[0] == 42.0f ? 0 : 1;
}
