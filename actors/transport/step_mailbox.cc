#include "actors/transport/step_mailbox.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "actors/transport/step_frame.h"

namespace actorflow {
namespace step_internal {

using bulk_internal::Clock;

// A slot's control line; its data follows at kDataOffset.
struct StepMailbox::Slot {
  std::atomic<uint64_t> sequence;
  std::atomic<uint32_t> parked;
  uint32_t unused;
  std::atomic<uint64_t> bytes;  // the frame's size, or kOnSocket
};

namespace {

constexpr uint64_t kOnSocket = ~uint64_t{0};
constexpr size_t kDataOffset = 64;  // the control line, then the data
constexpr uint64_t kMaxSlotBytes = uint64_t{16} << 20;
static_assert(std::atomic<uint64_t>::is_always_lock_free, "slots are shared between processes");
static_assert(std::atomic<uint32_t>::is_always_lock_free, "slots are shared between processes");

size_t MapBytes(size_t slot_bytes) { return 2 * (kDataOffset + slot_bytes); }

}  // namespace

StepMailbox::StepMailbox(int fd, char* base, size_t map_bytes, size_t slot_bytes,
                         bool server_side)
    : fd_(fd), base_(base), map_bytes_(map_bytes), slot_bytes_(slot_bytes) {
  // The first slot carries the client's frames, the second the server's.
  char* to_server = base;
  char* to_client = base + kDataOffset + slot_bytes;
  char* out = server_side ? to_client : to_server;
  char* in = server_side ? to_server : to_client;
  out_ = reinterpret_cast<Slot*>(out);
  in_ = reinterpret_cast<Slot*>(in);
  out_data_ = out + kDataOffset;
  in_data_ = in + kDataOffset;
  sent_ = out_->sequence.load(std::memory_order_relaxed);
  seen_ = in_->sequence.load(std::memory_order_acquire);
}

StepMailbox::~StepMailbox() {
  munmap(base_, map_bytes_);
  if (fd_ >= 0) close(fd_);
}

std::unique_ptr<StepMailbox> StepMailbox::Create(size_t slot_bytes) {
  const size_t map_bytes = MapBytes(slot_bytes);
  int fd = memfd_create("actorflow-step", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return nullptr;
  void* base = MAP_FAILED;
  if (ftruncate(fd, static_cast<off_t>(map_bytes)) == 0 &&
      fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) == 0) {
    base = mmap(nullptr, map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  }
  if (base == MAP_FAILED) {
    close(fd);
    return nullptr;
  }
  // A new file reads as zeros: both slots empty, nobody parked.
  return std::unique_ptr<StepMailbox>(
      new StepMailbox(fd, static_cast<char*>(base), map_bytes, slot_bytes, true));
}

std::unique_ptr<StepMailbox> StepMailbox::Adopt(int fd, uint64_t slot_bytes) {
  if (slot_bytes < kStepPrefixBytes || slot_bytes > kMaxSlotBytes) {
    close(fd);
    return nullptr;
  }
  const size_t map_bytes = MapBytes(slot_bytes);
  struct stat st;
  const int required = F_SEAL_SHRINK | F_SEAL_GROW;
  // A file that could shrink under the mapping would turn a read into a crash.
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
      static_cast<uint64_t>(st.st_size) != map_bytes ||
      (fcntl(fd, F_GET_SEALS) & required) != required) {
    close(fd);
    return nullptr;
  }
  void* base = mmap(nullptr, map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (base == MAP_FAILED) return nullptr;
  return std::unique_ptr<StepMailbox>(
      new StepMailbox(-1, static_cast<char*>(base), map_bytes, slot_bytes, false));
}

bool StepMailbox::Send(int sock, const GatheredBytes& frame, Clock::time_point deadline) {
  const size_t bytes = frame.size();
  const bool in_memory = bytes <= slot_bytes_;
  if (in_memory) {
    char* at = out_data_;
    for (const iovec& piece : frame.Pieces()) {
      std::memcpy(at, piece.iov_base, piece.iov_len);
      at += piece.iov_len;
    }
  }
  out_->bytes.store(in_memory ? bytes : kOnSocket, std::memory_order_relaxed);
  out_->sequence.store(++sent_, std::memory_order_release);
  // Pairs with the fence in Park: either the peer sees the new sequence number
  // before it waits, or this sees it parked and rings.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (out_->parked.load(std::memory_order_relaxed) != 0) {
    // A ring that fails (a full socket already holds doorbells, or the socket ended,
    // which the wait for the answer then sees) changes nothing: a frame in memory is
    // sent once its sequence number moved, and its sender must not send it again.
    const char bell = kDoorbell;
    [[maybe_unused]] const ssize_t rung = send(sock, &bell, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
  }
  return in_memory || WriteFrame(sock, frame, deadline);
}

bool StepMailbox::peer_parked() const {
  return out_->parked.load(std::memory_order_relaxed) != 0;
}

bool StepMailbox::Arrived() const {
  return in_->sequence.load(std::memory_order_acquire) != seen_;
}

bool StepMailbox::Poll(int sock) {
  if (ended_ || Arrived()) return true;
  if (++polls_ % kSocketCheckPolls == 0) {
    SkipDoorbells(sock);
    return ended_ || Arrived();
  }
  return false;
}

void StepMailbox::SkipDoorbells(int sock) {
  char head[64];
  for (;;) {
    const ssize_t got = recv(sock, head, sizeof(head), MSG_PEEK | MSG_DONTWAIT);
    if (got == 0) {
      ended_ = true;  // the peer closed
      return;
    }
    if (got < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) ended_ = true;
      return;
    }
    size_t bells = 0;
    while (bells < static_cast<size_t>(got) && head[bells] == kDoorbell) ++bells;
    if (bells == 0) {
      // A frame's bytes: only after the slot announced them (Finish reads them).
      if (!Arrived()) ended_ = true;
      return;
    }
    if (recv(sock, head, bells, MSG_DONTWAIT) != static_cast<ssize_t>(bells)) {
      ended_ = true;
      return;
    }
  }
}

bool StepMailbox::Park(int sock, const Clock::time_point* until) {
  in_->parked.store(1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_seq_cst);  // pairs with Send's
  bool ready = ended_ || Arrived();
  while (!ready) {
    if (!bulk_internal::WaitReady(sock, POLLIN, until)) {
      ready = ended_ || Arrived();
      break;  // the deadline passed (or the wait failed: the next poll tells)
    }
    SkipDoorbells(sock);
    ready = ended_ || Arrived();
  }
  in_->parked.store(0, std::memory_order_relaxed);
  return ready;
}

FrameRead StepMailbox::Finish(int sock, uint32_t kind, uint64_t max_bytes,
                              Clock::time_point deadline, std::vector<char>* payload) {
  const uint64_t sequence = in_->sequence.load(std::memory_order_acquire);
  if (sequence == seen_) return FrameRead::kClosed;  // the socket ended first
  seen_ = sequence;
  const uint64_t bytes = in_->bytes.load(std::memory_order_relaxed);
  if (bytes == kOnSocket) {
    // Doorbells may precede the frame's first byte.
    char first = kDoorbell;
    while (first == kDoorbell) {
      if (!bulk_internal::ReadFull(sock, &first, 1, &deadline)) return FrameRead::kClosed;
    }
    FrameReader reader(kStepPrefixBytes);
    reader.Prime(first);
    return reader.Finish(sock, kind, max_bytes, deadline, payload);
  }
  if (bytes < kStepPrefixBytes || bytes > slot_bytes_) return FrameRead::kMalformed;
  char prefix[kStepPrefixBytes];
  std::memcpy(prefix, in_data_, kStepPrefixBytes);
  uint64_t payload_bytes;
  if (!ParsePrefix(prefix, kind, max_bytes, &payload_bytes) ||
      payload_bytes != bytes - kStepPrefixBytes) {
    return FrameRead::kMalformed;
  }
  payload->resize(payload_bytes);
  std::memcpy(payload->data(), in_data_ + kStepPrefixBytes, payload_bytes);
  return FrameRead::kOk;
}

}  // namespace step_internal
}  // namespace actorflow
