// tessera._core.EventFileWriter: TensorBoard's event files (graph/serialize/event_file.h)
// for tf.summary.FileWriter, and the bytes of a Summary of Python scalars for tf.Summary.
// Writes release the GIL; a writer may be called from many threads.

#include "graph/serialize/event_file.h"
#include "graph/serialize/summary.h"
#include "python/bindings.h"

namespace tessera::python {
namespace {

using namespace nb::literals;

std::string_view View(const nb::bytes& b) { return {b.c_str(), b.size()}; }

class PyEventFileWriter {
 public:
  PyEventFileWriter(const std::string& logdir, const std::string& suffix, double flush_secs, int max_queue)
      : writer_(ValueOrRaise(EventFileWriter::Open(logdir, {suffix, flush_secs, max_queue}))) {}

  const std::string& path() const { return writer_->path(); }

  void AddSummary(const nb::bytes& summary, int64_t step, double wall_time) {
    Status s;
    {
      nb::gil_scoped_release unlocked;
      s = writer_->AddSummary(View(summary), step, wall_time);
    }
    OkOrRaise(s);
  }
  void AddGraph(const nb::bytes& graph_def, double wall_time) {
    Status s;
    {
      nb::gil_scoped_release unlocked;
      s = writer_->AddGraph(View(graph_def), wall_time);
    }
    OkOrRaise(s);
  }
  void AddSessionLog(int status, const std::string& checkpoint_path, const std::string& msg, int64_t step,
                     double wall_time) {
    Status s;
    {
      nb::gil_scoped_release unlocked;
      s = writer_->AddSessionLog(status, checkpoint_path, msg, step, wall_time);
    }
    OkOrRaise(s);
  }
  void Flush() {
    Status s;
    {
      nb::gil_scoped_release unlocked;
      s = writer_->Flush();
    }
    OkOrRaise(s);
  }
  void Close() {
    Status s;
    {
      nb::gil_scoped_release unlocked;
      s = writer_->Close();
    }
    OkOrRaise(s);
  }

 private:
  std::unique_ptr<EventFileWriter> writer_;
};

nb::bytes ScalarSummary(const std::vector<std::pair<std::string, float>>& values) {
  SummaryBuilder b;
  for (const auto& [tag, value] : values) b.AddScalar(tag, value);
  const std::string bytes = b.Serialize();
  return nb::bytes(bytes.data(), bytes.size());
}

}  // namespace

void BindSummary(nb::module_& m) {
  nb::class_<PyEventFileWriter>(m, "EventFileWriter")
      .def(nb::init<const std::string&, const std::string&, double, int>(), "logdir"_a, "filename_suffix"_a,
           "flush_secs"_a, "max_queue"_a)
      .def_prop_ro("path", &PyEventFileWriter::path)
      .def("add_summary", &PyEventFileWriter::AddSummary, "summary"_a, "step"_a, "wall_time"_a)
      .def("add_graph", &PyEventFileWriter::AddGraph, "graph_def"_a, "wall_time"_a)
      .def("add_session_log", &PyEventFileWriter::AddSessionLog, "status"_a, "checkpoint_path"_a, "msg"_a, "step"_a,
           "wall_time"_a)
      .def("flush", &PyEventFileWriter::Flush)
      .def("close", &PyEventFileWriter::Close);
  m.def("scalar_summary", &ScalarSummary, "values"_a, "A serialized Summary of (tag, value) pairs.");
}

}  // namespace tessera::python
