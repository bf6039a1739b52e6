// Internal to the step channel (actors/cluster/step_channel.h): a host-local
// connection's frames through shared memory instead of its Unix socket.
//
// Why: a remote step's round trip on the host-local socket costs five system calls
// and two socket wake-up paths besides the step itself (17-19 µs a round trip where
// the step's own work is about 7 µs). Both ends poll for the next frame anyway, so a
// frame written into memory the other end maps and polls needs no system call at
// all while the peer polls.
//
// Protocol, on a host-local (Unix) connection only:
// - the server makes a memory file (sealed against shrinking and growing) holding
//   two slots, one per direction, and passes it with its welcome frame (payload: u64
//   slot bytes); a client that maps it sends every later frame through it, and so
//   does the server. A welcome without it (TCP, or the server's shared memory off)
//   keeps the socket;
// - a slot holds one frame at a time, as the socket would carry it (prefix and
//   payload). Its sender writes the bytes, then the frame's size, then bumps the
//   slot's sequence number (release); the receiver acts on a new sequence number
//   only (acquire), so a sender that dies mid-copy wrote nothing the receiver reads.
//   The channel is request and answer: a sender writes a slot again only after the
//   receiver answered the frame it held, which it copied out first;
// - a frame larger than the slot goes on the socket, announced in the slot first;
// - a receiver that stops polling sets the slot's `parked` flag and waits on the
//   socket; a sender that sees it set after its bump writes one doorbell byte ('B')
//   there. Both sides fence between their store and their load (Dekker), so a frame
//   is never left unannounced to a parked peer. A doorbell can come unneeded; the
//   receiver skips every doorbell byte ahead of a frame's first byte ('A');
// - the socket still ends the connection: a polling receiver checks it every few
//   polls, a parked one waits on it, so a peer that dies (or a server that stops and
//   shuts its sockets) ends the wait as it did before.
// Trust is the connection's, as for the bulk channel's segments: only a process that
// could open the host-local socket (and so the TCP port) gets the file. Each end
// copies a frame out of the slot before it parses it, and a size the slot cannot hold
// is malformed.
#ifndef ACTORFLOW_ACTORS_TRANSPORT_STEP_MAILBOX_H_
#define ACTORFLOW_ACTORS_TRANSPORT_STEP_MAILBOX_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "actors/transport/bulk_socket.h"
#include "actors/transport/gather_serializer.h"

namespace actorflow {
namespace step_internal {

enum class FrameRead;

class StepMailbox {
 public:
  // Frames up to this size (prefix and payload) go through memory: a step's feeds and
  // an answer's fetches of a few thousand numbers.
  static constexpr size_t kDefaultSlotBytes = size_t{64} << 10;
  static constexpr char kDoorbell = 'B';

  // The server's side: a new sealed memory file of two slots; null when the system
  // refuses one (the connection then keeps the socket).
  static std::unique_ptr<StepMailbox> Create(size_t slot_bytes = kDefaultSlotBytes);
  // The client's side: maps `fd` (taken: closed here either way), which must be a
  // sealed memory file of two slots of `slot_bytes`; null when it is not.
  static std::unique_ptr<StepMailbox> Adopt(int fd, uint64_t slot_bytes);
  ~StepMailbox();
  StepMailbox(const StepMailbox&) = delete;
  StepMailbox& operator=(const StepMailbox&) = delete;

  // The memory file, to pass with the welcome (the server's side; -1 on the client's).
  int fd() const { return fd_; }
  size_t slot_bytes() const { return slot_bytes_; }

  // Sends `frame` to the peer: into the outgoing slot when it fits, else announced
  // there and written on `sock` by `deadline`. Rings the doorbell on `sock` when the
  // peer parked. False only for a frame on the socket not written whole (which the
  // peer never takes); a frame in memory is sent once published, so its sender waits
  // for the answer (and sees the socket's end there) rather than sending it again.
  bool Send(int sock, const GatheredBytes& frame, bulk_internal::Clock::time_point deadline);

  // True once a new frame is in the incoming slot or the socket ended (Finish then
  // says which); never blocks. For a polling loop: the socket is looked at every
  // kSocketCheckPolls calls.
  bool Poll(int sock);
  // Waits on `sock` until a frame comes, the socket ends, or `until` passes (null:
  // no end). True when Finish has something to say.
  bool Park(int sock, const bulk_internal::Clock::time_point* until);
  // The frame of `kind` in *payload. kClosed: the socket ended (or the deadline
  // passed) before a frame came whole; kMalformed: anything but a whole frame of
  // `kind` of at most `max_bytes` payload bytes.
  FrameRead Finish(int sock, uint32_t kind, uint64_t max_bytes,
                   bulk_internal::Clock::time_point deadline, std::vector<char>* payload);

  // Whether the peer waits on the socket for this end's next frame (tests).
  bool peer_parked() const;

  static constexpr unsigned kSocketCheckPolls = 64;

 private:
  struct Slot;
  StepMailbox(int fd, char* base, size_t map_bytes, size_t slot_bytes, bool server_side);
  bool Arrived() const;
  // Reads the doorbells at the head of the socket's input; notes the socket's end
  // (or bytes that are neither a doorbell nor an announced frame) in ended_.
  void SkipDoorbells(int sock);

  int fd_;
  char* base_;
  size_t map_bytes_;
  size_t slot_bytes_;
  Slot* out_;
  Slot* in_;
  char* out_data_;
  char* in_data_;
  uint64_t sent_ = 0;  // the outgoing slot's sequence number
  uint64_t seen_ = 0;  // the last incoming sequence number Finish took
  unsigned polls_ = 0;
  bool ended_ = false;
};

}  // namespace step_internal
}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_TRANSPORT_STEP_MAILBOX_H_
