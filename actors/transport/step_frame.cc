#include "actors/transport/step_frame.h"

#include <sys/socket.h>
#include <sys/uio.h>

#include <cerrno>

namespace actorflow {
namespace step_internal {

using bulk_internal::ReadFull;
using bulk_internal::WriteFull;

void PutPrefix(uint32_t kind, uint64_t payload_bytes, char* out) {
  std::memcpy(out, &kStepMagic, 4);
  std::memcpy(out + 4, &kind, 4);
  std::memcpy(out + 8, &payload_bytes, 8);
}

bool WriteFrame(int fd, const GatheredBytes& frame, Clock::time_point deadline) {
  return WriteFull(fd, frame.Pieces(), deadline, -1);
}

bool ParsePrefix(const char* prefix, uint32_t kind, uint64_t max_bytes, uint64_t* bytes) {
  uint32_t magic, got_kind;
  std::memcpy(&magic, prefix, 4);
  std::memcpy(&got_kind, prefix + 4, 4);
  std::memcpy(bytes, prefix + 8, 8);
  return magic == kStepMagic && got_kind == kind && *bytes <= max_bytes;
}

bool FrameReader::Poll(int fd) {
  if (have_ > 0 || ended_) return true;
  const ssize_t got = recv(fd, buffer_, prefetch_, MSG_DONTWAIT);
  if (got > 0) {
    have_ = static_cast<size_t>(got);
    return true;
  }
  if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return false;
  ended_ = true;  // the peer closed, or the socket failed
  return true;
}

FrameRead FrameReader::Finish(int fd, uint32_t kind, uint64_t max_bytes,
                              Clock::time_point deadline, std::vector<char>* payload) {
  if (ended_ && have_ == 0) return FrameRead::kClosed;
  if (have_ < kStepPrefixBytes) {
    if (!ReadFull(fd, buffer_ + have_, kStepPrefixBytes - have_, &deadline))
      return FrameRead::kClosed;
    have_ = kStepPrefixBytes;
  }
  const size_t taken = have_ - kStepPrefixBytes;  // payload bytes Poll already took
  have_ = 0;
  uint64_t bytes;
  if (!ParsePrefix(buffer_, kind, max_bytes, &bytes) || taken > bytes) {
    return FrameRead::kMalformed;
  }
  payload->resize(bytes);
  if (taken > 0) std::memcpy(payload->data(), buffer_ + kStepPrefixBytes, taken);
  if (bytes > taken && !ReadFull(fd, payload->data() + taken, bytes - taken, &deadline)) {
    return FrameRead::kClosed;
  }
  return FrameRead::kOk;
}

}  // namespace step_internal
}  // namespace actorflow
