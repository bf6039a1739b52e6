// Internal to actors/transport: the parts of the guarded transport
// (guarded_transport.h) that its plain-TCP backend (guarded_transport.cc) and its
// TLS connections (guarded_tls.cc) share: the bookkeeping of accepted connections,
// the scribe that bounds reads and notices the handshake (a template over the
// connection's stream: TCP or TLS), the listener that enforces --max-connections,
// and the thread that closes connections without a handshake in time.
//
// Includes CAF's network internals: include it from those two files only.
// Thread safety: everything here runs on the multiplexer's thread, except the
// atomics, which other threads read.
#ifndef ACTORFLOW_ACTORS_TRANSPORT_GUARDED_CONNECTIONS_H_
#define ACTORFLOW_ACTORS_TRANSPORT_GUARDED_CONNECTIONS_H_

#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <caf/io/basp/header.hpp>
#include <caf/io/network/default_multiplexer.hpp>
#include <caf/io/network/doorman_impl.hpp>

#include "actors/transport/connection_ends.h"
#include "actors/transport/server_limits.h"

namespace actorflow {
namespace guarded {

namespace net = caf::io::network;
using Clock = std::chrono::steady_clock;

// What a task writes, in place of CAF's first header (or, over TLS, in place of its
// TLS hello), to a connection it refuses because --max-connections are open: 32
// bytes that no BASP header and no TLS record starts with, which the connecting
// side's transport recognizes and reports as the cause (TakeBusyRefusal) instead of
// the generic "closed during the handshake".
constexpr char kBusyFrame[32] = "\x7f" "actorflow: at max-connections";
static_assert(sizeof(kBusyFrame) == caf::io::basp::header_size, "one BASP header");

// A header whose operation byte BASP knows no message type for: BASP refuses it as
// malformed and closes the connection.
constexpr char kInvalidOperation = '\x7f';

// One stderr line per refusal, "actorflow transport: refused PEER: WHY", at most 10
// a second (the rest are counted in the next line printed).
void LogRefusal(const std::string& peer, const std::string& why);
// "ADDR:PORT" of the socket's peer ("[ADDR]:PORT" for IPv6).
std::string PeerOf(net::native_socket fd);
uint16_t PeerPortOf(net::native_socket fd);
// Whether the 32 bytes of a first header can be CAF's handshake.
bool LooksLikeHandshake(const char* header);
// What a first frame that is not a handshake seems to be, for the log line.
std::string DescribeFirstFrame(const char* data);
// Notes that the server at `port` refused this process as busy (TakeBusyRefusal).
void RecordBusyRefusal(uint16_t port);
// Whether `fd` has received a server's kBusyFrame (peeked, not read): whole, or the
// rest of it after the 5 bytes that OpenSSL read as a record header before it gave
// up on them (a TLS connection).
bool SawBusyFrame(net::native_socket fd);

// A connection that the listener or the reaper may close before its handshake.
class StallableConnection {
 public:
  // Closes the connection (on the multiplexer's thread), logging `why` for its peer.
  virtual void CloseNow(const std::string& why) = 0;

 protected:
  ~StallableConnection() = default;
};

// Accepted connections of one backend: how many are open now, and those still
// without a completed handshake, oldest first. `awaiting` is touched only on the
// multiplexer's thread (where scribes are made, read, closed and destroyed).
struct AcceptedConnections {
  using Awaiting = std::list<std::pair<StallableConnection*, Clock::time_point>>;
  std::atomic<int64_t> open{0};
  Awaiting awaiting;
  // awaiting.size(), for the reaper's thread: an idle task posts it nothing.
  std::atomic<int64_t> awaiting_count{0};
};

// A connection (CAF scribe) whose reads are bounded: see guarded_transport.h.
// `ScribeBase` is a scribe over a stream (net::scribe_impl for TCP, the TLS scribe
// of guarded_tls.cc) with a protected member `stream_`; it is constructed from
// (multiplexer, socket, extra...).
template <class ScribeBase>
class GuardedScribe : public ScribeBase, public StallableConnection {
 public:
  // `accepted` counts this connection while it lives (null: an outgoing one).
  template <class... Extra>
  GuardedScribe(const TransportLimits& limits, std::shared_ptr<AcceptedConnections> accepted,
                net::default_multiplexer& mx, net::native_socket fd, Extra&&... extra)
      : ScribeBase(mx, fd, std::forward<Extra>(extra)...),
        limits_(limits),
        peer_(PeerOf(fd)),
        peer_port_(PeerPortOf(fd)),
        accepted_(std::move(accepted)),
        clock_(RegisterConnection(peer_, limits.peer_timeout_ms)) {
    if (accepted_) {
      ++accepted_->open;
      awaiting_ = accepted_->awaiting.insert(accepted_->awaiting.end(), {this, Clock::now()});
      ++accepted_->awaiting_count;
      in_awaiting_ = true;
    }
  }
  ~GuardedScribe() override {
    if (accepted_) {
      HandshakeEnded();
      --accepted_->open;
    }
  }

  void CloseNow(const std::string& why) override {
    HandshakeEnded();
    if (this->detached()) return;
    closed_here_ = true;
    LogRefusal(peer_, why);
    caf::intrusive_ptr<GuardedScribe> keep{this};
    this->io_failure(&this->stream_.backend(), net::operation::read);
    // The peer sees the end at once, and the multiplexer, seeing the hang-up, drops
    // whatever it still holds of the stream (a TLS stream waiting to write its
    // handshake), so that the scribe goes and its slot with it.
    ::shutdown(this->stream_.fd(), SHUT_RDWR);
  }

  // BASP asks for exactly the payload length a header announced. A size over the
  // limit is not passed on (the stream keeps its 32-byte header size, so nothing is
  // allocated) and the connection is closed once BASP's handler has returned.
  void configure_read(caf::io::receive_policy::config config) override {
    const bool handshake_payload = consuming_ && frames_ == 1;
    // A handshake without payload: BASP asks for the next header right away.
    if (handshake_payload && config.second == caf::io::basp::header_size) HandshakeEnded();
    const int64_t limit = handshake_payload
                              ? std::min(kMaxHandshakeBytes, limits_.max_message_bytes)
                              : limits_.max_message_bytes;
    if (config.second > static_cast<uint64_t>(limit)) {
      LogRefusal(peer_, handshake_payload
                            ? "its first message announces " + std::to_string(config.second) +
                                  " bytes, over the " + std::to_string(limit) +
                                  " a CAF handshake may have"
                            : "a message announces " + std::to_string(config.second) +
                                  " bytes, over --max-message-bytes " + std::to_string(limit));
      refused_ = true;
      if (!consuming_) CloseLater();
      return;
    }
    ScribeBase::configure_read(config);
  }

  // An outgoing connection that ends before its first frame: over TLS, a server at
  // --max-connections wrote kBusyFrame where TLS expected its hello, and TLS failed
  // on it (or on the reset that followed) without handing it on. Look at what is
  // left of it while the socket is still open.
  caf::message detach_message() override {
    if (accepted_ == nullptr && frames_ == 0 && SawBusyFrame(this->stream_.fd())) {
      RecordBusyRefusal(peer_port_);
    }
    // A failed read or write that this side did not cause: the peer closed or reset
    // the connection (connection_ends.h).
    if (frames_ >= 2 && !closed_here_) {
      NoteConnectionEnded(peer_, ConnectionEnd::kClosedByPeer, SilentFor());
    }
    clock_->Ended();
    return ScribeBase::detach_message();
  }

  // This side closes the connection: BASP's failure detector after a silence
  // (recorded as such), or a deliberate close (a peer going away, a shutdown).
  void graceful_shutdown() override {
    const int64_t silence_ms = limits_.peer_timeout_ms;
    if (frames_ >= 2 && !closed_here_ && silence_ms > 0 && SilentFor().count() >= silence_ms) {
      NoteConnectionEnded(peer_, ConnectionEnd::kClosedAfterSilence, SilentFor());
    }
    closed_here_ = true;
    clock_->Ended();
    ScribeBase::graceful_shutdown();
  }

  bool consume(caf::execution_unit* ctx, const void* buf, size_t num_bytes) override {
    ++frames_;
    clock_->BytesArrived();
    if (frames_ == 2) HandshakeEnded();  // its header and its payload arrived
    const char* first = this->rd_buf().data();
    if (frames_ == 1 && num_bytes == caf::io::basp::header_size && accepted_ == nullptr &&
        std::memcmp(first, kBusyFrame, sizeof(kBusyFrame)) == 0) {
      // A server refusing this connection because it is at --max-connections.
      RecordBusyRefusal(peer_port_);
    } else if (frames_ == 1 && num_bytes == caf::io::basp::header_size &&
               !LooksLikeHandshake(first)) {
      LogRefusal(peer_, "its first frame is not a BASP handshake (" + DescribeFirstFrame(first) +
                            ")");
      // Let BASP refuse it as malformed: it closes the connection and tells a
      // connecting side why (malformed_basp_message), as for any bad header.
      this->rd_buf()[0] = kInvalidOperation;
    }
    consuming_ = true;
    const bool keep_reading = caf::io::scribe::consume(ctx, buf, num_bytes);
    consuming_ = false;
    if (refused_ && !this->detached()) {
      closed_here_ = true;
      // What a failed read does: detach from the broker (which drops the
      // connection's state on the connection_closed_msg it gets) and stop reading;
      // the socket closes when the stream lets go of this scribe.
      this->io_failure(ctx, net::operation::read);
      return false;
    }
    return keep_reading;
  }

 private:
  // A refusal outside a read (not seen from BASP, which sizes reads only while it
  // handles one): close from the multiplexer's loop.
  void CloseLater() {
    caf::intrusive_ptr<GuardedScribe> self{this};
    closed_here_ = true;
    this->stream_.backend().post([self] {
      if (!self->detached()) self->io_failure(&self->stream_.backend(), net::operation::read);
    });
  }

  std::chrono::milliseconds SilentFor() const { return clock_->SilentFor(); }

  // Leaves the accepted connections that await their handshake (once).
  void HandshakeEnded() {
    if (!in_awaiting_) return;
    accepted_->awaiting.erase(awaiting_);
    --accepted_->awaiting_count;
    in_awaiting_ = false;
  }

  const TransportLimits limits_;
  const std::string peer_;  // read at accept/connect time: a closed socket has none
  const uint16_t peer_port_;
  std::shared_ptr<AcceptedConnections> accepted_;
  AcceptedConnections::Awaiting::iterator awaiting_;
  bool in_awaiting_ = false;
  int64_t frames_ = 0;      // reads handed to BASP so far (the first is a header)
  bool consuming_ = false;  // inside BASP's handler of a read
  bool refused_ = false;
  bool closed_here_ = false;  // this side closed it (or is closing it)
  std::shared_ptr<ConnectionClock> clock_;  // when bytes last came (connection_ends.h)
};

// A listener (CAF doorman) that closes connections beyond the limit at once (after
// writing kBusyFrame) and counts the others; MakeScribe makes the connection's
// scribe (TCP here, TLS in guarded_tls.cc).
class GuardedDoorman : public net::doorman_impl {
 public:
  GuardedDoorman(net::default_multiplexer& mx, net::native_socket fd, const TransportLimits& limits,
                 std::shared_ptr<AcceptedConnections> accepted)
      : doorman_impl(mx, fd), limits_(limits), accepted_(std::move(accepted)) {}

  // doorman_impl::new_connection, with the limit and a counted scribe.
  bool new_connection() override;

 protected:
  // A scribe of the accepted socket `fd`, counted in `accepted_`; null (after
  // logging why) when none can be made, and the socket is closed.
  virtual caf::io::scribe_ptr MakeScribe(net::default_multiplexer& mx, net::native_socket fd);

  const TransportLimits limits_;
  std::shared_ptr<AcceptedConnections> accepted_;

 private:
  // Closes the oldest accepted connection that has gone kHandshakeGraceMs without
  // completing its handshake, if any: a stalled stranger gives way to a new peer.
  bool EvictAStalledConnection();
};

// Closes accepted connections that have not completed their handshake within
// --handshake-timeout-ms: a thread that wakes a few times per timeout and posts the
// check to the multiplexer, whose thread alone touches the connections. Started with
// the first listener (a process that only connects needs none).
class HandshakeReaper {
 public:
  HandshakeReaper(net::default_multiplexer& mx, std::shared_ptr<AcceptedConnections> accepted,
                  int64_t timeout_ms)
      : mx_(mx), accepted_(std::move(accepted)), timeout_ms_(timeout_ms) {}
  ~HandshakeReaper() { Stop(); }

  void Start();
  void Stop();

 private:
  void Loop();

  net::default_multiplexer& mx_;
  const std::shared_ptr<AcceptedConnections> accepted_;
  const int64_t timeout_ms_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

// CAF's default multiplexer, making guarded scribes and doormen, and spinning a
// while after each event (actors/scheduler/spinning_scheduler.h).
class GuardedMultiplexer : public net::default_multiplexer {
 public:
  explicit GuardedMultiplexer(caf::actor_system* sys);
  // The reaper stops before the multiplexer it posts to goes.
  ~GuardedMultiplexer() override { reaper_.Stop(); }

  void run() override;
  caf::io::scribe_ptr new_scribe(net::native_socket fd) override;
  caf::io::doorman_ptr new_doorman(net::native_socket fd) override;

  // Over TLS (guarded_tls.cc): a guarded listener on `fd` whose connections are
  // TLS sessions, counted and timed out with the TCP ones.
  caf::io::doorman_ptr NewTlsDoorman(net::native_socket fd);

  const TransportLimits& limits() const { return limits_; }

 private:
  const TransportLimits limits_;
  const std::chrono::microseconds spin_;
  std::shared_ptr<AcceptedConnections> accepted_ = std::make_shared<AcceptedConnections>();
  HandshakeReaper reaper_;  // after accepted_, which it shares
};

}  // namespace guarded
}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_TRANSPORT_GUARDED_CONNECTIONS_H_
