// tessera._core.Server: one task of a cluster (distributed/cluster_server.h) for
// tf.train.Server, and grpc:// targets for sessions. join() releases the GIL.

#include <cstdlib>

#include "distributed/cluster_server.h"
#include "distributed/grpc_session.h"
#include "python/bindings.h"

namespace tessera::python {
namespace {

using namespace nb::literals;

// Stopped and joined when Python lets go of it, as ClusterServer's destructor does.
struct PyServer {
  PyServer(const std::string& cluster_json, const std::string& job, int task, const std::string& config_json) {
    ClusterServerOptions options;
    options.config = ValueOrRaise(SessionConfig::FromJson(config_json));
    // As `tessera server` and every grpc:// session of the process: the cluster's token.
    if (const char* token = std::getenv("TESSERA_CLUSTER_TOKEN"); token != nullptr) options.token = token;
    const ClusterSpec cluster = ValueOrRaise(ClusterSpec::FromJson(cluster_json));
    server = ValueOrRaise(ClusterServer::Create(cluster, job, task, std::move(options)));
  }
  ~PyServer() {
    nb::gil_scoped_release unlocked;  // steps finishing on the server may take the GIL
    server.reset();
  }
  std::unique_ptr<ClusterServer> server;
};

}  // namespace

void BindServer(nb::module_& m) {
  RegisterGrpcSessionFactory();
  nb::class_<PyServer>(m, "Server")
      .def(nb::init<const std::string&, const std::string&, int, const std::string&>(), "cluster_json"_a, "job"_a,
           "task"_a, "config_json"_a)
      .def_prop_ro("target", [](const PyServer& s) { return s.server->target(); })
      .def("join", [](PyServer& s) { s.server->Join(); }, nb::call_guard<nb::gil_scoped_release>())
      .def("stop", [](PyServer& s) { s.server->Stop(); }, nb::call_guard<nb::gil_scoped_release>());
}

}  // namespace tessera::python
