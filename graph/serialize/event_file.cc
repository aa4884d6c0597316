#include "graph/serialize/event_file.h"

#include <unistd.h>

#include <chrono>
#include <climits>
#include <cmath>
#include <cstring>

#include "graph/platform/crc32c.h"
#include "graph/protos/summary.pb.h"

namespace tessera {
namespace {

// How many writers of one log folder may open in one second.
constexpr int kMaxFilesPerSecond = 1000;

double MonotonicSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void PutLittleEndian(std::string* out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void AppendRecord(std::string* out, const std::string& data) {
  std::string length;
  PutLittleEndian(&length, data.size(), 8);
  *out += length;
  PutLittleEndian(out, crc32c::Mask(crc32c::Value(length.data(), length.size())), 4);
  *out += data;
  PutLittleEndian(out, crc32c::Mask(crc32c::Value(data.data(), data.size())), 4);
}

std::string HostName() {
  char host[HOST_NAME_MAX + 1] = {};
  if (::gethostname(host, sizeof(host) - 1) != 0) return "localhost";
  return host;
}

}  // namespace

double WallTimeSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

StatusOr<std::unique_ptr<EventFileWriter>> EventFileWriter::Open(const std::string& logdir,
                                                                 const EventFileOptions& options) {
  if (logdir.empty()) return errors::InvalidArgument("An event file needs a log folder");
  RETURN_IF_ERROR(CreateDirectories(logdir, "log folder"));
  const double now = WallTimeSeconds();
  // Writers opened in the same second take the next free name (TensorBoard reads them in
  // name order); TensorFlow would truncate the first one's file.
  const std::string base = StrCat(logdir, "/events.out.tfevents.", static_cast<int64_t>(now), ".", HostName());
  StatusOr<std::unique_ptr<AppendOnlyFile>> file = AppendOnlyFile::Create(base + options.filename_suffix, "event file");
  for (int n = 1; !file.ok() && file.status().code() == Code::kAlreadyExists && n <= kMaxFilesPerSecond; ++n) {
    file = AppendOnlyFile::Create(StrCat(base, ".", n, options.filename_suffix), "event file");
  }
  if (!file.ok()) return file.status();
  std::unique_ptr<EventFileWriter> w(new EventFileWriter(std::move(*file), options));
  tfgraph::Event version;
  version.set_wall_time(now);
  version.set_file_version("brain.Event:2");
  RETURN_IF_ERROR(w->Add(version));
  RETURN_IF_ERROR(w->Flush());
  return w;
}

EventFileWriter::EventFileWriter(std::unique_ptr<AppendOnlyFile> file, const EventFileOptions& options)
    : options_(options), file_(std::move(file)), last_write_(MonotonicSeconds()) {}

EventFileWriter::~EventFileWriter() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!closed_) (void)WriteLocked();
}

Status EventFileWriter::AddSummary(std::string_view summary, int64_t step, double wall_time) {
  tfgraph::Event event;
  event.set_wall_time(wall_time);
  event.set_step(step);
  if (summary.size() > INT_MAX ||
      !event.mutable_summary()->ParseFromArray(summary.data(), static_cast<int>(summary.size()))) {
    return errors::InvalidArgument("An event's summary is not a serialized Summary (", summary.size(), " bytes)");
  }
  return Add(event);
}

Status EventFileWriter::AddGraph(std::string_view graph_def, double wall_time) {
  tfgraph::Event event;
  event.set_wall_time(wall_time);
  event.set_graph_def(std::string(graph_def));
  return Add(event);
}

Status EventFileWriter::AddSessionLog(int status, std::string_view checkpoint_path, std::string_view message,
                                      int64_t step, double wall_time) {
  if (!tfgraph::SessionLog::SessionStatus_IsValid(status)) {
    return errors::InvalidArgument("A session log's status is 0 to 3, not ", status);
  }
  tfgraph::Event event;
  event.set_wall_time(wall_time);
  event.set_step(step);
  tfgraph::SessionLog* log = event.mutable_session_log();
  log->set_status(static_cast<tfgraph::SessionLog::SessionStatus>(status));
  log->set_checkpoint_path(std::string(checkpoint_path));
  log->set_msg(std::string(message));
  return Add(event);
}

Status EventFileWriter::Add(const tfgraph::Event& event) {
  std::string data;
  if (!event.SerializeToString(&data)) return errors::InvalidArgument("An event too large to serialize");
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) return errors::FailedPrecondition("Event file '", file_->path(), "' is closed");
  AppendRecord(&buffer_, data);
  ++buffered_events_;
  if (buffered_events_ >= options_.max_queue || MonotonicSeconds() - last_write_ >= options_.flush_secs) {
    return WriteLocked();
  }
  return Status::OK();
}

Status EventFileWriter::WriteLocked() {
  last_write_ = MonotonicSeconds();
  if (buffer_.empty()) return Status::OK();
  // A failed write may have written part of the buffer, so it is not tried again: its
  // events are lost, as they would be with the process.
  Status s = file_->Append(buffer_);
  buffer_.clear();
  buffered_events_ = 0;
  return s;
}

Status EventFileWriter::FlushLocked() {
  if (closed_) return errors::FailedPrecondition("Event file '", file_->path(), "' is closed");
  RETURN_IF_ERROR(WriteLocked());
  return file_->Sync();
}

Status EventFileWriter::Flush() {
  std::lock_guard<std::mutex> lock(mu_);
  return FlushLocked();
}

Status EventFileWriter::Close() {
  std::lock_guard<std::mutex> lock(mu_);
  Status s = FlushLocked();
  closed_ = true;
  return s;
}

}  // namespace tessera
