// Internal to the bulk channel (actors/transport/bulk_channel.h): its frame format and the
// socket calls its receiver and sender share. Every wait is bounded by a deadline or
// ends when its socket (or the sender's stop eventfd) is signalled.
//
// A frame: a 16-byte prefix (u32 magic "AFBK", u32 header bytes, u64 payload bytes),
// the header (i64 step, i32 dtype, u32 rank, rank x i64 dims, u32 + device name,
// u32 + rendezvous key), then the payload: the tensor's bytes as they lie in memory.
#ifndef ACTORFLOW_ACTORS_TRANSPORT_BULK_SOCKET_H_
#define ACTORFLOW_ACTORS_TRANSPORT_BULK_SOCKET_H_

#include <sys/uio.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "actors/transport/bulk_channel.h"

namespace actorflow {
namespace bulk_internal {

using Clock = std::chrono::steady_clock;

constexpr uint32_t kMagic = 0x4B424641;  // "AFBK" in a little-endian dump
constexpr uint32_t kMaxHeaderBytes = 64 * 1024;
constexpr uint32_t kMaxRank = 64;
constexpr size_t kPrefixBytes = 16;  // magic, header bytes, payload bytes
// The tag of the receivers' host-local sockets (actors/transport/socket_acceptor.h).
constexpr char kBulkLocalName[] = "bulk";

// Names the calling thread (at most 15 characters), so that profiles tell the
// channel's threads from the actor threads that started them.
void NameThisThread(const char* name);

// Waits until fd is ready for `events`. With no deadline (nullptr) it waits until
// the socket is ready or shut down. False when the deadline passed, poll failed, or
// `stop_fd` (an eventfd, -1 for none) became readable: a sender that shuts down
// wakes every wait of its writers at once.
bool WaitReady(int fd, short events, const Clock::time_point* deadline, int stop_fd = -1);

// Reads exactly n bytes, every wait bounded by `deadline` (null: unbounded, for an
// idle connection between frames). False on EOF, error, shutdown or deadline. With
// `passed_fds` (a Unix socket), descriptors passed with the bytes are appended there
// (close-on-exec); without, the kernel closes them.
bool ReadFull(int fd, void* out, size_t n, const Clock::time_point* deadline,
              std::vector<int>* passed_fds = nullptr);

// Writes every byte of the iovecs (advanced in place), within `deadline` and until
// `stop_fd` is signalled. `pass_fd` >= 0 goes with the first bytes (SCM_RIGHTS; a
// Unix socket only).
bool WriteFull(int fd, std::vector<iovec> iov, Clock::time_point deadline, int stop_fd,
               int pass_fd = -1);

// The prefix and header of `frame` (everything before its payload), in one buffer.
// With a `segment_id` >= 0, the head of a segment frame instead: magic "AFBS", the
// header followed by the id and `segment_flags` (actors/transport/shared_segments.h).
std::string EncodeHead(const BulkFrame& frame, int64_t segment_id = -1,
                       uint32_t segment_flags = 0);

// A host as the resolver takes it: a bracketed IPv6 address ("[::1]", as cluster
// specs write it) without its brackets.
std::string ResolvableHost(const std::string& host);

// A connected, non-blocking socket to endpoint, or -1 (unreachable, refused, not
// connected within the deadline, or `stop_fd` signalled): the host-local socket of
// the acceptor there when `local_name` is given and it exists on this host
// (actors/transport/socket_acceptor.h), else TCP.
int ConnectWithin(const std::string& endpoint, Clock::time_point deadline, int stop_fd,
                  const std::string& local_name = "");

}  // namespace bulk_internal
}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_TRANSPORT_BULK_SOCKET_H_
