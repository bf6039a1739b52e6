#include "actors/transport/step_link.h"

#include <poll.h>

#include <utility>

namespace actorflow {
namespace step_internal {

StepLink::StepLink(int fd, std::unique_ptr<StepMailbox> mailbox, size_t prefetch)
    : fd_(fd), mailbox_(std::move(mailbox)), reader_(prefetch) {}

bool StepLink::Send(const GatheredBytes& frame, Clock::time_point deadline) {
  return mailbox_ ? mailbox_->Send(fd_, frame, deadline) : WriteFrame(fd_, frame, deadline);
}

bool StepLink::Poll() { return mailbox_ ? mailbox_->Poll(fd_) : reader_.Poll(fd_); }

bool StepLink::Park(const Clock::time_point* until) {
  if (mailbox_) return mailbox_->Park(fd_, until);
  // Input, the socket's end, or `until`; then the poll takes what came (poll(2)
  // reports an error or a hang-up as readable, and the read then sees it). A wake
  // with nothing to read waits again.
  for (;;) {
    const bool woke = bulk_internal::WaitReady(fd_, POLLIN, until);
    if (reader_.Poll(fd_)) return true;
    if (!woke) return false;  // `until` passed, or the wait failed
  }
}

FrameRead StepLink::Finish(uint32_t kind, uint64_t max_bytes, Clock::time_point deadline,
                           std::vector<char>* payload) {
  return mailbox_ ? mailbox_->Finish(fd_, kind, max_bytes, deadline, payload)
                  : reader_.Finish(fd_, kind, max_bytes, deadline, payload);
}

}  // namespace step_internal
}  // namespace actorflow
