#include "kernels/file_access.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <utility>

namespace actorflow {
namespace {

namespace fs = std::filesystem;

// Whether `path` is `root` or lies below it, component by component (so that
// "/srv/data2" is not under "/srv/data"). Both are absolute and normalized.
bool IsWithin(const fs::path& path, const fs::path& root) {
  auto p = path.begin();
  for (auto r = root.begin(); r != root.end(); ++r, ++p) {
    if (r->empty()) continue;  // a trailing separator of the root
    if (p == path.end() || *p != *r) return false;
  }
  return true;
}

}  // namespace

FileAccessPolicy FileAccessPolicy::Unrestricted() {
  return FileAccessPolicy(Mode::kUnrestricted, "", "");
}

FileAccessPolicy FileAccessPolicy::DenyAll(std::string how_to_allow) {
  return FileAccessPolicy(Mode::kDenyAll, "", std::move(how_to_allow));
}

StatusOr<FileAccessPolicy> FileAccessPolicy::UnderRoot(const std::string& root) {
  if (root.empty()) return InvalidArgument("the data root is empty: give a directory");
  std::error_code ec;
  const fs::path canonical = fs::canonical(root, ec);
  if (ec) {
    return InvalidArgument("data root '" + root + "' cannot be resolved: " + ec.message());
  }
  if (!fs::is_directory(canonical, ec)) {
    return InvalidArgument("data root '" + root + "' is not a directory");
  }
  return FileAccessPolicy(Mode::kUnderRoot, canonical.string(), "");
}

StatusOr<std::string> FileAccessPolicy::Resolve(const std::string& path) const {
  switch (mode_) {
    case Mode::kUnrestricted:
      return path;
    case Mode::kDenyAll:
      return Status(Code::kPermissionDenied,
                    "'" + path + "': this server opens no files named by a graph: " +
                        how_to_allow_);
    case Mode::kUnderRoot:
      break;
  }
  if (path.empty()) {
    return Status(Code::kPermissionDenied, "an empty file name is not a file under the data root '" +
                                               root_ + "'");
  }
  const fs::path root(root_);
  const fs::path candidate = fs::path(path).is_absolute() ? fs::path(path) : root / path;
  // Symlinks in the part that exists are followed; the rest is normalized lexically,
  // so a ".." in it cannot climb out either.
  std::error_code ec;
  const fs::path resolved = fs::weakly_canonical(candidate, ec);
  if (ec) {
    return Status(Code::kPermissionDenied, "'" + path + "' cannot be resolved (" + ec.message() +
                                               "): only files under the data root '" + root_ +
                                               "' may be opened");
  }
  if (!IsWithin(resolved, root)) {
    const std::string via =
        resolved.string() == path ? "" : " (it resolves to '" + resolved.string() + "')";
    return Status(Code::kPermissionDenied, "'" + path + "' is outside the data root '" + root_ +
                                               "'" + via +
                                               ": only files under the data root may be opened");
  }
  return resolved.string();
}

std::string FileAccessPolicy::Describe() const {
  switch (mode_) {
    case Mode::kUnrestricted: return "unrestricted";
    case Mode::kDenyAll: return "no files";
    case Mode::kUnderRoot: return "files under " + root_;
  }
  return "unknown";
}

StatusOr<std::string> ResolveFilePath(const FileAccessPolicy* policy, const std::string& path) {
  if (policy == nullptr) return path;
  return policy->Resolve(path);
}

namespace {

const char* FileKind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

StatusOr<int> OpenRegularFileForReading(const std::string& resolved, const std::string& shown) {
  const int fd = ::open(resolved.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    return NotFound(shown + ": cannot open the file to read (" + std::strerror(errno) + ")");
  }
  struct stat st {};
  const bool stated = ::fstat(fd, &st) == 0;
  if (!stated || !S_ISREG(st.st_mode)) {
    const std::string kind = stated ? FileKind(st.st_mode) : "not readable";
    ::close(fd);
    return InvalidArgument(shown + " is " + kind + ", not a regular file: readers open regular "
                           "files only (one with no writer would wait forever)");
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  return fd;
}

}  // namespace actorflow
