// Internal to the bulk channel (actors/transport/bulk_channel.h): tensors between two
// processes of one host through shared memory instead of a socket's two copies.
//
// Why: a Unix socket copies a tensor twice (into the kernel's buffers, out into the
// receiver's) and wakes both ends per buffer-full. Here the sender copies the tensor
// once into a segment of shared memory (a memfd) and writes only the frame's head on
// the connection; the receiver maps the segment and hands on a tensor whose buffer
// *is* the segment: no copy on its side.
//
// Protocol, on a host-local (Unix) connection of the bulk channel only:
// - a segment frame is the usual prefix with magic "AFBS", the usual header, then
//   u32 segment id and u32 flags; no payload bytes follow. With flag
//   kSegmentFdAttached the segment's descriptor rides on the head's bytes
//   (SCM_RIGHTS): the receiver maps it under that id, replacing what the id named;
// - the sender writes the head only after the payload is wholly in the segment, so a
//   sender that dies mid-copy has sent nothing that points at it;
// - a segment is the receiver's from the head until the last tensor on it lets go:
//   then the receiver writes an 8-byte release (u32 magic "AFBR", u32 id) back on
//   the connection, and only then may the sender fill it again. A release that
//   cannot be written (the connection gone) leaves the segment with the receiver for
//   good: the sender never writes a segment the receiver may still read;
// - the sender never waits for a release: with no free segment and its pool full,
//   it writes the frame inline as before.
// Trust is the connection's: only a process that could open the host-local socket
// (and so the TCP port) gets a descriptor. Bool tensors are never shared (their bytes
// are checked on receipt, and the sender could change them after the check).
#ifndef ACTORFLOW_ACTORS_TRANSPORT_SHARED_SEGMENTS_H_
#define ACTORFLOW_ACTORS_TRANSPORT_SHARED_SEGMENTS_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "graph/status.h"
#include "graph/tensor.h"

namespace actorflow {
namespace bulk_internal {

constexpr uint32_t kSegmentMagic = 0x53424641;  // "AFBS" in a little-endian dump
constexpr uint32_t kReleaseMagic = 0x52424641;  // "AFBR"
constexpr uint32_t kSegmentFdAttached = 1;
// Segment ids of one connection are below this; a receiver maps at most this many.
constexpr uint32_t kMaxSegments = 64;
constexpr size_t kReleaseBytes = 8;

// Copies n bytes; from 4 MiB on, a helper thread of the process copies part of it
// meanwhile. One core copies a tensor larger than its L2 at 5-7 GB/s on a 2-core
// machine with a 105 MiB L3; two cores copy 16 MiB at about 18 GB/s.
void CopyInParallel(void* dst, const void* src, size_t n);

// True when fd is a Unix-domain socket (a host-local connection).
bool IsUnixSocket(int fd);

// A sender's segments on one connection.
struct Segment {
  uint32_t id = 0;
  int fd = -1;
  char* data = nullptr;  // null: the id is free to be made again
  size_t capacity = 0;
  bool in_use = false;       // the receiver holds it (sent, not yet released)
  bool peer_has_fd = false;  // its descriptor went with an earlier head
};

class SegmentPool {
 public:
  explicit SegmentPool(size_t max_bytes) : max_bytes_(max_bytes) { by_id_.reserve(kMaxSegments); }
  ~SegmentPool();  // unmaps and closes the sender's side; the receiver's maps stay
  SegmentPool(const SegmentPool&) = delete;
  SegmentPool& operator=(const SegmentPool&) = delete;

  // A free segment of at least `bytes`, marked in use: the smallest that fits, or a
  // new one (free ones unmapped to make room under max_bytes). Null when the pool
  // cannot hold it now (every byte held by the receiver, or no memory).
  Segment* Acquire(size_t bytes);
  // Reads the releases waiting on connection fd without blocking and frees their
  // segments. False when the peer closed the connection or wrote anything but a
  // release of a segment it holds.
  bool DrainReleases(int fd);
  int segments() const;

 private:
  void Unmap(Segment* s);

  const size_t max_bytes_;
  size_t mapped_ = 0;
  std::vector<Segment> by_id_;
  std::string partial_;  // a release's first bytes, when a read split it
};

// Where a receiver's tensors send their releases: a duplicate of the connection's
// socket, so that a tensor let go after the connection ended writes to no other file.
class ReleaseChannel {
 public:
  explicit ReleaseChannel(int connection_fd);
  ~ReleaseChannel();
  ReleaseChannel(const ReleaseChannel&) = delete;
  ReleaseChannel& operator=(const ReleaseChannel&) = delete;
  // Writes the release of `id` without blocking; dropped once Close() ran.
  void Release(uint32_t id);
  void Close();

 private:
  std::mutex mu_;
  int fd_;
};

// A receiver's maps of one connection's segments.
class MappedSegments {
 public:
  // Maps descriptor fd (taken: closed here either way) as segment id. Not OK names
  // why: an id out of range, not a mappable file, larger than max_bytes.
  Status Adopt(uint32_t id, int fd, size_t max_bytes);
  // A tensor on the first `bytes` of segment id; when its last holder lets go, the
  // release goes out on `releases`. Not OK when the id is not mapped or too small.
  StatusOr<Tensor> TensorOn(uint32_t id, DType dtype, const Shape& shape, size_t bytes,
                            std::shared_ptr<ReleaseChannel> releases);

 private:
  struct Mapping;
  std::vector<std::shared_ptr<Mapping>> by_id_;
};

}  // namespace bulk_internal
}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_TRANSPORT_SHARED_SEGMENTS_H_
