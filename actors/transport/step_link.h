// Internal to the step channel (actors/cluster/step_channel.h): one end of a step
// connection, whichever way its frames go. A connection whose server offered a
// mailbox (host-local, actors/transport/step_mailbox.h) moves them through shared
// memory; any other moves them on its socket (FrameReader, WriteFrame). The client
// and the server both send, poll, park and read through a StepLink, so neither
// branches on the way.
// Includes CAF (through step_frame.h): actors/transport/step_link.cc and
// actors/cluster/step_channel_*.cc only.
#ifndef ACTORFLOW_ACTORS_TRANSPORT_STEP_LINK_H_
#define ACTORFLOW_ACTORS_TRANSPORT_STEP_LINK_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "actors/scheduler/spinning_scheduler.h"
#include "actors/transport/step_frame.h"
#include "actors/transport/step_mailbox.h"

namespace actorflow {
namespace step_internal {

class StepLink {
 public:
  // The link over socket `fd`, which it does not own; with `mailbox` (null: frames
  // on the socket). `prefetch`: what a socket poll may read ahead (FrameReader's
  // contract): kStepPrefixBytes where the peer may send its next frame right behind
  // this one, up to FrameReader::kMaxPrefetch where it sends nothing more before an
  // answer.
  StepLink(int fd, std::unique_ptr<StepMailbox> mailbox, size_t prefetch);

  int fd() const { return fd_; }
  bool shared_memory() const { return mailbox_ != nullptr; }
  // What one Poll costs: a load of memory with a mailbox, a system call without.
  PollCost poll_cost() const { return mailbox_ ? PollCost::kMemory : PollCost::kSystemCall; }

  // Sends `frame` by `deadline`. False when it did not go whole (the peer never takes
  // part of a frame); a frame published in the mailbox counts as sent.
  bool Send(const GatheredBytes& frame, Clock::time_point deadline);
  // True once the next frame (or, on the socket, its first bytes) came, or the
  // connection ended; Finish then says which. Never blocks: a polling loop's
  // predicate.
  bool Poll();
  // Waits until Poll is true (returns true) or `until` passes (false; null: no end).
  bool Park(const Clock::time_point* until);
  // The frame of `kind` in *payload, read whole by `deadline`. kClosed: the
  // connection ended (or the deadline passed) first; kMalformed: anything but a
  // whole frame of `kind` of at most `max_bytes` payload bytes.
  FrameRead Finish(uint32_t kind, uint64_t max_bytes, Clock::time_point deadline,
                   std::vector<char>* payload);

 private:
  int fd_;
  std::unique_ptr<StepMailbox> mailbox_;
  FrameReader reader_;  // the socket's frames; unused with a mailbox
};

}  // namespace step_internal
}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_TRANSPORT_STEP_LINK_H_
