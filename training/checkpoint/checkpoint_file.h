// The POSIX file operations that checkpoints are made of: durable writes (write,
// fsync, close), renames, directory fsyncs and listings, with errors as Status values
// that name the path, for training/checkpoint* and training/serving/servable.cc.
//
// Error codes: PermissionDenied for EACCES/EPERM/EROFS, NotFound for ENOENT, and
// Unavailable for every other failure (a full disk, an I/O error, a path component
// that is not a directory).
// Thread safety: functions are safe to call concurrently; a DurableFile is for one
// thread at a time.
#ifndef ACTORFLOW_TRAINING_CHECKPOINT_CHECKPOINT_FILE_H_
#define ACTORFLOW_TRAINING_CHECKPOINT_CHECKPOINT_FILE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "graph/status.h"

namespace actorflow {
namespace checkpoint_file {

// "<what> '<path>': <strerror(err)>" with the code for `err` (see above).
Status ErrnoStatus(int err, const std::string& what, const std::string& path);

// A new file opened for writing; never replaces an existing one.
class DurableFile {
 public:
  // AlreadyExists when `path` exists.
  static StatusOr<DurableFile> Create(const std::string& path);
  DurableFile(DurableFile&& other) noexcept;
  DurableFile& operator=(DurableFile&&) = delete;
  DurableFile(const DurableFile&) = delete;
  ~DurableFile();  // closes the file if Close was not called (no fsync)

  const std::string& path() const { return path_; }
  uint64_t bytes_written() const { return bytes_written_; }
  Status Append(const void* data, size_t size);
  // fsync, then close: the bytes are on disk when this returns OK.
  Status SyncAndClose();

 private:
  DurableFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  std::string path_;
  int fd_ = -1;
  uint64_t bytes_written_ = 0;
};

// Creates `dir` and its missing parents (mode 0755). OK when it is a directory.
Status CreateDirectories(const std::string& dir);
// rename(2): atomically replaces `to`.
Status Rename(const std::string& from, const std::string& to);
// fsyncs the directory, making renames and unlinks in it durable.
Status SyncDirectory(const std::string& dir);
// unlink(2); OK when the file is already gone.
Status RemoveFile(const std::string& path);
// The names in `dir` (no "." or "..").
StatusOr<std::vector<std::string>> ListDirectory(const std::string& dir);
StatusOr<std::string> ReadFileToString(const std::string& path);
bool IsRegularFile(const std::string& path);
bool IsDirectory(const std::string& path);
// "dir/name", without doubling a trailing '/'.
std::string JoinPath(const std::string& dir, const std::string& name);

}  // namespace checkpoint_file
}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_CHECKPOINT_CHECKPOINT_FILE_H_
