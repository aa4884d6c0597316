// tessera._core.Session: runs steps of a Python-built graph. The graph may grow after the
// session is made (tf.Session allows it): before a step, the nodes added since the last
// one are handed to Session::Extend. The step itself runs without the GIL, so that other
// Python threads run beside it, several of them stepping this session at once. Ctrl-C
// during a step of the main thread cancels the step and raises KeyboardInterrupt.

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <mutex>
#include <optional>
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
//
// A script's signal.signal() puts Python's handler back in front. Looking for that before
// every step would cost each a system call, so the watcher looks instead, every
// kRecheckMs while a main-thread step runs (when signal.signal, a main-thread call, cannot
// run): a Ctrl-C in a step's first kRecheckMs after it lets that step finish, as
// TensorFlow does for all of them.
class Interrupts {
 public:
  static constexpr int kRecheckMs = 100;

  static Interrupts& Get() {
    static Interrupts* interrupts = new Interrupts;  // lives as long as the handler may run
    return *interrupts;
  }

  // The step a Ctrl-C cancels, set by the main thread as its step starts; null once it has
  // ended. The first puts the handler in front of Python's and starts the watcher.
  void SetStep(CancellationManager* step) {
    std::lock_guard<std::mutex> lock(mu_);
    step_ = step;
    if (step != nullptr && !watching_) {
      watching_ = true;
      Arm();
      std::thread([this] { Watch(); }).detach();
    }
  }

 private:
  Interrupts() {
    if (::pipe2(pipe_, O_CLOEXEC | O_NONBLOCK) != 0) pipe_[0] = pipe_[1] = -1;
    if (pipe_[0] >= 0) ::fcntl(pipe_[0], F_SETFL, 0);  // the watcher blocks; the handler never does
  }

  // Puts the handler in front of Python's where it is not already. Under mu_, while the
  // main thread is in a step (so not in signal.signal).
  void Arm() {
    struct sigaction current;
    if (::sigaction(SIGINT, nullptr, &current) != 0) return;
    if ((current.sa_flags & SA_SIGINFO) && current.sa_sigaction == &Interrupts::Handle) return;
    // Not where SIGINT is ignored or kills the process: nothing of Python's to run after.
    if (!(current.sa_flags & SA_SIGINFO) && (current.sa_handler == SIG_IGN || current.sa_handler == SIG_DFL)) return;
    // What the handler calls after waking the watcher: Python's, read there as it runs.
    if (current.sa_flags & SA_SIGINFO) {
      previous_action_.store(current.sa_sigaction);
      previous_handler_.store(nullptr);
    } else {
      previous_handler_.store(current.sa_handler);
      previous_action_.store(nullptr);
    }
    struct sigaction ours = {};
    ours.sa_sigaction = &Interrupts::Handle;
    ours.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&ours.sa_mask);
    ::sigaction(SIGINT, &ours, nullptr);
  }

  static void Handle(int signal, siginfo_t* info, void* context) {
    Interrupts& self = Get();
    const int saved = errno;
    const char byte = 1;
    if (self.pipe_[1] >= 0) (void)!::write(self.pipe_[1], &byte, 1);
    errno = saved;
    if (auto action = self.previous_action_.load()) {
      action(signal, info, context);
    } else if (auto handler = self.previous_handler_.load()) {
      handler(signal);
    }
  }

  void Watch() {
    char bytes[64];
    while (pipe_[0] >= 0) {
      pollfd ready = {pipe_[0], POLLIN, 0};
      const int n = ::poll(&ready, 1, kRecheckMs);
      if (n < 0 && errno != EINTR) return;
      if (n > 0 && ::read(pipe_[0], bytes, sizeof(bytes)) <= 0) return;
      std::lock_guard<std::mutex> lock(mu_);
      if (step_ == nullptr) continue;
      if (n > 0) {
        step_->StartCancel();
      } else {
        Arm();
      }
    }
  }

  int pipe_[2] = {-1, -1};
  std::atomic<void (*)(int, siginfo_t*, void*)> previous_action_{nullptr};
  std::atomic<void (*)(int)> previous_handler_{nullptr};
  std::mutex mu_;
  bool watching_ = false;                // guarded by mu_
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

  // One step of `inputs`, fetching `fetches` and running `targets`.
  std::vector<Tensor> Step(const std::vector<std::pair<std::string, Tensor>>& inputs,
                           const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
                           RunOptions options, RunMetadata* metadata) {
    CatchUp();
    CancellationManager interrupt;
    const bool main_thread = OnMainThread();
    if (main_thread) {
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
    return outputs;
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

// What a feed accepts as it is: an ndarray of one NumPy type whose shape fits static dims
// (-1 where any size goes; no dims where any rank goes).
struct FeedSpec {
  std::string name;
  int numpy_type;  // -1: strings, which always go through the converter
  std::optional<std::vector<int64_t>> dims;
};

// The steps of one (feeds, fetches, targets), as Python's Session.run plans them per fetches
// and feed keys: names converted once, a ready feed taken as it is, fetched values placed
// where the fetches' leaves want them.
class PyStep {
 public:
  PyStep(PySession& session, std::vector<FeedSpec> feeds, nb::object convert, std::vector<std::string> fetches,
         std::vector<std::string> targets, std::vector<int> leaves)
      : session_(session),
        feeds_(std::move(feeds)),
        convert_(std::move(convert)),
        fetches_(std::move(fetches)),
        targets_(std::move(targets)),
        leaves_(std::move(leaves)) {}

  nb::list Run(nb::handle feed_dict, int64_t timeout_ms) {
    RunOptions options;
    options.timeout_in_ms = timeout_ms;
    return Leaves(session_.Step(Inputs(feed_dict), fetches_, targets_, options, nullptr));
  }

  // Run, with what the step reports as tf.RunMetadata has it: (leaves, {"step_stats": [a
  // dict per node that ran], "chrome_trace": JSON, "partition_graphs": [GraphDef bytes]}).
  nb::tuple RunTraced(nb::handle feed_dict, int64_t timeout_ms, bool trace, bool partition_graphs) {
    RunOptions options;
    options.timeout_in_ms = timeout_ms;
    options.trace_level = trace ? RunOptions::TraceLevel::kFullTrace : RunOptions::TraceLevel::kNoTrace;
    options.output_partition_graphs = partition_graphs;
    RunMetadata metadata;
    nb::list leaves = Leaves(session_.Step(Inputs(feed_dict), fetches_, targets_, options, &metadata));
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
    return nb::make_tuple(leaves, report);
  }

 private:
  // The feed dict's values (in the order of the keys the step was planned with) as tensors:
  // a ready array as it is, anything else through the converter (which raises TF's errors).
  std::vector<std::pair<std::string, Tensor>> Inputs(nb::handle feed) {
    // The values taken at once, in the order iteration gives the keys (the plan's): a dict's
    // own order, a subclass's or another mapping's through a dict made in its order. The
    // list holds them while converters (Python code) run, whatever those do to the dict.
    nb::object values;
    if (feed.is_none()) {
      values = nb::steal(PyList_New(0));
    } else {
      nb::object feed_dict = nb::borrow(feed);
      if (!PyDict_CheckExact(feed.ptr())) {
        feed_dict = nb::dict();
        if (PyDict_Merge(feed_dict.ptr(), feed.ptr(), 1) != 0) throw nb::python_error();
      }
      values = nb::steal(PyDict_Values(feed_dict.ptr()));
    }
    if (!values.is_valid()) throw nb::python_error();
    const Py_ssize_t n = PyList_GET_SIZE(values.ptr());
    if (n != static_cast<Py_ssize_t>(feeds_.size())) {
      Raise(errors::InvalidArgument(n, " values for ", feeds_.size(), " feeds"));
    }
    std::vector<std::pair<std::string, Tensor>> inputs;
    inputs.reserve(feeds_.size());
    for (size_t i = 0; i < feeds_.size(); ++i) {
      nb::object array = nb::borrow(PyList_GET_ITEM(values.ptr(), static_cast<Py_ssize_t>(i)));
      if (!IsReady(feeds_[i], array.ptr())) array = convert_(i, array);
      StatusOr<Tensor> t = TensorFromArray(array);
      if (!t.ok()) Raise(t.status().WithPrefix(StrCat("Cannot feed '", feeds_[i].name, "': ")));
      inputs.emplace_back(feeds_[i].name, std::move(*t));
    }
    return inputs;
  }

  bool IsReady(const FeedSpec& feed, PyObject* value) const {
    return ArrayFits(value, feed.numpy_type, feed.dims ? &*feed.dims : nullptr);
  }

  // The fetches' leaves: a fetched value, a NumPy scalar where it has rank 0 (as TensorFlow
  // gives, bytes for a string), or None for an operation.
  nb::list Leaves(const std::vector<Tensor>& outputs) {
    std::vector<nb::object> values;
    values.reserve(outputs.size());
    for (const Tensor& t : outputs) values.push_back(ScalarOrArray(ArrayFromTensor(t)));
    nb::list leaves;
    for (int where : leaves_) {
      if (where < 0) {
        leaves.append(nb::none());
      } else {
        leaves.append(values[where]);
      }
    }
    return leaves;
  }

  PySession& session_;  // kept alive by the binding
  const std::vector<FeedSpec> feeds_;
  const nb::object convert_;  // (i, value) -> the array fed to feeds_[i], or raises
  const std::vector<std::string> fetches_, targets_;
  const std::vector<int> leaves_;  // each leaf's index into fetches_, -1 for an operation
};

}  // namespace

void BindSession(nb::module_& m) {
  nb::class_<PyStep>(m, "Step")
      .def("run", &PyStep::Run, "feed_dict"_a.none(), "timeout_ms"_a = 0)
      .def("run_traced", &PyStep::RunTraced, "feed_dict"_a.none(), "timeout_ms"_a, "trace"_a, "partition_graphs"_a);
  nb::class_<PySession>(m, "Session")
      .def(nb::init<GraphHandle&, const std::string&, const std::string&>(), "graph"_a, "target"_a, "config_json"_a,
           nb::keep_alive<1, 2>())
      .def(
          "prepare",
          [](PySession& s, const std::vector<std::tuple<std::string, int, std::optional<std::vector<int64_t>>>>& feeds,
             nb::object convert, std::vector<std::string> fetches, std::vector<std::string> targets,
             std::vector<int> leaves) {
            std::vector<FeedSpec> specs;
            for (const auto& [name, numpy_type, dims] : feeds) specs.push_back({name, numpy_type, dims});
            return new PyStep(s, std::move(specs), std::move(convert), std::move(fetches), std::move(targets),
                              std::move(leaves));
          },
          "feeds"_a, "convert"_a.none(), "fetches"_a, "targets"_a, "leaves"_a, nb::keep_alive<0, 1>(),
          "A Step: run(feed_dict) feeds the dict's i-th value to feeds[i] (name, NumPy type number or -1, "
          "static dims or None), converting what is not ready with convert(i, value), and returns the leaves: "
          "fetches[leaves[j]], or None where leaves[j] is -1.")
      .def("placement", &PySession::Placement)
      .def("devices", &PySession::Devices)
      .def("close", &PySession::Close);
}

}  // namespace tessera::python
