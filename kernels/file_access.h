// FileAccessPolicy: where kernels that open files named by a graph (CsvReaderRead's
// `filenames`, and any later reader or save op) may open them. A graph comes from
// whoever reaches a server, so a server confines these kernels to a data root (or
// refuses them); a process that runs its own graphs (DirectSession, an in-process
// session) sets no policy, and its kernels open any path.
//
// Contract for such kernels: pass every path through ResolveFilePath before opening
// it, open only the path it returns, and never open a path it refused. Their error
// messages name the file (and line) but never quote the file's contents: a refused
// file is never opened, and an accepted one may still be a file its reader should
// not learn (a record that fails to parse is described, not echoed).
//
// Thread safety: immutable after construction; share it freely across threads.
#ifndef ACTORFLOW_KERNELS_FILE_ACCESS_H_
#define ACTORFLOW_KERNELS_FILE_ACCESS_H_

#include <string>

#include "graph/status.h"

namespace actorflow {

class FileAccessPolicy {
 public:
  // Every path allowed, opened as given.
  static FileAccessPolicy Unrestricted();
  // Every path refused with PermissionDenied; `how_to_allow` ends the message
  // (e.g. "start the server with --data-root DIR").
  static FileAccessPolicy DenyAll(std::string how_to_allow);
  // Only paths that resolve ("..", "." and symlinks followed) to `root` or below;
  // a relative path is taken relative to `root`. InvalidArgument naming `root` when
  // it is not an existing directory.
  static StatusOr<FileAccessPolicy> UnderRoot(const std::string& root);

  // The path to open: `path` itself when unrestricted; under a root, its resolved
  // absolute form (no symlinks, no ".." in the part that exists now). Errors:
  // PermissionDenied naming `path` and the root (or saying how to allow files) when
  // it resolves outside the root or nothing is allowed. Never opens the file.
  StatusOr<std::string> Resolve(const std::string& path) const;

  // "unrestricted", "no files", or "files under /srv/data".
  std::string Describe() const;
  // The resolved root; empty unless made by UnderRoot.
  const std::string& root() const { return root_; }

 private:
  enum class Mode { kUnrestricted, kDenyAll, kUnderRoot };
  FileAccessPolicy(Mode mode, std::string root, std::string how_to_allow)
      : mode_(mode), root_(std::move(root)), how_to_allow_(std::move(how_to_allow)) {}

  Mode mode_;
  std::string root_;
  std::string how_to_allow_;
};

// Resolves `path` under `policy`; a null policy allows every path unchanged.
StatusOr<std::string> ResolveFilePath(const FileAccessPolicy* policy, const std::string& path);

// Opens `resolved` (what ResolveFilePath returned) for reading without ever blocking:
// the open itself is non-blocking, so a FIFO with no writer or a device cannot wedge
// the kernel's thread, and anything but a regular file is refused (InvalidArgument
// naming `shown`, the path as the graph gave it, and what the file is). Returns the
// descriptor, blocking again for reads (a regular file's reads do not wait on anyone),
// owned by the caller; NotFound naming `shown` when it cannot be opened.
StatusOr<int> OpenRegularFileForReading(const std::string& resolved, const std::string& shown);

}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_FILE_ACCESS_H_
