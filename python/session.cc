// tessera._core.Session: runs steps of a Python-built graph. The graph may grow after the
// session is made (tf.Session allows it): before a step, the nodes added since the last
// one are handed to Session::Extend. The step itself runs without the GIL, so that other
// Python threads run beside it, several of them stepping this session at once.

#include "python/bindings.h"
#include "runtime/session.h"

namespace tessera::python {
namespace {

using namespace nb::literals;

class PySession {
 public:
  PySession(GraphHandle& graph, const std::string& target, const std::string& config_json) : graph_(graph) {
    const SessionConfig config = ValueOrRaise(SessionConfig::FromJson(config_json));
    session_ = ValueOrRaise(Session::Create(target, config, graph_.graph->ToSpec()));
    seen_ = graph_.graph->num_nodes();
  }
  ~PySession() {
    // Steps on engine threads may let go of fed arrays, which takes the GIL.
    nb::gil_scoped_release unlocked;
    session_.reset();
  }

  // Runs one step; returns the fetched values and, when `trace`, the nodes' placement.
  nb::object Run(const std::vector<std::pair<std::string, nb::object>>& feeds,
                 const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
                 int64_t timeout_ms) {
    CatchUp();
    std::vector<std::pair<std::string, Tensor>> inputs;
    inputs.reserve(feeds.size());
    for (const auto& [name, value] : feeds) {
      StatusOr<Tensor> t = TensorFromArray(value);
      if (!t.ok()) Raise(t.status().WithPrefix(StrCat("Cannot feed '", name, "': ")));
      inputs.emplace_back(name, std::move(*t));
    }
    RunOptions options;
    options.timeout_in_ms = timeout_ms;
    std::vector<Tensor> outputs;
    Status s;
    {
      nb::gil_scoped_release unlocked;
      s = session_->Run(options, inputs, fetches, targets, &outputs, nullptr);
    }
    OkOrRaise(s);
    // The feeds are still held here, so an output that is a fed array's buffer is copied
    // rather than handed back as the same memory.
    nb::list values;
    for (const Tensor& t : outputs) values.append(ArrayFromTensor(t));
    return values;
  }

  nb::list Placement() {
    CatchUp();
    nb::list out;
    for (const PlacementRecord& r : session_->placement()) {
      nb::dict record;
      record["node"] = r.node;
      record["op"] = r.op;
      record["device"] = r.device;
      record["reason"] = std::string(PlacementReasonName(r.reason));
      record["detail"] = r.detail;
      out.append(record);
    }
    return out;
  }

  void Close() {
    nb::gil_scoped_release unlocked;
    session_->Close();
  }

  std::vector<std::string> Devices() const {
    std::vector<std::string> out;
    for (const Device* d : session_->devices().devices()) out.push_back(d->name());
    return out;
  }

 private:
  // Hands the session the nodes the graph gained since the last step. Under the GIL, as
  // every change to the graph is.
  void CatchUp() {
    const int now = graph_.graph->num_nodes();
    if (now == seen_) return;
    GraphSpec more;
    for (int i = seen_; i < now; ++i) more.nodes.push_back(graph_.graph->nodes()[i]->ToSpec());
    OkOrRaise(session_->Extend(more));
    seen_ = now;
  }

  GraphHandle& graph_;
  std::unique_ptr<Session> session_;
  int seen_ = 0;
};

}  // namespace

void BindSession(nb::module_& m) {
  nb::class_<PySession>(m, "Session")
      .def(nb::init<GraphHandle&, const std::string&, const std::string&>(), "graph"_a, "target"_a, "config_json"_a,
           nb::keep_alive<1, 2>())
      .def("run", &PySession::Run, "feeds"_a, "fetches"_a, "targets"_a, "timeout_ms"_a = 0)
      .def("placement", &PySession::Placement)
      .def("devices", &PySession::Devices)
      .def("close", &PySession::Close);
}

}  // namespace tessera::python
