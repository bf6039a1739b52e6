#include "training/checkpoint/checkpoint_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace actorflow {
namespace checkpoint_file {

Status ErrnoStatus(int err, const std::string& what, const std::string& path) {
  std::string message = what + " '" + path + "': " + std::strerror(err);
  switch (err) {
    case EACCES:
    case EPERM:
    case EROFS:
      return Status(Code::kPermissionDenied, std::move(message));
    case ENOENT:
      return NotFound(std::move(message));
    case EEXIST:
      return AlreadyExists(std::move(message));
    default:
      return Unavailable(std::move(message));
  }
}

StatusOr<DurableFile> DurableFile::Create(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoStatus(errno, "cannot create file", path);
  return DurableFile(path, fd);
}

DurableFile::DurableFile(DurableFile&& other) noexcept
    : path_(std::move(other.path_)), fd_(other.fd_), bytes_written_(other.bytes_written_) {
  other.fd_ = -1;
}

DurableFile::~DurableFile() {
  if (fd_ >= 0) ::close(fd_);
}

Status DurableFile::Append(const void* data, size_t size) {
  if (fd_ < 0) return FailedPrecondition("file '" + path_ + "' is already closed");
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::write(fd_, p, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, "cannot write file", path_);
    }
    p += n;
    size -= static_cast<size_t>(n);
    bytes_written_ += static_cast<uint64_t>(n);
  }
  return Status::OK();
}

Status DurableFile::SyncAndClose() {
  if (fd_ < 0) return FailedPrecondition("file '" + path_ + "' is already closed");
  int fd = fd_;
  fd_ = -1;
  if (::fsync(fd) != 0) {
    int err = errno;
    ::close(fd);
    return ErrnoStatus(err, "cannot fsync file", path_);
  }
  if (::close(fd) != 0) return ErrnoStatus(errno, "cannot close file", path_);
  return Status::OK();
}

Status CreateDirectories(const std::string& dir) {
  if (dir.empty()) return InvalidArgument("the checkpoint directory is an empty path");
  // Each prefix ending before a '/' (and the whole path), shortest first.
  for (size_t end = 1; end <= dir.size(); ++end) {
    if (end < dir.size() && dir[end] != '/') continue;
    std::string prefix = dir.substr(0, end);
    if (::mkdir(prefix.c_str(), 0755) == 0) continue;
    int err = errno;
    if (err == EEXIST && IsDirectory(prefix)) continue;
    if (err == EEXIST) err = ENOTDIR;  // a file where a directory should be
    Status s = ErrnoStatus(err, "cannot create directory", prefix);
    return Status(s.code(), "cannot create checkpoint directory '" + dir + "': " + s.message());
  }
  return Status::OK();
}

Status Rename(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) {
    return ErrnoStatus(errno, "cannot rename '" + from + "' to", to);
  }
  return Status::OK();
}

Status SyncDirectory(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, "cannot open directory", dir);
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0) return ErrnoStatus(err, "cannot fsync directory", dir);
  return Status::OK();
}

Status RemoveFile(const std::string& path) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return ErrnoStatus(errno, "cannot remove file", path);
  }
  return Status::OK();
}

StatusOr<std::vector<std::string>> ListDirectory(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return ErrnoStatus(errno, "cannot list directory", dir);
  std::vector<std::string> names;
  while (true) {
    errno = 0;
    struct dirent* entry = ::readdir(d);
    if (entry == nullptr) break;
    std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(std::move(name));
  }
  int err = errno;
  ::closedir(d);
  if (err != 0) return ErrnoStatus(err, "cannot list directory", dir);
  return names;
}

StatusOr<std::string> ReadFileToString(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, "cannot open file", path);
  std::string text;
  char buffer[1 << 16];
  while (true) {
    ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      return ErrnoStatus(err, "cannot read file", path);
    }
    if (n == 0) break;
    text.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return text;
}

bool IsRegularFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool IsDirectory(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string JoinPath(const std::string& dir, const std::string& name) {
  if (dir.empty()) return name;
  if (dir.back() == '/') return dir + name;
  return dir + "/" + name;
}

}  // namespace checkpoint_file
}  // namespace actorflow
