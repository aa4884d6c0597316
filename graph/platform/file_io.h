// Files as Tessera reads and writes them: every file the engine reads or writes goes
// through here.
//
// Reads take regular files only: a FIFO or a device could block a step past any deadline.
// Writes never leave a half-written file where a good one was: they go to a temporary file
// beside the target, are flushed to disk and renamed over it. A target that is a symlink is
// written through to the file it names, and a target that exists but is not a regular file
// (a directory, a device, a FIFO) is refused. A writer killed mid-write leaves its
// temporary file behind; the next write of the same target removes it.
//
//   ASSIGN_OR_RETURN(std::string text, ReadFileToString(path, "graph"));
//   RETURN_IF_ERROR(WriteFileAtomically(path, json, "frozen graph"));
//
// Errors name the file and what it was for: NotFound, PermissionDenied, InvalidArgument (a
// directory, not a regular file, a symlink loop), ResourceExhausted (no space), DataLoss
// (a file shorter than it claimed), Unavailable (other I/O errors).
//
// Everything here is thread-safe. Concurrent writers of one target leave one of their
// files, whole.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "graph/platform/status.h"

namespace tessera {

// The Status for `err` (an errno value) from `action` ("read", "write") on `what` at `path`.
Status FileError(int err, std::string_view action, std::string_view what, const std::string& path);

// A regular file open for reading.
class ReadableFile {
 public:
  static StatusOr<std::unique_ptr<ReadableFile>> Open(const std::string& path, std::string_view what);
  ~ReadableFile();
  ReadableFile(const ReadableFile&) = delete;
  ReadableFile& operator=(const ReadableFile&) = delete;

  // The size when the file was opened.
  uint64_t size() const { return size_; }
  int fd() const { return fd_; }
  const std::string& path() const { return path_; }
  // Reads exactly `n` bytes at `offset`; DataLoss when the file ends first.
  Status ReadAt(uint64_t offset, void* buffer, size_t n) const;
  // Reads at most `n` bytes at `offset`; 0 at the end of the file.
  StatusOr<size_t> ReadUpTo(uint64_t offset, void* buffer, size_t n) const;

 private:
  ReadableFile(int fd, uint64_t size, std::string path, std::string what);
  int fd_;
  uint64_t size_;
  std::string path_;
  std::string what_;
};

// The whole of a regular file; ResourceExhausted past `max_bytes`.
StatusOr<std::string> ReadFileToString(const std::string& path, std::string_view what,
                                       uint64_t max_bytes = uint64_t{1} << 32);

// Writes one file atomically: Append, then Commit. Destroyed without a Commit, it removes
// its temporary file and leaves the target as it was.
class AtomicFileWriter {
 public:
  static StatusOr<std::unique_ptr<AtomicFileWriter>> Open(const std::string& path, std::string_view what);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  Status Append(const void* data, size_t n);
  Status Append(std::string_view data) { return Append(data.data(), data.size()); }
  // Flushes the data to disk and renames it over the target.
  Status Commit();

 private:
  AtomicFileWriter(int fd, std::string path, std::string target, std::string temp, std::string what);
  int fd_;
  std::string path_;    // as the caller named it, for messages
  std::string target_;  // the file written: `path_` with symlinks followed
  std::string temp_;
  std::string what_;
  bool committed_ = false;
};

Status WriteFileAtomically(const std::string& path, std::string_view contents, std::string_view what);

// A new file that grows by appends and is read while it grows (TensorBoard reads event
// files so): there is no temporary file, and a target that exists is refused, never
// overwritten. One thread's; its owner serializes the calls.
class AppendOnlyFile {
 public:
  static StatusOr<std::unique_ptr<AppendOnlyFile>> Create(const std::string& path, std::string_view what);
  ~AppendOnlyFile();
  AppendOnlyFile(const AppendOnlyFile&) = delete;
  AppendOnlyFile& operator=(const AppendOnlyFile&) = delete;

  const std::string& path() const { return path_; }
  // Writes all of `data` after what is there.
  Status Append(std::string_view data);
  // Flushes what was appended to disk.
  Status Sync();

 private:
  AppendOnlyFile(int fd, std::string path, std::string what);
  int fd_;
  std::string path_;
  std::string what_;
};

// Makes folder `path` and its missing parents, as `mkdir -p` does.
Status CreateDirectories(const std::string& path, std::string_view what);

// The file a write of `path` would replace: symlinks followed, even to a file that does not
// exist yet. For telling whether two output paths name the same file.
StatusOr<std::string> ResolveWriteTarget(const std::string& path, std::string_view what);

}  // namespace tessera
