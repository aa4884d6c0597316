#include "graph/platform/file_io.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>

namespace tessera {
namespace {

// As many as Linux follows in one path lookup.
constexpr int kMaxSymlinkHops = 40;

std::string Dirname(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string Basename(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

Status NotRegular(mode_t mode, std::string_view action, std::string_view what, const std::string& path) {
  if (S_ISDIR(mode)) return FileError(EISDIR, action, what, path);
  const char* kind = S_ISFIFO(mode)  ? "a FIFO"
                     : S_ISCHR(mode) ? "a character device"
                     : S_ISBLK(mode) ? "a block device"
                     : S_ISSOCK(mode) ? "a socket"
                                      : "of an unknown kind";
  return errors::InvalidArgument("Cannot ", action, " ", what, " '", path, "': it is ", kind,
                                 ", not a regular file");
}

// `path` with its final component's symlinks followed, to a file that may not exist yet.
StatusOr<std::string> FollowSymlinks(const std::string& path, std::string_view what) {
  std::string p = path;
  for (int hops = 0;; ++hops) {
    struct stat st;
    if (::lstat(p.c_str(), &st) != 0) {
      if (errno == ENOENT) return p;
      return FileError(errno, "write", what, path);
    }
    if (!S_ISLNK(st.st_mode)) return p;
    if (hops == kMaxSymlinkHops) return FileError(ELOOP, "write", what, path);
    char link[PATH_MAX];
    const ssize_t n = ::readlink(p.c_str(), link, sizeof(link));
    if (n < 0) return FileError(errno, "write", what, path);
    if (static_cast<size_t>(n) == sizeof(link)) return FileError(ENAMETOOLONG, "write", what, path);
    const std::string target(link, static_cast<size_t>(n));
    p = target.starts_with('/') ? target : Dirname(p) + "/" + target;
  }
}

bool WriteAll(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t wrote = ::write(fd, p, n);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) return false;
    p += wrote;
    n -= static_cast<size_t>(wrote);
  }
  return true;
}

// Removes the temporary files that writers of `base` in `dir` left when they died: a live
// writer holds a lock on its file until it has renamed it.
void RemoveStaleTemps(const std::string& dir, const std::string& base) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return;
  const std::string prefix = base + ".tmp.";
  while (const dirent* e = ::readdir(d)) {
    if (!std::string_view(e->d_name).starts_with(prefix)) continue;
    const int fd = ::openat(::dirfd(d), e->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) continue;
    struct stat st;
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && ::flock(fd, LOCK_EX | LOCK_NB) == 0) {
      ::unlinkat(::dirfd(d), e->d_name, 0);
    }
    ::close(fd);
  }
  ::closedir(d);
}

}  // namespace

Status FileError(int err, std::string_view action, std::string_view what, const std::string& path) {
  const std::string where = StrCat("Cannot ", action, " ", what, " '", path, "': ");
  switch (err) {
    case ENOENT:
    case ENOTDIR:
      return errors::NotFound(where, "no such file or directory");
    case EACCES:
    case EPERM:
    case EROFS:
      return errors::PermissionDenied(where, std::strerror(err));
    case ELOOP:
      return errors::InvalidArgument(where, "too many levels of symbolic links (a symlink loop?)");
    case EISDIR:
      return errors::InvalidArgument(where, "it is a directory");
    case ENAMETOOLONG:
      return errors::InvalidArgument(where, "the name is too long");
    case EEXIST:
      return errors::AlreadyExists(where, "it already exists");
    case ENOSPC:
    case EDQUOT:
    case EFBIG:
      return errors::ResourceExhausted(where, std::strerror(err));
    case EIO:
      return errors::DataLoss(where, std::strerror(err));
    default:
      return errors::Unavailable(where, std::strerror(err));
  }
}

ReadableFile::ReadableFile(int fd, uint64_t size, std::string path, std::string what)
    : fd_(fd), size_(size), path_(std::move(path)), what_(std::move(what)) {}

ReadableFile::~ReadableFile() { ::close(fd_); }

StatusOr<std::unique_ptr<ReadableFile>> ReadableFile::Open(const std::string& path, std::string_view what) {
  // O_NONBLOCK keeps the open of a FIFO from waiting for a writer; it is refused below, and
  // regular files ignore the flag.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return FileError(errno, "read", what, path);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return FileError(err, "read", what, path);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return NotRegular(st.st_mode, "read", what, path);
  }
  return std::unique_ptr<ReadableFile>(
      new ReadableFile(fd, static_cast<uint64_t>(st.st_size), path, std::string(what)));
}

StatusOr<size_t> ReadableFile::ReadUpTo(uint64_t offset, void* buffer, size_t n) const {
  for (;;) {
    const ssize_t got = ::pread(fd_, buffer, n, static_cast<off_t>(offset));
    if (got >= 0) return static_cast<size_t>(got);
    if (errno != EINTR) return FileError(errno, "read", what_, path_);
  }
}

Status ReadableFile::ReadAt(uint64_t offset, void* buffer, size_t n) const {
  char* p = static_cast<char*>(buffer);
  while (n > 0) {
    ASSIGN_OR_RETURN(const size_t got, ReadUpTo(offset, p, n));
    if (got == 0) {
      return errors::DataLoss("Cannot read ", what_, " '", path_, "': it ends at byte ", offset, ", before the ", n,
                              " bytes wanted there");
    }
    p += got;
    offset += got;
    n -= got;
  }
  return Status::OK();
}

StatusOr<std::string> ReadFileToString(const std::string& path, std::string_view what, uint64_t max_bytes) {
  ASSIGN_OR_RETURN(std::unique_ptr<ReadableFile> file, ReadableFile::Open(path, what));
  auto too_large = [&] {
    return errors::ResourceExhausted("Cannot read ", what, " '", path, "': it is larger than ", max_bytes, " bytes");
  };
  if (file->size() > max_bytes) return too_large();
  // The size is a hint: a file may grow while it is read, and /proc's files claim 0 bytes.
  std::string text;
  text.reserve(static_cast<size_t>(file->size()));
  char chunk[1 << 16];
  for (;;) {
    ASSIGN_OR_RETURN(const size_t got, file->ReadUpTo(text.size(), chunk, sizeof(chunk)));
    if (got == 0) return text;
    if (text.size() + got > max_bytes) return too_large();
    text.append(chunk, got);
  }
}

AtomicFileWriter::AtomicFileWriter(int fd, std::string path, std::string target, std::string temp, std::string what)
    : fd_(fd), path_(std::move(path)), target_(std::move(target)), temp_(std::move(temp)), what_(std::move(what)) {}

AtomicFileWriter::~AtomicFileWriter() {
  if (!committed_) ::unlink(temp_.c_str());
  ::close(fd_);
}

StatusOr<std::unique_ptr<AtomicFileWriter>> AtomicFileWriter::Open(const std::string& path, std::string_view what) {
  ASSIGN_OR_RETURN(std::string target, FollowSymlinks(path, what));
  struct stat st;
  const bool exists = ::stat(target.c_str(), &st) == 0;
  if (!exists && errno != ENOENT) return FileError(errno, "write", what, path);
  if (exists && !S_ISREG(st.st_mode)) return NotRegular(st.st_mode, "write", what, path);
  RemoveStaleTemps(Dirname(target), Basename(target));

  static std::atomic<uint64_t> counter{0};
  for (;;) {
    std::string temp = StrCat(target, ".tmp.", ::getpid(), ".", counter.fetch_add(1));
    const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno == EEXIST) continue;
    if (fd < 0) return FileError(errno, "write", what, path);
    // The lock marks the file as a live writer's (a filesystem without locks leaves it to
    // chance). Another writer's cleanup may have taken the file between its creation and
    // this lock; then it has no name left, and the next name is tried.
    ::flock(fd, LOCK_EX);
    struct stat temp_st;
    if (::fstat(fd, &temp_st) == 0 && temp_st.st_nlink == 0) {
      ::close(fd);
      continue;
    }
    // A replaced file keeps its permissions.
    if (exists) ::fchmod(fd, st.st_mode & 07777);
    return std::unique_ptr<AtomicFileWriter>(
        new AtomicFileWriter(fd, path, std::move(target), std::move(temp), std::string(what)));
  }
}

Status AtomicFileWriter::Append(const void* data, size_t n) {
  if (!WriteAll(fd_, data, n)) return FileError(errno, "write", what_, path_);
  return Status::OK();
}

Status AtomicFileWriter::Commit() {
  if (::fsync(fd_) != 0) return FileError(errno, "write", what_, path_);
  if (::rename(temp_.c_str(), target_.c_str()) != 0) return FileError(errno, "write", what_, path_);
  committed_ = true;
  // The rename itself reaches the disk with the folder.
  const int dir = ::open(Dirname(target_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
  return Status::OK();
}

Status WriteFileAtomically(const std::string& path, std::string_view contents, std::string_view what) {
  ASSIGN_OR_RETURN(std::unique_ptr<AtomicFileWriter> writer, AtomicFileWriter::Open(path, what));
  RETURN_IF_ERROR(writer->Append(contents));
  return writer->Commit();
}

StatusOr<std::unique_ptr<AppendOnlyFile>> AppendOnlyFile::Create(const std::string& path, std::string_view what) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0666);
  if (fd < 0) return FileError(errno, "create", what, path);
  return std::unique_ptr<AppendOnlyFile>(new AppendOnlyFile(fd, path, std::string(what)));
}

AppendOnlyFile::AppendOnlyFile(int fd, std::string path, std::string what)
    : fd_(fd), path_(std::move(path)), what_(std::move(what)) {}

AppendOnlyFile::~AppendOnlyFile() { ::close(fd_); }

Status AppendOnlyFile::Append(std::string_view data) {
  if (!WriteAll(fd_, data.data(), data.size())) return FileError(errno, "write", what_, path_);
  return Status::OK();
}

Status AppendOnlyFile::Sync() {
  if (::fsync(fd_) != 0) return FileError(errno, "write", what_, path_);
  return Status::OK();
}

Status CreateDirectories(const std::string& path, std::string_view what) {
  std::error_code error;
  std::filesystem::create_directories(path, error);
  if (error) return FileError(error.value(), "create", what, path);
  return Status::OK();
}

StatusOr<std::string> ResolveWriteTarget(const std::string& path, std::string_view what) {
  ASSIGN_OR_RETURN(std::string target, FollowSymlinks(path, what));
  char dir[PATH_MAX];
  if (::realpath(Dirname(target).c_str(), dir) == nullptr) return FileError(errno, "write", what, path);
  return StrCat(dir, std::string_view(dir) == "/" ? "" : "/", Basename(target));
}

}  // namespace tessera
