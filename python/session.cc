// tessera._core.Session: runs steps of a Python-built graph. The graph may grow after the
// session is made (tf.Session allows it): before a step, the nodes added since the last
// one are handed to Session::Extend. The step itself runs without the GIL, so that other
// Python threads run beside it, several of them stepping this session at once. Ctrl-C
// during a step of the main thread cancels the step and raises KeyboardInterrupt.

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <mutex>
#include <thread>

#include "graph/serialize/tensorflow_graph.h"
#include "kernels/op_kernel.h"
#include "python/bindings.h"
#include "runtime/session.h"
#include "runtime/timeline.h"

namespace tessera::python {
namespace {

using namespace nb::literals;

// Ctrl-C while the main thread waits in a step. Python's own SIGINT handler only sets a
// flag that the interpreter looks at between bytecodes, which a thread inside Session::Run
// never reaches. So a handler of ours goes in front of Python's: it wakes a watcher thread
// through a pipe (what a signal handler may do), then calls Python's, which raises
// KeyboardInterrupt once the step returns. The watcher cancels the main thread's step.
class Interrupts {
 public:
  static Interrupts& Get() {
    static Interrupts* interrupts = new Interrupts;  // lives as long as the handler may run
    return *interrupts;
  }

  // On the main thread, before its step: puts the handler in front of Python's where a
  // script's signal.signal() has taken its place since (one sigaction call).
  void Arm() {
    struct sigaction current;
    if (::sigaction(SIGINT, nullptr, &current) != 0 || IsOurs(current)) return;
    // Not where SIGINT is ignored or kills the process: nothing of Python's to run after.
    if (!(current.sa_flags & SA_SIGINFO) && (current.sa_handler == SIG_IGN || current.sa_handler == SIG_DFL)) return;
    std::call_once(watcher_started_, [this] { std::thread([this] { Watch(); }).detach(); });
    previous_ = current;
    struct sigaction ours = {};
    ours.sa_sigaction = &Interrupts::Handle;
    ours.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&ours.sa_mask);
    ::sigaction(SIGINT, &ours, nullptr);
  }

  // The step a Ctrl-C cancels; null once it has ended.
  void SetStep(CancellationManager* step) {
    std::lock_guard<std::mutex> lock(mu_);
    step_ = step;
  }

 private:
  Interrupts() {
    if (::pipe2(pipe_, O_CLOEXEC | O_NONBLOCK) != 0) pipe_[0] = pipe_[1] = -1;
    if (pipe_[0] >= 0) ::fcntl(pipe_[0], F_SETFL, 0);  // the watcher blocks; the handler never does
  }

  static bool IsOurs(const struct sigaction& a) {
    return (a.sa_flags & SA_SIGINFO) && a.sa_sigaction == &Interrupts::Handle;
  }

  static void Handle(int signal, siginfo_t* info, void* context) {
    Interrupts& self = Get();
    const int saved = errno;
    const char byte = 1;
    if (self.pipe_[1] >= 0) (void)!::write(self.pipe_[1], &byte, 1);
    errno = saved;
    if (self.previous_.sa_flags & SA_SIGINFO) {
      self.previous_.sa_sigaction(signal, info, context);
    } else if (self.previous_.sa_handler != SIG_IGN && self.previous_.sa_handler != SIG_DFL) {
      self.previous_.sa_handler(signal);
    }
  }

  void Watch() {
    char bytes[64];
    while (pipe_[0] >= 0) {
      const ssize_t n = ::read(pipe_[0], bytes, sizeof(bytes));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;
      std::lock_guard<std::mutex> lock(mu_);
      if (step_ != nullptr) step_->StartCancel();
    }
  }

  int pipe_[2] = {-1, -1};
  struct sigaction previous_ = {};
  std::once_flag watcher_started_;
  std::mutex mu_;
  CancellationManager* step_ = nullptr;  // guarded by mu_
};

bool OnMainThread() {
  static const unsigned long main_thread =
      nb::cast<unsigned long>(nb::module_::import_("threading").attr("main_thread")().attr("ident"));
  return PyThread_get_thread_ident() == main_thread;
}

class PyStep;

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
  friend class PyStep;

  // One step: `values[i]` fed to `feed_names[i]`.
  nb::object Step(const std::vector<std::string>& feed_names, const nb::list& values,
                  const std::vector<std::string>& fetches, const std::vector<std::string>& targets, RunOptions options,
                  RunMetadata* metadata) {
    if (values.size() != feed_names.size()) {
      Raise(errors::InvalidArgument(values.size(), " values for ", feed_names.size(), " feeds"));
    }
    CatchUp();
    std::vector<std::pair<std::string, Tensor>> inputs;
    inputs.reserve(feed_names.size());
    for (size_t i = 0; i < feed_names.size(); ++i) {
      StatusOr<Tensor> t = TensorFromArray(values[i]);
      if (!t.ok()) Raise(t.status().WithPrefix(StrCat("Cannot feed '", feed_names[i], "': ")));
      inputs.emplace_back(feed_names[i], std::move(*t));
    }
    CancellationManager interrupt;
    const bool main_thread = OnMainThread();
    if (main_thread) {
      Interrupts::Get().Arm();
      Interrupts::Get().SetStep(&interrupt);
      options.cancellation = &interrupt;
    }
    std::vector<Tensor> outputs;
    Status s;
    {
      nb::gil_scoped_release unlocked;
      s = session_->Run(options, inputs, fetches, targets, &outputs, metadata);
    }
    if (main_thread) Interrupts::Get().SetStep(nullptr);
    // A Ctrl-C cancelled the step: Python's handler raises KeyboardInterrupt here.
    if (interrupt.IsCancelled() && PyErr_CheckSignals() != 0) throw nb::python_error();
    OkOrRaise(s);
    // The feeds are still held here, so an output that is a fed array's buffer is copied
    // rather than handed back as the same memory.
    nb::list fetched;
    for (const Tensor& t : outputs) fetched.append(ArrayFromTensor(t));
    return fetched;
  }

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

// The steps of one (feeds, fetches, targets): its names converted once, as Python's
// Session.run keeps a plan per fetches and feed keys.
class PyStep {
 public:
  PyStep(PySession& session, std::vector<std::string> feeds, std::vector<std::string> fetches,
         std::vector<std::string> targets)
      : session_(session), feeds_(std::move(feeds)), fetches_(std::move(fetches)), targets_(std::move(targets)) {}

  nb::object Run(const nb::list& values, int64_t timeout_ms) {
    RunOptions options;
    options.timeout_in_ms = timeout_ms;
    return session_.Step(feeds_, values, fetches_, targets_, options, nullptr);
  }

  // Run, with what the step reports as tf.RunMetadata has it: (values, {"step_stats": [a
  // dict per node that ran], "chrome_trace": JSON, "partition_graphs": [GraphDef bytes]}).
  nb::object RunTraced(const nb::list& fed, int64_t timeout_ms, bool trace, bool partition_graphs) {
    RunOptions options;
    options.timeout_in_ms = timeout_ms;
    options.trace_level = trace ? RunOptions::TraceLevel::kFullTrace : RunOptions::TraceLevel::kNoTrace;
    options.output_partition_graphs = partition_graphs;
    RunMetadata metadata;
    nb::object values = session_.Step(feeds_, fed, fetches_, targets_, options, &metadata);
    nb::list stats;
    for (const NodeExecStats& n : metadata.step_stats) {
      nb::dict d;
      d["node"] = n.node;
      d["op"] = n.op;
      d["device"] = n.device;
      d["start_us"] = n.start_us;
      d["end_us"] = n.end_us;
      d["thread_id"] = n.thread_id;
      stats.append(d);
    }
    nb::list graphs;
    for (const GraphSpec& g : metadata.partition_graphs) {
      const std::string bytes = ValueOrRaise(GraphSpecToTensorFlow(g, TensorFlowFormat::kBinary));
      graphs.append(nb::bytes(bytes.data(), bytes.size()));
    }
    nb::dict report;
    report["step_stats"] = stats;
    report["chrome_trace"] = ChromeTraceJson(metadata);
    report["partition_graphs"] = graphs;
    return nb::make_tuple(values, report);
  }

 private:
  PySession& session_;  // kept alive by the binding
  const std::vector<std::string> feeds_, fetches_, targets_;
};

}  // namespace

void BindSession(nb::module_& m) {
  nb::class_<PyStep>(m, "Step")
      .def("run", &PyStep::Run, "values"_a, "timeout_ms"_a = 0)
      .def("run_traced", &PyStep::RunTraced, "values"_a, "timeout_ms"_a, "trace"_a, "partition_graphs"_a);
  nb::class_<PySession>(m, "Session")
      .def(nb::init<GraphHandle&, const std::string&, const std::string&>(), "graph"_a, "target"_a, "config_json"_a,
           nb::keep_alive<1, 2>())
      .def(
          "prepare",
          [](PySession& s, std::vector<std::string> feeds, std::vector<std::string> fetches,
             std::vector<std::string> targets) {
            return new PyStep(s, std::move(feeds), std::move(fetches), std::move(targets));
          },
          "feeds"_a, "fetches"_a, "targets"_a, nb::keep_alive<0, 1>(),
          "A Step: run(values) feeds values[i] to feeds[i] and fetches the fetches.")
      .def("placement", &PySession::Placement)
      .def("devices", &PySession::Devices)
      .def("close", &PySession::Close);
}

}  // namespace tessera::python
