#include "actors/transport/guarded_transport.h"

#include <sys/resource.h>

#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <caf/io/basp/header.hpp>
#include <caf/io/network/default_multiplexer.hpp>
#include <caf/io/network/doorman_impl.hpp>
#include <caf/io/network/scribe_impl.hpp>

#include "actors/scheduler/spinning_scheduler.h"

namespace actorflow {
namespace {

namespace net = caf::io::network;

// Where LoadGuardedMiddleman leaves the limits for the backend, which CAF constructs
// with nothing but the actor system.
constexpr const char kMaxMessageBytesKey[] = "actorflow.max-message-bytes";
constexpr const char kMaxConnectionsKey[] = "actorflow.max-connections";
constexpr const char kHandshakeTimeoutKey[] = "actorflow.handshake-timeout-ms";

using Clock = std::chrono::steady_clock;

// What a task writes, in place of CAF's first header, to a connection it refuses
// because --max-connections are open: 32 bytes that no BASP header starts with
// (BASP refuses them as malformed), which the connecting side's transport
// recognizes and reports as the cause (TakeBusyRefusal) instead of the generic
// "closed during the handshake".
constexpr char kBusyFrame[32] = "\x7f" "actorflow: at max-connections";
static_assert(sizeof(kBusyFrame) == caf::io::basp::header_size, "one BASP header");

// Ports of servers that refused this process as busy, until connect reads them.
std::mutex busy_mu;
std::map<uint16_t, int> busy_refusals;

uint16_t PeerPortOf(net::native_socket fd) {
  auto port = net::remote_port_of_fd(fd);
  return port ? *port : 0;
}

// A header whose operation byte BASP knows no message type for: BASP refuses it as
// malformed and closes the connection.
constexpr char kInvalidOperation = '\x7f';

// One stderr line per refusal, at most kLinesPerSecond a second: a flood of hostile
// connections must not turn into a flood of output (or block the middleman's thread
// on a full pipe). The lines a second swallowed are counted in the next line printed.
void LogRefusal(const std::string& peer, const std::string& why) {
  constexpr int kLinesPerSecond = 10;
  static std::mutex mu;
  static auto window_start = std::chrono::steady_clock::now();
  static int printed = 0;
  static int64_t suppressed = 0;
  std::lock_guard<std::mutex> lock(mu);
  const auto now = std::chrono::steady_clock::now();
  if (now - window_start >= std::chrono::seconds(1)) {
    if (suppressed > 0) {
      std::cerr << "actorflow transport: " << suppressed
                << " more refusals in the last second were not shown" << std::endl;
    }
    window_start = now;
    printed = 0;
    suppressed = 0;
  }
  if (printed >= kLinesPerSecond) {
    ++suppressed;
    return;
  }
  ++printed;
  std::cerr << "actorflow transport: refused " << peer << ": " << why << std::endl;
}

std::string PeerOf(net::native_socket fd) {
  auto addr = net::remote_addr_of_fd(fd);
  auto port = net::remote_port_of_fd(fd);
  if (!addr || !port) return "a peer of unknown address";
  const bool v6 = addr->find(':') != std::string::npos;
  return (v6 ? "[" + *addr + "]" : *addr) + ":" + std::to_string(*port);
}

// Whether the 32 bytes of a first header can be CAF's handshake: a server or
// client handshake (operation 0 or 1), the two padding bytes zero, no flag but
// BASP's two. Any CAF 0.17 node's first message is one of those.
bool LooksLikeHandshake(const char* header) {
  const auto* h = reinterpret_cast<const unsigned char*>(header);
  const auto operation = static_cast<caf::io::basp::message_type>(h[0]);
  const bool handshake = operation == caf::io::basp::message_type::server_handshake ||
                         operation == caf::io::basp::message_type::client_handshake;
  return handshake && h[1] == 0 && h[2] == 0 && (h[3] & ~0x03) == 0;
}

// What a first frame that is not a handshake seems to be, for the log line.
std::string DescribeFirstFrame(const char* data) {
  static const char* const kHttp[] = {"GET ", "POST", "PUT ", "HEAD", "DELE",
                                      "OPTI", "PATC", "CONN", "TRAC", "HTTP"};
  for (const char* prefix : kHttp) {
    if (std::memcmp(data, prefix, 4) == 0) return "it looks like HTTP";
  }
  const auto* bytes = reinterpret_cast<const unsigned char*>(data);
  if (bytes[0] == 0x16 && bytes[1] == 0x03) {
    return "it looks like a TLS handshake: does the peer use --tls-cert or a cluster secret "
           "while this process does not?";
  }
  char hex[8];
  std::snprintf(hex, sizeof(hex), "0x%02x", bytes[0]);
  return std::string("its first byte is ") + hex;
}

class GuardedScribe;

// Accepted connections of one backend: how many are open now, and those still
// without a completed handshake, oldest first. `awaiting` is touched only on the
// multiplexer's thread (where scribes are made, read, closed and destroyed).
struct AcceptedConnections {
  std::atomic<int64_t> open{0};
  std::list<std::pair<GuardedScribe*, Clock::time_point>> awaiting;
  // awaiting.size(), for the reaper's thread: an idle task posts it nothing.
  std::atomic<int64_t> awaiting_count{0};
};

// A connection (CAF scribe) whose reads are bounded: see the header.
class GuardedScribe : public net::scribe_impl {
 public:
  // `accepted` counts this connection while it lives (null: an outgoing one).
  GuardedScribe(net::default_multiplexer& mx, net::native_socket fd, const TransportLimits& limits,
                std::shared_ptr<AcceptedConnections> accepted)
      : scribe_impl(mx, fd),
        limits_(limits),
        peer_(PeerOf(fd)),
        peer_port_(PeerPortOf(fd)),
        accepted_(std::move(accepted)) {
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


  // Closes the connection (on the multiplexer's thread), logging `why` for its peer.
  void CloseNow(const std::string& why) {
    HandshakeEnded();
    if (detached()) return;
    LogRefusal(peer_, why);
    caf::intrusive_ptr<GuardedScribe> keep{this};
    io_failure(&stream_.backend(), net::operation::read);
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
    scribe_impl::configure_read(config);
  }

  bool consume(caf::execution_unit* ctx, const void* buf, size_t num_bytes) override {
    ++frames_;
    if (frames_ == 2) HandshakeEnded();  // its header and its payload arrived
    if (frames_ == 1 && num_bytes == caf::io::basp::header_size && accepted_ == nullptr &&
        std::memcmp(rd_buf().data(), kBusyFrame, sizeof(kBusyFrame)) == 0) {
      // A server refusing this connection because it is at --max-connections.
      std::lock_guard<std::mutex> lock(busy_mu);
      ++busy_refusals[peer_port_];
    } else if (frames_ == 1 && num_bytes == caf::io::basp::header_size &&
               !LooksLikeHandshake(rd_buf().data())) {
      LogRefusal(peer_, "its first frame is not a BASP handshake (" +
                            DescribeFirstFrame(rd_buf().data()) + ")");
      // Let BASP refuse it as malformed: it closes the connection and tells a
      // connecting side why (malformed_basp_message), as for any bad header.
      rd_buf()[0] = kInvalidOperation;
    }
    consuming_ = true;
    const bool keep_reading = caf::io::scribe::consume(ctx, buf, num_bytes);
    consuming_ = false;
    if (refused_ && !detached()) {
      // What a failed read does: detach from the broker (which drops the
      // connection's state on the connection_closed_msg it gets) and stop reading;
      // the socket closes when the stream lets go of this scribe.
      io_failure(ctx, net::operation::read);
      return false;
    }
    return keep_reading;
  }

 private:
  // A refusal outside a read (not seen from BASP, which sizes reads only while it
  // handles one): close from the multiplexer's loop.
  void CloseLater() {
    caf::intrusive_ptr<GuardedScribe> self{this};
    stream_.backend().post([self] {
      if (!self->detached()) self->io_failure(&self->stream_.backend(), net::operation::read);
    });
  }

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
  std::list<std::pair<GuardedScribe*, Clock::time_point>>::iterator awaiting_;
  bool in_awaiting_ = false;
  int64_t frames_ = 0;      // reads handed to BASP so far (the first is a header)
  bool consuming_ = false;  // inside BASP's handler of a read
  bool refused_ = false;
};

// A listener (CAF doorman) that closes connections beyond the limit at once.
class GuardedDoorman : public net::doorman_impl {
 public:
  GuardedDoorman(net::default_multiplexer& mx, net::native_socket fd, const TransportLimits& limits,
                 std::shared_ptr<AcceptedConnections> accepted)
      : doorman_impl(mx, fd), limits_(limits), accepted_(std::move(accepted)) {}

  // doorman_impl::new_connection, with the limit and a counted scribe.
  bool new_connection() override {
    if (detached()) return false;
    auto& mx = acceptor_.backend();
    const net::native_socket fd = acceptor_.accepted_socket();
    const int64_t open = accepted_->open.load();
    if (open >= limits_.max_connections && !EvictAStalledConnection()) {
      LogRefusal(PeerOf(fd), std::to_string(open) + " connections are open, the most " +
                                 "--max-connections " + std::to_string(limits_.max_connections) +
                                 " allows");
      // Tell a CAF peer why (it reports the limit, not a failed handshake); a fresh
      // socket's send buffer takes 32 bytes without blocking.
      (void)::send(fd, kBusyFrame, sizeof(kBusyFrame), MSG_NOSIGNAL | MSG_DONTWAIT);
      net::close_socket(fd);
      return true;  // go on accepting
    }
    auto scribe = caf::make_counted<GuardedScribe>(mx, fd, limits_, accepted_);
    const caf::io::connection_handle hdl = scribe->hdl();
    parent()->add_scribe(std::move(scribe));
    return doorman::new_connection(&mx, hdl);
  }

 private:
  // Closes the oldest accepted connection that has gone kHandshakeGraceMs without
  // completing its handshake, if any: a stalled stranger gives way to a new peer.
  bool EvictAStalledConnection() {
    if (accepted_->awaiting.empty()) return false;
    const auto [scribe, since] = accepted_->awaiting.front();
    const auto waited =
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - since).count();
    if (waited < kHandshakeGraceMs) return false;
    scribe->CloseNow("no handshake after " + std::to_string(waited) +
                     " ms while --max-connections " + std::to_string(limits_.max_connections) +
                     " were open: its slot goes to a new connection");
    return true;
  }

  const TransportLimits limits_;
  std::shared_ptr<AcceptedConnections> accepted_;
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

  void Start() {
    std::lock_guard<std::mutex> lock(mu_);
    if (thread_.joinable() || stopping_) return;
    thread_ = std::thread([this] { Loop(); });
  }

  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  void Loop() {
    const auto period = std::chrono::milliseconds(std::clamp<int64_t>(timeout_ms_ / 4, 10, 1000));
    std::unique_lock<std::mutex> lock(mu_);
    while (!wake_.wait_for(lock, period, [this] { return stopping_; })) {
      if (accepted_->awaiting_count.load() == 0) continue;
      std::shared_ptr<AcceptedConnections> accepted = accepted_;
      const int64_t timeout_ms = timeout_ms_;
      mx_.post([accepted, timeout_ms] { CloseExpired(*accepted, timeout_ms); });
    }
  }

  // On the multiplexer's thread.
  static void CloseExpired(AcceptedConnections& accepted, int64_t timeout_ms) {
    const auto now = Clock::now();
    while (!accepted.awaiting.empty()) {
      const auto [scribe, since] = accepted.awaiting.front();
      if (now - since < std::chrono::milliseconds(timeout_ms)) break;
      scribe->CloseNow("no handshake within --handshake-timeout-ms " +
                       std::to_string(timeout_ms));  // leaves `awaiting`
    }
  }

  net::default_multiplexer& mx_;
  const std::shared_ptr<AcceptedConnections> accepted_;
  const int64_t timeout_ms_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

TransportLimits LimitsFrom(const caf::actor_system_config& cfg) {
  TransportLimits limits;
  limits.max_message_bytes = caf::get_or(cfg, kMaxMessageBytesKey, limits.max_message_bytes);
  limits.max_connections = caf::get_or(cfg, kMaxConnectionsKey, limits.max_connections);
  limits.handshake_timeout_ms = caf::get_or(cfg, kHandshakeTimeoutKey, limits.handshake_timeout_ms);
  return limits;
}

// CAF's default multiplexer, making guarded scribes and doormen.
class GuardedMultiplexer : public net::default_multiplexer {
 public:
  explicit GuardedMultiplexer(caf::actor_system* sys)
      : default_multiplexer(sys),
        limits_(LimitsFrom(sys->config())),
        spin_(caf::get_or(sys->config(), kSchedulerSpinUsKey, int64_t{0})),
        reaper_(*this, accepted_, limits_.handshake_timeout_ms) {}
  // The reaper stops before the multiplexer it posts to goes.
  ~GuardedMultiplexer() override { reaper_.Stop(); }

  // CAF's loop blocks in epoll_wait as soon as no event is ready, so every message
  // of a request/reply exchange costs a wake-up of this thread. After an event this
  // loop first polls without blocking for `spin_` (bounded, as the scheduler's
  // threads do: an idle transport still blocks), and the reply that usually follows
  // within microseconds is read at once. The exit condition is CAF's own.
  void run() override {
    if (spin_.count() <= 0) return default_multiplexer::run();
    while (num_socket_handlers() > 0) {
      if (poll_once(false)) continue;
      if (SpinUntil([this] { return poll_once(false); }, spin_)) continue;
      poll_once(true);
    }
  }

  caf::io::scribe_ptr new_scribe(net::native_socket fd) override {
    return caf::make_counted<GuardedScribe>(*this, fd, limits_, nullptr);
  }

  caf::io::doorman_ptr new_doorman(net::native_socket fd) override {
    reaper_.Start();
    return caf::make_counted<GuardedDoorman>(*this, fd, limits_, accepted_);
  }

 private:
  const TransportLimits limits_;
  const std::chrono::microseconds spin_;
  std::shared_ptr<AcceptedConnections> accepted_ = std::make_shared<AcceptedConnections>();
  HandshakeReaper reaper_;  // after accepted_, which it shares
};

// Accepting fails with EMFILE before the connection limit is reached when the
// process may open fewer files than that (a soft limit of 1024 is common), and CAF's
// listener then wakes up in a loop until a descriptor frees: raise the soft limit
// (up to the hard one) to the connections plus room for everything else.
void MakeRoomForConnections(int64_t max_connections) {
  constexpr rlim_t kOtherFiles = 256;
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) != 0) return;
  const rlim_t wanted = static_cast<rlim_t>(max_connections) + kOtherFiles;
  if (files.rlim_cur != RLIM_INFINITY && files.rlim_cur < wanted) {
    files.rlim_cur = files.rlim_max == RLIM_INFINITY ? wanted : std::min(wanted, files.rlim_max);
    setrlimit(RLIMIT_NOFILE, &files);
  }
}

}  // namespace

void LoadGuardedMiddleman(caf::actor_system_config& cfg, const TransportLimits& limits) {
  caf::put(cfg.content, kMaxMessageBytesKey, limits.max_message_bytes);
  caf::put(cfg.content, kMaxConnectionsKey, limits.max_connections);
  caf::put(cfg.content, kHandshakeTimeoutKey, limits.handshake_timeout_ms);
  MakeRoomForConnections(limits.max_connections);
  cfg.load<caf::io::middleman, GuardedMultiplexer>();
}

bool TakeBusyRefusal(uint16_t port) {
  std::lock_guard<std::mutex> lock(busy_mu);
  auto it = busy_refusals.find(port);
  if (it == busy_refusals.end()) return false;
  if (--it->second == 0) busy_refusals.erase(it);
  return true;
}

}  // namespace actorflow
