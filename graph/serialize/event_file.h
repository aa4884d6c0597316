// Event files, as TensorBoard reads them (tensorflow/core/util/events_writer): a file
// LOGDIR/events.out.tfevents.SECONDS.HOSTNAME[SUFFIX] of TFRecords, each
//
//   uint64 length, uint32 masked CRC-32C of the length, the bytes, uint32 masked CRC-32C of them
//
// (little-endian), whose bytes are an Event proto: first the file's version, then summaries,
// graphs and session logs, each stamped with its wall time and step.
//
//   ASSIGN_OR_RETURN(auto w, EventFileWriter::Open("/tmp/logs", {}));
//   RETURN_IF_ERROR(w->AddSummary(summary_bytes, step, NowSeconds()));
//   RETURN_IF_ERROR(w->Close());
//
// A second writer opened in the same second gets ".N" after the host name.
//
// Events are buffered and written out by Flush, by Close, and by the first Add after
// `flush_secs` have passed since the last write or once `max_queue` events wait (as
// TensorFlow's FileWriter does, but without its own thread: nothing reaches the file while
// no event is added). A writer killed mid-write leaves whole records and at most one cut
// short at the end, which readers skip. Every call is thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "graph/platform/file_io.h"

namespace tessera {
namespace tfgraph {
class Event;
}

struct EventFileOptions {
  std::string filename_suffix;
  double flush_secs = 120;
  int max_queue = 10;
};

class EventFileWriter {
 public:
  // Makes `logdir` as needed and a new file in it, holding the version event.
  static StatusOr<std::unique_ptr<EventFileWriter>> Open(const std::string& logdir, const EventFileOptions& options);
  ~EventFileWriter();  // flushes what is buffered; a failure there is lost (call Close)

  const std::string& path() const { return file_->path(); }

  // `summary` is a serialized Summary (what summary ops output): InvalidArgument otherwise.
  Status AddSummary(std::string_view summary, int64_t step, double wall_time);
  // `graph_def` is a serialized GraphDef.
  Status AddGraph(std::string_view graph_def, double wall_time);
  // TensorFlow's SessionLog status: 1 START, 2 STOP, 3 CHECKPOINT.
  Status AddSessionLog(int status, std::string_view checkpoint_path, std::string_view message, int64_t step,
                       double wall_time);
  // Writes the buffered events and syncs the file to disk.
  Status Flush();
  // Flushes; later calls are FailedPrecondition. A failed write loses the events it held.
  Status Close();

 private:
  EventFileWriter(std::unique_ptr<AppendOnlyFile> file, const EventFileOptions& options);
  Status Add(const tfgraph::Event& event);
  Status WriteLocked();
  Status FlushLocked();

  const EventFileOptions options_;
  std::mutex mu_;
  std::unique_ptr<AppendOnlyFile> file_;
  std::string buffer_;  // framed records not yet written
  int buffered_events_ = 0;
  double last_write_ = 0;  // seconds on a monotonic clock
  bool closed_ = false;
};

// The current time in seconds since the epoch, as events carry it.
double WallTimeSeconds();

}  // namespace tessera
