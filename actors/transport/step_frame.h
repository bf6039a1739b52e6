// Internal to the step channel (actors/cluster/step_channel.h): its frame format, the socket
// calls its server and client share, and the in-process hand-off between them.
// Includes CAF: actors/transport/step_frame.cc and actors/cluster/step_channel_*.cc only.
#ifndef ACTORFLOW_ACTORS_TRANSPORT_STEP_FRAME_H_
#define ACTORFLOW_ACTORS_TRANSPORT_STEP_FRAME_H_

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <caf/all.hpp>

#include "actors/transport/bulk_socket.h"
#include "actors/transport/gather_serializer.h"
#include "actors/protocol/front_protocol.h"

namespace actorflow {
namespace step_internal {

using bulk_internal::Clock;

constexpr uint32_t kStepMagic = 0x54534641;  // "AFST" in a little-endian dump
constexpr uint32_t kStepFrame = 1;
constexpr uint32_t kAnswerFrame = 2;
constexpr uint32_t kWelcomeFrame = 3;  // empty: the server took the connection
constexpr size_t kStepPrefixBytes = 16;  // magic, kind, payload bytes
// The tag of the servers' host-local sockets (actors/transport/socket_acceptor.h).
constexpr char kStepLocalName[] = "step";

// The 16-byte prefix of a frame of `kind` with `payload_bytes`, written at `out`.
void PutPrefix(uint32_t kind, uint64_t payload_bytes, char* out);

// `value` as a whole frame of `kind` in *out, its tensors' bytes referenced where
// they are (gather_serializer.h): `value` must outlive the frame's writing. False when
// it does not serialize.
template <class T>
bool EncodeFrame(caf::actor_system& system, uint32_t kind, const T& value, GatheredBytes* out) {
  out->head.assign(kStepPrefixBytes, '\0');
  out->blocks.clear();
  GatherSerializer sink{system, out};
  // CAF's inspectors take a mutable reference; saving does not change the value.
  if (sink(const_cast<T&>(value))) return false;
  PutPrefix(kind, out->size() - kStepPrefixBytes, out->head.data());
  return true;
}

// Parses a whole payload into *value; false when it does not parse or has bytes left.
template <class T>
bool DecodePayload(caf::actor_system& system, const std::vector<char>& payload, T* value) {
  caf::binary_deserializer source{system, payload};
  return !source(*value) && source.remaining() == 0;
}

// Whether a prefix is whole and right: its magic, `kind`, and a payload of at most
// max_bytes (in *bytes).
bool ParsePrefix(const char* prefix, uint32_t kind, uint64_t max_bytes, uint64_t* bytes);

// Writes all of `frame` by `deadline`.
bool WriteFrame(int fd, const GatheredBytes& frame, Clock::time_point deadline);

enum class FrameRead { kOk, kClosed, kMalformed };

// One frame read from a socket in two parts: Poll() takes what is there without
// waiting (the predicate of a polling loop: no separate peek), Finish() reads the rest
// within a deadline (alone, without a Poll: the prefix in one read, then the
// payload). Poll reads at most `prefetch` bytes, so a reader whose peer may
// send more than this frame (a server's client may pipeline) passes kStepPrefixBytes; one
// whose peer sends nothing after the frame until it answers (a client awaiting its
// step's answer) may take a small frame whole in that one call.
class FrameReader {
 public:
  static constexpr size_t kMaxPrefetch = 256;
  explicit FrameReader(size_t prefetch)
      : prefetch_(std::clamp(prefetch, kStepPrefixBytes, kMaxPrefetch)) {}
  // True once bytes came, or the socket ended or failed (Finish then says which).
  bool Poll(int fd);
  // Takes a frame's first byte, read by the caller (actors/transport/step_mailbox.h).
  void Prime(char first) {
    buffer_[0] = first;
    have_ = 1;
  }
  // The frame of `kind` in *payload, its bytes read by `deadline`. kClosed: the peer
  // went away (or the deadline passed) before the frame was whole; kMalformed: bad
  // magic, another kind, more than `max_bytes` announced, or bytes beyond the
  // frame's end taken by Poll.
  FrameRead Finish(int fd, uint32_t kind, uint64_t max_bytes, Clock::time_point deadline,
                   std::vector<char>* payload);

 private:
  const size_t prefetch_;
  char buffer_[kMaxPrefetch];
  size_t have_ = 0;
  bool ended_ = false;
};

// A step channel server of this process as its in-process clients reach it
// (defined in actors/cluster/step_channel_server.cc).
struct InProcessServer;

// A client's handle on the in-process server it reached last, so that its later
// steps reach it without the process-wide lookup (whose lock every in-process
// session's steps would otherwise share). Thread-safe.
class InProcessServerCache {
 public:
  std::shared_ptr<InProcessServer> Get() const {
    std::lock_guard<std::mutex> lock(mu_);
    return server_;
  }
  void Set(std::shared_ptr<InProcessServer> server) {
    std::lock_guard<std::mutex> lock(mu_);
    server_ = std::move(server);
  }

 private:
  mutable std::mutex mu_;
  std::shared_ptr<InProcessServer> server_;
};

// Runs `step` on the step channel server of this process listening at `endpoint`,
// on the calling thread; false (nothing run) when this process has none there.
// A step the server's stop interrupted is answered Unavailable naming `target`.
// `cache` keeps the server found for the caller's next step.
bool RunOnServerInProcess(const std::string& endpoint, const std::string& target,
                          const RemoteStep& step, RemoteStepResult* result,
                          InProcessServerCache* cache);

}  // namespace step_internal
}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_TRANSPORT_STEP_FRAME_H_
